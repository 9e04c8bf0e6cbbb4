"""The k8s_nodes inventory plugin through ansible-inventory against the API: which Nodes, which groups, its options.

Throw-away Nodes are registered as kubelets would (nodeInfo values of the lab images, see
tests/unit/plugins/plugin_utils/test_k8s_nodes.py); on a real cluster (KUBECONFIG set) its own Nodes are listed too and
the assertions look at the throw-away ones only.
"""
import json
import os
import subprocess
import sys

import pytest

from tests.cluster.helpers import REPO, delete_node, register_node, unique

ANNOTATION = 'gpuops.io/nfd-labels'
BOOKWORM = {'osImage': 'Debian GNU/Linux 12 (bookworm)', 'kernelVersion': '6.18.44-fc-v595', 'containerRuntimeVersion': 'containerd://1.6.20~ds1',
            'operatingSystem': 'linux', 'architecture': 'amd64'}
SID = dict(BOOKWORM, osImage='Debian GNU/Linux forky/sid', containerRuntimeVersion='containerd://2.1.9~ds1')
OURS = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'NVIDIA-H200', 'nvidia.com/gpu.deploy.device-plugin': 'true'}


@pytest.fixture(name='nodes', scope='module')
def fixture_nodes(kube_api):
    """role -> Node name: a GPU node labelled by us, one labelled by NFD, one never examined, one examined without GPU."""
    prefix = unique('gpuops-inv')
    names = {role: f'{prefix}-{role}' for role in ('ours', 'nfd', 'new', 'cpu')}
    register_node(kube_api, names['ours'], labels=OURS, annotations={ANNOTATION: json.dumps(OURS)}, info=SID, address='192.0.2.11')
    register_node(kube_api, names['nfd'], labels={'feature.node.kubernetes.io/pci-10de.present': 'true'}, annotations={ANNOTATION: '{}'},
                  info=BOOKWORM, address='192.0.2.12')
    register_node(kube_api, names['new'], info=BOOKWORM, address='192.0.2.13')
    register_node(kube_api, names['cpu'], labels={'feature.node.kubernetes.io/kernel-version.major': '6'},
                  annotations={ANNOTATION: '{"feature.node.kubernetes.io/kernel-version.major":"6"}'}, info=BOOKWORM, address='192.0.2.14')
    yield names
    for name in names.values():
        delete_node(kube_api, name)


def inventory(kube_api, config, *args, env=None):
    """ansible-inventory on `config` (a path, or the text of a k8s_nodes.yml written to a temporary directory)."""
    environment = dict(kube_api.env(), ANSIBLE_NOCOLOR='1', **(env or {}))
    environment.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(config), *args],
                          env=environment, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)


def config_file(tmp_path, text, name='k8s_nodes.yml'):
    path = tmp_path / name
    path.write_text(text)
    return path


def plain(value):
    """The --list output without ansible-core's marks of untrusted strings ({"__ansible_unsafe": text}): the values
    read from the Nodes are untrusted, as they should be."""
    if isinstance(value, dict):
        return value['__ansible_unsafe'] if set(value) == {'__ansible_unsafe'} else {key: plain(item) for key, item in value.items()}
    return [plain(item) for item in value] if isinstance(value, list) else value


def listed(kube_api, config, *args, env=None):
    result = inventory(kube_api, config, '--list', *args, env=env)
    assert result.returncode == 0 and '[WARNING]' not in result.stderr, result.stderr
    return plain(json.loads(result.stdout))


def members(found, group):
    return set(found.get(group, {}).get('hosts', []))


def test_the_example_lists_gpu_nodes_and_new_nodes_grouped(kube_api, nodes):
    """inventory/cluster/k8s_nodes.yml with the credentials from K8S_AUTH_KUBECONFIG, as the docs run it."""
    found = listed(kube_api, REPO / 'inventory' / 'cluster' / 'k8s_nodes.yml')
    ours = set(nodes.values())
    assert members(found, 'kube_api') == {'localhost'}
    assert members(found, 'gpu_nodes') & ours == {nodes['ours'], nodes['nfd'], nodes['new']}, 'the examined node without GPU is left out'
    assert members(found, 'os_debian_gnu_linux_12_bookworm') & ours == {nodes['nfd'], nodes['new']}
    assert members(found, 'os_debian_gnu_linux_forky_sid') & ours == {nodes['ours']}
    assert members(found, 'kernel_6_18_44_fc_v595') & ours == members(found, 'runtime_containerd') & ours == members(found, 'gpu_nodes') & ours
    assert {'os_debian_gnu_linux_12_bookworm', 'kernel_6_18_44_fc_v595', 'runtime_containerd'} <= set(found['gpu_nodes']['children'])
    hostvars = found['_meta']['hostvars']
    new = hostvars[nodes['new']]
    assert new['ansible_host'] == '192.0.2.13' and new['gpu_node_labels_node_name'] == nodes['new']
    assert new['ansible_user'] == 'ops' and new['ansible_become'] is True, 'the example composes the SSH user'
    assert new['k8s_node']['examined'] is False and new['k8s_node']['container_runtime_version'] == '1.6.20~ds1'
    assert hostvars[nodes['ours']]['k8s_node']['nvidia'] is True and hostvars['localhost']['ansible_connection'] == 'local'


