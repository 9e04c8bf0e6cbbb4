# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The nvidia_driver module: validated, present (install), check mode and absent.

nvidia-smi is the lab simulator serving the captured fixtures; package managers, modprobe and systemctl are a fake
node (AnsibleModule.run_command patched) that records every command and keeps an installed-package set.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess
import time

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import systemd
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.modules import nvidia_driver
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import drift_report
from tests.module_runner import run_module
from tests.unit.plugins.module_utils.driver.test_driver_state import MULTI_GPU_IDS, multi_gpu_sysfs
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, SIMULATOR

# What the Operator's validator writes for a host driver (NVIDIA/gpu-operator cmd/nvidia-validator: main.go createStatusFile,
# driver.go getDriverInfo).
READY_TEXT = 'IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\nNVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n'
TOOLS = ('apt-get', 'apt-cache', 'apt-mark', 'dpkg-query', 'update-initramfs', 'modprobe', 'systemctl')
DEBIAN_PACKAGES = ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced']
# What apt pulls in besides the named packages (a few of the real dependencies apt-get install -s lists on bookworm).
DEPENDENCIES = ['libnvidia-ml1', 'nvidia-driver-libs', 'dkms']
# The fake repository's versions: bookworm's 535 (the default) and trixie's 550, as apt-cache showed them in the lab.
CANDIDATES = {'': '535.261.03-1', '535': '535.261.03-1', '550': '550.163.01-2'}


class FakeNode(object):
    """A Debian node without NVIDIA driver: apt, dpkg, modprobe and systemctl as far as the module uses them."""

    def __init__(self, smi_fixture='cpu-only', driver_fixture='t4', modprobe_error=None, install_rc=0):
        self.smi_fixture = smi_fixture
        self.driver_fixture = driver_fixture
        self.modprobe_error = modprobe_error
        self.install_rc = install_rc
        self.installed = {'bash', 'linux-headers-6.1.0-28-amd64'}
        # bookworm's versions of the two (constructed node; the driver packages get CANDIDATES' when installed).
        self.versions = {'bash': '5.2.15-2+b7', 'linux-headers-6.1.0-28-amd64': '6.1.119-1'}
        self.held = set()
        self.enabled = set()
        self.calls = []
        self.proc_modules = None  # a procfs modules file that modprobe updates
        self.tools = set(TOOLS)
        self.apt_available = set()  # names apt-cache policy offers a candidate for

    def run_command(self, args, **kwargs):
        argv = list(args)
        assert kwargs['environ_update']['LC_ALL'] == 'C', argv
        if argv[0] == SIMULATOR:
            env = dict(os.environ, GPUOPS_LAB_GPU_FIXTURE=os.path.join(GPUS, self.smi_fixture))
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            return proc.returncode, proc.stdout, proc.stderr
        self.calls.append([os.path.basename(argv[0])] + argv[1:])
        return getattr(self, os.path.basename(argv[0]).replace('-', '_'))(argv[1:])

    def dpkg_query(self, args):
        if args[1] == '-f=${Version}':
            return (0, self.versions[args[2]], '') if args[2] in self.installed else (1, '', 'dpkg-query: no packages found')
        assert args[1] == '-f=${db:Status-Abbrev} ${Package} ${Version}\\n', args
        return 0, ''.join('%si  %s %s\n' % ('h' if name in self.held else 'i', name, self.versions[name]) for name in sorted(self.installed)), ''

    def apt_cache(self, args):
        # apt-cache policy's format (see test_driver_packages.test_apt_candidates); unknown names print nothing.
        assert args[0] == 'policy'
        return 0, ''.join('%s:\n  Installed: (none)\n  Candidate: 570.195.03-0ubuntu0.24.04.1\n' % name
                          for name in args[1:] if name in self.apt_available), ''

    def apt_mark(self, args):
        if args[0] == 'showhold':
            return 0, ''.join(name + '\n' for name in sorted(self.held)), ''
        (self.held.update if args[0] == 'hold' else self.held.difference_update)(args[1:])
        return 0, '', ''

    def apt_get(self, args):
        simulate = args[0] == '-s'
        args = args[1:] if simulate else args
        specs = [spec for spec in args if not spec.startswith('-') and spec not in ('install', 'purge')]
        names = [spec.split('=')[0] for spec in specs]
        if args[0] == 'purge':
            if simulate:
                # apt-get -s's lines, as bookworm's apt 2.6 prints them (tests/unit/plugins/module_utils/driver/driver_data).
                return 0, ''.join('Purg %s [%s]\n' % (name, self.versions[name]) for name in names if name in self.installed), ''
            self.installed.difference_update(names)
            return 0, '', ''
        if self.install_rc:
            return self.install_rc, '', 'E: Unable to locate package %s' % names[0]
        if self.held & set(names) and '-y' in args:
            return 100, '', 'E: Held packages were changed and -y was used without --allow-change-held-packages.'
        versions = dict((spec.split('=')[0], CANDIDATES[spec.split('=')[1].split('.')[0] if '=' in spec else '']) for spec in specs)
        versions.update((name, versions[names[-1]]) for name in DEPENDENCIES if name not in self.installed)
        if simulate:
            return 0, ''.join('Inst %s %s(%s Debian:12.15/oldstable [amd64])\n' % (
                name, '[%s] ' % self.versions[name] if name in self.installed else '', version)
                for name, version in sorted(versions.items()) if self.versions.get(name) != version or name not in self.installed), ''
        self.installed.update(versions)
        self.versions.update(versions)
        if 'nvidia-driver' in names and not self.modprobe_error:
            self.smi_fixture = self.driver_fixture
        return 0, '', ''

    def update_initramfs(self, args):
        return 0, '', ''

    def modprobe(self, args):
        if self.modprobe_error:
            return 1, '', self.modprobe_error
        if self.proc_modules:
            with open(self.proc_modules) as handle:
                lines = [line for line in handle if line.split()[0] not in args]
            lines += [] if args[0] == '-r' else ['%s 0 0 - Live 0x0000000000000000\n' % name for name in args]
            with open(self.proc_modules, 'w') as handle:
                handle.writelines(lines)
        return 0, '', ''

    def systemctl(self, args):
        if not os.path.isdir(systemd.BOOTED_DIR):
            # systemd is not PID 1: what systemctl 252 prints there, verbatim (tests/unit/plugins/modules/test_container_runtime_info.py).
            return 1, '', "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n"
        if args[0] == 'is-active':
            return (0 if args[-1] in self.enabled else 3), '', ''
        if args[0] == 'enable':
            self.enabled.add(args[-1])
        if args[0] == 'show':
            return 0, 'loaded\n', ''
        return 0, '', ''


