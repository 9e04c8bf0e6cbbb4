"""Drift found and repaired for real: playbooks/site.yml with the callback gpuops.gpu_operator.drift_report against
four lab nodes and the API stand-in: the three of the lab inventory and a CPU-only one (bookworm served the cpu-only
capture, a VirtualBox guest's PCI devices: no NVIDIA GPU).

First a check run (--check --diff) on the fresh nodes, as a new user previews: it predicts and does not fail (issue #25):
the container toolkit's packages the run would install, and for the runtime config a note that its preview needs
tomlkit (the lab images have no python3-tomlkit and empty package lists); nothing changes. site.yml then converges the
nodes (the report lists what it changed). The CPU-only node ends after its labels, with "no NVIDIA GPU" in the summary and
the report: its files under /etc, its packages and its services are as before, byte for byte, and its Node is one the
k8s_nodes inventory leaves out from then on. One node then drifts in two stages: the nvidia runtime is removed from its
containerd config.toml by hand, and one of its Node's labels is deleted through the API. A check run reports drift on
that node only, in the container_toolkit and gpu_node_labels stages, with the diffs, and repairs nothing. A run repairs
the node (the report lists what it changed, on that node only), and a check run then finds no drift anywhere.

The validation play is skipped (--skip-tags validation): the stand-in runs no Pods. A lab test like `make demo`: lab
nodes (podman, named gpuops-drift-<distro>, removed afterwards) from the lab images (`make images`) and a stand-in of
its own. What each run took is printed and kept in .build/drift/timings.json.
"""
import json
import re
import subprocess
import time

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import k8s_nodes
from tests.cluster.helpers import REPO, raw
from tests.lab.labtest import ANSIBLE_PLAYBOOK, lab_fixtures, lab_inventory, named_lab_nodes, playbook_environment, run

PREFIX = 'gpuops-drift-'
DISTROS = ('bookworm', 'trixie', 'sid')
# The CPU-only node: the captured PCI devices of a machine without an NVIDIA device (tests/fixtures/gpus/cpu-only).
CPU = PREFIX + 'cpu'
CPU_DISTRO, CPU_FIXTURE = 'bookworm', 'cpu-only'
# Not the play's first node: the labels of every node are applied in one run on the API host, and each node must
# still be reported for its own Node.
DRIFTED = PREFIX + 'sid'
CONTAINERD_CONFIG = '/etc/containerd/config.toml'
LABEL = 'nvidia.com/gpu.product'
RESULTS = REPO / '.build' / 'drift'
LABELS_TASK = "Report the node's labels"


def write_inventory(path):
    """The lab inventory with the lab nodes renamed gpuops-drift-<distro>, the same group and host variables, and the
    CPU-only node in gpu_nodes, as the k8s_nodes inventory lists a node not examined yet."""
    inventory = lab_inventory(PREFIX)
    inventory['all']['children']['gpu_nodes']['hosts'][CPU] = {'gpuops_lab_distro': CPU_DISTRO, 'gpuops_lab_fixture': CPU_FIXTURE}
    path.write_text(yaml.safe_dump(inventory))
    return path


@pytest.fixture(name='lab')
def fixture_lab(tmp_path):
    """(kubeconfig, Kube): a stand-in of its own with the nodes' Nodes, and the lab nodes running; all gone afterwards."""
    fixtures = lab_fixtures()
    nodes = dict({PREFIX + distro: (distro, fixtures[distro]) for distro in DISTROS}, **{CPU: (CPU_DISTRO, CPU_FIXTURE)})
    with named_lab_nodes(tmp_path, nodes) as lab:
        yield lab


def site(kubeconfig, inventory, report, *args):
    """site.yml with the drift report: (the report, the output)."""
    env = playbook_environment(kubeconfig, ANSIBLE_CALLBACKS_ENABLED='gpuops.gpu_operator.drift_report', GPUOPS_DRIFT_REPORT_PATH=str(report))
    result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), 'playbooks/site.yml',
                             '--skip-tags', 'validation', *args], capture_output=True, text=True, check=False, cwd=REPO, env=env, timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    print(out[out.find('GPUOPS DRIFT REPORT'):])
    return json.loads(report.read_text()), out


def statuses(report):
    return {name: entry['status'] for name, entry in report['hosts'].items()}


