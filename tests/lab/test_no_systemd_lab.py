"""site.yml, doctor.yml and uninstall.yml on a lab node that systemd does not run: its PID 1 is `sleep infinity` and its
containerd a plain process started by hand (tests/lab/labctl.py up --no-systemd), as in a container or on a CI runner
where systemctl is installed but fails ("System has not been booted with systemd as init system").

The role cannot restart a runtime that something else runs, and a changed configuration the running containerd has not
loaded must not pass for ready. A check run (--check --diff, with the drift report) first, as the node would be without
its driver: it says what the run will do and cannot do, and the driver stage's change is its packages with a diff (the
refresh of the package lists is none). Then site.yml configures containerd and stops the node there, naming the
condition and what to do (no toolkit-ready); doctor.yml answers on the node and finds the running containerd older than its configuration;
once containerd is restarted by hand, site.yml goes through and writes toolkit-ready; uninstall.yml restores the
configuration byte for byte and stops the node again until containerd is restarted.

One bookworm node served the lab's A100 capture (a pre-installed driver: the driver stage validates it) and a stand-in
of its own; the validation play is skipped (the stand-in runs no Pods). What each run took is printed and kept in
.build/no-systemd/timings.json.
"""
import json
import subprocess
import sys
import time

import pytest
import yaml

from tests.cluster.helpers import REPO
from tests.lab import labctl
from tests.lab.labtest import ANSIBLE_PLAYBOOK, LABCTL, lab_inventory, lab_nodes, playbook_environment, run

PREFIX = 'gpuops-nosd-'
DISTRO = 'bookworm'
NODE = PREFIX + DISTRO
CONTAINERD_CONFIG = '/etc/containerd/config.toml'
TOOLKIT_READY = '/run/nvidia/validations/toolkit-ready'
RESULTS = REPO / '.build' / 'no-systemd'


# The node as if it had no driver: procfs pointed at an empty directory, nvidia-smi looked for on PATH (molecule/nvidia_driver
# does the same).
NO_DRIVER = {'nvidia_driver_procfs_root': '/var/lib/gpuops-lab/proc-without-driver', 'nvidia_driver_nvidia_smi': ''}


@pytest.fixture(name='lab')
def fixture_lab(tmp_path):
    """(kubeconfig, inventory, the inventory of the node as if without driver): the node without systemd and its Node on a
    stand-in of its own; gone afterwards."""
    with lab_nodes(tmp_path, PREFIX, [DISTRO], systemd=False) as (kubeconfig, _kube):
        paths = []
        for name, overrides in (('hosts.yml', {}), ('no-driver.yml', NO_DRIVER)):
            inventory = lab_inventory(PREFIX)
            hosts = inventory['all']['children']['gpu_nodes']['hosts']
            inventory['all']['children']['gpu_nodes']['hosts'] = {NODE: dict(hosts[NODE], **overrides)}
            paths.append(tmp_path / name)
            paths[-1].write_text(yaml.safe_dump(inventory))
        yield (kubeconfig, *paths)


def playbook(kubeconfig, inventory, name, *args, **env):
    """(return code, output) of one playbook run."""
    result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), f'playbooks/{name}', *args], capture_output=True, text=True,
                            check=False, cwd=REPO, env=playbook_environment(kubeconfig, **env), timeout=600)
    return result.returncode, result.stdout + result.stderr


def on_node(*argv):
    return subprocess.run(['podman', 'exec', NODE, *argv], capture_output=True, check=False)


def containerd_pids():
    return labctl.containerd_pids(NODE)


