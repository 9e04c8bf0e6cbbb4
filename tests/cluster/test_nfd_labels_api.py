"""nfd_labels against the API: apply, idempotence, stale and foreign labels, absent, check mode, errors, and one ansible-playbook run.

On the stand-in a throw-away Node is created; on a real cluster (KUBECONFIG set) the first existing Node is
used and its labels and annotations are restored at the end.
"""
import json
import os
import subprocess
import sys
import textwrap

import kubernetes
import pytest

from ansible_collections.gpuops.gpu_operator.plugins.modules import nfd_labels
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.node_api import OWNED_ANNOTATION
from tests.cluster.helpers import REPO, unique
from tests.module_runner import run_module

GPUS = REPO / 'tests' / 'fixtures' / 'gpus'
FOREIGN = {'gpuops.test/foreign': 'keep-me'}


def fixture_args(fixture):
    # No path of the machine running the tests (its nvidia_driver record) is read.
    return dict(sysfs_root=str(GPUS / fixture / 'sys'), procfs_root=str(GPUS / fixture / 'proc'), nvidia_smi=str(GPUS / 'gpuops-lab-nvidia-smi'),
                os_release_path=str(GPUS / 'no-such-os-release'), driver_record_file=str(GPUS / 'no-such-record'))


@pytest.fixture
def node(kube_api):
    """(name, CoreV1Api): a Node to label, restored or deleted afterwards."""
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    if kube_api.real:
        existing = core.list_node().items[0]
        name, labels, annotations = existing.metadata.name, dict(existing.metadata.labels or {}), dict(existing.metadata.annotations or {})
        core.patch_node(name, {'metadata': {'labels': FOREIGN}})
    else:
        name = unique('gpuops-nfd')
        core.create_node({'metadata': {'name': name, 'labels': dict(FOREIGN, **{'kubernetes.io/hostname': name})}})
    yield name, core
    if kube_api.real:
        now = core.read_node(name).metadata
        restore = {'labels': {key: labels.get(key) for key in set(now.labels or {}) | set(labels)},
                   'annotations': {key: annotations.get(key) for key in set(now.annotations or {}) | set(annotations)}}
        core.patch_node(name, {'metadata': restore}, _content_type='application/merge-patch+json')
    else:
        core.delete_node(name)


def run(capsys, monkeypatch, fixture, failed=False, **args):
    """The module in-process against the API; nvidia-smi is the lab simulator serving `fixture`."""
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', str(GPUS / fixture))
    args = dict(fixture_args(fixture), **args)
    return run_module(capsys, nfd_labels.main, args, failed=failed)


def node_meta(core, name):
    meta = core.read_node(name).metadata
    return dict(meta.labels or {}), dict(meta.annotations or {}), meta.resource_version


