"""site.yml's validation stage and the doctor, run by ansible-playbook with a YAML inventory, against the API.

The stand-in runs no Pods, so a test kubelet runs beside each test (tests/cluster/kubelet_double.py): it plays the
DaemonSet controller and the kubelets of throw-away Nodes, writing into the API the Pod and DaemonSet status each
node's scenario says - every component passing, or one failing. The roles and playbooks are the real ones; only the
Nodes' side is the double's. With KUBECONFIG naming a real cluster the double cannot make a node fail, so the scenario
tests are skipped there and test_real_cluster_validates_every_gpu_node validates the cluster's own GPU nodes.
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

from tests.cluster.helpers import REPO, delete_namespace, unique
from tests.cluster.kubelet_double import KubeletDouble, NodeScenario
from tests.cluster.test_cluster_roles import run_roles, variables

VALIDATOR = 'nvidia-operator-validator'
NFD = {'feature.node.kubernetes.io/pci-10de.present': 'true'}


def run_playbook(kube_api, tmp_path, playbook, inventory, *args):
    """ansible-playbook `playbook` with the YAML `inventory`; returns (returncode, output)."""
    env = dict(kube_api.env(), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_NOCOLOR='1', ANSIBLE_DEPRECATION_WARNINGS='false')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, '-i', str(inventory), str(REPO / 'playbooks' / playbook), *args],
                            env=env, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    # The YAML callback wraps long messages: the words are compared without the line breaks.
    return result.returncode, ' '.join((result.stdout + result.stderr).split())


def write_inventory(tmp_path, namespace, nodes, selector_value, **settings):
    """The inventory a user writes: kube_api on the controller, the GPU nodes (reached locally: only their facts are
    gathered, the node stages are not run), the settings as group variables."""
    interpreter = sys.executable
    inventory = {'all': {
        'vars': dict({'gpu_cluster_base_namespace': namespace, 'gpu_cluster_operands_namespace': namespace,
                      'gpu_cluster_validator_namespace': namespace,
                      'gpu_cluster_validator_node_selector': {'gpuops.test/validation': selector_value},
                      'gpu_cluster_validator_timeout': 8, 'gpu_cluster_validator_plugin_timeout': 8, 'gpu_cluster_validator_poll': 0.5},
                     **settings),
        'children': {
            'kube_api': {'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': interpreter}}},
            'gpu_nodes': {'hosts': {name: {'gpu_node_labels_node_name': name} for name in nodes},
                          'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': interpreter}},
        }}}
    path = tmp_path / 'inventory.yml'
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


@pytest.fixture(name='stand_in')
def fixture_stand_in(kube_api):
    if kube_api.standin is None:
        pytest.skip('the scenarios need the test kubelet, which writes into the stand-in; a real cluster runs its own kubelets')
    return kube_api


@pytest.fixture(name='operator_namespace', scope='module')
def fixture_operator_namespace(kube_api, tmp_path_factory):
    """A throw-away namespace with the prerequisites and operands applied by their roles, shared by this file's tests
    (each validates its own Nodes, chosen by a label of its own)."""
    namespace = unique('gpuops-validation')
    code, _changed, out = run_roles(kube_api, tmp_path_factory.mktemp('operands'), ['gpu_cluster_base', 'gpu_cluster_operands'], variables(namespace))
    assert code == 0, out
    yield namespace
    delete_namespace(kube_api, namespace)
    try:
        kubernetes.client.CustomObjectsApi(kube_api.api_client).delete_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture(name='cluster')
def fixture_cluster(kube_api, operator_namespace):
    """(namespace, the label value that selects this test's Nodes, add_node); the Nodes are deleted afterwards."""
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    made = []
    run = unique('run')

    def add_node(name, **labels):
        assert kube_api.standin is not None, 'Nodes without a kubelet are made in the stand-in only'
        base = dict(NFD, **{'gpuops.test/validation': run, 'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.deploy.operator-validator': 'true',
                            'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '1'})
        core.create_node({'metadata': {'name': name, 'labels': dict(base, **labels)}})
        made.append(name)
        return name

    yield operator_namespace, run, add_node
    for name in made:
        core.delete_node(name)
    # A cluster's Pod garbage collector deletes the Pods bound to a deleted Node; the stand-in has none, and a run
    # replaces only the validation Pods of the nodes it validates: the next test must not find these.
    for pod in core.list_namespaced_pod(operator_namespace).items:
        if pod.spec.node_name in made:
            core.delete_namespaced_pod(pod.metadata.name, operator_namespace)


def policy_status(kube_api):
    return kubernetes.client.CustomObjectsApi(kube_api.api_client).get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')['status']


def stored_results(kube_api, namespace):
    data = kubernetes.client.CoreV1Api(kube_api.api_client).read_namespaced_config_map('gpu-validation-results', namespace).data
    return {name: json.loads(text) for name, text in data.items()}


def pods(kube_api, namespace, app):
    items = kubernetes.client.CoreV1Api(kube_api.api_client).list_namespaced_pod(namespace, label_selector=f'app={app}').items
    return {pod.spec.node_name: pod for pod in items}


def test_three_nodes_one_fails_at_plugin_then_all_pass(stand_in, cluster, tmp_path):
    namespace, run, add_node = cluster
    a, b, c = (add_node(unique(f'gpu-{letter}')) for letter in 'abc')
    scenarios = {a: NodeScenario({'nvidia.com/gpu': 1}), b: NodeScenario({'nvidia.com/gpu': 1}),
                 c: NodeScenario({})}  # the device plugin advertises nothing on c: its plugin component fails
    inventory = write_inventory(tmp_path, namespace, [a, b, c], run)
    with KubeletDouble(stand_in.kubeconfig, namespace, scenarios, stand_in.standin.pod_logs) as kubelet:
        code, out = run_playbook(stand_in, tmp_path, 'site.yml', inventory, '--tags', 'validation')
    assert any(action.startswith('create nvidia-operator-validator-') for action in kubelet.actions), (kubelet.actions, out)
    assert code != 0, out
    assert f'GPU validation failed on {c}: plugin validation' in out, out
    # The summary line of each node.
    assert re.search(rf'{a}: .*validation passed', out) and re.search(rf'{b}: .*validation passed', out), out
    assert re.search(rf'{c}: .*validation failed: plugin validation failed: plugin-validation exited 1 \(Error\)', out), out
    status = policy_status(stand_in)
    assert status['state'] == 'notReady'
    conditions = {cond['type']: cond for cond in status['conditions']}
    assert (conditions['Ready']['status'], conditions['Ready']['reason']) == ('False', 'Error')
    assert (conditions['Error']['status'], conditions['Error']['reason']) == ('True', 'OperandNotReady')
    message = conditions['Error']['message']
    assert message.startswith('ClusterPolicy is not ready; states not ready: [state-operator-validation]; ')
    assert f'{c}: plugin validation failed' in message and a not in message and b not in message
    results = stored_results(stand_in, namespace)
    assert {name: (r['state'], r['component']) for name, r in results.items()} == {a: ('passed', None), b: ('passed', None), c: ('failed', 'plugin')}
    assert 'log: GPU resources are not discovered by the node' in results[c]['evidence']
    assert 'Node advertises no nvidia.com/gpu or nvidia.com/mig-* resource' in results[c]['evidence']
    first_validators = {node: pod.metadata.uid for node, pod in pods(stand_in, namespace, VALIDATOR).items()}
    first_plugin_pods = {node: pod.metadata.uid for node, pod in pods(stand_in, namespace, 'nvidia-device-plugin-validator').items()}
    assert set(first_plugin_pods) == {a, b}, 'no Pod requests a resource on c: its capacity was never there'

    # The doctor reads the same per-node results (its node checks are left out: the nodes here are the double's).
    report_path = tmp_path / 'doctor.json'
    code, out = run_playbook(stand_in, tmp_path, 'doctor.yml', inventory, '--limit', 'kube_api', '-e', f'doctor_report_path={report_path}')
    assert code == 0, out
    report = json.loads(report_path.read_text())
    findings = {host: [f for f in node['findings'] if f['check'] == 'gpu-validation-failed'] for host, node in report['nodes'].items()}
    assert findings[a] == [] and findings[b] == []
    [finding] = findings[c]
    assert finding['summary'] == 'GPU validation failed: ' + results[c]['summary'] and 'the device plugin config' in finding['fix']
    # c's validator Pod, still not ready, is that finding's evidence now, not a second finding.
    assert any(line.startswith(f'now: Pod {namespace}/nvidia-operator-validator-') for line in finding['evidence']), finding
    assert [f['summary'] for f in report['nodes'][c]['findings'] if f['check'] == 'operand-pod-not-ready'] == []

    # c's device plugin comes up and a fourth node joins: the next run validates all four anew.
    d = add_node(unique('gpu-d'))
    scenarios.update({c: NodeScenario({'nvidia.com/gpu': 1}), d: NodeScenario({'nvidia.com/gpu': 1})})
    with KubeletDouble(stand_in.kubeconfig, namespace, scenarios, stand_in.standin.pod_logs):
        code, out = run_playbook(stand_in, tmp_path, 'site.yml', write_inventory(tmp_path, namespace, [a, b, c], run), '--tags', 'validation')
    assert code == 0, out
    assert re.search(rf'{d} \(not in the inventory\): validation passed', out), 'selected by its labels, not by the inventory'
    status = policy_status(stand_in)
    conditions = {cond['type']: (cond['status'], cond['reason'], cond['message']) for cond in status['conditions']}
    assert status['state'] == 'ready'
    assert conditions == {'Ready': ('True', 'Reconciled', 'ClusterPolicy is ready as all resources have been successfully reconciled'),
                          'Error': ('False', 'Ready', '')}
    assert {r['state'] for r in stored_results(stand_in, namespace).values()} == {'passed'} and len(stored_results(stand_in, namespace)) == 4
    validators = {node: pod.metadata.uid for node, pod in pods(stand_in, namespace, VALIDATOR).items()}
    plugin_pods = {node: pod.metadata.uid for node, pod in pods(stand_in, namespace, 'nvidia-device-plugin-validator').items()}
    assert set(validators) == {a, b, c, d} and not set(validators.values()) & set(first_validators.values()), 'every validator Pod is new'
    assert set(plugin_pods) == {a, b, c, d} and not set(plugin_pods.values()) & set(first_plugin_pods.values())


def test_each_way_a_node_fails(stand_in, cluster, tmp_path):
    """One node per failure, each named with its component and evidence; the nodes that pass are not held up by them."""
    namespace, run, add_node = cluster
    names = {kind: add_node(unique(kind)) for kind in ('pass', 'driver', 'toolkit', 'cuda', 'pod', 'nogpu', 'count', 'plugin-pod', 'pending')}
    add_node(names['count'] + '-x', **{'nvidia.com/gpu.deploy.operator-validator': 'false'})  # opted out: skipped
    stand_in_core = kubernetes.client.CoreV1Api(stand_in.api_client)
    stand_in_core.patch_node(names['count'], {'metadata': {'labels': {'nvidia.com/gpu.replicas': '4'}}})  # time-sliced, capacity not multiplied
    gpu = {'nvidia.com/gpu': 1}
    scenarios = {names['pass']: NodeScenario(gpu), names['driver']: NodeScenario(gpu, 'driver'), names['toolkit']: NodeScenario(gpu, 'toolkit'),
                 names['cuda']: NodeScenario(gpu, 'cuda'), names['pod']: NodeScenario(gpu, 'pod'), names['nogpu']: NodeScenario({}),
                 names['count']: NodeScenario(gpu), names['plugin-pod']: NodeScenario(gpu, 'plugin-pod'),
                 names['pending']: NodeScenario(gpu, 'plugin-pod-pending')}
    missing = unique('gone')  # a GPU node of the run whose Node object is not there
    inventory = write_inventory(tmp_path, namespace, [names['pass'], missing], run)
    with KubeletDouble(stand_in.kubeconfig, namespace, scenarios, stand_in.standin.pod_logs):
        code, out = run_playbook(stand_in, tmp_path, 'site.yml', inventory, '--tags', 'validation')
    assert code != 0, out
    # The run fails under each name that did not pass: the missing node, and the API host for the failed Nodes outside
    # the inventory; the node that passed does not fail.
    recap = dict(re.findall(r'(\S+) : ok=\d+ changed=\d+ unreachable=\d+ failed=(\d+)', out))
    assert (recap[missing], recap[names['pass']], recap['localhost']) == ('1', '0', '1'), out
    assert re.search(rf"fatal: \[localhost\]: FAILED! => changed: false msg: 'GPU validation failed on [^']*{names['driver']}: driver", out), out
    assert not re.search(rf"GPU validation failed on [^']*{names['pass']}: ", out), out
    found = stored_results(stand_in, namespace)
    summary = {kind: (found[name]['state'], found[name]['component'], found[name]['summary']) for kind, name in names.items()}
    assert summary == {
        'pass': ('passed', None, 'driver, toolkit, cuda and plugin validation passed; a Pod requesting nvidia.com/gpu ran vectorAdd'),
        'driver': ('failed', 'driver', 'driver validation did not finish: driver-validation is still running (after 8s)'),
        'toolkit': ('failed', 'toolkit', 'toolkit validation failed: toolkit-validation exited 1 (Error) (after 8s)'),
        'cuda': ('failed', 'cuda', 'cuda validation failed: cuda-validation exited 1 (Error) (after 8s)'),
        'pod': ('failed', 'driver', 'driver validation did not run: the Pod did not start (ImagePullBackOff: Back-off pulling image '
                                    '"nvcr.io/nvidia/gpu-operator:v26.7.0") (after 8s)'),
        'nogpu': ('failed', 'plugin', 'plugin validation failed: plugin-validation exited 1 (Error) (after 8s)'),
        'count': ('failed', 'plugin', f'plugin validation failed: nvidia.com/gpu not registered on Node {names["count"]} after 8s: count mismatch: '
                                      f'Node {names["count"]} capacity nvidia.com/gpu is 1, expected 4 (label nvidia.com/gpu.count, label '
                                      'nvidia.com/gpu.replicas): sharing with 4 replicas is expected but capacity is not multiplied (is the device '
                                      f'plugin config applied?); count mismatch: Node {names["count"]} allocatable nvidia.com/gpu is 1, expected 4 '
                                      '(unhealthy devices are not allocatable)'),
        'plugin-pod': ('failed', 'plugin', 'plugin validation failed: the Pod requesting nvidia.com/gpu failed on the Node'),
        'pending': ('failed', 'plugin', 'plugin validation did not finish: the Pod requesting nvidia.com/gpu is Pending (after 8s)'),
    }
    assert found[missing] == {'node': missing, 'state': 'failed', 'component': None, 'evidence': [],
                              'summary': f'no Node object {missing}: the kubelet has not registered the node'}
    assert found[names['count'] + '-x']['state'] == 'skipped'
    evidence = {kind: '\n'.join(found[name]['evidence']) for kind, name in names.items()}
    assert "log: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." in evidence['driver']
    assert 'log: toolkit is not ready' in evidence['toolkit']
    assert 'event Warning BackOff: Back-off restarting failed container toolkit-validation' in evidence['toolkit']
    # The cuda component's own vectorAdd Pod on that node, with its log.
    assert re.search(r'Pod \S+/nvidia-cuda-validator-\w+ phase Pending', evidence['cuda'])
    assert 'log: Failed to allocate device vector A (error code no CUDA-capable device is detected)!' in evidence['cuda']
    assert 'event Warning Failed: Failed to pull image "nvcr.io/nvidia/gpu-operator:v26.7.0": not found' in evidence['pod']
    assert 'log: Failed to allocate device vector A' in evidence['plugin-pod'] and 'phase Failed' in evidence['plugin-pod']
    assert 'Node advertises nvidia.com/gpu capacity 1 allocatable 1' in evidence['pending']
    message = {c['type']: c for c in policy_status(stand_in)['conditions']}['Error']['message']
    for kind, name in names.items():
        assert (f'{name}: ' in message) == (kind != 'pass'), kind
    assert f'{missing}: no Node object' in message
    # The nodes that pass do not wait for those that fail: no Pod was made for the nodes that failed before the plugin Pods.
    made = pods(stand_in, namespace, 'nvidia-device-plugin-validator')
    assert set(made) == {names['pass'], names['plugin-pod'], names['pending']}


def test_mig_mixed_and_time_sliced_nodes_use_their_own_resources(stand_in, cluster, tmp_path):
    """Each node is asked for the resource it advertises under the device plugin config it runs (its label, else the
    default); daemonsets settings, the validator image's mirror and pull secrets and the GPU nodes' runtime class reach
    every Pod."""
    namespace, run, add_node = cluster
    mig = add_node(unique('mig'), **{'nvidia.com/gpu.count': '0', 'nvidia.com/gpu.replicas': '0', 'nvidia.com/mig-1g.20gb.count': '4',
                                     'nvidia.com/mig-1g.20gb.replicas': '1'})
    sliced = add_node(unique('sliced'), **{'nvidia.com/gpu.replicas': '4', 'nvidia.com/device-plugin.config': 'sliced'})
    scenarios = {mig: NodeScenario({'nvidia.com/mig-1g.20gb': 4}), sliced: NodeScenario({'nvidia.com/gpu.shared': 4})}
    toleration = {'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}
    configs = {'name': 'plugin-configs', 'default': 'whole', 'data': {
        'whole': {'version': 'v1'},
        'sliced': {'version': 'v1', 'sharing': {'timeSlicing': {'renameByDefault': True, 'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}}}
    inventory = write_inventory(
        tmp_path, namespace, [mig, sliced], run, gpu_operator_registry='mirror.example:5000', container_toolkit_runtime_name='nvidia-gpu',
        gpu_operator_policy={'mig': {'strategy': 'mixed'}, 'daemonsets': {'tolerations': [toleration], 'priorityClassName': 'gpu-critical'},
                             'devicePlugin': {'config': configs}, 'validator': {'imagePullSecrets': ['mirror-pull']}})
    with KubeletDouble(stand_in.kubeconfig, namespace, scenarios, stand_in.standin.pod_logs):
        code, out = run_playbook(stand_in, tmp_path, 'site.yml', inventory, '--tags', 'validation')
    assert code == 0, out
    assert {name: r['state'] for name, r in stored_results(stand_in, namespace).items()} == {mig: 'passed', sliced: 'passed'}
    assert policy_status(stand_in)['state'] == 'ready'
    made = pods(stand_in, namespace, 'nvidia-device-plugin-validator')
    requested = {node: pod.spec.init_containers[0].resources.limits for node, pod in made.items()}
    assert requested == {mig: {'nvidia.com/mig-1g.20gb': '1'}, sliced: {'nvidia.com/gpu.shared': '1'}}
    ds = kubernetes.client.AppsV1Api(stand_in.api_client).read_namespaced_daemon_set(VALIDATOR, namespace).spec.template.spec
    image = 'mirror.example:5000/nvidia/gpu-operator:v26.7.0'
    for spec in [ds] + [pod.spec for pod in made.values()]:
        assert [t.to_dict() for t in spec.tolerations] == [dict(toleration, toleration_seconds=None)]
        assert [s.name for s in spec.image_pull_secrets] == ['mirror-pull'] and spec.containers[0].image == image
        assert spec.runtime_class_name == 'nvidia-gpu', 'the runtime class the operands name, from the GPU nodes'
    assert ds.priority_class_name == 'gpu-critical'
    assert {e.name: e.value for e in ds.init_containers[3].env if e.value is not None}['MIG_STRATEGY'] == 'mixed'


def test_no_gpu_node_check_mode_and_removal(kube_api, cluster, tmp_path):
    """No Node to validate is ready (the Operator's NoGPUNodes, or NFDLabelsMissing); --check applies nothing; absent removes it all."""
    namespace, run, _add_node = cluster
    absent = [{'role': 'gpu_cluster_validator', 'gpu_cluster_validator_state': 'absent'}]
    code, _changed, out = run_roles(kube_api, tmp_path, absent, dict(gpu_cluster_validator_namespace=namespace))  # what earlier tests left
    assert code == 0, out
    inventory = write_inventory(tmp_path, namespace, [], run)
    code, out = run_playbook(kube_api, tmp_path, 'site.yml', inventory, '--tags', 'validation', '--check')
    assert code == 0, out
    assert 'Check mode: the validator is rendered but no node is validated (no GPU node)' in out
    apps = kubernetes.client.AppsV1Api(kube_api.api_client)
    assert apps.list_namespaced_daemon_set(namespace, label_selector=f'app={VALIDATOR}').items == []
    code, out = run_playbook(kube_api, tmp_path, 'site.yml', inventory, '--tags', 'validation')
    assert code == 0, out
    status = policy_status(kube_api)
    assert status['state'] == 'ready' and {c['type']: c['reason'] for c in status['conditions']}['Ready'] in ('NoGPUNodes', 'NFDLabelsMissing')
    assert stored_results(kube_api, namespace) == {}
    assert apps.read_namespaced_daemon_set(VALIDATOR, namespace)
    code, _changed, out = run_roles(kube_api, tmp_path, absent, dict(gpu_cluster_validator_namespace=namespace))
    assert code == 0, out
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube_api.api_client)
    for read in (lambda: apps.read_namespaced_daemon_set(VALIDATOR, namespace), lambda: rbac.read_cluster_role(VALIDATOR),
                 lambda: rbac.read_namespaced_role(VALIDATOR, namespace),
                 lambda: kubernetes.client.CoreV1Api(kube_api.api_client).read_namespaced_service_account(VALIDATOR, namespace),
                 lambda: kubernetes.client.CoreV1Api(kube_api.api_client).read_namespaced_config_map('gpu-validation-results', namespace)):
        with pytest.raises(ApiException) as caught:
            read()
        assert caught.value.status == 404


def test_real_cluster_validates_every_gpu_node(kube_api, cluster, tmp_path):
    """On a real cluster (KUBECONFIG), every Node labelled nvidia.com/gpu.present=true passes and the ClusterPolicy is ready."""
    if kube_api.standin is not None:
        pytest.skip('the stand-in runs no Pods: test_three_nodes_one_fails_at_plugin_then_all_pass validates there with the test kubelet')
    namespace, run, _add_node = cluster
    inventory = write_inventory(tmp_path, namespace, [], run, gpu_cluster_validator_node_selector={'nvidia.com/gpu.present': 'true'},
                                gpu_cluster_validator_timeout=600, gpu_cluster_validator_plugin_timeout=300, gpu_cluster_validator_poll=5)
    code, out = run_playbook(kube_api, tmp_path, 'site.yml', inventory, '--tags', 'validation')
    assert code == 0, out
    results = stored_results(kube_api, namespace)
    assert results and {r['state'] for r in results.values()} == {'passed'}, results
    assert policy_status(kube_api)['state'] == 'ready'


def slice_inventory(directory, namespace, nodes, with_kube_api, **settings):
    """One slice's inventory as AWX's job slicing writes it: every group kept, only this slice's hosts; kube_api empty in
    the slices that did not get its host (the playbooks then reach the API from the controller)."""
    interpreter = sys.executable
    directory.mkdir()
    inventory = {'all': {
        'vars': dict({'gpu_cluster_base_namespace': namespace, 'gpu_cluster_operands_namespace': namespace,
                      'gpu_cluster_validator_namespace': namespace,
                      'gpu_cluster_validator_timeout': 8, 'gpu_cluster_validator_plugin_timeout': 8, 'gpu_cluster_validator_poll': 0.5},
                     **settings),
        'children': {
            'kube_api': {'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': interpreter}}} if with_kube_api else {},
            'gpu_nodes': {'hosts': {name: {'gpu_node_labels_node_name': name} for name in nodes},
                          'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': interpreter}},
        }}}
    path = directory / 'inventory.yml'
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def run_together(kube_api, tmp_path, inventories, *args):
    """ansible-playbook site.yml on each inventory, all started at once (the slices of one sliced job); [(code, output)]."""
    env = dict(kube_api.env(), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_NOCOLOR='1', ANSIBLE_DEPRECATION_WARNINGS='false')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    started = [subprocess.Popen([ansible, '-i', str(inventory), str(REPO / 'playbooks' / 'site.yml'), *args], env=env, cwd=inventory.parent,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for inventory in inventories]
    ended = []
    for process in started:
        out = process.communicate(timeout=600)[0]
        ended.append((process.returncode, ' '.join(out.split())))
    return ended


def comparable(results):
    """The records without what differs from run to run (timings, Pod names)."""
    return {name: (r['state'], r.get('component'), re.sub(r'\(after [0-9.]+s\)', '', r.get('summary') or '')) for name, r in results.items()}


def error_condition(kube_api):
    status = policy_status(kube_api)
    return status['state'], {cond['type']: cond for cond in status['conditions']}['Error']


def test_sliced_job_validates_each_slice_and_reports_the_whole_cluster(stand_in, cluster, tmp_path):
    """Three slices of an AWX sliced job (disjoint nodes, kube_api in one only) validating at the same time, scope inventory:
    each slice's own nodes pass or fail, the records of all three are kept, the status names the failing node whichever
    slice ends last, and a GPU Node outside the inventory is left alone. An unsliced run, scope cluster, gives the same."""
    namespace, run, add_node = cluster
    a, b, c, outside = (add_node(unique(f'gpu-{letter}')) for letter in 'abcd')
    scenarios = {a: NodeScenario({'nvidia.com/gpu': 1}), b: NodeScenario({'nvidia.com/gpu': 1}), c: NodeScenario({}),  # c: plugin fails
                 outside: NodeScenario({'nvidia.com/gpu': 1})}
    selector = {'gpu_cluster_validator_node_selector': {'gpuops.test/validation': run}}
    whole = slice_inventory(tmp_path / 'whole', namespace, [a, b, c], True, **selector)
    slices = [slice_inventory(tmp_path / f'slice{i}', namespace, [name], i == 1, gpu_cluster_validator_scope='inventory', **selector)
              for i, name in enumerate([a, b, c], 1)]
    with KubeletDouble(stand_in.kubeconfig, namespace, scenarios, stand_in.standin.pod_logs):
        code, out = run_playbook(stand_in, tmp_path, 'site.yml', whole, '--tags', 'validation')
        assert code != 0 and f'GPU validation failed on {c}: plugin validation' in out, out
        assert re.search(rf'{outside} \(not in the inventory\): validation passed', out), 'scope cluster: the labelled Node too'
        unsliced = stored_results(stand_in, namespace)
        unsliced_status = error_condition(stand_in)
        outside_pod = pods(stand_in, namespace, VALIDATOR)[outside].metadata.uid

        ended = run_together(stand_in, tmp_path, slices, '--tags', 'validation')
        sliced = stored_results(stand_in, namespace)
        sliced_status = error_condition(stand_in)
        assert pods(stand_in, namespace, VALIDATOR)[outside].metadata.uid == outside_pod, 'scope inventory: its Pod is not replaced'

        # c's slice first, then the two that pass: the failure stays in the status.
        in_order = [run_playbook(stand_in, tmp_path, 'site.yml', inventory, '--tags', 'validation') for inventory in (slices[2], slices[0], slices[1])]
        ordered_status = error_condition(stand_in)
        # a's stage stops (as site.yml records it for a node whose stage failed): its record and the status say so.
        stopped = json.dumps({'gpu_cluster_validator_stopped_nodes': [{'node': a, 'stage': 'nvidia_driver', 'failure': 'the driver did not load'}]})
        run_playbook(stand_in, tmp_path, 'site.yml', slices[1], '--tags', 'validation', '-e', stopped)
        stopped_results = stored_results(stand_in, namespace)
        stopped_status = error_condition(stand_in)

    (code_a, out_a), (code_b, out_b), (code_c, out_c) = ended
    assert code_a == 0 and re.search(rf'{a}: .*validation passed', out_a), out_a
    assert code_b == 0 and re.search(rf'{b}: .*validation passed', out_b), out_b
    assert code_c != 0 and f'GPU validation failed on {c}: plugin validation' in out_c, out_c
    for out in (out_a, out_b, out_c):
        assert f'{outside} (not in the inventory)' not in out, 'scope inventory validates the slice\'s nodes only'
    assert comparable(sliced) == comparable(unsliced) and set(sliced) >= {a, b, c, outside}
    assert sliced[outside] == unsliced[outside], 'the Node outside the inventory keeps its record'
    for state, error in (unsliced_status, sliced_status, ordered_status):
        assert (state, error['reason']) == ('notReady', 'OperandNotReady')
        assert f'{c}: plugin validation failed' in error['message'] and a not in error['message'] and b not in error['message']
    assert in_order[0][0] != 0 and in_order[1][0] == 0 and in_order[2][0] == 0, in_order
    assert (stopped_results[a]['state'], stopped_results[a]['stage'], stopped_results[a]['failure']) == ('stopped', 'nvidia_driver', 'the driver did not load')
    state, error = stopped_status
    assert (state, error['reason']) == ('notReady', 'ReconcileFailed')
    assert error['message'].startswith(f'Failed to reconcile state-driver: {a}: the driver did not load'), error
    assert f'{c}: plugin validation failed' in error['message'], error