@pytest.fixture
def node(monkeypatch, tmp_path):
    fake = FakeNode()
    monkeypatch.setattr(AnsibleModule, 'run_command', fake.run_command)
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda self, name, *args, **kwargs: '/usr/bin/' + name if name in fake.tools else None)
    # systemd runs the node unless a test removes its boot directory.
    (tmp_path / 'run-systemd-system').mkdir()
    monkeypatch.setattr(systemd, 'BOOTED_DIR', str(tmp_path / 'run-systemd-system'))
    return fake


@pytest.fixture
def warnings(monkeypatch):
    seen = []
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, msg: seen.append(msg))
    return seen


@pytest.fixture
def paths(tmp_path, monkeypatch):
    """Where the module reads and writes; `proc` is a constructed procfs of a Debian 12 kernel with no module loaded."""
    os_release = tmp_path / 'os-release'
    os_release.write_text('ID=debian\nVERSION_ID="12"\n')
    proc = tmp_path / 'proc'
    (proc / 'sys' / 'kernel').mkdir(parents=True)
    (proc / 'sys' / 'kernel' / 'osrelease').write_text('6.1.0-28-amd64\n')
    (proc / 'modules').write_text('')
    (tmp_path / 'modprobe.d').mkdir()
    monkeypatch.setattr(driver_state, 'DKMS_SIGNING_KEYS', (str(tmp_path / 'mok.pub'),))
    return dict(os_release_path=str(os_release), validations_dir=str(tmp_path / 'validations'), modprobe_dir=str(tmp_path / 'modprobe.d'),
                record_file=str(tmp_path / 'lib' / 'nvidia_driver.json'), nvidia_smi=SIMULATOR, procfs_root=str(proc))


def run(capsys, paths, fixture, failed=False, **args):
    """The module on a fixture's sysfs (and procfs where the fixture has one); `args` override."""
    roots = dict(sysfs_root=os.path.join(GPUS, fixture, 'sys'))
    if os.path.isdir(os.path.join(GPUS, fixture, 'proc')):
        roots['procfs_root'] = os.path.join(GPUS, fixture, 'proc')
    return run_module(capsys, nvidia_driver.main, dict(paths, **dict(roots, **args)), failed=failed)


