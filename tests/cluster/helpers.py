"""Shared helpers of the cluster tests: raw API calls, throw-away names, a fresh API."""
import dataclasses
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from tests.standin.runner import BackgroundStandin, write_kubeconfig

# Subprocesses (python -m tests.standin, ansible-playbook) run from the repository root.
REPO = Path(__file__).resolve().parents[2]
GPUS = REPO / 'tests' / 'fixtures' / 'gpus'


def unique(prefix: str) -> str:
    return f'{prefix}-{uuid.uuid4().hex[:6]}'


def raw(kube_api: Any, method: str, path: str, body: Any = None, content_type: str = 'application/json',
        query: dict[str, str] | None = None) -> tuple[int, Any]:
    """One HTTP call through the kubernetes ApiClient (so real-cluster auth works); returns (status, decoded body)."""
    client = kube_api.api_client
    request = client.param_serialize(method, path, query_params=list((query or {}).items()),
                                     header_params={'Content-Type': content_type, 'Accept': 'application/json'},
                                     body=body, auth_settings=['BearerToken'])
    response = client.call_api(*request)
    response.read()
    try:
        return response.status, json.loads(response.data or b'null')
    except ValueError:
        return response.status, response.data.decode()


def register_node(kube_api: Any, name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
                  info: dict[str, str] | None = None, address: str | None = None, ready: bool = True) -> None:
    """Register a Node as its kubelet does: create it, then report its status (nodeInfo, addresses, Ready).

    The create drops a status (the Node has a status subresource), so it goes through nodes/status, raw: the
    client's models want every nodeInfo field, and a kubelet-less Node has only those given.
    """
    metadata = {'name': name, 'labels': dict({'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux'}, **(labels or {}))}
    if annotations:
        metadata['annotations'] = annotations
    code, body = raw(kube_api, 'POST', '/api/v1/nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': metadata, 'spec': {}})
    assert code == 201, body
    set_node_status(kube_api, name, info=info, address=address, ready=ready)


def set_node_status(kube_api: Any, name: str, info: dict[str, str] | None = None, address: str | None = None, ready: bool = True) -> None:
    """Report a Node's status as its kubelet does (a merge patch of nodes/status); info is merged into nodeInfo."""
    status: dict[str, Any] = {'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'Unknown',
                                              'reason': 'KubeletReady' if ready else 'NodeStatusUnknown'}]}
    if info:
        status['nodeInfo'] = info
    if address:
        status['addresses'] = [{'type': 'InternalIP', 'address': address}, {'type': 'Hostname', 'address': name}]
    code, body = raw(kube_api, 'PATCH', f'/api/v1/nodes/{name}/status', {'status': status}, 'application/merge-patch+json')
    assert code == 200, body


def delete_node(kube_api: Any, name: str) -> None:
    code, body = raw(kube_api, 'DELETE', f'/api/v1/nodes/{name}')
    assert code in (200, 404), body


def delete_namespace(kube_api: Any, name: str) -> None:
    """Delete a test's namespace; one a failed run never created is fine."""
    code, body = raw(kube_api, 'DELETE', f'/api/v1/namespaces/{name}')
    assert code in (200, 202, 404), body


def nvidia_smi_simulator(path: Path, fixture: Path) -> str:
    """Write at `path` an nvidia-smi that answers from the captured GPU `fixture` (the lab's simulator); its path."""
    path.write_text(f'#!/bin/sh\nGPUOPS_LAB_GPU_FIXTURE={fixture} exec {sys.executable} {GPUS / "gpuops-lab-nvidia-smi"} "$@"\n')
    path.chmod(0o755)
    return str(path)


@pytest.fixture(name='fresh')
def fixture_fresh(kube_api, tmp_path):
    """(the API, an operator namespace that does not exist): on the stand-in one of its own, fresh (no namespace, no
    ClusterPolicy CRD, one Node `vm`); with KUBECONFIG, that cluster."""
    namespace = unique('gpuops-first')
    if kube_api.standin is not None:
        server = BackgroundStandin(nodes=['vm'])
        kubeconfig = str(tmp_path / 'kubeconfig')
        write_kubeconfig(kubeconfig, server.start())
        client = kubernetes.config.new_client_from_config(config_file=kubeconfig)
        try:
            yield dataclasses.replace(kube_api, kubeconfig=kubeconfig, api_client=client, standin=server.api), namespace
        finally:
            client.close()
            server.stop()
        return
    yield kube_api, namespace
    try:
        kubernetes.client.CoreV1Api(kube_api.api_client).delete_namespace(namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
