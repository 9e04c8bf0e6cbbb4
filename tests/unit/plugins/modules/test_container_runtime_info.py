# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""container_runtime_info with the node's commands replaced by scripts on PATH that print the lab's real outputs
and record how they were called; systemd's boot directory and /proc are the test's own (`booted`, `proc`)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import systemd
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_detection
from ansible_collections.gpuops.gpu_operator.plugins.modules import container_runtime_info
from tests.module_runner import run_module
from tests.unit.plugins.module_utils.toolkit.test_runtime_detection import DPKG_INSTALLED, KUBEADM_FLAGS, KUBELET_CONFIG, SYSTEMCTL_SID
from tests.unit.plugins.modules.test_gpu_node_doctor import node, script  # noqa: F401 pylint: disable=unused-import


# What systemctl prints where it is installed but systemd is not PID 1 (rc 1), verbatim from this project's CI host
# (systemctl 252, PID 1 another program), 2026-11-27.
NOT_BOOTED = "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n"


@pytest.fixture(autouse=True)
def booted(tmp_path, monkeypatch):
    """systemd runs the node (its boot directory exists) unless a test removes the directory; /proc is an empty one."""
    directory = tmp_path / 'run-systemd-system'
    directory.mkdir()
    monkeypatch.setattr(systemd, 'BOOTED_DIR', str(directory))
    (tmp_path / 'proc').mkdir()
    monkeypatch.setattr(runtime_detection, 'PROC_ROOT', str(tmp_path / 'proc'))
    # The distributions' files are looked for under the test's own root.
    monkeypatch.setattr(runtime_detection, 'FILE_ROOT', str(tmp_path / 'root'))
    return directory


def proc(node, **programs):
    """Running processes: pid -> program name, as /proc/PID/comm shows it."""
    for pid, name in programs.items():
        (node / 'proc' / pid.lstrip('p')).mkdir()
        (node / 'proc' / pid.lstrip('p') / 'comm').write_text(name + '\n')


def commands(node, systemctl=SYSTEMCTL_SID, dpkg=DPKG_INSTALLED, dpkg_rc=1):
    for name, out, rc in (('systemctl', systemctl, 0), ('dpkg-query', dpkg, dpkg_rc)):
        (node / (name + '.out')).write_text(out)
        script(node / 'bin', name, 'echo "%s $* LC_ALL=$LC_ALL" >> %s\n/bin/cat %s\nexit %d\n' % (name, node / 'calls.log', node / (name + '.out'), rc))


def run(capsys, node, failed=False, **args):
    args.setdefault('kubelet_files', [str(node / 'config.yaml'), str(node / 'kubeadm-flags.env')])
    return run_module(capsys, container_runtime_info.main, args, failed=failed)


def test_no_kubelet_config_picks_the_installed_service(capsys, node):
    commands(node)
    binary = node / 'nvidia-container-runtime'
    result = run(capsys, node, runtime_binary=str(binary), packages=['containerd', 'runc', 'python3-tomlkit'])
    assert result['changed'] is False
    assert (result['runtime'], result['kubelet_socket'], result['systemd']) == ('containerd', None, True)
    assert result['services']['containerd'] == dict(unit='containerd.service', load_state='loaded', active_state='active')
    assert result['services']['docker']['load_state'] == 'not-found'
    assert result['runtime_binary_exists'] is False
    assert result['processes'] == {'containerd': [], 'crio': [], 'docker': []}
    # dpkg-query exits 1 when one of them is not installed: the others still count.
    assert result['packages'] == {'containerd': '1.6.20~ds1-1+deb12u3', 'runc': '1.1.5+ds1-1+deb12u1', 'python3-tomlkit': None}
    assert (node / 'calls.log').read_text() == (
        'systemctl show --property=Id,LoadState,ActiveState containerd.service crio.service docker.service k3s.service '
        'k3s-agent.service rke2-server.service rke2-agent.service k0sworker.service k0scontroller.service '
        'snap.microk8s.daemon-containerd.service LC_ALL=C\n'
        'dpkg-query -W -f ${Package}\t${Version}\t${db:Status-Abbrev}\n containerd runc python3-tomlkit LC_ALL=C\n')


def test_the_kubelet_config_wins_and_nothing_is_asked_of_dpkg_without_packages(capsys, node):
    commands(node)
    (node / 'kubeadm-flags.env').write_text(KUBEADM_FLAGS)
    (node / 'nvidia-container-runtime').write_text('')
    result = run(capsys, node, runtime_binary=str(node / 'nvidia-container-runtime'))
    assert (result['runtime'], result['kubelet_socket']) == ('crio', 'crio.sock')
    assert result['runtime_binary_exists'] is True
    assert result['packages'] == {}
    assert 'dpkg-query' not in (node / 'calls.log').read_text()


