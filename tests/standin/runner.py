"""Running the stand-in: on a loopback port, in the foreground (CLI) or in a background thread (pytest)."""
import asyncio
import ipaddress
import os
import tempfile
import threading
from collections.abc import Callable, Iterable

import kmock
import yaml

from tests.standin.api import StandinAPI

CONTEXT = 'gpuops-standin'


def check_loopback(host: str) -> str:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(f'the stand-in serves on a loopback address only (127.0.0.0/8 or ::1), not {host!r}')
    return host


def write_kubeconfig(path: str, url: str) -> None:
    """Write a kubeconfig for the stand-in atomically (kubectl or ansible may read it at any moment)."""
    config = {
        'apiVersion': 'v1', 'kind': 'Config', 'preferences': {},
        'clusters': [{'name': CONTEXT, 'cluster': {'server': url}}],
        'users': [{'name': CONTEXT, 'user': {}}],
        'contexts': [{'name': CONTEXT, 'context': {'cluster': CONTEXT, 'user': CONTEXT, 'namespace': 'default'}}],
        'current-context': CONTEXT,
    }
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.kubeconfig-')
    with os.fdopen(fd, 'w', encoding='utf-8') as stream:
        yaml.safe_dump(config, stream)
    os.replace(tmp, path)


async def serve(host: str, port: int | None, nodes: Iterable[str], stop: asyncio.Event,
                on_ready: Callable[[StandinAPI, str], None]) -> None:
    """Serve until `stop` is set; `on_ready` gets the API and its URL once the port listens."""
    api = StandinAPI()
    async with api, kmock.Server(api, host=check_loopback(host), port=port or None) as server:
        for node in nodes:
            api.add_node(node)
        on_ready(api, f'http://{"[%s]" % host if ":" in host else host}:{server.port}')
        await stop.wait()
        await api.close_watches()


class BackgroundStandin:
    """The stand-in on a free loopback port, served by an event loop in a daemon thread."""

    def __init__(self, nodes: Iterable[str] = (), host: str = '127.0.0.1') -> None:
        self.nodes, self.host = list(nodes), host
        self.api: StandinAPI | None = None
        self.url = ''
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name='kube-standin', daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            await serve(self.host, None, self.nodes, self._stop, self._started)
        try:
            asyncio.run(main())
        except BaseException as exc:  # pylint: disable=broad-exception-caught  # reported to start() in the other thread
            self._error = exc
        finally:
            self._ready.set()

    def _started(self, api: StandinAPI, url: str) -> None:
        self.api, self.url = api, url
        self._ready.set()

    def start(self, timeout: float = 30) -> str:
        self._thread.start()
        if not self._ready.wait(timeout) or not self.url:
            raise RuntimeError(f'the Kubernetes API stand-in did not start: {self._error!r}')
        return self.url

    def stop(self, timeout: float = 30) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
