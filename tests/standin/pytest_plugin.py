"""The `kube_api` fixture: a Kubernetes API for tests, the stand-in or (with KUBECONFIG set) a real cluster.

`kube_faults` injects faults into the stand-in's answers (see StandinAPI.inject); a test that uses it
is skipped on a real cluster, where nothing can inject them.
"""
import dataclasses
import os
import uuid
from collections.abc import Iterator

import kubernetes
import pytest

from tests.standin.api import StandinAPI
from tests.standin.runner import BackgroundStandin, write_kubeconfig


@dataclasses.dataclass
class KubeAPI:
    kubeconfig: str  # path of a kubeconfig for subprocesses (ansible-playbook, kubectl)
    real: bool  # True when KUBECONFIG named a real cluster
    api_client: kubernetes.client.ApiClient
    namespace: str  # created for this test session, deleted after it
    standin: StandinAPI | None = dataclasses.field(repr=False)  # the in-process stand-in (None on a real cluster), for assertions on kmock's object history

    def env(self) -> dict[str, str]:
        """The environment for a subprocess that should talk to this API."""
        return dict(os.environ, KUBECONFIG=self.kubeconfig, K8S_AUTH_KUBECONFIG=self.kubeconfig)


@pytest.fixture(scope='session')
def kube_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeAPI]:
    server = None
    if os.environ.get('KUBECONFIG'):
        kubeconfig = os.environ['KUBECONFIG'].split(os.pathsep)[0]
    else:
        server = BackgroundStandin()
        kubeconfig = str(tmp_path_factory.mktemp('standin') / 'kubeconfig')
        write_kubeconfig(kubeconfig, server.start())
    api_client = kubernetes.config.new_client_from_config(config_file=kubeconfig)
    core = kubernetes.client.CoreV1Api(api_client)
    namespace = f'gpuops-test-{uuid.uuid4().hex[:8]}'
    core.create_namespace({'metadata': {'name': namespace, 'labels': {'gpuops.test/session': 'true'}}})
    try:
        yield KubeAPI(kubeconfig, server is None, api_client, namespace, server.api if server else None)
    finally:
        core.delete_namespace(namespace)
        api_client.close()
        if server is not None:
            server.stop()


@pytest.fixture
def kube_faults(kube_api: KubeAPI) -> Iterator[StandinAPI]:
    """The stand-in, for `inject()`; the faults left are removed after the test. Skips the test on a real cluster."""
    if kube_api.standin is None:
        pytest.skip('fault injection is a feature of the Kubernetes API stand-in; KUBECONFIG names a real cluster')
    yield kube_api.standin
    kube_api.standin.clear_faults()
