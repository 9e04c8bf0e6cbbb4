"""gpu_resource_capacity against the API and (node_checks) a PodResources v1 gRPC server on a unix socket.

The server is written here from the field numbers of the public kubernetes/kubelet
pkg/apis/podresources/v1/api.proto (service v1.PodResourcesLister, GetAllocatableResources):
its encoder is independent of the module's decoder. The kubelet's and the plugin's sockets are
plain bound unix sockets (only their presence is checked). A throw-away Node is created (on a
real cluster too) and its status set through the status subresource, as a kubelet does.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
import kubernetes
import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import pod_resources
from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_resource_capacity
from tests.cluster.helpers import REPO, unique
from tests.module_runner import run_module

GPU = 'nvidia.com/gpu'
UUIDS = ['GPU-%d1f9c0a2-5b3e-4c1d-9e8f-00000000000%d' % (n, n) for n in range(4)]


def _varint(value):
    out = bytearray()
    while True:
        low, value = value & 0x7f, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _len_field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_allocatable(devices, cpu_ids=()):
    """AllocatableResourcesResponse{devices=1: ContainerDevices{resource_name=1, device_ids=2, topology=3{nodes=1{ID=1}}}, cpu_ids=2}."""
    out = b''
    for resource, ids, numa in devices:
        entry = _len_field(1, resource.encode()) + b''.join(_len_field(2, i.encode()) for i in ids)
        entry += _len_field(3, b''.join(_len_field(1, _varint(1 << 3 | 0) + _varint(n)) for n in numa))
        out += _len_field(1, entry)
    if cpu_ids:
        out += _len_field(2, b''.join(_varint(c) for c in cpu_ids))
    return out


class PodResourcesServer:
    """A kubelet PodResources v1 endpoint answering GetAllocatableResources with `devices`."""

    def __init__(self, path, devices, implement=True):
        self.requests = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        if implement:
            def allocatable(request, _context):
                self.requests.append(request)
                return encode_allocatable(devices, cpu_ids=(0, 1))
            handler = grpc.unary_unary_rpc_method_handler(allocatable, request_deserializer=bytes, response_serializer=bytes)
            self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler('v1.PodResourcesLister', {'GetAllocatableResources': handler}),))
        self.server.add_insecure_port('unix:' + str(path))

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(0)


class KubeletDir:
    """A short directory (unix socket paths are limited to 107 bytes) holding device-plugins/ and pod-resources/."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix='gpuops-dp-'))
        (self.root / 'device-plugins').mkdir()
        (self.root / 'pod-resources').mkdir()
        self.listeners = []

    def __truediv__(self, name):
        return self.root / name

    def bind(self, path):
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        self.listeners.append(listener)

    def close(self):
        for listener in self.listeners:
            listener.close()
        shutil.rmtree(self.root)


@pytest.fixture(name='kubelet_dir')
def fixture_kubelet_dir():
    """A KubeletDir with the kubelet's registration socket bound."""
    kubelet = KubeletDir()
    kubelet.bind(kubelet / 'device-plugins' / 'kubelet.sock')
    yield kubelet
    kubelet.close()


