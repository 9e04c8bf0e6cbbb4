"""Command line: `python -m tests.standin serve|stop` (see --help)."""
import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time

from tests.standin.runner import check_loopback, serve, write_kubeconfig


def _serve(args: argparse.Namespace) -> int:
    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)

        def ready(_api: object, url: str) -> None:
            write_kubeconfig(args.kubeconfig, url)
            if args.pidfile:
                _write_pidfile(args.pidfile)
            print(f'ready {url}', flush=True)

        await serve(args.host, args.port, args.node, stop, ready)

    try:
        asyncio.run(main())
    finally:
        if args.pidfile and _read_pid(args.pidfile) == os.getpid():
            os.unlink(args.pidfile)
    return 0


def _write_pidfile(path: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix='.pid-')
    with os.fdopen(fd, 'w', encoding='utf-8') as stream:
        stream.write(f'{os.getpid()}\n')
    os.replace(tmp, path)


def _read_pid(path: str) -> int | None:
    try:
        with open(path, encoding='utf-8') as stream:
            return int(stream.read().strip())
    except (OSError, ValueError):
        return None


def _is_standin(pid: int) -> bool:
    # A stale pidfile may name a recycled pid: only signal a process that runs this module.
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as stream:
            return b'tests.standin' in stream.read()
    except OSError:
        return False


def _stop(args: argparse.Namespace) -> int:
    pid = _read_pid(args.pidfile)
    if pid is None or not _is_standin(pid):
        print(f'no running stand-in recorded in {args.pidfile}', file=sys.stderr)
        return 0 if args.missing_ok else 1
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while _is_standin(pid):
        if time.monotonic() > deadline:
            print(f'the stand-in (pid {pid}) did not exit within {args.timeout}s', file=sys.stderr)
            return 1
        time.sleep(0.1)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m tests.standin', description='An in-memory Kubernetes API stand-in for tests and the demo.')
    commands = parser.add_subparsers(dest='command', required=True)
    serve_cmd = commands.add_parser('serve', help='serve until SIGTERM/SIGINT; prints "ready <url>" once listening')
    serve_cmd.add_argument('--kubeconfig', required=True, help='where to write a kubeconfig (context gpuops-standin)')
    serve_cmd.add_argument('--host', default='127.0.0.1', type=check_loopback, help='loopback address to bind (default 127.0.0.1)')
    serve_cmd.add_argument('--port', default=0, type=int, help='port to bind; 0 picks a free one (default)')
    serve_cmd.add_argument('--node', action='append', default=[], metavar='NAME', help='register a Node as its kubelet would (repeatable)')
    serve_cmd.add_argument('--pidfile', help='write the server pid here (removed on exit); `stop` reads it')
    stop_cmd = commands.add_parser('stop', help='SIGTERM the stand-in recorded in a pidfile and wait for it to exit')
    stop_cmd.add_argument('--pidfile', required=True)
    stop_cmd.add_argument('--timeout', type=float, default=15)
    stop_cmd.add_argument('--missing-ok', action='store_true', help='succeed when no stand-in is running')
    args = parser.parse_args(argv)
    return _serve(args) if args.command == 'serve' else _stop(args)


if __name__ == '__main__':
    sys.exit(main())