def test_apply_idempotence_stale_foreign_absent(kube_api, node, capsys, monkeypatch):
    name, core = node
    auth = {'kubeconfig': kube_api.kubeconfig}
    first = run(capsys, monkeypatch, 'a100-sxm4-80gb-mig', node_name=name, mig_strategy='single', **auth)
    assert first['changed'] is True and 'failed' not in first
    labels, annotations, version = node_meta(core, name)
    assert labels['nvidia.com/gpu.product'] == 'NVIDIA-A100-SXM4-80GB' and labels['nvidia.com/mig.strategy'] == 'single'
    assert labels['nvidia.com/gpu.deploy.mig-manager'] == 'true' and labels['gpuops.test/foreign'] == 'keep-me'
    assert set(first['added']) == set(first['labels']) and sorted(json.loads(annotations[OWNED_ANNOTATION])) == sorted(first['labels'])

    again = run(capsys, monkeypatch, 'a100-sxm4-80gb-mig', node_name=name, mig_strategy='single', **auth)
    assert again['changed'] is False and again['added'] == again['updated'] == again['removed'] == []
    assert node_meta(core, name)[2] == version, 'an unchanged run must not write'

    # Someone turns the driver component off on this node; the node then carries a T4 instead: our stale labels go,
    # the value they set stays.
    core.patch_node(name, {'metadata': {'labels': {'nvidia.com/gpu.deploy.driver': 'false'}}},
                    _content_type='application/merge-patch+json')
    swapped = run(capsys, monkeypatch, 't4', node_name=name, **auth)
    labels = node_meta(core, name)[0]
    assert {'nvidia.com/mig.strategy', 'nvidia.com/gpu.deploy.mig-manager'} <= set(swapped['removed'])
    assert 'nvidia.com/mig.strategy' not in labels and labels['nvidia.com/gpu.product'] == 'Tesla-T4'
    assert labels['nvidia.com/gpu.deploy.driver'] == 'false' and labels['gpuops.test/foreign'] == 'keep-me'

    checked = run(capsys, monkeypatch, 't4', node_name=name, state='absent', _ansible_check_mode=True, **auth)
    assert checked['changed'] is True and node_meta(core, name)[0] == labels, 'check mode must not write'

    gone = run(capsys, monkeypatch, 't4', node_name=name, state='absent', **auth)
    labels, annotations = node_meta(core, name)[:2]
    assert gone['changed'] is True and OWNED_ANNOTATION not in annotations
    assert not any(key.startswith(('nvidia.com/', 'feature.node.kubernetes.io/pci-10de')) for key in labels if key != 'nvidia.com/gpu.deploy.driver')
    assert labels['nvidia.com/gpu.deploy.driver'] == 'false' and labels['gpuops.test/foreign'] == 'keep-me'


def test_a_node_it_sets_no_label_on_is_marked_examined(kube_api, node, capsys, monkeypatch):
    """A node without a GPU whose NFD labels NFD sets gets no label from the role, but the annotation, as {}: it marks
    the Node examined (the k8s_nodes inventory then leaves it out). state=absent removes it again."""
    name, core = node
    auth = {'kubeconfig': kube_api.kubeconfig}
    first = run(capsys, monkeypatch, 't4', node_name=name, labels={}, **auth)
    labels, annotations = node_meta(core, name)[:2]
    assert first['changed'] is True and first['added'] == [] and annotations[OWNED_ANNOTATION] == '{}'
    assert labels['gpuops.test/foreign'] == 'keep-me'
    assert run(capsys, monkeypatch, 't4', node_name=name, labels={}, **auth)['changed'] is False
    gone = run(capsys, monkeypatch, 't4', node_name=name, labels={}, state='absent', **auth)
    assert gone['changed'] is True and OWNED_ANNOTATION not in node_meta(core, name)[1]


def test_a_deploy_value_the_module_set_follows_the_node(kube_api, node, capsys, monkeypatch):
    """The A100 capture shows its driver loaded (pre-installed); with the T4 capture, none is: the label the module
    set goes to true, and state=absent removes it."""
    name, core = node
    auth = {'kubeconfig': kube_api.kubeconfig}
    run(capsys, monkeypatch, 'a100-sxm4-80gb-mig', node_name=name, **auth)
    assert node_meta(core, name)[0]['nvidia.com/gpu.deploy.driver'] == 'pre-installed'
    swapped = run(capsys, monkeypatch, 't4', node_name=name, **auth)
    assert 'nvidia.com/gpu.deploy.driver' in swapped['updated'] and node_meta(core, name)[0]['nvidia.com/gpu.deploy.driver'] == 'true'
    run(capsys, monkeypatch, 't4', node_name=name, state='absent', **auth)
    assert 'nvidia.com/gpu.deploy.driver' not in node_meta(core, name)[0]


