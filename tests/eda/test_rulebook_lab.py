"""The rulebook extensions/eda/rulebooks/gpu_nodes.yml run for real by ansible-rulebook, against the API stand-in and a
fresh lab node: the node is configured and labelled without any command, and a run that fails brings the doctor.

What it measures (printed, and kept in .build/eda/join.json): the seconds from the moment the lab node's Node is
registered (as its kubelet would: created, then its status with nodeInfo read from the node) to the first look at the
API that shows the Node labelled by this collection (nvidia.com/gpu.present=true) and matched by the nodeSelector of
every operand DaemonSet. In between, all by itself: the event source sees the Node join, ansible-rulebook runs
site_and_doctor.yml limited to the node and the API host, the k8s_nodes inventory lists the node, and site.yml's plays
run (cluster prerequisites, the node's stages, the operands) with the validation play skipped (ANSIBLE_SKIP_TAGS): the
stand-in runs no Pods. The operands are installed beforehand by site.yml with no GPU node, as in a cluster a node joins.

A lab test like `make demo`: one lab node (podman, its own name gpuops-eda-bookworm, removed afterwards) and a stand-in
of its own; it needs the lab image (`make images`), podman and Java 17. The waits are bounded.
"""
import datetime
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from tests.cluster.helpers import REPO, raw, register_node
from tests.lab import labctl
from tests.lab.labtest import ANSIBLE_PLAYBOOK, LAB_INVENTORY, lab_fixtures, lab_nodes, playbook_environment, run
NODE = 'gpuops-eda-bookworm'
DISTRO, FIXTURE = 'bookworm', 'a100-sxm4-80gb-mig'  # a pre-installed driver: the driver stage validates it
NAMESPACE = 'gpu-operator'
GOAL = 60  # seconds (issue #15)
WAIT = 240  # seconds at most for a run to show on the Node (a loaded 2-core CI machine)
RESULTS = REPO / '.build' / 'eda'


def environment(kubeconfig):
    return playbook_environment(kubeconfig, ANSIBLE_SKIP_TAGS='validation')


def write_inventory(directory, kubeconfig):
    """The k8s_nodes inventory of the lab: the podman connection to the container named like its Node, and the lab's
    GPU node variables from inventory/lab/hosts.yml (the group's, and those of its host served the same fixture)."""
    lab = yaml.safe_load(LAB_INVENTORY.read_text())['all']['children']['gpu_nodes']
    served = [hostvars for hostvars in lab['hosts'].values() if (hostvars or {}).get('gpuops_lab_fixture') == FIXTURE]
    (directory / 'group_vars').mkdir(parents=True)
    (directory / 'host_vars').mkdir()
    (directory / 'group_vars' / 'gpu_nodes.yml').write_text(yaml.safe_dump(dict(lab['vars'], **served[0])))
    (directory / 'k8s_nodes.yml').write_text(yaml.safe_dump({
        'plugin': 'gpuops.gpu_operator.k8s_nodes', 'kubeconfig': str(kubeconfig),
        'compose': {'ansible_connection': "'containers.podman.podman'", 'ansible_host': 'inventory_hostname'}}))


def node_info(name):
    """nodeInfo and InternalIP as the node's kubelet would report them, read from the node."""
    def on_node(command):
        return run('podman', 'exec', name, 'sh', '-c', command).strip()
    address = run('podman', 'inspect', '--format', '{{.NetworkSettings.IPAddress}}', name).strip()
    return dict(osImage=on_node('. /etc/os-release && echo "$PRETTY_NAME"'), kernelVersion=on_node('uname -r'),
                containerRuntimeVersion='containerd://' + labctl.containerd_version(name),
                bootID=on_node('cat /proc/sys/kernel/random/boot_id'), machineID=on_node('cat /etc/machine-id'),
                operatingSystem='linux', architecture='amd64'), address or None


def configured(kube_api, name):
    """(labelled, matching): the Node carries this collection's labels; every operand DaemonSet's nodeSelector matches it."""
    code, found = raw(kube_api, 'GET', f'/api/v1/nodes/{name}')
    assert code == 200, found
    labels = found['metadata'].get('labels') or {}
    code, sets = raw(kube_api, 'GET', f'/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets')
    selectors = [ds['spec']['template']['spec'].get('nodeSelector') or {} for ds in sets.get('items', [])] if code == 200 else []
    labelled = labels.get('nvidia.com/gpu.present') == 'true' and 'gpuops.io/nfd-labels' in (found['metadata'].get('annotations') or {})
    # The MPS control daemon also selects nvidia.com/mps.capable, which only a node sharing with MPS carries (the lab
    # node does not): every other operand is meant for every GPU node.
    meant = [sel for sel in selectors if 'nvidia.com/mps.capable' not in sel]
    return labelled, labelled and bool(meant) and all(all(labels.get(k) == v for k, v in sel.items()) for sel in meant)