def read(path):
    with open(path) as handle:
        return handle.read()


def test_validated_h200(capsys, monkeypatch, paths):
    # No fake node: the real run_command runs the simulator serving the real H200 capture.
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', os.path.join(GPUS, 'h200-x1'))
    ready = os.path.join(paths['validations_dir'], 'driver-ready')
    result = run(capsys, paths, 'h200-x1', state='validated', _ansible_check_mode=True, _ansible_diff=True)
    assert result['changed'] is True and result['actions'] == ['write ' + ready] and not os.path.exists(ready)
    assert result['diff'][0]['after'] == READY_TEXT
    result = run(capsys, paths, 'h200-x1', state='validated')
    assert result['changed'] is True and read(ready) == READY_TEXT
    assert result['gpus'] == [dict(pci_address='0000:00:06.0', vendor_id='0x10de', device_id='0x2335', class_id='0x0302', mode='compute')]
    assert result['driver'] == dict(installed=True, loaded=True, version='580.159.04', branch='580', source='pre-installed',
                                    kernel_module_type='open')
    assert (result['gpu_count'], result['nvswitch_count'], result['secure_boot'], result['nouveau_loaded']) == (1, 0, 'unknown', False)
    assert result['deploy_driver_label'] == 'pre-installed' and result['packages'] == [] and result['reboot_required'] is False
    again = run(capsys, paths, 'h200-x1', state='present')
    assert again['changed'] is False and again['actions'] == [] and not os.path.exists(paths['record_file'])


def test_validated_on_a_node_with_several_gpus(capsys, monkeypatch, paths, tmp_path):
    # The node is composed of real single-GPU captures (no real multi-GPU capture exists, see multi_gpu_sysfs); its
    # driver is the H200 capture's (procfs and the nvidia-smi simulator), the only capture with both. nvidia-smi lists
    # the H200; the other three GPUs are passed through to VMs (bound to vfio-pci), so it need not list them.
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', os.path.join(GPUS, 'h200-x1'))
    passed_through = dict((address, 'vfio-pci') for address, _device in MULTI_GPU_IDS[1:])
    result = run(capsys, paths, 'h200-x1', state='validated', sysfs_root=multi_gpu_sysfs(tmp_path / 'sys', passed_through))
    assert 'failed' not in result and result['gpu_count'] == 4 and result['nvswitch_count'] == 0
    assert [(gpu['pci_address'], gpu['device_id']) for gpu in result['gpus']] == MULTI_GPU_IDS
    assert result['driver'] == dict(installed=True, loaded=True, version='580.159.04', branch='580', source='pre-installed',
                                    kernel_module_type='open')
    assert result['deploy_driver_label'] == 'pre-installed' and result['packages'] == [] and result['reboot_required'] is False
    assert result['changed'] is True and read(os.path.join(paths['validations_dir'], 'driver-ready')) == READY_TEXT


@pytest.mark.parametrize('state', ['validated', 'present'])
def test_a_gpu_nvidia_smi_does_not_list_fails_the_validation(capsys, monkeypatch, paths, tmp_path, state):
    """Issue #28 item 6: four GPUs on the PCI bus, nvidia-smi lists one and exits 0: no driver-ready, the message names
    the three missing bus ids."""
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', os.path.join(GPUS, 'h200-x1'))
    result = run(capsys, paths, 'h200-x1', state=state, sysfs_root=multi_gpu_sysfs(tmp_path / 'sys'), failed=True)
    assert result['msg'].startswith('the driver does not work on every GPU: nvidia-smi lists 1 GPU(s) but not every NVIDIA GPU on '
                                    'the PCI bus; missing: 0000:00:09.0 (no driver bound), 0000:00:1e.0 (no driver bound), '
                                    '0000:01:00.0 (no driver bound).')
    assert 'exception' not in result and result['changed'] is False and result['gpu_count'] == 4
    assert not os.path.exists(paths['validations_dir']) and not os.path.exists(paths['record_file'])


def test_validated_without_driver_fails(capsys, node, paths):
    result = run(capsys, paths, 't4', state='validated', failed=True)
    assert result['failed'] is True and result['msg'].startswith('state=validated installs nothing and no NVIDIA driver is loaded')
    assert result['gpu_count'] == 1 and node.calls == [] and not os.path.exists(paths['validations_dir'])