def test_the_workload_the_node_is_labelled_with_decides_its_deploy_labels(kube_api, node, capsys, monkeypatch):
    """sandboxWorkloads.enabled: the admin's nvidia.com/gpu.workload.config on the Node decides the state labels, read where
    they are applied (SOURCE: GPU Operator v26.7.0 controllers/state_manager.go gpuStateLabels); off, every node is a
    container node."""
    name, core = node
    auth = {'kubeconfig': kube_api.kubeconfig}
    sandbox = {'enabled': True, 'defaultWorkload': 'container', 'mode': 'kubevirt'}
    core.patch_node(name, {'metadata': {'labels': {'nvidia.com/gpu.workload.config': 'vm-passthrough'}}})
    first = run(capsys, monkeypatch, 't4', node_name=name, sandbox_workloads=sandbox, **auth)
    labels = node_meta(core, name)[0]
    deploy = sorted(key for key in labels if key.startswith('nvidia.com/gpu.deploy.'))
    assert first['workload'] == 'vm-passthrough' and deploy == ['nvidia.com/gpu.deploy.' + key for key in (
        'cc-manager', 'client', 'kata-manager', 'sandbox-device-plugin', 'sandbox-validator', 'vfio-manager')]
    assert labels['nvidia.com/gpu.product'] == 'Tesla-T4' and labels['nvidia.com/gpu.workload.config'] == 'vm-passthrough'
    back = run(capsys, monkeypatch, 't4', node_name=name, **auth)
    labels = node_meta(core, name)[0]
    assert back['workload'] == 'container' and 'nvidia.com/gpu.deploy.vfio-manager' in back['removed']
    assert labels['nvidia.com/gpu.deploy.device-plugin'] == 'true' and 'nvidia.com/gpu.deploy.sandbox-validator' not in labels


@pytest.mark.parametrize('state', ['absent', 'present'])
def test_a_damaged_ownership_annotation_touches_nothing(kube_api, node, capsys, monkeypatch, state):
    """Issue #28 item 8: with the record of the labels it set unreadable, absent removed none and dropped the record,
    leaving every label it set for good. Now neither state changes the Node, alone or with nodes:, and both say why."""
    name, core = node
    auth = {'kubeconfig': kube_api.kubeconfig}
    applied = run(capsys, monkeypatch, 't4', node_name=name, **auth)
    damaged = node_meta(core, name)[1][OWNED_ANNOTATION][:-1]  # cut short: no longer JSON
    core.patch_node(name, {'metadata': {'annotations': {OWNED_ANNOTATION: damaged}}}, _content_type='application/merge-patch+json')
    before = node_meta(core, name)
    result = run(capsys, monkeypatch, 't4', node_name=name, state=state, failed=True, **auth)
    assert result['msg'].startswith('Node %s: annotation %s is damaged: it is not JSON' % (name, OWNED_ANNOTATION))
    assert 'exception' not in result and result['changed'] is False
    many = run(capsys, monkeypatch, 't4', nodes=[dict(name=name, labels=applied['labels'])], state=state, continue_on_error=True, **auth)
    assert many['failed_nodes'] == [name] and many['nodes'][name]['msg'] == result['msg'] and many['changed'] is False
    assert node_meta(core, name) == before and set(applied['labels']) <= set(before[0])


def test_diff_shows_labels_before_and_after(kube_api, node, capsys, monkeypatch):
    name, core = node
    result = run(capsys, monkeypatch, 't4', node_name=name, kubeconfig=kube_api.kubeconfig, _ansible_diff=True, _ansible_check_mode=True)
    [node_diff] = result['diff']
    assert node_diff['before'] == node_meta(core, name)[0] and node_diff['after']['nvidia.com/gpu.product'] == 'Tesla-T4'
    assert 'nvidia.com/gpu.product' not in node_meta(core, name)[0]


def test_missing_node_and_unreachable_api_fail_clearly(kube_api, capsys, monkeypatch):
    missing = unique('gpuops-absent-node')
    result = run(capsys, monkeypatch, 't4', node_name=missing, kubeconfig=kube_api.kubeconfig, failed=True)
    assert result['failed'] is True and result['msg'].startswith('cannot get Node %s: API answered 404' % missing)
    result = run(capsys, monkeypatch, 't4', node_name='n1', host='http://127.0.0.1:1', failed=True)
    assert result['failed'] is True and result['msg'].startswith('cannot get Node n1: the Kubernetes API at http://127.0.0.1:1 is unreachable')


