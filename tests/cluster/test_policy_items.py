"""A ClusterPolicy as a user brings it, in one ansible-playbook run of the real roles against the API (issue 24).

The inventory is YAML with the ClusterPolicy in its group variables, as a user writes it:
- NVIDIA's documented time-slicing flow (tests/fixtures/nvidia-docs/SOURCE.md): its ConfigMap, unchanged, created in the
  operator namespace beforehand (kubectl create), and named by devicePlugin.config without data. Its config says
  flags.migStrategy none under the default mig.strategy single; the node labels stage reads the ConfigMap and labels the
  node as the device plugin then advertises it (4 replicas), and the ConfigMap stays the user's.
- a ConfigMap an earlier run made from a config section's data (labelled gpuops.io/config-of) that the policy no longer
  names is removed; a user's ConfigMap beside it, and one made from data now, stay.
- driver.enabled false (the Operator's pre-installed driver) and toolkit.enabled false (a pre-installed toolkit) drive
  the node roles, whose variables are not set in the inventory: the driver of the H200 capture is validated only, the
  container toolkit stage leaves the node alone (run here in check mode, so that it could not change this machine).
The GPU node is this machine, reached locally, its GPU the H200 capture; its Node is a throw-away one.
"""
import json
import os
import subprocess
import sys

import kubernetes
import pytest
import yaml

from tests.cluster.helpers import GPUS, REPO, delete_node, nvidia_smi_simulator, register_node, unique
from tests.cluster.test_parity import cleanup

NVIDIA_TIME_SLICING = REPO / 'tests' / 'fixtures' / 'nvidia-docs' / 'time-slicing-config-all.yaml'
H200 = GPUS / 'h200-x1'
MANAGED_BY = {'app.kubernetes.io/managed-by': 'gpuops.gpu_operator'}
PLAYBOOK = [
    {'hosts': 'kube_api', 'gather_facts': False, 'roles': ['gpuops.gpu_operator.gpu_cluster_base']},
    {'hosts': 'gpu_nodes', 'gather_facts': False, 'tasks': [
        {'name': 'Label the node', 'ansible.builtin.import_role': {'name': 'gpuops.gpu_operator.gpu_node_labels'}},
        {'name': 'Install or validate the driver', 'ansible.builtin.import_role': {'name': 'gpuops.gpu_operator.nvidia_driver'}},
        # Check mode: were toolkit.enabled=false not honoured, the stage would still change nothing on this machine.
        {'name': 'Set up the container toolkit', 'ansible.builtin.import_role': {'name': 'gpuops.gpu_operator.container_toolkit'},
         'check_mode': True},
        {'name': 'Show the node roles\' settings', 'ansible.builtin.debug': {'msg': (
            'settings: nvidia_driver_enabled={{ nvidia_driver_enabled }} nvidia_driver_version={{ nvidia_driver_version }} '
            'nvidia_driver_kernel_module_type={{ nvidia_driver_kernel_module_type }} container_toolkit_enabled={{ container_toolkit_enabled }} '
            'container_toolkit_set_as_default={{ container_toolkit_set_as_default }} '
            'container_toolkit_containerd_config={{ container_toolkit_containerd_config }}')}},
    ]},
    {'hosts': 'kube_api', 'gather_facts': False, 'roles': ['gpuops.gpu_operator.gpu_cluster_operands']},
]


@pytest.fixture(name='cluster')
def fixture_cluster(kube_api):
    """(operator namespace, GPU Node name): the namespace made beforehand as NVIDIA's steps make it, the Node registered."""
    namespace, node = unique('gpuops-items'), unique('gpu-h200')
    kubernetes.client.CoreV1Api(kube_api.api_client).create_namespace({'metadata': {'name': namespace}})
    register_node(kube_api, node)
    try:
        yield namespace, node
    finally:
        delete_node(kube_api, node)
        cleanup(kube_api, namespace)


def config_map(core, namespace, name):
    try:
        return core.read_namespaced_config_map(name, namespace)
    except kubernetes.client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
        return None