def test_a_node_without_systemd_is_configured_checked_and_restored_and_says_what_it_cannot_do(lab, tmp_path):
    kubeconfig, inventory, no_driver = lab
    took = {}
    # The node as the test needs it: systemd is installed and is not PID 1; containerd runs, started by hand.
    assert on_node('cat', '/proc/1/comm').stdout == b'sleep\n' and on_node('systemctl', '--version').returncode == 0
    assert b'System has not been booted with systemd' in on_node('systemctl', 'show', 'containerd.service').stderr
    [pid] = containerd_pids()
    original = on_node('cat', CONTAINERD_CONFIG).stdout
    # The toolkit's packages are out of the lab's reach (container_toolkit_install_packages: false): a program at the
    # runtime's path makes this a node where toolkit-ready is due once containerd has loaded the runtime.
    run('podman', 'exec', NODE, 'sh', '-c', "printf '#!/bin/sh\\nexit 1\\n' > /usr/bin/nvidia-container-runtime && chmod 755 /usr/bin/nvidia-container-runtime")

    # The check run, as the node would be without its driver and with containerd stopped: the drift report and the
    # warnings say what a run would do and what it leaves to whoever runs the node. The node has package lists and
    # python3-tomlkit first (the image has neither, and check mode installs nothing: the container toolkit stage's check
    # run cannot edit containerd's TOML without tomlkit); apt-get -s can then tell versions.
    run('podman', 'exec', NODE, 'mkdir', '-p', NO_DRIVER['nvidia_driver_procfs_root'])
    run('podman', 'exec', NODE, 'sh', '-c', 'apt-get update -qq && apt-get install -qq -y python3-tomlkit >/dev/null')
    run('podman', 'exec', NODE, 'sh', '-c', f'kill -TERM {pid}')
    labctl.wait_for('containerd did not stop', lambda: not containerd_pids(), 60)
    report_path = tmp_path / 'check.json'
    started = time.monotonic()
    rc, out = playbook(kubeconfig, no_driver, 'site.yml', '--skip-tags', 'validation', '--check', '--diff',
                       ANSIBLE_CALLBACKS_ENABLED='gpuops.gpu_operator.drift_report', GPUOPS_DRIFT_REPORT_PATH=str(report_path))
    took['site_check_s'] = round(time.monotonic() - started)
    words = ' '.join(out.split())
    assert rc == 0, out[-6000:]
    assert (f'WARNING: systemd is not PID 1 on {NODE} and no containerd process runs: the role does not start it. Start it the way '
            f'this host runs it; pods cannot start until then.') in words, out[-6000:]
    assert 'a run stops here' not in words, 'a containerd that is not running loads the configuration when it is started'
    assert ('systemd is not PID 1 on this node: nvidia-persistenced is neither enabled nor started (persistence_mode); run it the way '
            'this node runs its services') in words, out[-6000:]
    stages = json.loads(report_path.read_text())['hosts'][NODE]['stages']
    driver = {change['task']: change['diff'] for change in stages['nvidia_driver']}
    assert list(driver) == ['Install, hold and load the driver, or validate the one there'], driver
    [diff] = driver.values()
    added = [line[1:] for line in diff.splitlines() if line.startswith('+') and not line.startswith('+++')]
    # bookworm's packages (driver_data/apt-s-install-nvidia-smi-persistenced.txt): what the lab installs, dependencies too.
    assert {'nvidia-smi 535.261.03-1 (held)', 'libnvidia-ml1 535.261.03-1 (held)', 'nvidia-persistenced 535.171.04-1~deb12u1 (held)',
            'nvidia-alternative 535.261.03-1', 'blacklist nouveau'} <= set(added), diff
    assert '+++ after: packages (apt)' in diff, diff
    assert 'Register the NVIDIA runtime with containerd' in {change['task'] for change in stages['container_toolkit']}, stages
    assert on_node('cat', CONTAINERD_CONFIG).stdout == original and on_node('dpkg-query', '-W', 'nvidia-smi').returncode == 1
    assert containerd_pids() == [], 'check mode starts nothing'
    run(sys.executable, str(LABCTL), 'start-containerd', NODE)
    [pid] = containerd_pids()

    # site.yml: containerd is configured, and the node stops there, saying why and what to do.
    started = time.monotonic()
    rc, out = playbook(kubeconfig, inventory, 'site.yml', '--skip-tags', 'validation')
    took['site_s'] = round(time.monotonic() - started)
    words = ' '.join(out.split())
    assert rc != 0, out[-6000:]
    assert (f'container_toolkit stage failed in task \'Stop the node until its container runtime is restarted by whoever runs it\': '
            f'systemd is not PID 1 on {NODE}, so the role cannot restart containerd (process {pid}): its configuration for the '
            f'nvidia runtime changed and the running containerd has not loaded it. Restart containerd the way this host runs it, '
            f'then run the playbook again (toolkit-ready is written then).') in words, out[-6000:]
    configured = on_node('cat', CONTAINERD_CONFIG).stdout
    assert b'runtimes.nvidia]' in configured and configured != original
    assert on_node('test', '-e', TOOLKIT_READY).returncode == 1, 'toolkit-ready is not written for a runtime that did not load its config'
    assert containerd_pids() == [pid], 'containerd was left alone'

    # doctor.yml answers on the node: containerd found from its process, older than its configuration.
    report_path = tmp_path / 'doctor.json'
    started = time.monotonic()
    rc, out = playbook(kubeconfig, inventory, 'doctor.yml', '-e', f'doctor_report_path={report_path}')
    took['doctor_s'] = round(time.monotonic() - started)
    assert rc == 0, out[-6000:]
    node = json.loads(report_path.read_text())['nodes'][NODE]
    findings = {item['check']: item for item in node['findings']}
    assert not {'runtime-not-found', 'runtime-detection-failed', 'node-check-failed'} & set(findings), findings
    reloaded = findings['runtime-not-reloaded']
    assert f'changed after containerd process {pid} started' in reloaded['summary'], reloaded
    assert reloaded['fix'] == 'restart containerd the way this node runs it (systemd is not PID 1 on this node)', reloaded

    # Restarted by hand, as whoever runs the node would: site.yml then goes through and writes toolkit-ready.
    run(sys.executable, str(LABCTL), 'start-containerd', NODE)
    [restarted] = containerd_pids()
    started = time.monotonic()
    rc, out = playbook(kubeconfig, inventory, 'site.yml', '--skip-tags', 'validation')
    took['site_after_restart_s'] = round(time.monotonic() - started)
    assert rc == 0, out[-6000:]
    assert on_node('cat', TOOLKIT_READY).stdout == b'runtime=containerd\nruntime_class=nvidia\nbinary=/usr/bin/nvidia-container-runtime\n'
    assert on_node('cat', CONTAINERD_CONFIG).stdout == configured and containerd_pids() == [restarted]

    # uninstall.yml restores the configuration byte for byte, and stops the node until containerd is restarted again.
    started = time.monotonic()
    rc, out = playbook(kubeconfig, inventory, 'uninstall.yml')
    took['uninstall_s'] = round(time.monotonic() - started)
    words = ' '.join(out.split())
    assert rc != 0, out[-6000:]
    assert (f'systemd is not PID 1 on {NODE}, so the role cannot restart containerd (process {restarted}): its configuration for the '
            f'nvidia runtime changed and the running containerd has not loaded it. Restart containerd the way this host runs it, '
            f'then run the playbook again.') in words, out[-6000:]
    assert on_node('cat', CONTAINERD_CONFIG).stdout == original
    assert containerd_pids() == [restarted]

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / 'timings.json').write_text(json.dumps(took, indent=2) + '\n')
    print(f'\nno-systemd lab runs: {took}')