def test_no_gpu_runs_nothing(capsys, node, paths):
    for state in ('present', 'validated', 'absent'):
        result = run(capsys, paths, 'cpu-only', state=state)
        assert (result['changed'], result['gpu_count'], result['actions'], result['deploy_driver_label']) == (False, 0, [], 'false')
    assert node.calls == []


def test_check_mode_runs_nothing_that_changes_the_node(capsys, node, paths):
    result = run(capsys, paths, 't4', _ansible_check_mode=True)
    assert result['changed'] is True and result['packages'] == DEBIAN_PACKAGES
    assert 'apt-get install -y --no-install-recommends nvidia-driver nvidia-kernel-dkms nvidia-smi nvidia-persistenced' in result['actions']
    assert [call[0] for call in node.calls] == ['dpkg-query', 'apt-mark', 'systemctl']
    assert node.calls[1] == ['apt-mark', 'showhold'] and node.calls[2][1] == 'is-active'
    assert os.listdir(paths['modprobe_dir']) == [] and not os.path.exists(paths['record_file'])


@pytest.mark.parametrize('check_mode', [True, False])
def test_without_systemd_persistenced_is_not_enabled_and_the_run_says_so(capsys, node, paths, warnings, check_mode):
    """systemctl is installed and systemd is not PID 1 (a container, a CI runner): check mode does not promise the
    `systemctl enable` the run cannot do, and the run says that nvidia-persistenced is left to the node, instead of
    skipping it without a word."""
    os.rmdir(systemd.BOOTED_DIR)
    result = run(capsys, paths, 't4', _ansible_check_mode=check_mode)
    assert result['changed'] is True and result['systemd'] is False
    assert not any('systemctl' in action for action in result['actions'])
    assert not any(call[0] == 'systemctl' for call in node.calls)
    assert ('systemd is not PID 1 on this node: nvidia-persistenced is neither enabled nor started (persistence_mode); '
            'run it the way this node runs its services') in warnings


@pytest.mark.parametrize('precompiled', [True, False])
def test_ubuntu_precompiled_modules_are_probed_in_check_mode(capsys, node, paths, precompiled):
    # Ubuntu 24.04 (the H200 capture host's os-release) on a constructed kernel release in Ubuntu's ABI naming.
    with open(os.path.join(paths['procfs_root'], 'sys', 'kernel', 'osrelease'), 'w') as handle:
        handle.write('6.8.0-60-generic\n')
    modules = ['linux-modules-nvidia-570-server-6.8.0-60-generic', 'linux-modules-nvidia-570-server-open-6.8.0-60-generic']
    node.apt_available = set(modules[1:]) if precompiled else set()
    result = run(capsys, paths, 't4', version='570', kernel_module_type='open', _ansible_check_mode=True,
                 os_release_path=os.path.join(GPUS, 'h200-x1', 'host', 'os-release'))
    assert 'failed' not in result and ['apt-cache', 'policy'] + modules in node.calls
    assert not any(call[0] == 'apt-get' for call in node.calls) and os.listdir(paths['modprobe_dir']) == []
    installs = [action for action in result['actions'] if action.startswith('apt-get')]
    if precompiled:
        assert installs == ['apt-get install -y --no-install-recommends nvidia-headless-no-dkms-570-server-open '
                            'nvidia-utils-570-server linux-modules-nvidia-570-server-open-6.8.0-60-generic']
    else:
        assert installs == ['apt-get install -y --no-install-recommends linux-headers-6.8.0-60-generic',
                            'apt-get install -y --no-install-recommends nvidia-headless-570-server-open nvidia-utils-570-server']


