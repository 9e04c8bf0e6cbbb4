"""The gpu_node_labels role labels every node of the play in one run on the API host, through ansible-playbook.

Three 'GPU nodes' (local connection, each served a captured fixture) and localhost as the API host: one module run
applies the labels of all three, a Node that refuses fails only its node, a resourceVersion conflict is retried,
--check --diff shows each Node's label diff. The Nodes are throw-away ones, registered here and deleted afterwards
(on a real cluster too: Node objects without a kubelet are only records).
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import kubernetes
import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.node_api import OWNED_ANNOTATION
from tests.cluster.helpers import REPO, delete_node, register_node, unique

GPUS = REPO / 'tests' / 'fixtures' / 'gpus'
# Host -> (fixture, the gpu.product label its capture gives).
HOSTS = {'gpu-a': ('t4', 'Tesla-T4'), 'gpu-b': ('h100-sxm5-80gb-x1', 'NVIDIA-H100-80GB-HBM3'), 'gpu-c': ('a100-sxm4-80gb-mig', 'NVIDIA-A100-SXM4-80GB')}

# The nvidia-smi simulator reads its fixture from the environment: each host gets its own.
PLAYBOOK = textwrap.dedent('''\
    - hosts: gpu_nodes
      gather_facts: false
      environment:
        GPUOPS_LAB_GPU_FIXTURE: "{{ fixture_root }}"
      roles:
        - role: gpuops.gpu_operator.gpu_node_labels
''')


@pytest.fixture
def nodes(kube_api):
    """{host: Node name}: a fresh Node per host, deleted afterwards."""
    names = {host: unique('gpuops-batch') for host in HOSTS}
    for name in names.values():
        register_node(kube_api, name)
    yield names
    for name in names.values():
        delete_node(kube_api, name)


def run_play(kube_api, tmp_path, names, *args):
    """ansible-playbook of the role on the three hosts; returns (returncode, {host: recap counts}, output)."""
    hosts = {}
    for host, (fixture, _product) in HOSTS.items():
        root = GPUS / fixture
        hosts[host] = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'gpu_node_labels_node_name': names[host],
                       'fixture_root': str(root), 'gpu_node_labels_sysfs_root': str(root / 'sys'),
                       'gpu_node_labels_procfs_root': str(root / 'proc'), 'gpu_node_labels_nvidia_smi': str(GPUS / 'gpuops-lab-nvidia-smi')}
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {'children': {
        'kube_api': {'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}},
        'gpu_nodes': {'hosts': hosts}}}}))
    playbook = tmp_path / 'labels.yml'
    playbook.write_text(PLAYBOOK)
    env = dict(kube_api.env(), ANSIBLE_NOCOLOR='1')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, '-i', str(inventory), str(playbook), *args], env=env, capture_output=True, text=True, timeout=300,
                            check=False, cwd=REPO)
    recap = {match.group(1): {key: int(value) for key, value in re.findall(r'(\w+)=(\d+)', match.group(2))}
             for match in re.finditer(r'^(gpu-\w)\s*:\s*(.*)$', result.stdout, re.M)}
    return result.returncode, recap, result.stdout + result.stderr


def labels_of(kube_api, name):
    meta = kubernetes.client.CoreV1Api(kube_api.api_client).read_node(name).metadata
    return dict(meta.labels or {}), dict(meta.annotations or {})


def applied_runs(out):
    """How many times the batched apply task ran (a run_once task shows one result)."""
    return len(re.findall(r'TASK \[gpuops\.gpu_operator\.gpu_node_labels : Apply the labels of the play\'s nodes', out))


def test_every_node_is_labelled_in_one_run_then_nothing_changes(kube_api, nodes, tmp_path):
    code, recap, out = run_play(kube_api, tmp_path, nodes)
    assert code == 0, out
    assert applied_runs(out) == 1, out
    # One run, shown for the first host, covers all three Nodes; each node then reports its own Node's change.
    assert len(re.findall(r'^ok: \[gpu-a -> localhost\]', out.split("Apply the labels of the play's nodes", 1)[1], re.M)) >= 1, out
    reported = out.split("TASK [gpuops.gpu_operator.gpu_node_labels : Report the node's labels]", 1)[1].split('TASK [', 1)[0]
    assert sorted(re.findall(r'^changed: \[(gpu-\w)\]', reported, re.M)) == sorted(HOSTS), out
    for host, (_fixture, product) in HOSTS.items():
        labels, annotations = labels_of(kube_api, nodes[host])
        assert labels['nvidia.com/gpu.product'] == product, (host, labels)
        assert json.loads(annotations[OWNED_ANNOTATION])['nvidia.com/gpu.product'] == product
    code, recap, out = run_play(kube_api, tmp_path, nodes)
    assert code == 0 and {host: counts['changed'] for host, counts in recap.items()} == dict.fromkeys(HOSTS, 0), out


def test_check_diff_shows_each_nodes_labels_and_writes_nothing(kube_api, nodes, tmp_path):
    before = {host: labels_of(kube_api, name)[0] for host, name in nodes.items()}
    code, _recap, out = run_play(kube_api, tmp_path, nodes, '--check', '--diff')
    assert code == 0, out
    for host, (_fixture, product) in HOSTS.items():
        section = out.split('--- before: Node %s labels' % nodes[host], 1)
        assert len(section) == 2, (host, out)
        # The diff of that Node adds its product (the diff is printed as YAML or JSON, as the callback is set).
        assert re.search(r'^\+\s+"?nvidia\.com/gpu\.product"?: "?%s' % re.escape(product), section[1].split('--- before:', 1)[0], re.M), (host, out)
        assert labels_of(kube_api, nodes[host])[0] == before[host], 'check mode must not write'


def test_a_missing_node_fails_only_its_host(kube_api, nodes, tmp_path):
    """Works against a real cluster too: the Node of gpu-b is not registered."""
    names = dict(nodes, **{'gpu-b': unique('gpuops-unregistered')})
    code, recap, out = run_play(kube_api, tmp_path, names)
    assert code != 0, out
    assert recap['gpu-b']['failed'] == 1 and recap['gpu-a']['failed'] == 0 and recap['gpu-c']['failed'] == 0, out
    assert 'cannot label Node %s: the API lists no Node of that name' % names['gpu-b'] in out, out
    assert labels_of(kube_api, nodes['gpu-a'])[0]['nvidia.com/gpu.product'] == 'Tesla-T4'
    assert labels_of(kube_api, nodes['gpu-c'])[0]['nvidia.com/gpu.product'] == 'NVIDIA-A100-SXM4-80GB'


def test_a_node_refusing_the_patch_fails_only_its_host(kube_api, kube_faults, nodes, tmp_path):
    refused = kube_faults.inject('PATCH', '^/api/v1/nodes/%s$' % nodes['gpu-b'], status=403, times=5,
                                 message='nodes "%s" is forbidden: test refusal' % nodes['gpu-b'])
    code, recap, out = run_play(kube_api, tmp_path, nodes)
    assert code != 0, out
    assert refused.injected == 1, 'a 403 is not retried'
    assert recap['gpu-b']['failed'] == 1 and recap['gpu-a']['failed'] == 0 and recap['gpu-c']['failed'] == 0, out
    assert 'cannot patch Node %s: API answered 403' % nodes['gpu-b'] in out, out
    assert 'nvidia.com/gpu.product' not in labels_of(kube_api, nodes['gpu-b'])[0]
    assert labels_of(kube_api, nodes['gpu-a'])[0]['nvidia.com/gpu.product'] == 'Tesla-T4'
    assert labels_of(kube_api, nodes['gpu-c'])[0]['nvidia.com/gpu.product'] == 'NVIDIA-A100-SXM4-80GB'


def test_a_resource_version_conflict_is_read_again_and_retried(kube_api, kube_faults, nodes, tmp_path):
    conflict = kube_faults.inject('PATCH', '^/api/v1/nodes/%s$' % nodes['gpu-a'], status=409)
    reread = kube_faults.inject('GET', '^/api/v1/nodes/%s$' % nodes['gpu-a'], delay=0.01)
    code, recap, out = run_play(kube_api, tmp_path, nodes)
    assert code == 0, out
    assert conflict.injected == 1 and reread.injected == 1, 'the conflicted Node is read again, once'
    assert recap['gpu-a']['failed'] == 0 and labels_of(kube_api, nodes['gpu-a'])[0]['nvidia.com/gpu.product'] == 'Tesla-T4'