def test_an_unreadable_kubelet_file_is_skipped_with_a_warning(capsys, monkeypatch, node):
    warnings = []
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, msg: warnings.append(msg))
    commands(node)
    (node / 'config.yaml').mkdir()
    result = run(capsys, node)
    assert result['runtime'] == 'containerd' and result['runtime_binary_exists'] is None
    assert warnings == ['%s is a directory, expected a file; it is skipped' % (node / 'config.yaml')]


def test_no_runtime_at_all(capsys, node):
    commands(node, systemctl=SYSTEMCTL_SID.replace('LoadState=loaded', 'LoadState=not-found'))
    assert run(capsys, node)['runtime'] is None


def test_systemctl_failing_fails_the_module(capsys, node):
    script(node / 'bin', 'systemctl', 'echo "Failed to connect to bus: Host is down" >&2\nexit 1\n')
    result = run(capsys, node, failed=True)
    assert result['failed'] is True
    assert 'Failed to connect to bus' in result['msg']


@pytest.mark.parametrize('kubelet, daemon, socket, running, expected', [
    # The kubelet's flags name the runtime, as on a node with systemd.
    (KUBEADM_FLAGS, None, None, {}, 'crio'),
    # No kubelet configuration yet: the runtime whose daemon runs, whose socket exists or whose daemon is on PATH.
    (None, None, None, {'p812': 'containerd'}, 'containerd'),
    (None, None, None, {'p77': 'dockerd', 'p90': 'containerd-shim'}, 'docker'),
    (None, 'dockerd', None, {}, 'docker'),
    (None, 'containerd', None, {}, 'containerd'),
    (None, None, 'crio', {}, 'crio'),
    (None, None, None, {'p1': 'sleep', 'p5': 'crio-conmon'}, None),
])
@pytest.mark.parametrize('init', ['no systemctl', 'systemd not PID 1'])
def test_without_systemd_the_services_are_unknown_and_the_runtime_still_found(
        capsys, monkeypatch, node, booted, init, kubelet, daemon, socket, running, expected):
    """tests/fixtures/gpus/h100-x1/module-results/container_runtime_info-node.json: on that real host (no systemctl)
    the module failed and stopped the toolkit stage. Where systemctl is installed but systemd is not PID 1 (a container,
    a CI runner) it failed too, with systemctl's NOT_BOOTED: systemctl is not asked there."""
    commands(node)
    booted.rmdir()
    if init == 'no systemctl':
        (node / 'bin' / 'systemctl').unlink()
    else:
        commands(node, systemctl=NOT_BOOTED)
        script(node / 'bin', 'systemctl', 'echo "systemctl $*" >> %s\n/bin/cat %s >&2\nexit 1\n'
               % (node / 'calls.log', node / 'systemctl.out'))
    if kubelet:
        (node / 'kubeadm-flags.env').write_text(kubelet)
    if daemon:
        script(node / 'bin', daemon, 'exit 0\n')
    sockets = dict((runtime, str(node / (runtime + '.sock'))) for runtime in runtime_detection.RUNTIME_SOCKETS)
    monkeypatch.setattr(runtime_detection, 'RUNTIME_SOCKETS', sockets)
    if socket:
        (node / (socket + '.sock')).write_text('')
    proc(node, **running)
    result = run(capsys, node, packages=['containerd'])
    assert result['systemd'] is False
    assert result['runtime'] == expected
    assert result['services'] == dict((runtime, dict(unit=unit, load_state=None, active_state=None))
                                      for runtime, unit in runtime_detection.UNITS.items())
    pids = dict((runtime, sorted(int(pid[1:]) for pid, name in running.items() if name == runtime_detection.DAEMONS[runtime]))
                for runtime in runtime_detection.DAEMONS)
    assert result['processes'] == pids
    assert result['packages'] == {'containerd': '1.6.20~ds1-1+deb12u3'}, 'the rest of the node is read as before'
    assert 'systemctl' not in (node / 'calls.log').read_text()


def test_rpm_when_there_is_no_dpkg(capsys, node):
    commands(node)
    (node / 'bin' / 'dpkg-query').unlink()
    script(node / 'bin', 'rpm', 'printf "containerd.io\\t1.7.25-3.1.el9\\npackage cri-o is not installed\\n"\nexit 1\n')
    assert run(capsys, node, packages=['containerd.io', 'cri-o'])['packages'] == {'containerd.io': '1.7.25-3.1.el9', 'cri-o': None}