def test_install_validate_then_absent(capsys, node, paths, warnings):
    node.proc_modules = os.path.join(paths['procfs_root'], 'modules')
    result = run(capsys, paths, 't4')
    blacklist = os.path.join(paths['modprobe_dir'], 'blacklist-nouveau.conf')
    assert result['changed'] is True and 'failed' not in result, result
    assert result['actions'] == [
        'write ' + blacklist, 'update-initramfs -u',
        'apt-get install -y --no-install-recommends nvidia-driver nvidia-kernel-dkms nvidia-smi nvidia-persistenced',
        'apt-mark hold nvidia-driver nvidia-kernel-dkms nvidia-smi nvidia-persistenced',
        'write ' + paths['record_file'],
        'modprobe nvidia', 'modprobe nvidia_uvm', 'modprobe nvidia_modeset',
        'systemctl enable --now nvidia-persistenced.service',
        'write ' + os.path.join(paths['validations_dir'], 'driver-ready')]
    # The headers were there already; once "installed", nvidia-smi serves the t4 capture (driver 515.105.01).
    assert result['driver'] == dict(installed=True, loaded=True, version='515.105.01', branch='515', source='package',
                                    kernel_module_type='proprietary')
    assert result['deploy_driver_label'] == 'true' and result['reboot_required'] is False and warnings == []
    record = json.loads(read(paths['record_file']))
    assert record['installed'] == sorted(DEBIAN_PACKAGES + DEPENDENCIES) and record['held'] == sorted(DEBIAN_PACKAGES)
    assert record['files'] == {blacklist: None} and oct(os.stat(paths['record_file']).st_mode & 0o777) == '0o600'
    assert 'blacklist nova_core' in read(blacklist)

    node.calls = []
    again = run(capsys, paths, 't4')
    assert again['changed'] is False and again['actions'] == [] and again['driver']['source'] == 'package'
    assert [call[0] for call in node.calls] == []  # a working driver: only nvidia-smi ran

    node.installed.add('nvidia-settings')  # installed later by someone else: not removed
    node.versions['nvidia-settings'] = '535.171.04-1'
    gone = run(capsys, paths, 't4', state='absent')
    assert gone['changed'] is True and gone['packages'] == sorted(DEBIAN_PACKAGES + DEPENDENCIES)
    assert node.installed == {'bash', 'linux-headers-6.1.0-28-amd64', 'nvidia-settings'} and node.held == set()
    assert not os.path.exists(blacklist) and not os.path.exists(paths['record_file'])
    assert os.listdir(paths['validations_dir']) == [] and 'update-initramfs -u' in gone['actions']
    assert 'modprobe -r nvidia_modeset nvidia_uvm nvidia' in gone['actions'] and read(node.proc_modules) == ''
    assert gone['driver']['source'] == 'none' and gone['driver']['loaded'] is False and gone['deploy_driver_label'] == 'false'
    assert run(capsys, paths, 't4', state='absent')['changed'] is False


# What the fake node's apt installs for the Debian driver: the four packages (held) and their dependencies, all at
# CANDIDATES[''].
PACKAGES_INSTALLED = ''.join('%s 535.261.03-1%s\n' % (name, ' (held)' if name in DEBIAN_PACKAGES else '')
                             for name in sorted(DEBIAN_PACKAGES + DEPENDENCIES))
PACKAGES_HEADER = 'packages (apt)'


def test_diff_is_the_packages_and_files_the_run_changes_in_check_mode_too(capsys, node, paths):
    """--check --diff shows what the run then changes: the blacklist and each package it installs (apt-get -s: the
    dependencies too) with its version and hold; absent the packages it removes. The drift report shows that diff for the
    driver stage, not "(no diff)"."""
    node.proc_modules = os.path.join(paths['procfs_root'], 'modules')
    blacklist = os.path.join(paths['modprobe_dir'], 'blacklist-nouveau.conf')
    check = run(capsys, paths, 't4', _ansible_check_mode=True, _ansible_diff=True)
    assert not any(call[:2] == ['apt-get', 'install'] for call in node.calls) and os.listdir(paths['modprobe_dir']) == []
    packages = dict(before_header=PACKAGES_HEADER, after_header=PACKAGES_HEADER, before='', after=PACKAGES_INSTALLED)
    assert [entry['after_header'] for entry in check['diff']] == [blacklist, PACKAGES_HEADER] and check['diff'][1] == packages
    real = run(capsys, paths, 't4', _ansible_diff=True)
    # The run's diff: the same, and driver-ready, which only the run knows it writes (nvidia-smi works after the install).
    assert [entry['after_header'] for entry in real['diff']] == [blacklist, os.path.join(paths['validations_dir'], 'driver-ready'), PACKAGES_HEADER]
    assert real['diff'][0] == check['diff'][0] and real['diff'][2] == packages

    report = drift_report.text(drift_report.build(
        [drift_report.event('node', 'nvidia_driver', 'Install, hold and load the driver, or validate the one there', 'ok', check, True)],
        {'node': {}}, set(), True, True, 'site.yml', 'now'))
    assert '(no diff)' not in '\n'.join(report)
    assert '    +++ after: %s' % PACKAGES_HEADER in report and '    +nvidia-smi 535.261.03-1 (held)' in report, report

    gone = dict(packages, before=PACKAGES_INSTALLED, after='')
    check = run(capsys, paths, 't4', state='absent', _ansible_check_mode=True, _ansible_diff=True)
    assert check['diff'][-1] == gone and node.installed >= set(DEBIAN_PACKAGES)
    assert run(capsys, paths, 't4', state='absent', _ansible_diff=True)['diff'][-1] == gone


