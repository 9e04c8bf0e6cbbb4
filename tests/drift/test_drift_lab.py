"""Drift found and repaired for real: playbooks/site.yml with the callback gpuops.gpu_operator.drift_report against
three lab nodes and the API stand-in.

site.yml converges the nodes (the report lists what it changed); one node then drifts in two stages: the nvidia runtime
is removed from its containerd config.toml by hand, and one of its Node's labels is deleted through the API. A check run
(--check --diff) reports drift on that node only, in the container_toolkit and gpu_node_labels stages, with the diffs,
and repairs nothing. A run repairs the node (the report lists what it changed, on that node only), and a check run then finds no drift anywhere.

The validation play is skipped (--skip-tags validation): the stand-in runs no Pods. A lab test like `make demo`: lab
nodes (podman, named gpuops-drift-<distro>, removed afterwards) from the lab images (`make images`) and a stand-in of
its own. What each run took is printed and kept in .build/drift/timings.json.
"""
import json
import subprocess
import time

import pytest
import yaml

from tests.cluster.helpers import REPO, raw
from tests.lab.labtest import ANSIBLE_PLAYBOOK, lab_inventory, lab_nodes, playbook_environment, run

PREFIX = 'gpuops-drift-'
DISTROS = ('bookworm', 'trixie', 'sid')
# Not the play's first node: the labels of every node are applied in one run on the API host, and each node must
# still be reported for its own Node.
DRIFTED = PREFIX + 'sid'
CONTAINERD_CONFIG = '/etc/containerd/config.toml'
LABEL = 'nvidia.com/gpu.product'
RESULTS = REPO / '.build' / 'drift'
LABELS_TASK = "Report the node's labels"


def write_inventory(path):
    """The lab inventory with the lab nodes renamed gpuops-drift-<distro>: the same group and host variables."""
    path.write_text(yaml.safe_dump(lab_inventory(PREFIX)))
    return path


@pytest.fixture(name='lab')
def fixture_lab(tmp_path):
    """(kubeconfig, Kube): a stand-in of its own with the nodes' Nodes, and the lab nodes running; all gone afterwards."""
    with lab_nodes(tmp_path, PREFIX, DISTROS) as lab:
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
    code, node = raw(kube, 'GET', f'/api/v1/nodes/{name}')
    assert code == 200, node
    return node['metadata'].get('labels') or {}


def test_drift_is_found_on_the_node_that_drifted_and_repaired(lab, tmp_path):
    kubeconfig, kube = lab
    inventory = write_inventory(tmp_path / 'hosts.yml')
    others = sorted({PREFIX + distro for distro in DISTROS} - {DRIFTED})
    took = {}

    # The nodes converge: the report lists what the run changed on each.
    started = time.monotonic()
    report = site(kubeconfig, inventory, tmp_path / 'converge.json')[0]
    took['converge_s'] = round(time.monotonic() - started)
    assert report['mode'] == 'run' and statuses(report) == dict({'localhost': 'changed'}, **{PREFIX + d: 'changed' for d in DISTROS}), report
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
    assert statuses(report) == dict({'localhost': 'no drift'}, **{PREFIX + d: 'no drift' for d in DISTROS}), report
    assert not any(entry['not_checked'] for entry in report['hosts'].values()), report

    (RESULTS / 'timings.json').write_text(json.dumps(took, indent=2) + '\n')
    print(f'\ndrift lab runs: {took}')
