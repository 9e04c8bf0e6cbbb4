"""playbooks/upgrade.yml against the API: the Operator's upgrade states, cordon, the Pod steps (wait for jobs, GPU Pod
deletion, a drain where that fails), skip labels, failures, the ClusterPolicy's driver.upgradePolicy.

The GPU nodes are local-connection hosts whose nvidia_driver role (the real one, with driver.enabled=false: it
validates the driver there) reads captured GPU fixtures; their Node objects are throw-away Nodes made here.
The state transitions are read back from a watch of the Nodes that replays every change since the run started.
Stand-in only: its Nodes have no kubelets (see fixture_nodes).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import kubernetes
import pytest
import yaml

from tests.cluster.helpers import GPUS, REPO, nvidia_smi_simulator, unique

STATE = 'nvidia.com/gpu-driver-upgrade-state'
SKIP = 'nvidia.com/gpu-driver-upgrade.skip'
INITIAL = 'nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable'
# SOURCE: NVIDIA/k8s-operator-libs at 11e747a512d4e47ebd23d52bb91c910cebb5da37 pkg/upgrade (common_manager.go,
# pod_manager.go, the GPU Operator v26.7.0 turning pod deletion on in cmd/gpu-operator/main.go): cordon-required ->
# wait-for-jobs-required -> pod-deletion-required -> pod-restart-required, drain-required between the last two only when
# the GPU Pods could not be deleted and drain.enable is true (else upgrade-failed).
FULL_ROLL = ['upgrade-required', 'cordon-required', 'wait-for-jobs-required', 'pod-deletion-required', 'pod-restart-required',
             'validation-required', 'uncordon-required', 'upgrade-done']


@pytest.fixture(name='gpus')
def fixture_gpus(tmp_path):
    """fixture name -> (sysfs root, procfs root, nvidia-smi): the H200 capture, and the same GPU without a driver."""
    no_driver = tmp_path / 'no-driver'
    shutil.copytree(GPUS / 'h200-x1' / 'sys', no_driver / 'sys', symlinks=True)
    (no_driver / 'proc').mkdir()  # no driver/nvidia/version, no modules: nothing loaded
    found = {}
    for name, root in (('h200-x1', GPUS / 'h200-x1'), ('no-driver', no_driver)):
        # The simulator serves the fixture named by GPUOPS_LAB_GPU_FIXTURE; one without nvidia-smi/ answers as
        # nvidia-smi does when no driver is loaded.
        found[name] = (str(root / 'sys'), str(root / 'proc'), nvidia_smi_simulator(tmp_path / f'nvidia-smi-{name}', root))
    return found


@pytest.fixture(name='nodes')
def fixture_nodes(kube_api):
    """Three Ready Nodes (names a, b, c -> Node name), deleted afterwards."""
    if kube_api.real:
        # Without kubelets, a real cluster marks these Nodes NotReady within a minute and never finishes deleting
        # the evicted Pods bound to them; the stand-in has no node controller and deletes at once.
        pytest.skip('the upgrade test needs kubelet-less Nodes that stay Ready, which only the stand-in has')
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    prefix = unique('gpuops-upgrade')
    names = {host: f'{prefix}-{host}' for host in ('a', 'b', 'c')}
    for name in names.values():
        core.create_node({'metadata': {'name': name, 'labels': {'kubernetes.io/hostname': name, 'nvidia.com/gpu.present': 'true'}},
                          'spec': {}})  # what an apiserver defaults it to (k8s_drain reads spec.unschedulable)
        core.patch_node_status(name, {'status': {'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'KubeletReady',
                                                                 'message': 'kubelet is posting ready status'}]}})
    yield names
    for name in names.values():
        core.delete_node(name)


def label(kube_api, name, labels=None, unschedulable=None):
    body = {'metadata': {'labels': labels or {}}}
    if unschedulable is not None:
        body['spec'] = {'unschedulable': unschedulable}
    kubernetes.client.CoreV1Api(kube_api.api_client).patch_node(name, body)


def run_upgrade(kube_api, tmp_path, nodes, gpus, fixtures, extra=None, options=()):
    """Run playbooks/upgrade.yml; returns (returncode, output, {Node name: [(state label, unschedulable)...]}).

    `fixtures` maps each inventory host (a, b, c) to the GPU fixture its role reads, or to (fixture, host variables).
    `extra`: the extra variables, a dict (written as JSON) or YAML text as a user writes it.
    """
    hosts = {}
    for host, fixture in fixtures.items():
        fixture, variables = (fixture, {}) if isinstance(fixture, str) else fixture
        sysfs, procfs, smi = gpus[fixture]
        hosts[host] = dict(variables, gpu_node_labels_node_name=nodes[host], nvidia_driver_sysfs_root=sysfs,
                           nvidia_driver_procfs_root=procfs, nvidia_driver_nvidia_smi=smi,
                           nvidia_driver_validations_dir=str(tmp_path / 'validations' / host))
    common = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    inventory = {'all': {'children': {
        'kube_api': {'hosts': {'localhost': common}},
        'gpu_nodes': {'vars': dict(common, nvidia_driver_enabled=False), 'hosts': hosts},
    }}}
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    extra_file = tmp_path / ('extra.yml' if isinstance(extra, str) else 'extra.json')
    extra_file.write_text(extra if isinstance(extra, str) else json.dumps(extra or {}))
    before = kubernetes.client.CoreV1Api(kube_api.api_client).list_node()
    env = kube_api.env()
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_FORCE_COLOR='0')
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(tmp_path / 'hosts.yml'),
                             'playbooks/upgrade.yml', '-e', f'@{extra_file}', *options],
                            env=env, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    (tmp_path / "output.txt").write_text(result.stdout + result.stderr)
    return result.returncode, result.stdout + result.stderr, history(kube_api, before, set(nodes.values()))


def step(node):
    return (node.metadata.labels or {}).get(STATE), bool(node.spec and node.spec.unschedulable)


def history(kube_api, before, names):
    """Every (state label, unschedulable) each Node had from the NodeList `before` on, in order, repeats dropped."""
    seen = {item.metadata.name: [step(item)] for item in before.items if item.metadata.name in names}
    watch = kubernetes.watch.Watch()
    for event in watch.stream(kubernetes.client.CoreV1Api(kube_api.api_client).list_node, resource_version=before.metadata.resource_version,
                              timeout_seconds=2):
        node = event['object']
        if node.metadata.name in seen and seen[node.metadata.name][-1] != step(node):
            seen[node.metadata.name].append(step(node))
    return seen


def states(steps):
    """The successive state labels of a history."""
    found = []
    for state, _unschedulable in steps:
        if state and (not found or found[-1] != state):
            found.append(state)
    return found


def batches(out):
    """The hosts of each serial batch, from the play banners and the host names in the task results."""
    plays = re.split(r'^PLAY \[Upgrade the NVIDIA driver[^\n]*$', out, flags=re.M)[1:]
    return [sorted(set(re.findall(r'^(?:ok|changed|skipping|failed|fatal): \[([abc])[\] ]', play, re.M))) for play in plays]


def node(kube_api, name):
    return kubernetes.client.CoreV1Api(kube_api.api_client).read_node(name)


def pod(name, node_name, owner=None, labels=None, finalizers=None, gpu=False):
    metadata = {'name': name, 'labels': labels or {}}
    if owner:
        metadata['ownerReferences'] = [{'apiVersion': 'apps/v1', 'kind': owner, 'name': f'{name}-owner', 'uid': f'{name}-uid',
                                        'controller': True}]
    if finalizers:
        metadata['finalizers'] = finalizers
    container = {'name': 'c', 'image': 'registry.example/pause:3.10'}
    if gpu:
        container['resources'] = {'limits': {'nvidia.com/gpu': '1'}}
    return {'metadata': metadata, 'spec': {'nodeName': node_name, 'containers': [container]}}


def running_pod(kube_api, body):
    """Create the Pod and report it Running, as its kubelet would (the stand-in runs none)."""
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    core.create_namespaced_pod(kube_api.namespace, body)
    core.patch_namespaced_pod_status(body['metadata']['name'], kube_api.namespace, {'status': {'phase': 'Running'}})


def pod_names(kube_api, node_name):
    pods = kubernetes.client.CoreV1Api(kube_api.api_client).list_namespaced_pod(kube_api.namespace, field_selector=f'spec.nodeName={node_name}')
    return {item.metadata.name for item in pods.items if item.metadata.deletion_timestamp is None}


def test_roll_in_batches_deleting_gpu_pods_with_skip_labels(kube_api, tmp_path, nodes, gpus):
    """The ClusterPolicy's driver.upgradePolicy (gpu_operator_policy, an extra variable) sizes the batches and drives the
    Pod steps: a's job is waited for (up to 2 s, then the upgrade goes on), its GPU Pod is deleted, its other Pods keep
    running, it is not drained (drain.enable defaults to false)."""
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    for name, owner, labels, gpu in (('workload', 'ReplicaSet', None, False), ('gpu-workload', 'ReplicaSet', None, True),
                                     ('keep-me', 'ReplicaSet', {'nvidia.com/gpu-driver-upgrade-drain.skip': 'true'}, False),
                                     ('plugin', 'DaemonSet', None, False), ('job', 'Job', {'gpuops.test/job': 'training'}, False)):
        running_pod(kube_api, pod(f'{nodes["a"]}-{name}', nodes['a'], owner, labels, gpu=gpu))
    label(kube_api, nodes['a'], {STATE: 'upgrade-required'})
    label(kube_api, nodes['b'], {STATE: 'upgrade-required'}, unschedulable=True)  # cordoned by its admin before
    label(kube_api, nodes['c'], {STATE: 'upgrade-required', SKIP: 'true'})
    policy = {'gpu_operator_policy': {'driver': {'upgradePolicy': {
        'maxParallelUpgrades': 0, 'maxUnavailable': '50%', 'waitForCompletion': {'podSelector': 'gpuops.test/job=training', 'timeoutSeconds': 2}}}}}
    every_pod = {f'{nodes["a"]}-{name}' for name in ('workload', 'gpu-workload', 'keep-me', 'plugin', 'job')}

    # A preview changes nothing: no label, no cordon, no eviction.
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {'a': 'h200-x1', 'b': 'h200-x1', 'c': 'h200-x1'}, policy, ['--check'])
    assert code == 0, out
    assert all(len(steps[name]) == 1 for name in nodes.values()), steps
    assert pod_names(kube_api, nodes['a']) == every_pod

    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {'a': 'h200-x1', 'b': 'h200-x1', 'c': 'h200-x1'}, policy, ['-v'])

    assert code == 0, out
    # 50% of 3 GPU nodes, rounded up: a batch of 2, then one of 1.
    assert batches(out) == [['a', 'b'], ['c']], out
    assert states(steps[nodes['a']]) == FULL_ROLL
    # a's job ran through the wait's 2 s: the upgrade went on, as the Operator's does after waitForCompletion.timeoutSeconds.
    waited = out.split('Wait for the jobs of waitForCompletion.podSelector to complete]', 1)[1].split('TASK [', 1)[0]
    assert re.search(r'ok: \[a -> localhost\] => .*?pods:\s+- %s/%s-job.*?timed_out: true' % (kube_api.namespace, nodes['a']), waited, re.S), waited
    # Cordoned from cordon-required until uncordon-required.
    assert steps[nodes['a']] == [('upgrade-required', False), ('cordon-required', False), ('cordon-required', True),
                                 ('wait-for-jobs-required', True), ('pod-deletion-required', True), ('pod-restart-required', True),
                                 ('validation-required', True), ('uncordon-required', True), ('uncordon-required', False), ('upgrade-done', False)]
    assert pod_names(kube_api, nodes['a']) == every_pod - {f'{nodes["a"]}-gpu-workload'}, 'only the Pod that uses a GPU is deleted'

    assert states(steps[nodes['b']]) == FULL_ROLL
    assert all(unschedulable for _state, unschedulable in steps[nodes['b']]), 'a node cordoned before stays cordoned'
    assert INITIAL not in (node(kube_api, nodes['b']).metadata.annotations or {})

    assert steps[nodes['c']] == [('upgrade-required', False)], 'a node labelled gpu-driver-upgrade.skip=true is not touched'
    # The role validated the driver on a and b (the validator's file), and never ran on c.
    assert [(tmp_path / 'validations' / host / 'driver-ready').is_file() for host in 'abc'] == [True, True, False]
    assert f'{nodes["c"]} is labelled {SKIP}=true' in out

    # Again: every node is up to date (or skipped), so nothing is cordoned or relabelled.
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {'a': 'h200-x1', 'b': 'h200-x1', 'c': 'h200-x1'}, policy)
    assert code == 0, out
    assert all(len(steps[name]) == 1 for name in nodes.values()), steps


def test_failed_node_stays_cordoned_and_stops_the_roll(kube_api, tmp_path, nodes, gpus):
    for host in nodes:
        label(kube_api, nodes[host], {STATE: 'upgrade-required'})

    # One node at a time (the Operator's maxParallelUpgrades default): a, then b, whose GPU has no driver.
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {'a': 'h200-x1', 'b': 'no-driver', 'c': 'h200-x1'})

    assert code != 0, out
    assert states(steps[nodes['a']]) == FULL_ROLL
    assert states(steps[nodes['b']]) == FULL_ROLL[:FULL_ROLL.index('pod-restart-required') + 1] + ['upgrade-failed']
    assert steps[nodes['b']][-1] == ('upgrade-failed', True), 'the failed node stays cordoned'
    assert node(kube_api, nodes['b']).spec.unschedulable is True
    assert f'The driver upgrade failed on {nodes["b"]} in state pod-restart-required' in out
    assert steps[nodes['c']] == [('upgrade-required', False)], 'the roll stops before the next node'
    assert node(kube_api, nodes['c']).metadata.labels[STATE] == 'upgrade-required'

    # Fixed (the driver works now): the next run resumes with b, uncordons it, then goes on to c, which is asked
    # for another driver than the 580.159.04 of the H200 capture (driver.enabled=false cannot install it).
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus,
                                   {'a': 'h200-x1', 'b': 'h200-x1', 'c': ('h200-x1', {'nvidia_driver_version': '590'})})
    assert code != 0, out
    assert len(steps[nodes['a']]) == 1, 'nothing changed'
    assert states(steps[nodes['b']]) == ['upgrade-failed'] + FULL_ROLL and steps[nodes['b']][-1] == ('upgrade-done', False)
    assert states(steps[nodes['c']]) == FULL_ROLL[:FULL_ROLL.index('validation-required') + 1] + ['upgrade-failed']
    assert f'{nodes["c"]} runs driver 580.159.04 (loaded), not the requested 590' in out
    assert node(kube_api, nodes['c']).spec.unschedulable is True


def test_failure_in_a_batch_stops_the_next_batch(kube_api, tmp_path, nodes, gpus):
    """a's GPU Pod does not go: its deletion fails, the drain that follows (drain.enable) too; b, in the same batch,
    finishes; c, in the next batch, is not touched."""
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    stuck = f'{nodes["a"]}-stuck'
    # A finalizer keeps the evicted Pod on the node, as a Pod that does not stop does.
    running_pod(kube_api, pod(stuck, nodes['a'], 'ReplicaSet', finalizers=['gpuops.test/hold'], gpu=True))
    for host in nodes:
        label(kube_api, nodes[host], {STATE: 'upgrade-required'})
    try:
        code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {'a': 'h200-x1', 'b': 'h200-x1', 'c': 'h200-x1'},
                                       {'gpu_driver_upgrade_policy': {'maxParallelUpgrades': 2, 'maxUnavailable': 2, 'podDeletion': {'timeoutSeconds': 1},
                                                                      'drain': {'enable': True, 'timeoutSeconds': 1}}})
    finally:
        core.patch_namespaced_pod(stuck, kube_api.namespace, {'metadata': {'finalizers': None}})
    assert code != 0, out
    assert batches(out) == [['a', 'b'], ['c']], out
    assert states(steps[nodes['a']]) == FULL_ROLL[:4] + ['drain-required', 'upgrade-failed']
    assert node(kube_api, nodes['a']).spec.unschedulable is True
    assert f'The drain did not remove {kube_api.namespace}/{stuck} from {nodes["a"]} within 1s' in out
    assert states(steps[nodes['b']]) == FULL_ROLL and steps[nodes['b']][-1] == ('upgrade-done', False)
    assert steps[nodes['c']] == [('upgrade-required', False)]
    assert 'The driver upgrade stopped: a failed in an earlier batch' in out


@pytest.mark.parametrize('policy, message', [
    ({'gpuPodDeletion': {'force': True}}, "gpuPodDeletion is the Helm chart's name; the ClusterPolicy calls it podDeletion"),
    ({'maxUnavailable': 'half'}, 'maxUnavailable (a number or a percentage)'),
])
def test_bad_policy_touches_nothing(kube_api, tmp_path, nodes, gpus, policy, message):
    label(kube_api, nodes['a'], {STATE: 'upgrade-required'})
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {'a': 'h200-x1'}, {'gpu_driver_upgrade_policy': policy})
    assert code != 0 and message in out, out
    assert len(steps[nodes['a']]) == 1, 'nothing changed'


def test_policy_written_in_yaml(kube_api, tmp_path, nodes, gpus):
    """The policy as a user writes it in a YAML vars file: a bare percentage, yes/no, a quoted number. podDeletion.force
    lets the GPU Pod that no controller manages go; the Pod that uses no GPU stays."""
    running_pod(kube_api, pod(f'{nodes["a"]}-workload', nodes['a'], 'ReplicaSet'))
    running_pod(kube_api, pod(f'{nodes["a"]}-notebook', nodes['a'], gpu=True))
    for host in nodes:
        label(kube_api, nodes[host], {STATE: 'upgrade-required'})
    policy = ('gpu_driver_upgrade_policy:\n'
              '  maxParallelUpgrades: "0"\n'
              '  maxUnavailable: 34%\n'
              '  podDeletion:\n'
              '    force: yes\n'
              '  drain:\n'
              '    enable: no\n')
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {'a': 'h200-x1', 'b': 'h200-x1', 'c': 'h200-x1'}, policy)
    assert code == 0, out
    # 34% of 3 GPU nodes is 1.02, rounded up: batches of 2 and 1.
    assert batches(out) == [['a', 'b'], ['c']], out
    assert all(states(steps[name]) == FULL_ROLL for name in nodes.values()), steps
    assert pod_names(kube_api, nodes['a']) == {f'{nodes["a"]}-workload'}, 'the GPU Pod without a controller is deleted (force), no other'


def test_policy_in_the_inventory_is_refused(kube_api, tmp_path, nodes, gpus):
    """Ansible sizes the batches before it reads the inventory: a policy there would not size them, so the run stops."""
    for host in nodes:
        label(kube_api, nodes[host], {STATE: 'upgrade-required'})
    policy = {'gpu_driver_upgrade_policy': {'maxParallelUpgrades': 2, 'maxUnavailable': 2}}
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, {host: ('h200-x1', policy) for host in nodes})
    assert code != 0, out
    assert 'give the policy as an extra variable' in out, out
    assert all(len(steps[name]) == 1 for name in nodes.values()), 'nothing changed'


# SOURCE (facts, not code): NVIDIA/k8s-operator-libs at 11e747a512d4e47ebd23d52bb91c910cebb5da37 (2026-04-30),
# pkg/upgrade/common_manager.go: GetUpgradesInProgress counts every managed Node whose state is neither unknown (no
# label), upgrade-done nor upgrade-required (so cordon-required, wait-for-jobs-required, pod-deletion-required,
# drain-required, pod-restart-required, validation-required, uncordon-required and upgrade-failed);
# GetCurrentUnavailableNodes counts the cordoned or not Ready Nodes, GetUpgradesAvailable adds cordon-required to them.
IN_PROGRESS = ['cordon-required', 'wait-for-jobs-required', 'pod-deletion-required', 'drain-required',
               'pod-restart-required', 'validation-required', 'uncordon-required', 'upgrade-failed']


def awx_slices(hosts, count):
    """The hosts of each slice of an AWX sliced job: sorted by name, slice i (1-based) of n gets [i-1::n]
    (ansible/awx awx/main/models/inventory.py get_sliced_hosts, commit e21dd0a0933fd544d1fe2513c54fe41203775eb5)."""
    ordered = sorted(hosts)
    return [ordered[index::count] for index in range(count)]


def write_inventory(path, hosts, kube_api, gpus, tmp_path, nodes):
    """A YAML inventory as a user writes it: the GPU hosts `hosts` (fixture h200-x1), a kube_api group with the
    controller when `kube_api`, else an empty one."""
    sysfs, procfs, smi = gpus['h200-x1']
    gpu_hosts = {host: {'gpu_node_labels_node_name': nodes[host], 'nvidia_driver_validations_dir': str(tmp_path / 'validations' / host)}
                 for host in hosts}
    common = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    path.write_text(
        'all:\n  children:\n'
        + ('    kube_api:\n      hosts:\n        localhost:\n' + ''.join(f'          {k}: {v}\n' for k, v in common.items())
           if kube_api else '    kube_api: {}\n')
        + '    gpu_nodes:\n      vars:\n'
        + ''.join(f'        {k}: {v}\n' for k, v in dict(common, nvidia_driver_enabled='false', nvidia_driver_sysfs_root=sysfs,
                                                         nvidia_driver_procfs_root=procfs, nvidia_driver_nvidia_smi=smi).items())
        + '      hosts:\n'
        + ''.join(f'        {host}:\n' + ''.join(f'          {k}: {v}\n' for k, v in variables.items())
                  for host, variables in gpu_hosts.items()))


def start_upgrade(kube_api, inventory, extra):
    env = kube_api.env()
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_FORCE_COLOR='0')
    return subprocess.Popen([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(inventory),
                             'playbooks/upgrade.yml', '-e', json.dumps(extra)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)


def most_in_progress(kube_api, before, names):
    """The most Nodes of `names` upgrading at once, from a watch replaying every change since `before`, and the states
    then. A claim (cordon-required) that steps back to upgrade-required is no upgrade; a cordoned Node is one."""
    events = [(item.metadata.name, step(item)) for item in before.items if item.metadata.name in names]
    watch = kubernetes.watch.Watch()
    for event in watch.stream(kubernetes.client.CoreV1Api(kube_api.api_client).list_node, resource_version=before.metadata.resource_version,
                              timeout_seconds=2):
        if event['object'].metadata.name in names:
            events.append((event['object'].metadata.name, step(event['object'])))
    current, most, when = {}, 0, {}
    for index, (name, (state, unschedulable)) in enumerate(events):
        later = [later_state for later_name, (later_state, _later_cordoned) in events[index + 1:] if later_name == name and later_state != state]
        stepped_back = state == 'cordon-required' and not unschedulable and later[:1] == ['upgrade-required']
        current[name] = (state, unschedulable, (state in IN_PROGRESS and not stepped_back) or unschedulable)
        count = sum(upgrading for _state, _cordoned, upgrading in current.values())
        if count > most:
            most, when = count, dict(current)
    return most, when


def test_slices_at_the_same_time_keep_max_parallel_upgrades(kube_api, tmp_path, nodes, gpus):
    """The three slices of an AWX sliced job (a node each) run upgrade.yml at the same time; only the first has the
    kube_api host. Three single-node slices are the most claims at once the three Nodes can make."""
    for host in nodes:
        label(kube_api, nodes[host], {STATE: 'upgrade-required'})
    extra = {'gpu_driver_upgrade_policy': {'maxParallelUpgrades': 1, 'maxUnavailable': '100%'}, 'gpu_driver_upgrade_admission_interval': 1}
    runs = []
    before = kubernetes.client.CoreV1Api(kube_api.api_client).list_node()
    for index, hosts in enumerate(awx_slices(nodes, 3)):
        inventory = tmp_path / f'slice-{index + 1}.yml'
        write_inventory(inventory, hosts, index == 0, gpus, tmp_path, nodes)
        runs.append(start_upgrade(kube_api, inventory, extra))
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    (tmp_path / 'output.txt').write_text('\n'.join(outputs))
    assert all(run.returncode == 0 for run in runs), outputs
    steps = history(kube_api, before, set(nodes.values()))
    most, when = most_in_progress(kube_api, before, set(nodes.values()))
    assert most == 1, f'{most} Nodes in progress at once: {when}'
    assert all(states(steps[name])[-1] == 'upgrade-done' and steps[name][-1] == ('upgrade-done', False) for name in nodes.values()), steps


def test_node_outside_the_run_in_progress_holds_the_run(kube_api, tmp_path, nodes, gpus):
    """c, not in the run, is being drained: a and b wait for it; out of time, nothing is cordoned and c is named."""
    label(kube_api, nodes['c'], {STATE: 'drain-required'}, unschedulable=True)
    for host in ('a', 'b'):
        label(kube_api, nodes[host], {STATE: 'upgrade-required'})
    fixtures = {'a': 'h200-x1', 'b': 'h200-x1'}
    code, out, steps = run_upgrade(kube_api, tmp_path, nodes, gpus, fixtures,
                                   {'gpu_driver_upgrade_admission_timeout': 3, 'gpu_driver_upgrade_admission_interval': 1})
    assert code != 0, out
    assert f'{nodes["a"]} waited 3s (gpu_driver_upgrade_admission_timeout) for room and stays in upgrade-required' in out, out
    assert f'upgrades in progress on {nodes["c"]} (maxParallelUpgrades 1)' in out, out
    assert steps[nodes['a']] == [('upgrade-required', False)] and steps[nodes['b']] == [('upgrade-required', False)], steps

    # c finishes while a waits: a goes once c has left progress, then b.
    before = kubernetes.client.CoreV1Api(kube_api.api_client).list_node()
    write_inventory(tmp_path / 'run.yml', ['a', 'b'], True, gpus, tmp_path, nodes)
    run = start_upgrade(kube_api, tmp_path / 'run.yml', {'gpu_driver_upgrade_admission_interval': 1})
    time.sleep(8)
    assert run.poll() is None, run.communicate()[0]
    assert node(kube_api, nodes['a']).metadata.labels[STATE] == 'upgrade-required', 'a waits for c'
    label(kube_api, nodes['c'], {STATE: 'upgrade-done'}, unschedulable=False)
    out = run.communicate(timeout=600)[0]
    assert run.returncode == 0, out
    most, when = most_in_progress(kube_api, before, set(nodes.values()))
    assert most == 1, when
    steps = history(kube_api, before, set(nodes.values()))
    assert states(steps[nodes['a']]) == FULL_ROLL and states(steps[nodes['b']]) == FULL_ROLL, steps
