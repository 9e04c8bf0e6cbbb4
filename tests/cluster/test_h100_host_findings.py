"""What the run on a real H100 host found (tests/fixtures/gpus/h100-x1/SOURCE.md), by ansible-playbook with a YAML inventory.

site.yml and doctor.yml against a cluster without the operator namespace, as on that host: a first `--check --diff` of a
fresh cluster failed in the first play (its namespaced objects could not be dry-run before the namespace existed); with
the only GPU node stopped the playbook ended after the node play, with no summary and no ClusterPolicy status; the doctor
called a node unreachable when one of its check tasks had failed. On the stand-in each test gets one of its own, fresh
(no namespace, no ClusterPolicy CRD, one Node `vm` as on that host); with KUBECONFIG set they run against that cluster,
in a namespace nobody uses. The GPU node is this machine, reached locally; the tests make its stages stop before they
change anything on it.
"""
import json
import os
import re
import subprocess
import sys

import kubernetes
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tests.cluster.helpers import GPUS, REPO, delete_node, fixture_fresh, nvidia_smi_simulator, register_node, unique  # noqa: F401 pylint: disable=unused-import
from tests.cluster.test_cluster_roles import leftovers

POLICY_CRD = 'clusterpolicies.nvidia.com'


def write_inventory(tmp_path, namespace, gpu_nodes=None):
    """kube_api on the controller; the GPU nodes (reached locally) with their host variables; the settings as group variables."""
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    inventory = {'all': {
        'vars': {'gpu_cluster_base_namespace': namespace, 'gpu_cluster_operands_namespace': namespace,
                 'gpu_cluster_validator_namespace': namespace,
                 'gpu_cluster_base_registry_credentials': [{'name': 'mirror-pull', 'registry': 'mirror.example:5000',
                                                            'username': 'puller', 'password': 'not-a-secret'}]},
        'children': {
            'kube_api': {'hosts': {'api': local}},
            'gpu_nodes': {'hosts': gpu_nodes or {}, 'vars': local},
        }}}
    path = tmp_path / 'inventory.yml'
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def run_site(api, tmp_path, inventory, *args):
    """ansible-playbook site.yml; (returncode, output)."""
    env = dict(api.env(), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_NOCOLOR='1', ANSIBLE_DEPRECATION_WARNINGS='false')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, '-i', str(inventory), str(REPO / 'playbooks' / 'site.yml'), *args],
                            env=env, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    (tmp_path / 'output.txt').write_text(result.stdout + result.stderr)
    return result.returncode, result.stdout + result.stderr


def crd_installed(api):
    try:
        kubernetes.client.ApiextensionsV1Api(api.api_client).read_custom_resource_definition(POLICY_CRD)
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False
    return True


def stored(api):
    """Every object the stand-in holds, with its version (a dry-run leaves them all as they were); None on a real cluster."""
    if api.standin is None:
        return None
    return sorted((str(key), len(obj.history), obj.deleted) for key, obj in api.standin.objects.items())


def test_first_check_diff_of_a_fresh_cluster_shows_what_it_would_create(fresh, tmp_path):
    api, namespace = fresh
    policy_crd = crd_installed(api)
    before, objects_before = leftovers(api, namespace), stored(api)
    code, out = run_site(api, tmp_path, write_inventory(tmp_path, namespace), '--check', '--diff')
    assert code == 0, out
    # The YAML callback wraps long lines: the words are compared without the line breaks.
    words = ' '.join(out.split())
    # Each namespaced object of the three cluster roles is named as it would be created, with the object itself (--diff).
    would = set(re.findall(r"\(item=(\S+ \S+)\) => msg: - '?\1 would be created", words))
    assert {f'ServiceAccount {namespace}/nvidia-device-plugin', f'DaemonSet {namespace}/nvidia-device-plugin-daemonset',
            f'ConfigMap {namespace}/default-mig-parted-config', f'Service {namespace}/nvidia-dcgm-exporter',
            f'DaemonSet {namespace}/nvidia-operator-validator', f'RoleBinding {namespace}/nvidia-operator-validator'} <= would, out
    assert f'(not dry-run by the API: namespace {namespace} does not exist yet)' in words, out
    assert re.search(r'-\s+apiVersion: apps/v1\s+kind: DaemonSet', out), 'the object is shown with --diff'
    # The ClusterPolicy can be dry-run only where its CRD is installed already (never on the fresh stand-in).
    assert ('ClusterPolicy cluster-policy' in would) is not policy_crd, out
    assert not any(name.startswith(('ClusterRole ', 'RuntimeClass ', 'Namespace ')) for name in would), 'cluster-scoped: dry-run by the API'
    # Those the API dry-ran are shown by ansible-core's default callback, each with its diff (gpuops.gpu_operator.k8s_objects
    # lifts kubernetes.core.k8s's per-object diffs to the task's diff, which the callback prints).
    for name in ('RuntimeClass nvidia', f'Namespace {namespace}', 'ClusterRole nvidia-device-plugin'):
        assert re.search(r'^--- before: apply %s\n\+\+\+ after: apply %s\n' % (name, name), out, re.M), (name, out)
    assert re.search(r'^\+\s+"?handler"?: nvidia$', out, re.M), 'the RuntimeClass itself is in its diff'
    # The pull Secret is named, never shown.
    assert f'Secret {namespace}/mirror-pull would be created' in words and 'not-a-secret' not in out, out
    # Nothing was created or changed.
    assert leftovers(api, namespace) == before
    assert stored(api) == objects_before
    assert not kubernetes.client.CoreV1Api(api.api_client).list_namespace(field_selector=f'metadata.name={namespace}').items
    assert crd_installed(api) is policy_crd