def containerd_config(name):
    return run('podman', 'exec', name, 'cat', CONTAINERD_CONFIG)


def node_labels(kube, name):
    return read_node(kube, name)['metadata'].get('labels') or {}


def read_node(kube, name):
    code, node = raw(kube, 'GET', f'/api/v1/nodes/{name}')
    assert code == 200, node
    return node


def node_state(name):
    """What a run could change on a node: every file under /etc (containerd's config, apt's sources), the collection's
    records and the validations directory with their checksums, the package lists and the packages, the service units'
    enablement and containerd's run (a restart gives it another invocation)."""
    def on_node(command):
        return run('podman', 'exec', name, 'sh', '-c', command)
    return {
        'files': on_node('find /etc /var/lib/gpuops /run/nvidia /var/lib/apt/lists -xdev -type f -print0 2>/dev/null | sort -z'
                         ' | xargs -0 -r sha256sum'),
        'packages': on_node("dpkg-query -W -f '${Package}=${Version} ${Status}\\n'"),
        'units': on_node('systemctl list-unit-files --type=service --no-legend --no-pager'),
        'containerd': on_node('systemctl show containerd -p InvocationID -p ActiveState -p MainPID -p NRestarts'),
    }


def test_drift_is_found_on_the_node_that_drifted_and_repaired(lab, tmp_path):
    kubeconfig, kube = lab
    inventory = write_inventory(tmp_path / 'hosts.yml')
    gpus = sorted(PREFIX + distro for distro in DISTROS)
    others = sorted(set(gpus) - {DRIFTED}) + [CPU]
    took = {}
    fresh = {name: node_state(name) for name in gpus + [CPU]}

    # A new user's first look at fresh nodes (no python3-tomlkit, empty package lists): the check run predicts, it does
    # not fail, and it changes nothing. The CPU-only node ends after its labels.
    started = time.monotonic()
    report, out = site(kubeconfig, inventory, tmp_path / 'fresh.json', '--check', '--diff')
    took['check_fresh_s'] = round(time.monotonic() - started)
    assert statuses(report) == dict({'localhost': 'drift'}, **{name: 'drift' for name in gpus + [CPU]}), report
    for name in gpus:
        entry = report['hosts'][name]
        assert 'Install the missing packages (check mode, predicted)' in [one['task'] for one in entry['stages']['container_toolkit']], entry
        assert [(one['task'], one['message']) for one in entry['not_checked']] == [(
            'Register the NVIDIA runtime with containerd', 'check mode: the preview of /etc/containerd/config.toml needs tomlkit on the '
            'node, and python3-tomlkit is not installed there yet (the run installs it before it configures the runtime): what the run '
            'would change in it is not shown')], entry
        assert f'{name}: the run would install python3-tomlkit (after refreshing the package lists).' in ' '.join(out.split())
    assert (list(report['hosts'][CPU]['stages']), report['hosts'][CPU]['ended']) == (['gpu_node_labels'], 'no NVIDIA GPU'), report['hosts'][CPU]
    assert f'{CPU}: drift in gpu_node_labels ({LABELS_TASK}); ended: no NVIDIA GPU' in out
    assert {name: node_state(name) for name in gpus + [CPU]} == fresh, 'the check run changed a node'

    # The nodes converge: the report lists what the run changed on each. On the CPU-only node only its Node changed (its
    # labels and the annotation that marks it examined): nothing was installed, written or restarted there.
    started = time.monotonic()
    report, out = site(kubeconfig, inventory, tmp_path / 'converge.json')
    took['converge_s'] = round(time.monotonic() - started)
    assert node_state(CPU) == fresh[CPU], 'site.yml changed the CPU-only node'
    assert report['mode'] == 'run' and statuses(report) == dict({'localhost': 'changed'}, **{name: 'changed' for name in gpus + [CPU]}), report
    assert (list(report['hosts'][CPU]['stages']), report['hosts'][CPU]['ended']) == (['gpu_node_labels'], 'no NVIDIA GPU'), report['hosts'][CPU]
    # The summary line, however the output callback wraps it.
    assert re.search(rf'{CPU}: Debian 12\S*, kernel \S+, Node {CPU} labelled, no NVIDIA GPU: no driver, container toolkit or validation '
                     'stage ran there', ' '.join(out.split())), out[out.find('Per-node summary'):][:3000]
    # Examined without a GPU: the k8s_nodes inventory leaves it out from now on (no connection to it); the GPU nodes stay.
    assert [k8s_nodes.selected(read_node(kube, name)) for name in gpus + [CPU]] == [True] * len(gpus) + [False]
    # The node labels stage labels every node of the play in one run on the API host; each node reports its own change.
    for distro in DISTROS:
        assert {'gpu_node_labels', 'container_toolkit'} <= set(report['hosts'][PREFIX + distro]['stages']), report['hosts'][PREFIX + distro]
        assert [one['task'] for one in report['hosts'][PREFIX + distro]['stages']['gpu_node_labels']] == [LABELS_TASK]
    assert report['hosts']['localhost']['cluster'] and 'gpu_cluster_operands' in report['hosts']['localhost']['stages']

    # One node drifts, in two stages: its containerd config by hand, its Node's labels through the API.
    config = containerd_config(DRIFTED)
    assert 'runtimes.nvidia]' in config and node_labels(kube, DRIFTED).get(LABEL)
    run('podman', 'exec', DRIFTED, 'sed', '-i', r'/runtimes\.nvidia\]/,/BinaryName/d', CONTAINERD_CONFIG)
    drifted_config = containerd_config(DRIFTED)
    assert 'runtimes.nvidia' not in drifted_config and 'BinaryName' not in drifted_config, drifted_config
    code, body = raw(kube, 'PATCH', f'/api/v1/nodes/{DRIFTED}', {'metadata': {'labels': {LABEL: None}}}, 'application/merge-patch+json')
    assert code == 200, body

    # Check mode finds it on that node only, with the diffs, and repairs nothing.
    started = time.monotonic()
    report, out = site(kubeconfig, inventory, tmp_path / 'check.json', '--check', '--diff')
    took['check_s'] = round(time.monotonic() - started)
    assert report['mode'] == 'check'
    assert statuses(report) == dict({'localhost': 'no drift', DRIFTED: 'drift'}, **{n: 'no drift' for n in others}), report
    stages = report['hosts'][DRIFTED]['stages']
    assert list(stages) == ['gpu_node_labels', 'container_toolkit'], stages
    assert [one['task'] for one in stages['gpu_node_labels']] == [LABELS_TASK]
    assert f'+    "{LABEL}": ' in stages['gpu_node_labels'][0]['diff'], stages['gpu_node_labels']
    toolkit = {one['task']: one['diff'] for one in stages['container_toolkit']}
    assert set(toolkit) == {'Register the NVIDIA runtime with containerd', 'Restart the container runtime'}, toolkit
    added = [line for line in toolkit['Register the NVIDIA runtime with containerd'].splitlines() if line.startswith('+') and '+++' not in line]
    assert any('runtimes.nvidia]' in line for line in added) and any('BinaryName' in line for line in added), toolkit
    assert f'{DRIFTED}: drift in gpu_node_labels ({LABELS_TASK}), container_toolkit (' in out
    assert containerd_config(DRIFTED) == drifted_config and LABEL not in node_labels(kube, DRIFTED), 'check mode repaired something'
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / 'check-report.txt').write_text((tmp_path / 'check.txt').read_text())

    # The run repairs it, and says so for that node only.
    started = time.monotonic()
    report = site(kubeconfig, inventory, tmp_path / 'repair.json', '--diff')[0]
    took['repair_s'] = round(time.monotonic() - started)
    assert statuses(report) == dict({'localhost': 'no change', DRIFTED: 'changed'}, **{n: 'no change' for n in others}), report
    assert list(report['hosts'][DRIFTED]['stages']) == ['gpu_node_labels', 'container_toolkit']
    assert containerd_config(DRIFTED) == config and node_labels(kube, DRIFTED).get(LABEL)

    # Converged again: no drift anywhere.
    started = time.monotonic()
    report = site(kubeconfig, inventory, tmp_path / 'after.json', '--check', '--diff')[0]
    took['check_after_repair_s'] = round(time.monotonic() - started)
    assert statuses(report) == dict({'localhost': 'no drift'}, **{name: 'no drift' for name in gpus + [CPU]}), report
    assert not any(entry['not_checked'] for entry in report['hosts'].values()), report

    (RESULTS / 'timings.json').write_text(json.dumps(took, indent=2) + '\n')
    print(f'\ndrift lab runs: {took}')