def test_a_users_cluster_policy_drives_every_stage(kube_api, cluster, tmp_path):
    namespace, node = cluster
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    nvidia = yaml.safe_load(NVIDIA_TIME_SLICING.read_text())
    core.create_namespaced_config_map(namespace, nvidia)  # kubectl create -n <namespace> -f time-slicing-config-all.yaml
    earlier = {'metadata': {'name': 'plugin-configs-before', 'labels': dict(MANAGED_BY, **{'gpuops.io/config-of': 'devicePlugin.config'})},
               'data': {'ts': 'version: v1\n'}}
    core.create_namespaced_config_map(namespace, earlier)  # as a run that named it in devicePlugin.config.data left it
    core.create_namespaced_config_map(namespace, {'metadata': {'name': 'team-notes', 'labels': dict(MANAGED_BY)}, 'data': {'a': 'b'}})

    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    group_vars = {
        'gpu_cluster_base_namespace': namespace, 'gpu_cluster_operands_namespace': namespace,
        'gpu_operator_policy': {
            'driver': {'enabled': False},
            'toolkit': {'enabled': False, 'env': [{'name': 'CONTAINERD_SET_AS_DEFAULT', 'value': 'false'},
                                                  {'name': 'CONTAINERD_CONFIG', 'value': '/etc/containerd/config.d/gpu.toml'}]},
            # NVIDIA's `kubectl patch clusterpolicies.nvidia.com/cluster-policy` of the time-slicing page.
            'devicePlugin': {'config': {'name': 'time-slicing-config-all', 'default': 'any'}},
            'dcgmExporter': {'config': {'name': 'dcgm-metrics', 'data': 'DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n'}},
        },
    }
    gpu_node = {'gpu_node_labels_node_name': node, 'gpu_node_labels_sysfs_root': str(H200 / 'sys'),
                'gpu_node_labels_procfs_root': str(H200 / 'proc'), 'gpu_node_labels_nvidia_smi': nvidia_smi_simulator(tmp_path / 'nvidia-smi', H200),
                'nvidia_driver_sysfs_root': str(H200 / 'sys'), 'nvidia_driver_procfs_root': str(H200 / 'proc'),
                'nvidia_driver_nvidia_smi': str(tmp_path / 'nvidia-smi'), 'nvidia_driver_validations_dir': str(tmp_path / 'validations')}
    (tmp_path / 'group_vars').mkdir()
    (tmp_path / 'group_vars' / 'all.yml').write_text(yaml.safe_dump(group_vars, sort_keys=False))
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'children': {
        'kube_api': {'hosts': {'api': local}}, 'gpu_nodes': {'hosts': {'gpu-a': dict(local, **gpu_node)}}}}}, sort_keys=False))
    (tmp_path / 'site.yml').write_text(json.dumps(PLAYBOOK))
    env = dict(kube_api.env(), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_NOCOLOR='1')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(tmp_path / 'hosts.yml'),
                             str(tmp_path / 'site.yml')], env=env, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    out = result.stdout + result.stderr
    (tmp_path / 'output.txt').write_text(out)
    assert result.returncode == 0, out[-8000:]

    # NVIDIA's time-slicing config, read from its ConfigMap: the node is labelled as the plugin advertises it.
    labels = core.read_node(node).metadata.labels
    assert labels['nvidia.com/gpu.replicas'] == '4' and labels['nvidia.com/gpu.sharing-strategy'] == 'time-slicing', labels
    assert labels['nvidia.com/gpu.product'].endswith('-SHARED'), labels
    plugin = kubernetes.client.AppsV1Api(kube_api.api_client).read_namespaced_daemon_set('nvidia-device-plugin-daemonset', namespace)
    assert {'name': 'time-slicing-config-all', 'config_map': 'time-slicing-config-all'} in [
        {'name': volume.name, 'config_map': volume.config_map.name} for volume in plugin.spec.template.spec.volumes if volume.config_map]
    # The user's ConfigMaps stay as they were; the one an earlier run made and the policy no longer names is gone.
    kept = config_map(core, namespace, 'time-slicing-config-all')
    assert kept.data == nvidia['data'] and not (kept.metadata.labels or {}), 'never written'
    assert config_map(core, namespace, 'team-notes').data == {'a': 'b'}
    assert config_map(core, namespace, 'plugin-configs-before') is None
    assert config_map(core, namespace, 'dcgm-metrics').metadata.labels['gpuops.io/config-of'] == 'dcgmExporter.config'

    # The node roles follow the policy: the driver is validated, the toolkit stage reads nothing on the node.
    words = ' '.join(out.split())
    assert ('settings: nvidia_driver_enabled=False nvidia_driver_version= nvidia_driver_kernel_module_type=auto container_toolkit_enabled=False '
            'container_toolkit_set_as_default=False container_toolkit_containerd_config=/etc/containerd/config.d/gpu.toml') in words, out
    assert (tmp_path / 'validations' / 'driver-ready').is_file()
    assert "container_toolkit : Read the node and pick its container runtime] ***\nskipping: [gpu-a]" in out, out
    assert "container_toolkit : Read the node's container runtime, its services" not in out, 'nothing read on the node'