PLAYBOOK = textwrap.dedent('''\
    - hosts: localhost
      gather_facts: false
      tasks:
        - name: Compute on the node
          gpuops.gpu_operator.nfd_labels:
            apply: false
            sysfs_root: "{{ fixtures }}/h100-sxm5-80gb-x1/sys"
            procfs_root: "{{ fixtures }}/h100-sxm5-80gb-x1/proc"
            nvidia_smi: "{{ fixtures }}/gpuops-lab-nvidia-smi"
          register: computed
        - name: Apply from the API host
          gpuops.gpu_operator.nfd_labels:
            node_name: "{{ node }}"
            labels: "{{ computed.labels }}"
          register: applied
        - name: The Node carries the H100 labels
          kubernetes.core.k8s_info:
            kind: Node
            name: "{{ node }}"
          register: found
        - name: Check
          ansible.builtin.assert:
            that:
              - found.resources[0].metadata.labels['nvidia.com/gpu.family'] == 'hopper'
              - found.resources[0].metadata.labels['nvidia.com/gpu.compute.major'] == '9'
              - applied.added | length == computed.labels | length
''')


def test_playbook_computes_on_the_node_and_applies_from_the_api_host(kube_api, node, tmp_path):
    name = node[0]
    playbook = tmp_path / 'nfd.yml'
    playbook.write_text(PLAYBOOK)
    env = dict(kube_api.env(), GPUOPS_LAB_GPU_FIXTURE=str(GPUS / 'h100-sxm5-80gb-x1'), ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, str(playbook), '-e', f'node={name}', '-e', f'fixtures={GPUS}', '-e', f'ansible_python_interpreter={sys.executable}'],
                            env=env, capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


ROLE_PLAYBOOK = textwrap.dedent('''\
    - hosts: gpu_nodes
      gather_facts: false
      roles:
        - role: gpuops.gpu_operator.gpu_node_labels
''')


def run_role(kube_api, tmp_path, name, **role_vars):
    """The role on one local 'GPU node' (the T4 fixture) with localhost as the API host; returns the recap's changed count."""
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {'children': {
        'kube_api': {'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}},
        'gpu_nodes': {'hosts': {'gpu-node': dict({
            'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
            'gpu_node_labels_node_name': name,
            'gpu_node_labels_sysfs_root': str(GPUS / 't4' / 'sys'),
            'gpu_node_labels_procfs_root': str(GPUS / 't4' / 'proc'),
            'gpu_node_labels_nvidia_smi': str(GPUS / 'gpuops-lab-nvidia-smi')}, **role_vars)}}}}}))
    playbook = tmp_path / 'role.yml'
    playbook.write_text(ROLE_PLAYBOOK)
    env = dict(kube_api.env(), GPUOPS_LAB_GPU_FIXTURE=str(GPUS / 't4'))
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, '-i', str(inventory), str(playbook)], env=env, capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return int(result.stdout.rsplit('changed=', 1)[1].split()[0])


def test_role_labels_the_node_idempotently_and_removes_its_labels(kube_api, node, tmp_path):
    name, core = node
    assert run_role(kube_api, tmp_path, name) == 1
    labels = node_meta(core, name)[0]
    assert labels['nvidia.com/gpu.product'] == 'Tesla-T4' and labels['nvidia.com/gpu.deploy.driver'] == 'true'
    assert run_role(kube_api, tmp_path, name) == 0
    # gfd.enabled without NFD, deploy.driver given: GFD's Pods cannot publish the GFD labels (v0.20 does through NFD), so the
    # role keeps writing them (test_role_leaves_feature_labels_to_nfd: with NFD they go); the deploy label changes.
    assert run_role(kube_api, tmp_path, name, gpu_operator_policy={'gfd': {'enabled': True}},
                    gpu_node_labels_deploy={'driver': 'pre-installed'}) == 1
    labels = node_meta(core, name)[0]
    assert labels['nvidia.com/gpu.product'] == 'Tesla-T4' and labels['nvidia.com/mig.capable'] == 'false'
    assert labels['nvidia.com/gpu.present'] == 'true' and labels['nvidia.com/gpu.deploy.driver'] == 'pre-installed'
    assert labels['feature.node.kubernetes.io/pci-10de.present'] == 'true'
    assert run_role(kube_api, tmp_path, name, gpu_node_labels_state='absent') == 1
    labels, annotations = node_meta(core, name)[:2]
    assert not any(key.startswith(('nvidia.com/', 'feature.node.kubernetes.io/pci-')) for key in labels) and labels['gpuops.test/foreign'] == 'keep-me'
    assert OWNED_ANNOTATION not in annotations