def test_a_simulation_that_fails_shows_the_packages_the_run_names(capsys, node, paths, warnings):
    """apt cannot find the packages (lists not refreshed yet, as on a fresh node): check mode warns and shows the packages
    the run installs, without versions."""
    node.install_rc = 100
    check = run(capsys, paths, 't4', _ansible_check_mode=True, _ansible_diff=True)
    assert check['diff'][-1]['after'] == ''.join('%s (version picked by the run) (held)\n' % name for name in sorted(DEBIAN_PACKAGES))
    assert ['apt-get -s install --no-install-recommends nvidia-driver nvidia-kernel-dkms nvidia-smi nvidia-persistenced failed (rc=100: '
            'E: Unable to locate package nvidia-driver): the diff shows its packages without the versions the run installs (the run '
            'refreshes the package lists first)'] == [warning for warning in warnings if 'apt-get -s' in warning]


def test_installed_driver_that_misses_a_gpu_is_not_validated(capsys, node, paths, tmp_path):
    """The installed driver (nvidia-smi serving the T4 capture) lists one of the node's four GPUs: the run fails naming
    the others after the install, which stays recorded for absent; no driver-ready."""
    result = run(capsys, paths, 't4', sysfs_root=multi_gpu_sysfs(tmp_path / 'sys'), failed=True)
    assert result['msg'].startswith('the driver is installed, but nvidia-smi lists 1 GPU(s) but not every NVIDIA GPU on the PCI bus; '
                                    'missing: 0000:00:06.0 (no driver bound), 0000:00:09.0 (no driver bound), 0000:01:00.0')
    assert 'exception' not in result and result['changed'] is True
    assert json.loads(read(paths['record_file']))['packages'] == DEBIAN_PACKAGES
    assert not os.path.exists(os.path.join(paths['validations_dir'], 'driver-ready'))


def test_absent_restores_a_changed_file_byte_for_byte(capsys, node, paths):
    blacklist = os.path.join(paths['modprobe_dir'], 'blacklist-nouveau.conf')
    with open(blacklist, 'w') as handle:
        handle.write('# the admin\'s own file\nblacklist nouveau\n')
    before = read(blacklist)
    run(capsys, paths, 't4')
    assert read(blacklist) != before
    run(capsys, paths, 't4', state='absent')
    assert read(blacklist) == before


def test_modules_that_cannot_load_are_reported(capsys, node, paths, warnings):
    # Constructed: modprobe's error in a container without CAP_SYS_MODULE. nvidia-smi keeps answering "no driver".
    node.modprobe_error = "modprobe: ERROR: could not insert 'nvidia': Operation not permitted"
    result = run(capsys, paths, 't4')
    assert 'failed' not in result and result['reboot_required'] is True
    assert result['driver']['loaded'] is False and result['driver']['installed'] is True
    assert [call for call in node.calls if call[0] == 'modprobe'] == [['modprobe', 'nvidia']]
    assert not any(action.startswith('modprobe') for action in result['actions'])
    assert any('Operation not permitted' in w for w in warnings) and any('does not work yet' in w for w in warnings)
    assert not os.path.exists(os.path.join(paths['validations_dir'], 'driver-ready'))


def test_absent_reports_modules_that_stay_loaded(capsys, node, paths, warnings):
    node.proc_modules = os.path.join(paths['procfs_root'], 'modules')
    run(capsys, paths, 't4', persistence_mode=False)
    node.modprobe_error = 'modprobe: FATAL: Module nvidia is in use.'  # constructed modprobe -r error
    gone = run(capsys, paths, 't4', state='absent')
    assert gone['driver']['loaded'] is True and gone['reboot_required'] is True and any('in use' in w for w in warnings)
    assert not any(action.startswith('modprobe') for action in gone['actions']) and not os.path.exists(paths['record_file'])


def test_nouveau_loaded_is_blacklisted_and_needs_a_reboot(capsys, node, paths, warnings):
    with open(os.path.join(paths['procfs_root'], 'modules'), 'w') as handle:
        handle.write('nouveau 2342912 1 - Live 0x0000000000000000\n')  # constructed /proc/modules line
    result = run(capsys, paths, 't4')
    assert result['nouveau_loaded'] is True and result['reboot_required'] is True
    assert 'nouveau is loaded' in warnings[0] and not any(call[0] == 'modprobe' for call in node.calls)
    assert 'blacklist nouveau' in read(os.path.join(paths['modprobe_dir'], 'blacklist-nouveau.conf'))