def test_graph_shows_the_groups(kube_api, nodes, tmp_path):
    result = inventory(kube_api, config_file(tmp_path, f'plugin: gpuops.gpu_operator.k8s_nodes\nkubeconfig: {kube_api.kubeconfig}\n'), '--graph')
    assert result.returncode == 0, result.stderr
    lines = [line.strip(' |-') for line in result.stdout.splitlines()]
    assert '@gpu_nodes:' in lines and '@kube_api:' in lines and '@os_debian_gnu_linux_forky_sid:' in lines
    assert nodes['new'] in lines and nodes['cpu'] not in lines


def test_constructed_options_and_another_api_host(kube_api, nodes, tmp_path):
    """What the lab's event-driven test uses: the podman connection to a container named like its Node."""
    config = config_file(tmp_path, f'''\
plugin: gpuops.gpu_operator.k8s_nodes
kubeconfig: {kube_api.kubeconfig}
api_host: bastion-1
compose:
  ansible_connection: "'containers.podman.podman'"
  ansible_host: inventory_hostname
keyed_groups:
  - key: k8s_node.labels['nvidia.com/gpu.product'] | default('unknown')
    prefix: product
''')
    found = listed(kube_api, config)
    assert members(found, 'kube_api') == {'bastion-1'} and 'bastion-1' not in found['_meta']['hostvars']
    ours = found['_meta']['hostvars'][nodes['ours']]
    assert ours['ansible_host'] == nodes['ours'] and ours['ansible_connection'] == 'containers.podman.podman'
    assert nodes['ours'] in members(found, 'product_NVIDIA_H200') and nodes['new'] in members(found, 'product_unknown')


def test_cache_serves_the_last_listing_until_flushed(kube_api, nodes, tmp_path):
    config = config_file(tmp_path, f'''\
plugin: gpuops.gpu_operator.k8s_nodes
kubeconfig: {kube_api.kubeconfig}
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: {tmp_path / 'cache'}
cache_timeout: 600
''')
    first = listed(kube_api, config)
    late = unique('gpuops-inv-late')
    register_node(kube_api, late, info=BOOKWORM)
    try:
        assert late not in members(listed(kube_api, config), 'gpu_nodes'), 'served from the cache'
        assert members(listed(kube_api, config), 'gpu_nodes') == members(first, 'gpu_nodes')
        assert late in members(listed(kube_api, config, '--flush-cache'), 'gpu_nodes')
    finally:
        delete_node(kube_api, late)


@pytest.mark.parametrize('kubeconfig, message', [
    ('/nonexistent/kubeconfig', 'cannot load kubeconfig /nonexistent/kubeconfig'),
    ('{tmp}', 'cannot load kubeconfig {tmp}'),  # a directory
    ('{tmp}/garbage', 'cannot load kubeconfig {tmp}/garbage'),  # not a kubeconfig
])
def test_a_bad_kubeconfig_fails_clearly(kube_api, tmp_path, kubeconfig, message):
    (tmp_path / 'garbage').write_text('just: [some, yaml]\n')
    config = config_file(tmp_path, f'plugin: gpuops.gpu_operator.k8s_nodes\nkubeconfig: {kubeconfig.format(tmp=tmp_path)}\n')
    result = inventory(kube_api, config, '--list', env={'ANSIBLE_INVENTORY_UNPARSED_FAILED': 'true'})
    assert result.returncode != 0
    assert 'gpuops.gpu_operator.k8s_nodes: ' + message.format(tmp=tmp_path) in result.stderr
    assert 'Traceback' not in result.stderr


def test_an_unreachable_api_fails_clearly(kube_api, tmp_path):
    config = config_file(tmp_path, 'plugin: gpuops.gpu_operator.k8s_nodes\nhost: http://127.0.0.1:9\n')
    result = inventory(kube_api, config, '--list', env={'ANSIBLE_INVENTORY_UNPARSED_FAILED': 'true', 'K8S_AUTH_KUBECONFIG': ''})
    assert result.returncode != 0 and 'cannot list Node : the Kubernetes API at http://127.0.0.1:9 is unreachable' in result.stderr


def test_the_api_host_runs_tasks_with_the_playbook_python(kube_api, nodes, tmp_path):
    """localhost's ansible_python_interpreter is a template ({{ ansible_playbook_python }}): it must be trusted to run."""
    config = config_file(tmp_path, f'plugin: gpuops.gpu_operator.k8s_nodes\nkubeconfig: {kube_api.kubeconfig}\n')
    environment = dict(kube_api.env(), ANSIBLE_NOCOLOR='1')
    environment.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible'), '-i', str(config), 'kube_api', '-m', 'ansible.builtin.ping'],
                            env=environment, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)
    assert result.returncode == 0 and 'localhost | SUCCESS' in result.stdout, result.stdout + result.stderr