@pytest.fixture(name='node')
def fixture_node(kube_api):
    """(name, CoreV1Api) of a throw-away Node, deleted afterwards."""
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    name = unique('gpuops-dp')
    labels = {'kubernetes.io/hostname': name, 'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '4'}
    core.create_node({'metadata': {'name': name, 'labels': labels}}, _preload_content=False)
    yield name, core
    core.delete_node(name, _preload_content=False)


def set_gpus(core, name, capacity, allocatable=None):
    status = {'capacity': {GPU: str(capacity)}, 'allocatable': {GPU: str(capacity if allocatable is None else allocatable)}}
    core.patch_node_status(name, {'status': status}, _content_type='application/merge-patch+json', _preload_content=False)


def run(capsys, kube_api, kubelet_dir, failed=False, **args):
    args = dict(dict(kubeconfig=kube_api.kubeconfig, socket_dir=str(kubelet_dir / 'device-plugins'), node_checks=True,
                     pod_resources_socket=str(kubelet_dir / 'pod-resources' / 'kubelet.sock'), timeout=0, poll_interval=0.2), **args)
    return run_module(capsys, gpu_resource_capacity.main, args, failed=failed)


def test_registered_with_time_slicing(kube_api, node, kubelet_dir, capsys):
    name, core = node
    set_gpus(core, name, 4)
    kubelet_dir.bind(kubelet_dir / 'device-plugins' / 'nvidia-gpu.sock')
    devices = [(GPU, ['%s::%d' % (UUIDS[0], r) for r in range(4)], [0]), ('nvidia.com/mig-1g.10gb', ['MIG-x'], [])]
    with PodResourcesServer(kubelet_dir / 'pod-resources' / 'kubelet.sock', devices) as server:
        result = run(capsys, kube_api, kubelet_dir, node_name=name)
    assert 'failed' not in result, result['msg']
    assert result['registered'] is True and result['changed'] is False
    assert result['capacity'] == result['allocatable'] == 4
    assert result['devices'] == ['%s::%d' % (UUIDS[0], r) for r in range(4)] and result['pod_resources'] == 'checked'
    assert result['expected'] == {'count': 4, 'gpu_count': 1, 'replicas': 4, 'source': 'label nvidia.com/gpu.count, label nvidia.com/gpu.replicas'}
    assert result['sockets'] == {str(kubelet_dir / 'device-plugins' / 'kubelet.sock'): True, str(kubelet_dir / 'device-plugins' / 'nvidia-gpu.sock'): True}
    assert [entry.split(': ', 1)[1] for entry in result['progress']] == ['registered']
    assert server.requests == [b''], 'AllocatableResourcesRequest is empty'


def test_time_slicing_not_multiplied_fails_naming_it(kube_api, node, kubelet_dir, capsys):
    name, core = node
    set_gpus(core, name, 1)
    kubelet_dir.bind(kubelet_dir / 'device-plugins' / 'nvidia-gpu.sock')
    with PodResourcesServer(kubelet_dir / 'pod-resources' / 'kubelet.sock', [(GPU, [UUIDS[0]], [0])]):
        result = run(capsys, kube_api, kubelet_dir, node_name=name, failed=True)
    assert result['failed'] is True and result['registered'] is False
    assert result['msg'].startswith('nvidia.com/gpu not registered on Node %s after 0s: ' % name)
    assert ('count mismatch: Node %s capacity nvidia.com/gpu is 1, expected 4 (label nvidia.com/gpu.count, label nvidia.com/gpu.replicas): '
            'sharing with 4 replicas is expected but capacity is not multiplied' % name) in result['msg']
    assert 'the kubelet PodResources API lists 1 allocatable nvidia.com/gpu device(s), expected 4' in result['msg']
    assert result['devices'] == [UUIDS[0]] and result['capacity'] == 1


def test_a_slow_last_round_still_names_the_timeout(kube_api, node, kubelet_dir, capsys, monkeypatch):
    """A busy controller: the one round before the module gives up ends 2.6 s after the start of a 2 s wait. The message
    names the timeout given (it read the rounded measured time, "after 3s", and failed a CI run so); elapsed keeps the
    measured time. The module's clock is the test's."""
    name, core = node
    set_gpus(core, name, 1)
    readings = iter([0.0, 2.6])
    monkeypatch.setattr(gpu_resource_capacity, 'time', type('Clock', (), {'monotonic': staticmethod(lambda: next(readings, 2.6)),
                                                                          'sleep': staticmethod(lambda seconds: None)}))
    result = run(capsys, kube_api, kubelet_dir, node_name=name, failed=True, timeout=2, poll_interval=0.5)
    assert result['failed'] is True and result['elapsed'] == 2.6
    assert result['msg'].startswith('nvidia.com/gpu not registered on Node %s after 2s: ' % name), result['msg']


def test_missing_socket_and_capacity_are_named(kube_api, node, kubelet_dir, capsys):
    name = node[0]
    with PodResourcesServer(kubelet_dir / 'pod-resources' / 'kubelet.sock', []):
        result = run(capsys, kube_api, kubelet_dir, node_name=name, gpu_count=2, replicas=1, failed=True)
    assert result['failed'] is True
    plugin_socket = kubelet_dir / 'device-plugins' / 'nvidia-gpu.sock'
    assert 'socket missing: %s (served by the device plugin for nvidia.com/gpu)' % plugin_socket in result['msg']
    assert 'capacity missing: Node %s has no status.capacity[nvidia.com/gpu]' % name in result['msg']
    assert result['capacity'] is None and result['sockets'][str(plugin_socket)] is False
    assert result['expected']['source'] == 'option gpu_count, option replicas'


def test_waits_and_shows_progress(kube_api, node, kubelet_dir, capsys):
    name, core = node
    kubelet_dir.bind(kubelet_dir / 'device-plugins' / 'nvidia-gpu.sock')
    late = threading.Timer(1.0, set_gpus, (core, name, 4))
    late.start()
    try:
        with PodResourcesServer(kubelet_dir / 'pod-resources' / 'kubelet.sock', [(GPU, UUIDS, [0])]):
            start = time.monotonic()
            result = run(capsys, kube_api, kubelet_dir, node_name=name, timeout=20)
    finally:
        late.join()
    assert 'failed' not in result, result['msg']
    # The module rounds elapsed to 0.1 s, so it may exceed the measured time by up to 0.05 s.
    assert 1.0 <= result['elapsed'] <= time.monotonic() - start + 0.05
    # First and last state seen; a loaded machine may show more in between.
    assert 'capacity missing: Node %s' % name in result['progress'][0], result['progress']
    assert result['progress'][-1].endswith(': registered'), result['progress']


def test_without_grpcio_the_pod_resources_check_is_skipped(kube_api, node, kubelet_dir, capsys, monkeypatch):
    name, core = node
    set_gpus(core, name, 4)
    kubelet_dir.bind(kubelet_dir / 'device-plugins' / 'nvidia-gpu.sock')
    monkeypatch.setattr(pod_resources, 'HAS_GRPC', False)
    result = run(capsys, kube_api, kubelet_dir, node_name=name)
    assert result['registered'] is True and result['pod_resources'] == 'skipped: grpcio is not installed' and result['devices'] == []


def test_pod_resources_failures_are_named(kube_api, node, kubelet_dir, capsys):
    name, core = node
    set_gpus(core, name, 4)
    kubelet_dir.bind(kubelet_dir / 'device-plugins' / 'nvidia-gpu.sock')
    socket_path = kubelet_dir / 'pod-resources' / 'kubelet.sock'
    result = run(capsys, kube_api, kubelet_dir, node_name=name, failed=True)
    assert result['failed'] is True and 'PodResources: socket missing: %s' % socket_path in result['msg']
    # A kubelet with the KubeletPodResourcesGetAllocatable gate off does not serve the method.
    with PodResourcesServer(socket_path, [], implement=False):
        result = run(capsys, kube_api, kubelet_dir, node_name=name, failed=True)
    assert result['failed'] is True
    assert 'PodResources: GetAllocatableResources on %s failed: UNIMPLEMENTED' % socket_path in result['msg']
    assert result['pod_resources'].startswith('failed: ')


def test_missing_node_and_labels(kube_api, node, kubelet_dir, capsys):
    missing = unique('gpuops-dp-absent')
    result = run(capsys, kube_api, kubelet_dir, node_name=missing, failed=True)
    assert result['failed'] is True and 'Node %s not found' % missing in result['msg'] and result['expected'] is None
    name, core = node
    core.patch_node(name, {'metadata': {'labels': {'nvidia.com/gpu.count': None}}}, _content_type='application/merge-patch+json',
                    _preload_content=False)
    result = run(capsys, kube_api, kubelet_dir, node_name=name, failed=True)
    assert result['failed'] is True
    assert result['msg'] == ('cannot tell how many nvidia.com/gpu devices to expect: Node %s has no label nvidia.com/gpu.count (nfd_labels sets it); '
                             'give expected_count or gpu_count' % name)
    result = run(capsys, kube_api, kubelet_dir, node_name=name, resource_name='gpu', failed=True)
    assert result['failed'] is True and result['msg'].startswith('resource_name must be an extended resource name')


def test_from_the_api_host_only_the_node_is_checked(kube_api, node, capsys):
    """Without node_checks (the validation stage runs it on the API host) no socket nor PodResources is looked at."""
    name, core = node
    set_gpus(core, name, 4)
    args = dict(kubeconfig=kube_api.kubeconfig, node_name=name, timeout=0, socket_dir='/nonexistent', pod_resources_socket='/nonexistent/kubelet.sock')
    result = run_module(capsys, gpu_resource_capacity.main, args)
    assert 'failed' not in result, result['msg']
    assert result['registered'] is True and result['sockets'] == {} and result['devices'] == []
    assert result['pod_resources'] == 'skipped: node_checks is false'
    set_gpus(core, name, 1)
    result = run_module(capsys, gpu_resource_capacity.main, args, failed=True)
    assert result['failed'] is True and result['msg'] == (
        'nvidia.com/gpu not registered on Node %s after 0s: count mismatch: Node %s capacity nvidia.com/gpu is 1, expected 4 '
        '(label nvidia.com/gpu.count, label nvidia.com/gpu.replicas): sharing with 4 replicas is expected but capacity is not multiplied '
        '(is the device plugin config applied?); count mismatch: Node %s allocatable nvidia.com/gpu is 1, expected 4 '
        '(unhealthy devices are not allocatable)' % (name, name, name))


def test_the_old_name_still_works(kube_api, node, tmp_path):
    """gpuops.gpu_operator.k8s_device_plugin redirects here (meta/runtime.yml), with a deprecation warning."""
    name, core = node
    set_gpus(core, name, 4)
    playbook = tmp_path / 'old_name.yml'
    playbook.write_text(json.dumps([{'hosts': 'localhost', 'gather_facts': False, 'tasks': [
        {'name': 'Old name', 'gpuops.gpu_operator.k8s_device_plugin': {'node_name': name, 'timeout': 0}, 'register': 'found'},
        {'name': 'Checked', 'ansible.builtin.assert': {'that': ['found.registered', 'found.capacity == 4']}}]}]))
    env = dict(kube_api.env(), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_NOCOLOR='1')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, '-i', 'localhost,', '-c', 'local', str(playbook), '-e', f'ansible_python_interpreter={sys.executable}'],
                            env=env, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert 'k8s_device_plugin has been deprecated' in ' '.join(out.split()), out