def test_secure_boot_fails_before_installing(capsys, node, paths, tmp_path):
    sysfs = tmp_path / 'sys'
    sysfs.mkdir()
    os.symlink(os.path.join(GPUS, 't4', 'sys', 'bus'), str(sysfs / 'bus'))
    var = sysfs / driver_state.SECURE_BOOT_VAR
    var.parent.mkdir(parents=True)
    var.write_bytes(b'\x06\x00\x00\x00\x01')  # constructed efivarfs bytes: Secure Boot enabled
    result = run(capsys, paths, 't4', sysfs_root=str(sysfs), failed=True)
    assert result['failed'] is True and result['secure_boot'] == 'enabled' and 'Secure Boot is enabled' in result['msg']
    assert not any(call[0] == 'apt-get' for call in node.calls) and os.listdir(paths['modprobe_dir']) == []
    open(driver_state.DKMS_SIGNING_KEYS[0], 'w').close()
    assert 'failed' not in run(capsys, paths, 't4', sysfs_root=str(sysfs), _ansible_check_mode=True)


def test_loaded_module_without_working_nvidia_smi_is_not_installed_over(capsys, node, paths):
    # The h200 procfs (its module loaded) with nvidia-smi answering as without driver.
    result = run(capsys, paths, 't4', procfs_root=os.path.join(GPUS, 'h200-x1', 'proc'), failed=True)
    assert result['failed'] is True and 'module 580.159.04 is loaded but nvidia-smi fails' in result['msg']
    assert [call[0] for call in node.calls] == ['dpkg-query', 'apt-mark', 'systemctl'] and node.calls[1] == ['apt-mark', 'showhold']


def test_missing_kernel_headers_are_named(capsys, node, paths):
    node.installed.discard('linux-headers-6.1.0-28-amd64')
    node.install_rc = 100
    result = run(capsys, paths, 't4', failed=True)
    assert result['failed'] is True
    assert result['msg'].startswith('the kernel headers package linux-headers-6.1.0-28-amd64 for the running kernel 6.1.0-28-amd64')
    assert 'Unable to locate package linux-headers-6.1.0-28-amd64' in result['msg']
    assert not os.path.exists(paths['record_file']) and os.listdir(paths['modprobe_dir']) == []
    assert not any('nvidia-driver' in call for call in node.calls)


@pytest.mark.parametrize('args, message', [
    (dict(version='latest'), 'neither a driver branch'),
    (dict(packages=['--force-yes']), 'not a package name'),
    (dict(kernel_module_type='nvidia'), 'value of kernel_module_type must be one of'),
])
def test_bad_input_changes_nothing(capsys, node, paths, args, message):
    result = run(capsys, paths, 't4', **args, failed=True)
    assert result['failed'] is True and message in result['msg']
    assert [call[0] for call in node.calls if call[0] not in ('dpkg-query', 'apt-mark', 'systemctl')] == []
    assert os.listdir(paths['modprobe_dir']) == [] and not os.path.exists(paths['record_file'])


@pytest.mark.parametrize('tools, initramfs', [
    (TOOLS, True),
    # The lab's minbase images and nodes booted without an initramfs have no initramfs-tools.
    (tuple(tool for tool in TOOLS if tool != 'update-initramfs'), False),
])
def test_initramfs_only_where_the_node_has_the_tool(capsys, node, paths, tools, initramfs):
    node.tools = set(tools)
    result = run(capsys, paths, 't4')
    blacklist = os.path.join(paths['modprobe_dir'], 'blacklist-nouveau.conf')
    assert 'failed' not in result and 'blacklist nouveau' in read(blacklist)
    assert ('update-initramfs -u' in result['actions']) is initramfs
    gone = run(capsys, paths, 't4', state='absent')
    assert 'failed' not in gone and not os.path.exists(blacklist) and ('update-initramfs -u' in gone['actions']) is initramfs
    assert any(call[0] == 'update-initramfs' for call in node.calls) is initramfs