def policy_status(api):
    return kubernetes.client.CustomObjectsApi(api.api_client).get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')['status']


def test_the_only_gpu_node_stopping_still_gets_the_summary_and_the_status(fresh, tmp_path):
    """The node's first stage fails (its sysfs_root does not exist: the labels cannot be computed, and nothing on the node
    is touched before that): the cluster plays, the summary and the ClusterPolicy status still run, and the run fails
    under the node's name."""
    api, namespace = fresh
    node = unique('gpu-stops')
    missing = tmp_path / 'no-sysfs'
    inventory = write_inventory(tmp_path, namespace, {node: {'gpu_node_labels_sysfs_root': str(missing), 'gpu_node_labels_node_name': node}})
    # The stand-in runs no Pods: the validation stage is left out, as in the run on the H100 host.
    code, out = run_site(api, tmp_path, inventory, '--skip-tags', 'validation')
    assert code != 0, out
    # The YAML callback doubles the quotes of a quoted message and wraps long lines.
    words = ' '.join(out.replace("''", "'").split())
    assert re.search(rf"{node}: .*; STOPPED: gpu_node_labels stage failed in task 'Compute the node's labels on the node': "
                     rf'sysfs_root: {re.escape(str(missing))} does not exist', words), out
    assert 'gpuops.gpu_operator.nvidia_driver : ' not in out, 'the stopped node goes no further'
    assert re.search(rf'{node}\s*: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=1', out), 'the last play fails the node'
    assert re.search(r'api\s*: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0', out), out
    status = policy_status(api)
    error = {item['type']: item for item in status['conditions']}['Error']
    assert status['state'] == 'notReady' and error['reason'] == 'ReconcileFailed', status
    assert f'{node}: gpu_node_labels stage failed' in error['message'], status


H200 = GPUS / 'h200-x1'


@pytest.fixture(name='h200_node')
def fixture_h200_node(fresh, tmp_path):
    """Host variables of a GPU node whose labels come from the H200 capture, and its Node (made here, deleted after)."""
    api = fresh[0]
    name = unique('gpu-h200')
    register_node(api, name)
    yield name, {'gpu_node_labels_node_name': name, 'gpu_node_labels_sysfs_root': str(H200 / 'sys'),
                 'gpu_node_labels_procfs_root': str(H200 / 'proc'),
                 'gpu_node_labels_nvidia_smi': nvidia_smi_simulator(tmp_path / 'nvidia-smi', H200)}
    delete_node(api, name)


@pytest.mark.parametrize('stage, variables, task, failure', [
    # The driver is validated, not installed (nothing on this machine changes): its sysfs root is missing.
    ('nvidia_driver', lambda tmp: {'nvidia_driver_enabled': False, 'nvidia_driver_sysfs_root': str(tmp / 'no-sysfs')},
     'Plan the driver install or validation (check mode)', 'does not exist'),
    # The driver passes (the H200 capture); the toolkit stage refuses a runtime it does not configure before it reads
    # anything on this machine.
    ('container_toolkit', lambda tmp: {'nvidia_driver_enabled': False, 'nvidia_driver_sysfs_root': str(H200 / 'sys'),
                                       'nvidia_driver_procfs_root': str(H200 / 'proc'), 'nvidia_driver_nvidia_smi': str(tmp / 'nvidia-smi'),
                                       'nvidia_driver_validations_dir': str(tmp / 'no-validations'), 'container_toolkit_runtime': 'podman'},
     "Validating arguments against arg spec 'main'", 'container_toolkit_runtime'),
])
def test_a_later_stage_that_stops_the_node_is_named(fresh, h200_node, tmp_path, stage, variables, task, failure):
    """A node whose labels were applied stops in a later stage: the summary, the ClusterPolicy status and the run's
    failure name that stage (site.yml records the stage each one starts)."""
    api, namespace = fresh
    name, host = h200_node
    code, out = run_site(api, tmp_path, write_inventory(tmp_path, namespace, {name: dict(host, **variables(tmp_path))}),
                         '--skip-tags', 'validation')
    assert code != 0, out
    words = ' '.join(out.replace("''", "'").split())
    assert re.search(rf"{name}: .*Node {name} labelled, .*; STOPPED: {stage} stage failed in task ", words), out
    assert f"{stage} stage failed in task '{task}" in words and failure in words, out
    assert re.search(rf'{name}\s*: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=1', out), 'the last play fails the node'
    error = {item['type']: item for item in policy_status(api)['conditions']}['Error']
    assert f'{name}: {stage} stage failed' in error['message'], error