def test_the_ready_file_is_read_in_the_same_run(capsys, node):
    commands(node)
    ready = node / 'validations' / 'toolkit-ready'
    assert run(capsys, node)['ready_file_content'] is None, 'not asked for'
    assert run(capsys, node, ready_file=str(ready))['ready_file_content'] is None, 'missing'
    ready.parent.mkdir()
    ready.write_text('runtime=containerd\nruntime_class=nvidia\nbinary=/usr/bin/nvidia-container-runtime\n')
    assert run(capsys, node, ready_file=str(ready))['ready_file_content'] == ready.read_text()


@pytest.mark.parametrize('odd', ['directory', 'dangling link'])
def test_an_odd_ready_file_fails_clearly(capsys, node, odd):
    commands(node)
    ready = node / 'toolkit-ready'
    if odd == 'directory':
        ready.mkdir()
    else:
        ready.symlink_to(node / 'nowhere')
    result = run(capsys, node, ready_file=str(ready), failed=True)
    assert str(ready) in result['msg']


# k3s's generated config as k3s-io/k3s#13680 has it start (the drop-in import of a version 3 config).
K3S_GENERATED = ('# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\nversion = 3\n'
                 'imports = ["/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/*.toml"]\n')


def lay_out(node, path, text):
    """A file of the node's distribution, under the test's root."""
    target = node / 'root' / path.lstrip('/')
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_a_k3s_node_is_found_by_its_unit_and_its_containerd_is_the_runtime(capsys, node):
    """The k3s unit is installed and active (containerd.service is not installed): the runtime is containerd, configured
    through a drop-in of the directory k3s's generated config imports, restarted through k3s.service."""
    commands(node, systemctl=SYSTEMCTL_SID.replace('LoadState=loaded', 'LoadState=not-found').replace('ActiveState=active', 'ActiveState=inactive')
             + '\nId=k3s.service\nLoadState=loaded\nActiveState=active\n\nId=k3s-agent.service\nLoadState=not-found\nActiveState=inactive\n')
    lay_out(node, '/var/lib/rancher/k3s/agent/etc/containerd/config.toml', K3S_GENERATED)
    result = run(capsys, node)
    assert result['runtime'] == 'containerd'
    directory = '/var/lib/rancher/k3s/agent/etc/containerd'
    assert result['distribution'] == dict(
        name='k3s', unit='k3s.service', active_state='active', units=['k3s.service', 'k3s-agent.service'], path=directory + '/config.toml',
        drop_in=directory + '/config-v3.toml.d/99-nvidia.toml', generated=True, verify_config=directory + '/config.toml',
        config_present=True, config_version=3, containerd='/var/lib/rancher/k3s/data/current/bin/containerd',
        socket='/run/k3s/containerd/containerd.sock')


def test_distribution_none_looks_for_none(capsys, node):
    commands(node, systemctl=SYSTEMCTL_SID + '\nId=rke2-agent.service\nLoadState=loaded\nActiveState=active\n')
    assert run(capsys, node, distribution='none')['distribution'] is None
    assert run(capsys, node)['distribution']['unit'] == 'rke2-agent.service'


def test_without_systemd_a_distribution_is_found_by_its_files(capsys, node, booted):
    """k0s's containerd.toml, on a node that systemd does not run: no unit to name; the kubelet's runtime is its
    containerd even where the kubelet files name containerd.sock."""
    booted.rmdir()
    commands(node)
    lay_out(node, '/etc/k0s/containerd.toml', '# k0s_managed=true\nversion = 3\nimports = ["/etc/k0s/containerd.d/*.toml"]\n')
    (node / 'config.yaml').write_text(KUBELET_CONFIG)
    result = run(capsys, node)
    assert result['runtime'] == 'containerd' and result['systemd'] is False
    assert (result['distribution']['name'], result['distribution']['unit'], result['distribution']['drop_in']) == (
        'k0s', None, '/etc/k0s/containerd.d/99-nvidia.toml')


def test_a_kubelet_on_another_runtime_is_not_the_distribution_s(capsys, node):
    commands(node, systemctl=SYSTEMCTL_SID + '\nId=k3s-agent.service\nLoadState=loaded\nActiveState=active\n')
    (node / 'kubeadm-flags.env').write_text(KUBEADM_FLAGS)
    result = run(capsys, node)
    assert (result['runtime'], result['distribution']['name']) == ('crio', 'k3s')
