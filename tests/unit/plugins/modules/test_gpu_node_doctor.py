# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The gpu_node_doctor module on the captured fixtures, with the node's commands replaced by scripts on PATH
that print real containerd output (doctor_data/) and record how they were called; systemd's boot directory and /proc
are the test's own (systemd runs the node, no runtime process, unless a test says otherwise)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import socket
import stat
import time

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import systemd
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_detection
from ansible_collections.gpuops.gpu_operator.plugins.modules import gpu_node_doctor
from tests.module_runner import run_module
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, SIMULATOR
from tests.unit.plugins.module_utils.toolkit.test_runtime_detection import BTIME, CONTAINERD_STAT, fake_proc

DATA = os.path.join(os.path.dirname(__file__), '..', 'module_utils', 'doctor', 'doctor_data')
BINARY_NAME = 'nvidia-container-runtime'
BINARY = '/usr/bin/' + BINARY_NAME


def script(directory, name, body):
    path = directory / name
    path.write_text('#!/bin/sh\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A PATH holding only the node commands the module may run; calls are logged to calls.log."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    log = tmp_path / 'calls.log'
    for name in ('journalctl', 'dmesg'):
        script(bin_dir, name, 'echo "%s $* LC_ALL=$LC_ALL" >> %s\necho "%s: permission denied" >&2\nexit 1\n' % (name, log, name))
    # The runtime became active now (monotonic seconds since boot, in microseconds).
    systemctl(tmp_path, 'read up rest < /proc/uptime; echo "ActiveEnterTimestampMonotonic=${up%.*}000000"')
    monkeypatch.setenv('PATH', str(bin_dir))
    # get_bin_path also looks in the sbin directories: keep the real ones out of the way.
    monkeypatch.setattr('ansible.module_utils.basic.get_bin_path', _only_in(bin_dir))
    (tmp_path / 'run-systemd-system').mkdir(exist_ok=True)
    monkeypatch.setattr(systemd, 'BOOTED_DIR', str(tmp_path / 'run-systemd-system'))
    (tmp_path / 'proc').mkdir(exist_ok=True)
    monkeypatch.setattr(runtime_detection, 'PROC_ROOT', str(tmp_path / 'proc'))
    return tmp_path


def systemctl(node, timestamp):
    script(node / 'bin', 'systemctl', 'echo "systemctl $*" >> %s\nprintf "LoadState=loaded\\nActiveState=active\\n"\n%s\n'
           % (node / 'calls.log', timestamp))


def _only_in(bin_dir):
    def get_bin_path(arg, opt_dirs=None, required=None):
        path = os.path.join(str(bin_dir), arg)
        if os.path.exists(path):
            return path
        raise ValueError('Failed to find required executable "%s"' % arg)
    return get_bin_path


def containerd(node, dump):
    """A containerd printing the real dump `dump` with the lab node's paths moved into the test's directory: the
    config to node/config.toml, the NVIDIA runtime's binary to node/bin (where there is none). The doctor stats both;
    the machine running the tests may well have /etc/containerd/config.toml and the runtime binary."""
    with open(os.path.join(DATA, dump)) as handle:
        text = handle.read()
    moved = node / ('moved-' + dump)
    moved.write_text(text.replace('/etc/containerd/config.toml', str(node / 'config.toml')).replace(BINARY, str(node / 'bin' / BINARY_NAME)))
    script(node / 'bin', 'containerd', 'echo "containerd $* LC_ALL=$LC_ALL" >> %s\n/bin/cat %s\n' % (node / 'calls.log', moved))


def run(capsys, monkeypatch, node, fixture='h200-x1', failed=False, **args):
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', os.path.join(GPUS, fixture))
    config = node / 'config.toml'
    if not config.exists():
        config.write_text('version = 2\n')
        # Written well before the runtime started.
        os.utime(str(config), (config.stat().st_mtime - 1000,) * 2)
    root = os.path.join(GPUS, fixture)
    args = dict(dict(sysfs_root=os.path.join(root, 'sys'), procfs_root=os.path.join(root, 'proc'), nvidia_smi=SIMULATOR,
                     containerd_config=str(config), device_plugin_dir=str(node)), **args)
    return run_module(capsys, gpu_node_doctor.main, args, failed=failed)


def checks(result):
    return [(item['check'], item['severity']) for item in result['findings']]


def test_configured_containerd_on_a_working_driver(capsys, monkeypatch, node):
    containerd(node, 'containerd-1.6-nvidia.toml')
    result = run(capsys, monkeypatch, node, runtime='containerd')
    # The node has no NVIDIA container runtime binary (node/bin holds none), and no readable kernel log.
    assert checks(result) == [('runtime-binary-missing', 'error'), ('kernel-log-unreadable', 'info')]
    assert result['changed'] is False
    facts = result['facts']
    assert facts['driver_version'] == '580.159.04' and facts['kernel_module_type'] == 'open' and facts['gpu_names'] == ['NVIDIA H200']
    assert facts['runtime_status']['configured'] == {'nvidia': str(node / 'bin' / BINARY_NAME)}
    assert facts['runtime_status']['config_files'] == {str(node / 'config.toml'): os.stat(str(node / 'config.toml')).st_mtime}
    calls = (node / 'calls.log').read_text().splitlines()
    assert 'containerd --config %s config dump LC_ALL=C' % (node / 'config.toml') in calls
    assert 'journalctl -k -b -q --no-pager -o short-monotonic -n 20000 LC_ALL=C' in calls and 'dmesg  LC_ALL=C' in calls
    assert any(call.startswith('systemctl show containerd.service') for call in calls)


def test_check_mode_reads_the_same(capsys, monkeypatch, node):
    containerd(node, 'containerd-1.6-nvidia.toml')
    normal = run(capsys, monkeypatch, node, runtime='containerd')
    checked = run(capsys, monkeypatch, node, runtime='containerd', _ansible_check_mode=True)
    assert checked['findings'] == normal['findings'] and checked['changed'] is False


def test_runtime_not_restarted_since_the_config_changed(capsys, monkeypatch, node):
    containerd(node, 'containerd-1.6-nvidia.toml')
    # Active since boot, the config written after that.
    systemctl(node, 'echo ActiveEnterTimestampMonotonic=1')
    (node / 'config.toml').write_text('version = 2\n')
    found = run(capsys, monkeypatch, node, runtime='containerd')['findings'][1]
    assert found['check'] == 'runtime-not-reloaded' and found['fix'] == 'restart it: systemctl restart containerd'
    assert found['summary'].startswith('%s changed after containerd.service started' % (node / 'config.toml'))


@pytest.mark.parametrize('running, changed, expected', [
    # containerd started by hand (tests/lab/labctl.py up --no-systemd), its config changed 100 s later or 100 s before.
    ({6: ('containerd', CONTAINERD_STAT)}, 100, [('runtime-not-reloaded', 'error')]),
    ({6: ('containerd', CONTAINERD_STAT)}, -100, []),
    # No containerd process, while the containerd program is there: not running.
    ({1: ('sleep', None)}, -100, [('runtime-not-running', 'error')]),
])
def test_without_systemd_the_runtime_process_is_read(capsys, monkeypatch, node, running, changed, expected):
    """Where systemd is not PID 1, systemctl fails (as it does there, rc 1) and is not asked: the runtime's process says
    whether and since when containerd runs; the fixes name no systemctl."""
    containerd(node, 'containerd-1.6-nvidia.toml')
    script(node / 'bin', BINARY_NAME, 'exit 0\n')
    (node / 'run-systemd-system').rmdir()
    script(node / 'bin', 'systemctl', 'echo "systemctl $*" >> %s\necho "System has not been booted with systemd as init system (PID 1). '
           'Can\'t operate." >&2\nexit 1\n' % (node / 'calls.log'))
    (node / 'proc').rmdir()
    fake_proc(node / 'proc', running)
    started = 1795755156 + 879.47  # BTIME and CONTAINERD_STAT's start time
    assert 'btime 1795755156' in BTIME
    (node / 'config.toml').write_text('version = 2\n')
    os.utime(str(node / 'config.toml'), (started + changed,) * 2)
    result = run(capsys, monkeypatch, node, runtime='containerd')
    status = result['facts']['runtime_status']
    assert checks(result)[:len(expected)] == expected and ('runtime-not-reloaded', 'error') not in checks(result)[len(expected):]
    assert status['systemd'] is False
    if 6 in running:
        assert (status['process'], status['active_state'], status['active_since']) == ('containerd process 6', 'active', pytest.approx(started))
    else:
        assert (status['process'], status['active_state'], status['active_since']) == (None, 'inactive', None)
    assert not any('systemctl' in item['fix'] for item in result['findings'])
    calls = (node / 'calls.log').read_text()
    assert 'systemctl' not in calls and 'journalctl -u' not in calls


def test_runtime_not_configured(capsys, monkeypatch, node):
    containerd(node, 'containerd-1.7-debian.toml')
    result = run(capsys, monkeypatch, node, runtime='containerd')
    found = result['findings'][0]
    assert (found['check'], found['evidence']) == ('runtime-not-configured', ['containerd config dump lists the runtimes: runc'])


def test_containerd_failing(capsys, monkeypatch, node):
    script(node / 'bin', 'containerd', 'echo "containerd: failed to load TOML: invalid character" >&2\nexit 1\n')
    found = run(capsys, monkeypatch, node, runtime='containerd')['findings'][0]
    assert found['check'] == 'runtime-config-unreadable' and 'failed to load TOML' in found['evidence'][0]


def test_no_runtime(capsys, monkeypatch, node):
    result = run(capsys, monkeypatch, node)
    assert checks(result)[0] == ('runtime-not-found', 'error') and result['facts']['runtime'] is None


def test_docker_configured_but_not_running_it(capsys, monkeypatch, node):
    daemon_json = node / 'daemon.json'
    daemon_json.write_text('{"runtimes": {"nvidia": {"path": "%s", "args": []}}}' % SIMULATOR)
    script(node / 'bin', 'docker', 'echo \'{"runc":{"path":"runc"}}\'\n')
    result = run(capsys, monkeypatch, node, runtime='docker', docker_config=str(daemon_json))
    assert checks(result)[0] == ('runtime-not-reloaded', 'error')
    assert result['findings'][0]['fix'] == 'restart it: systemctl restart docker'


def test_device_plugin_sockets(capsys, monkeypatch, node):
    containerd(node, 'containerd-1.6-nvidia.toml')
    kubelet = socket.socket(socket.AF_UNIX)
    kubelet.bind(str(node / 'kubelet.sock'))
    try:
        sockets = run(capsys, monkeypatch, node, runtime='containerd')['facts']['device_plugin_sockets']
    finally:
        kubelet.close()
    assert sockets == {str(node / 'kubelet.sock'): True, str(node / 'nvidia-gpu.sock'): False}


def test_cpu_node(capsys, monkeypatch, node):
    containerd(node, 'containerd-1.6-nvidia.toml')
    result = run(capsys, monkeypatch, node, fixture='cpu-only', runtime='containerd')
    assert ('no-gpu', 'info') in checks(result) and result['facts']['pci_gpus'] == 0


def test_bad_resource_name_fails(capsys, monkeypatch, node):
    result = run(capsys, monkeypatch, node, runtime='containerd', resource_name='gpu', failed=True)
    assert result['failed'] is True and 'resource_name must be an extended resource name' in result['msg']


@pytest.mark.parametrize('name, args', [('no-runtime', {}), ('containerd', {'runtime': 'containerd'})])
def test_agrees_with_the_run_on_a_real_h200(capsys, monkeypatch, node, name, args):
    """module-results/ holds the module's output on a real H200 (no container runtime, no journal: dmesg only)."""
    with open(os.path.join(GPUS, 'h200-x1', 'module-results', 'gpu_node_doctor-%s.json' % name)) as stream:
        real = json.load(stream)
    kernel_log = node / 'dmesg.txt'
    kernel_log.write_text('\n'.join(real['facts']['kernel_log']['lines']) + '\n')
    script(node / 'bin', 'dmesg', '/bin/cat %s\n' % kernel_log)
    # As there: no containerd unit, no containerd config.
    script(node / 'bin', 'systemctl', 'echo LoadState=not-found\n')
    result = run(capsys, monkeypatch, node, containerd_config=str(node / 'absent.toml'), **args)
    assert result['findings'] == real['findings']
    # Where the binaries and sockets are differs between that host and this test's stand-ins.
    for facts in (result['facts'], real['facts']):
        del facts['nvidia_smi'], facts['device_plugin_sockets']
    # Returned since that run (whether systemd runs the node, else the runtime's process): not in its output.
    assert (result['facts']['runtime_status'].pop('systemd'), result['facts']['runtime_status'].pop('process')) == (
        None if name == 'no-runtime' else True, None)
    # Returned since that run too: the node's workload (container by default) and its vfio facts (only for vm-passthrough).
    assert (result['facts'].pop('workload_config'), result['facts'].pop('vfio')) == ('container', None)
    assert result['facts'] == real['facts']


def test_a_hanging_nvidia_smi_is_a_finding(capsys, monkeypatch, node, tmp_path):
    # A real hang (exec sleep) under the real coreutils timeout (the fixture's PATH holds only the node's commands:
    # timeout is found among the sbin directories get_bin_path adds, else here); the limit is lowered to 1 s.
    script(node / 'bin', 'timeout', 'exec /usr/bin/timeout "$@"\n')
    script(node / 'bin', 'nvidia-smi', 'exec /bin/sleep 600\n')
    monkeypatch.setattr(gpu_discovery, 'NVIDIA_SMI_TIMEOUT', 1)
    started = time.monotonic()
    result = run(capsys, monkeypatch, node, runtime='containerd', nvidia_smi=str(node / 'bin' / 'nvidia-smi'))
    assert time.monotonic() - started < 10
    [found] = [item for item in result['findings'] if item['check'] == 'nvidia-smi-failed']
    hanging = node / 'bin' / 'nvidia-smi'
    assert found['evidence'] == ['%s -q -x failed (rc=124): %s -q -x did not finish within 1 s and was stopped' % (hanging, hanging)]


def test_vm_vgpu_node_gets_the_driver_checks_and_no_runtime_check(capsys, monkeypatch, node):
    """The captured H200 read as a vm-vgpu node (its GPUs are the host vGPU manager's): the driver answers and is
    checked; containerd has no NVIDIA runtime binary there, which a container node reports and a vm-vgpu node does not want."""
    containerd(node, 'containerd-1.6-nvidia.toml')
    assert ('runtime-binary-missing', 'error') in checks(run(capsys, monkeypatch, node, runtime='containerd'))
    result = run(capsys, monkeypatch, node, runtime='containerd', workload_config='vm-vgpu')
    assert checks(result) == [('kernel-log-unreadable', 'info')]
    assert result['facts']['workload_config'] == 'vm-vgpu' and result['facts']['driver_version'] == '580.159.04'


def test_vm_passthrough_node_gets_the_vfio_checks_instead_of_the_driver_and_runtime(capsys, monkeypatch, node):
    """The h100-x1 capture read as a vm-passthrough node: no IOMMU group, no vfio-pci, the GPU not on vfio-pci; no
    runtime is configured, which the driver and runtime checks would report, and is not wanted there."""
    result = run(capsys, monkeypatch, node, fixture='h100-x1', workload_config='vm-passthrough')
    assert checks(result) == [('iommu-off', 'error'), ('vfio-pci-missing', 'error'), ('gpu-not-on-vfio', 'error'),
                              ('kernel-log-unreadable', 'info')]
    assert result['facts']['workload_config'] == 'vm-passthrough'
    assert [dev['address'] for dev in result['facts']['vfio']['functions']] == ['0000:00:06.0']
    assert run(capsys, monkeypatch, node, fixture='h100-x1')['facts']['vfio'] is None