def wait_for(what, check, seconds=WAIT, rulebook=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        if rulebook is not None and rulebook.poll() is not None:
            pytest.fail(f'ansible-rulebook ended (rc {rulebook.returncode}) while waiting for {what}')
        time.sleep(0.5)
    pytest.fail(f'{what}: not within {seconds}s')


@pytest.fixture(name='lab')
def fixture_lab(tmp_path):
    """(kubeconfig, Kube): a stand-in of its own (no Node: the test registers it) and the lab node, running; both gone
    afterwards."""
    assert lab_fixtures()[DISTRO] == FIXTURE
    with lab_nodes(tmp_path, 'gpuops-eda-', (DISTRO,), register=False) as lab:
        yield lab


def event_seen(log_path, name):
    """The wall-clock time of the event source's log line for the Node's join event, or None."""
    for line in log_path.read_text().splitlines():
        if f'Node {name}: joined' in line:
            return datetime.datetime.strptime(line[:23], '%Y-%m-%d %H:%M:%S,%f').replace(tzinfo=datetime.timezone.utc).timestamp()
    return None


def test_a_node_that_joins_is_configured_without_a_command(lab, tmp_path):
    kubeconfig, kube = lab
    # The doctor writes its report where ansible-rulebook runs ($PWD).
    env = dict(environment(kubeconfig), PWD=str(tmp_path), TZ='UTC')
    inventory, report, log_path = tmp_path / 'inventory', tmp_path / 'gpuops-doctor-report.json', tmp_path / 'rulebook.log'
    write_inventory(inventory, kubeconfig)
    log = log_path.open('w')
    rulebook = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), 'ansible-rulebook'), '--rulebook', 'gpuops.gpu_operator.gpu_nodes',
                                 '-i', str(inventory), '-v'], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # Meanwhile, the cluster before the node joins: site.yml with no GPU node installs the prerequisites and the
        # operands. No Node, no event.
        run(ANSIBLE_PLAYBOOK, '-i', str(inventory), 'playbooks/site.yml', env=env)
        wait_for('the event source watching the Nodes', lambda: 'watching them from resourceVersion' in log_path.read_text(),
                 seconds=120, rulebook=rulebook)

        # The node joins: its Node is registered as its kubelet would register it.
        info, address = node_info(NODE)
        started, registered = time.monotonic(), time.time()
        register_node(kube, NODE, info=info, address=address)
        labelled = wait_for('the Node labelled', lambda: configured(kube, NODE)[0], rulebook=rulebook)
        matched = wait_for("the operands' nodeSelectors matching the Node", lambda: configured(kube, NODE)[1], rulebook=rulebook)
        seen = event_seen(log_path, NODE)
        measured = {'labelled_s': round(labelled - started, 1), 'operands_match_s': round(matched - started, 1),
                    'event_s': round(seen - registered, 2) if seen else None, 'goal_s': GOAL, 'node': NODE, 'distro': DISTRO, 'fixture': FIXTURE}
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / 'join.json').write_text(json.dumps(measured, indent=2) + '\n')
        print(f'\nEDA join: Node registered -> event {measured["event_s"]}s, labelled {measured["labelled_s"]}s, operand nodeSelectors '
              f'match {measured["operands_match_s"]}s (goal {GOAL}s)')
        assert not report.exists(), 'the run that configured the node ran no doctor'

        # The inventory the runs used: the lab node in gpu_nodes and in the groups of its nodeInfo.
        graph = run(os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(inventory), '--graph', env=env)
        print(graph)
        groups = {line.strip(' |-@:') for line in graph.splitlines() if '@' in line}
        members = {line.strip(' |-') for line in graph.splitlines() if '@' not in line}
        assert NODE in members and {'gpu_nodes', 'kube_api', 'os_debian_gnu_linux_12_bookworm', 'runtime_containerd'} <= groups, graph
        assert any(group.startswith('kernel_') for group in groups), graph  # the lab host's kernel, which its containers share

        # A run that fails: the node's labels stage gets a setting it refuses (a device plugin config the ClusterPolicy has
        # no ConfigMap for); then one of its labels is removed.
        (inventory / 'host_vars' / f'{NODE}.yml').write_text(yaml.safe_dump({'gpu_node_labels_device_plugin_config': 'not-in-the-policy'}))
        code, body = raw(kube, 'PATCH', f'/api/v1/nodes/{NODE}', {'metadata': {'labels': {'nvidia.com/gpu.product': None}}},
                         'application/merge-patch+json')
        assert code == 200, body
        failed = time.monotonic()
        wait_for("the doctor's report", report.exists, rulebook=rulebook)
        print(f'EDA failing run: label removed -> doctor\'s report in {time.monotonic() - failed:.0f}s (after the join run ended)')
        found = json.loads(report.read_text())
        assert NODE in found['nodes'], found
        assert 'not-in-the-policy' in json.dumps(found['nodes'][NODE]), 'the report names why the labels could not be computed'
        # The run went on past the node that stopped: the summary recorded it in the ClusterPolicy status.
        code, policy = raw(kube, 'GET', '/apis/nvidia.com/v1/clusterpolicies/cluster-policy')
        assert code == 200, policy
        error = [item for item in policy['status']['conditions'] if item['type'] == 'Error'][0]
        assert policy['status']['state'] == 'notReady' and error['reason'] == 'ReconcileFailed' and NODE in error['message'], policy['status']
    finally:
        os.killpg(rulebook.pid, signal.SIGINT)
        try:
            rulebook.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(rulebook.pid, signal.SIGKILL)
            rulebook.wait(10)
        log.close()
        print((tmp_path / 'rulebook.log').read_text()[-6000:])