def test_role_gives_the_node_the_deploy_labels_of_its_workload(kube_api, node, tmp_path):
    """gpu_operator_policy.sandboxWorkloads as an inventory gives it: with enabled and defaultWorkload vm-passthrough, a Node
    without nvidia.com/gpu.workload.config gets the vm-passthrough state labels (SOURCE: GPU Operator v26.7.0
    controllers/state_manager.go gpuStateLabels, getWorkloadConfig); the admin's label vm-vgpu then changes them."""
    name, core = node
    sandbox = {'sandboxWorkloads': {'enabled': True, 'defaultWorkload': 'vm-passthrough'}}
    assert run_role(kube_api, tmp_path, name, gpu_operator_policy=sandbox) == 1
    labels = node_meta(core, name)[0]
    assert labels['nvidia.com/gpu.deploy.vfio-manager'] == 'true' and 'nvidia.com/gpu.deploy.device-plugin' not in labels
    core.patch_node(name, {'metadata': {'labels': {'nvidia.com/gpu.workload.config': 'vm-vgpu'}}})
    assert run_role(kube_api, tmp_path, name, gpu_operator_policy=sandbox) == 1
    labels = node_meta(core, name)[0]
    assert labels['nvidia.com/gpu.deploy.vgpu-device-manager'] == 'true' and 'nvidia.com/gpu.deploy.vfio-manager' not in labels


def test_role_leaves_feature_labels_to_nfd(kube_api, node, tmp_path):
    """nfd.enabled (gpu_operator_nfd, the chart's nfd values, as an inventory gives them): NFD sets its own feature.node
    labels, the role feeds it the GFD labels through features.d and applies the rest; with the ClusterPolicy's gfd.enabled
    too, GFD's Pods publish the GFD labels through NFD: the role leaves them out (gpu.product, cuda.*, mig.capable, ... go)
    and only the Operator's stay."""
    name, core = node
    features = tmp_path / 'features.d' / 'gpuops'
    run_role(kube_api, tmp_path, name, gpu_operator_nfd={'enabled': True}, gpu_node_labels_features_d=str(features))
    labels = node_meta(core, name)[0]
    assert not any(key.startswith('feature.node.kubernetes.io/pci-') for key in labels), labels
    assert labels['nvidia.com/gpu.product'] == 'Tesla-T4' and labels['nvidia.com/gpu.present'] == 'true'
    assert 'nvidia.com/gpu.product=Tesla-T4' in features.read_text().splitlines()
    run_role(kube_api, tmp_path, name, gpu_operator_nfd={'enabled': True}, gpu_operator_policy={'gfd': {'enabled': True}},
             gpu_node_labels_features_d=str(features))
    labels = node_meta(core, name)[0]
    assert {key for key in labels if key.startswith(('nvidia.com/', 'feature.node.kubernetes.io/pci-'))} == {
        'nvidia.com/gpu.present', *(key for key in labels if key.startswith('nvidia.com/gpu.deploy.'))}
    assert labels['nvidia.com/gpu.deploy.driver'] == 'true'
    run_role(kube_api, tmp_path, name, gpu_node_labels_state='absent', gpu_node_labels_features_d=str(features))