def test_installed_driver_not_loaded_yet(capsys, node, paths, warnings):
    # modprobe fails (a container; a node waiting for its reboot): the driver is installed but does not work.
    node.modprobe_error = "modprobe: ERROR: could not insert 'nvidia': Operation not permitted"  # constructed
    first = run(capsys, paths, 't4')
    assert first['packages'] == DEBIAN_PACKAGES and first['reboot_required'] is True
    # Its version is the installed package's (nvidia-smi and /proc know none yet).
    assert (first['driver']['loaded'], first['driver']['version'], first['driver']['branch']) == (False, '535.261.03', '535')
    for check_mode in (True, False):
        again = run(capsys, paths, 't4', _ansible_check_mode=check_mode)
        # Nothing to install: the role does not refresh the package lists for it.
        assert again['packages'] == [] and not any(action.startswith('apt-get') for action in again['actions'])
        assert again['driver']['version'] == '535.261.03' and again['driver']['source'] == 'package'


def test_pre_installed_driver_of_another_version_fails(capsys, node, paths):
    node.smi_fixture = 'h200-x1'
    result = run(capsys, paths, 'h200-x1', version='570', failed=True)
    assert result['failed'] is True and 'NVIDIA driver 580.159.04, not the requested version 570, and this module did not install it' in result['msg']
    assert 'state=validated' in result['msg'] and result['driver']['source'] == 'none' and node.calls == []


@pytest.mark.parametrize('check_mode', [True, False])
def test_upgrade_of_the_driver_this_module_installed(capsys, node, paths, warnings, check_mode):
    node.proc_modules = os.path.join(paths['procfs_root'], 'modules')
    run(capsys, paths, 't4')  # installs; nvidia-smi then serves the t4 capture: driver 515.105.01, modules loaded
    blacklist = os.path.join(paths['modprobe_dir'], 'blacklist-nouveau.conf')
    record = read(paths['record_file'])
    node.calls = []
    result = run(capsys, paths, 't4', version='550', _ansible_check_mode=check_mode)
    pinned = ['nvidia-driver=550.*', 'nvidia-kernel-dkms=550.*', 'nvidia-smi=550.*', 'nvidia-persistenced']
    assert result['changed'] is True and result['packages'] == pinned and result['reboot_required'] is True
    assert result['actions'] == [
        'apt-mark unhold ' + ' '.join(sorted(DEBIAN_PACKAGES)),  # as the record keeps them
        "apt-get install -y --no-install-recommends --allow-downgrades 'nvidia-driver=550.*' 'nvidia-kernel-dkms=550.*' "
        "'nvidia-smi=550.*' nvidia-persistenced",
        'apt-mark hold ' + ' '.join(DEBIAN_PACKAGES), 'write ' + paths['record_file']]
    assert any('loaded kernel module stays 515.105.01 until the node reboots' in w for w in warnings)
    if check_mode:
        assert read(paths['record_file']) == record and node.held == set(DEBIAN_PACKAGES)
        assert [call[0] for call in node.calls] == ['dpkg-query', 'apt-mark', 'systemctl']
        return
    # The new version is the installed one; the old module stays loaded until the reboot.
    assert (result['driver']['version'], result['driver']['branch'], result['driver']['loaded']) == ('550.163.01', '550', True)
    assert node.versions['nvidia-driver'] == '550.163.01-2' and node.held == set(DEBIAN_PACKAGES)
    after = json.loads(read(paths['record_file']))
    assert after['packages'] == pinned and after['held'] == sorted(DEBIAN_PACKAGES) and after['files'] == {blacklist: None}
    gone = run(capsys, paths, 't4', state='absent')
    assert 'failed' not in gone and node.installed == {'bash', 'linux-headers-6.1.0-28-amd64'} and not os.path.exists(blacklist)


def test_a_hanging_nvidia_smi_is_stopped_and_named(capsys, paths, monkeypatch, tmp_path):
    # A real hang (exec sleep) under the real coreutils timeout; the limit is lowered from 60 s to keep the test short.
    hanging = tmp_path / 'nvidia-smi'
    hanging.write_text('#!/bin/sh\nexec /bin/sleep 600\n')
    hanging.chmod(0o755)
    monkeypatch.setattr(gpu_discovery, 'NVIDIA_SMI_TIMEOUT', 1)
    started = time.monotonic()
    result = run(capsys, paths, 'h200-x1', state='validated', nvidia_smi=str(hanging), failed=True)
    assert time.monotonic() - started < 10
    assert result['msg'] == ('the NVIDIA kernel module 580.159.04 is loaded but nvidia-smi fails: %s -q -x failed (rc=124): %s -q -x did '
                             'not finish within 1 s and was stopped' % (hanging, hanging))
