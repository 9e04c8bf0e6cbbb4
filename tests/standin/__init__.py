"""An in-memory Kubernetes API stand-in (kmock's KubernetesEmulator plus API semantics) for tests and the demo.

Use `python -m tests.standin serve --kubeconfig PATH`, the `kube_api` pytest fixture
(tests.standin.pytest_plugin), or `BackgroundStandin` directly.
"""
from tests.standin.api import StandinAPI
from tests.standin.runner import BackgroundStandin, write_kubeconfig

__all__ = ['BackgroundStandin', 'StandinAPI', 'write_kubeconfig']