def test_first_check_diff_with_a_node_that_stops_previews_the_status(fresh, tmp_path):
    """As on the H100 host once the first preview worked: --check --diff of a fresh cluster whose only GPU node stops.
    The ClusterPolicy does not exist (check mode created nothing): the status the run would write is previewed, and only
    the node fails."""
    api, namespace = fresh
    node = unique('gpu-stops')
    inventory = write_inventory(tmp_path, namespace, {node: {'gpu_node_labels_sysfs_root': str(tmp_path / 'no-sysfs'),
                                                             'gpu_node_labels_node_name': node}})
    policy_crd, objects_before = crd_installed(api), stored(api)
    code, out = run_site(api, tmp_path, inventory, '--check', '--diff', '--skip-tags', 'validation')
    assert code != 0, out
    assert re.search(rf'{node}\s*: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=1', out), 'the last play fails the node'
    assert re.search(r'api\s*: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0', out), out
    words = ' '.join(out.split())
    if not policy_crd:
        assert 'ClusterPolicy cluster-policy does not exist yet (check mode: this run would create it)' in words, out
    assert stored(api) == objects_before, 'check mode wrote nothing'


RUNTIME_TASK = "Read the node's container runtime, its services and the toolkit's packages"
DOCTOR_TASK = 'Check the driver, the kernel log and the container runtime'


@pytest.mark.parametrize('told', [{}, {'container_toolkit_runtime': 'containerd'}], ids=['detected', 'told'])
def test_the_doctor_names_the_check_that_failed_on_a_node_that_answered(fresh, tmp_path, told):
    """The node (this machine, reached locally) answers, and one of its check tasks fails: its runtime detection where
    it has no container runtime (as on the H100 host, a micro-VM), else the doctor's own checks, pointed at a sysfs that
    does not exist. The report names that task and its message; it does not call the node unreachable. With the runtime
    told (no detection to fail), it is always the doctor's own checks, whatever runs on the test host."""
    api, namespace = fresh
    missing = tmp_path / 'no-sysfs'
    inventory = write_inventory(tmp_path, namespace, {'vm': dict(told, gpu_node_labels_sysfs_root=str(missing))})
    report_path = tmp_path / 'report.json'
    env = dict(api.env(), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_NOCOLOR='1', ANSIBLE_DEPRECATION_WARNINGS='false')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, '-i', str(inventory), str(REPO / 'playbooks' / 'doctor.yml'), '-e', f'doctor_report_path={report_path}'],
                            env=env, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    words = ' '.join(out.split())
    findings = {item['check']: item for item in json.loads(report_path.read_text())['nodes']['vm']['findings']}
    assert 'node-unreachable' not in findings, findings
    if 'runtime-detection-failed' in findings and not told:
        # Without a container runtime the runtime detection fails (as on the H100 host; with or without systemd: where
        # systemd is not PID 1 systemctl is not asked, it no longer fails the detection); the doctor goes on with the
        # node's other checks and reports why the runtime could not be told.
        detection = findings['runtime-detection-failed']
        assert detection['severity'] == 'warning' and detection['evidence'][0].startswith('No container runtime of the kubelet found on vm'), detection
        assert 'node-check-failed' not in findings, findings
        return
    found = findings['node-check-failed']
    assert found['severity'] == 'error', found
    task = re.fullmatch(r"the check task '(.*)' failed on the node; the checks after it did not run", found['summary']).group(1)
    assert task in ((DOCTOR_TASK,) if told else (RUNTIME_TASK, DOCTOR_TASK)), found
    [message] = found['evidence']
    if task == DOCTOR_TASK:
        assert message.startswith(f'sysfs_root: {missing} does not exist'), message
    # The message is the one the task failed with in the play.
    assert re.search(r'TASK \[[^\]]*%s\] \*+ .*fatal: \[vm\]: FAILED! => .*%s' % (re.escape(task), re.escape(' '.join(message.split())[:60])), words), out
    assert 'doctor' in found['fix'] and 'ping' not in found['fix'], found
    if api.standin is not None:
        # The stand-in has the Node vm, so the labels stage, which failed on the node too, has its own finding and message.
        assert findings['labels-not-computed']['evidence'][0].startswith(f'sysfs_root: {missing} does not exist'), findings
