# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The nvidia_driver planner on facts read from the captured fixtures (nvidia-smi served by the lab simulator)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import plan as driver_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.state import DriverError
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, SIMULATOR, sim_runner

READY = '/run/nvidia/validations/driver-ready'
BLACKLIST = '/etc/modprobe.d/blacklist-nouveau.conf'
RECORD = '/var/lib/gpuops/nvidia_driver.json'
BOOKWORM = dict(ID='debian', VERSION_ID='12')


def facts_of(fixture, smi_fixture=None, **overrides):
    """The facts gather() reads, from a fixture's sys and proc and the simulator serving `smi_fixture`."""
    root = os.path.join(GPUS, fixture)
    xml_report, rows, listing, errors = gpu_discovery.query_nvidia_smi(sim_runner(os.path.join(GPUS, smi_fixture or fixture)), SIMULATOR)
    merged = gpu_discovery.merge_views(xml_report, rows, listing)
    facts = dict(
        gpus=driver_state.gpus(gpu_discovery.pci_devices(os.path.join(root, 'sys'))),
        nvswitch_count=0,
        loaded=driver_state.proc_driver(os.path.join(root, 'proc')),
        modules=driver_state.loaded_modules(os.path.join(root, 'proc')),
        secure_boot='unknown', signing_key=False, os_release=BOOKWORM, kernel_release='6.1.0-28-amd64', manager='apt', record={},
        smi=dict(binary=SIMULATOR, working=bool(merged), version=(xml_report or {}).get('driver_version'), gpus=len(merged),
                 errors=errors),
        installed_packages=set(), held_packages=set(), package_version=None, available_packages=set(), systemd=True,
        persistenced=dict(active=False), files={READY: None, BLACKLIST: None}, initramfs=['update-initramfs', '-u'])
    facts.update(overrides)
    return facts


def params_of(**overrides):
    params = dict(state='present', version='', kernel_module_type='auto', packages=[], hold=True, blacklist_nouveau=True,
                  load_modules=True, persistence_mode=True, validations_dir='/run/nvidia/validations', modprobe_dir='/etc/modprobe.d',
                  record_file=RECORD)
    params.update(overrides)
    return params


def actions(planned):
    return [driver_plan.describe(step) for step in planned['steps'] if step['kind'] != 'validate']


@pytest.mark.parametrize('state', ['present', 'validated'])
def test_pre_installed_h200_is_validated_and_left_alone(state):
    planned = driver_plan.plan(facts_of('h200-x1'), params_of(state=state))
    assert actions(planned) == ['write ' + READY] and planned['packages'] == []
    assert planned['driver'] == dict(installed=True, loaded=True, version='580.159.04', branch='580', source='pre-installed',
                                     kernel_module_type='open')
    assert planned['deploy_driver_label'] == 'pre-installed' and planned['reboot_required'] is False


def test_validated_twice_changes_nothing():
    planned = driver_plan.plan(facts_of('h200-x1', files={READY: to_bytes(driver_state.driver_ready_text())}), params_of(state='validated'))
    assert planned['steps'] == []


@pytest.mark.parametrize('version', ['570', '580.159.05', '58'])
def test_pre_installed_driver_of_another_version_is_not_replaced(version):
    message = 'NVIDIA driver 580.159.04, not the requested version %s, and this module did not install it' % version
    with pytest.raises(DriverError, match=message + '.*Uninstall that driver yourself.*state=validated'):
        driver_plan.plan(facts_of('h200-x1'), params_of(version=version))


@pytest.mark.parametrize('version', ['', '580', '580.159.04'])
def test_pre_installed_driver_of_the_requested_version_is_kept(version):
    planned = driver_plan.plan(facts_of('h200-x1'), params_of(version=version))
    assert actions(planned) == ['write ' + READY] and planned['warnings'] == [] and planned['driver']['source'] == 'pre-installed'


@pytest.mark.parametrize('fixture', ['cpu-only'])
@pytest.mark.parametrize('state', ['present', 'validated', 'absent'])
def test_no_gpu_nothing_to_do(fixture, state):
    planned = driver_plan.plan(facts_of(fixture), params_of(state=state))
    assert planned['steps'] == [] and planned['deploy_driver_label'] == 'false' and planned['driver']['source'] == 'none'


def test_validated_without_driver_fails_saying_why():
    # t4: a real GPU on the PCI bus, no proc capture; nvidia-smi answers like a node without driver (cpu-only).
    with pytest.raises(DriverError, match="state=validated installs nothing and no NVIDIA driver is loaded .*couldn't communicate"):
        driver_plan.plan(facts_of('t4', 'cpu-only'), params_of(state='validated'))


def test_install_on_debian():
    planned = driver_plan.plan(facts_of('t4', 'cpu-only'), params_of())
    assert actions(planned) == [
        'apt-get install -y --no-install-recommends linux-headers-6.1.0-28-amd64',
        'write ' + BLACKLIST, 'update-initramfs -u',
        'apt-get install -y --no-install-recommends nvidia-driver nvidia-kernel-dkms nvidia-smi nvidia-persistenced',
        'apt-mark hold nvidia-driver nvidia-kernel-dkms nvidia-smi nvidia-persistenced',
        'write ' + RECORD,
        'modprobe nvidia', 'modprobe nvidia_uvm', 'modprobe nvidia_modeset',
        'systemctl enable --now nvidia-persistenced.service']
    # T4 (Turing) with the distro's default branch: NVIDIA's default there is the proprietary module.
    assert planned['driver']['kernel_module_type'] == 'proprietary' and planned['driver']['source'] == 'package'
    assert planned['deploy_driver_label'] == 'true' and planned['steps'][-1]['kind'] == 'validate'


@pytest.mark.parametrize('available, secure_boot, expected', [
    # Precompiled modules for the running kernel: no headers, no DKMS, and Secure Boot accepts Canonical's signed modules.
    ({'linux-modules-nvidia-570-server-open-6.8.0-60-generic'}, 'enabled',
     ['apt-get install -y --no-install-recommends nvidia-headless-no-dkms-570-server-open nvidia-utils-570-server '
      'linux-modules-nvidia-570-server-open-6.8.0-60-generic']),
    # Only the other kernel module type is precompiled: DKMS builds this one, with the headers installed first.
    ({'linux-modules-nvidia-570-server-6.8.0-60-generic'}, 'disabled',
     ['apt-get install -y --no-install-recommends linux-headers-6.8.0-60-generic',
      'apt-get install -y --no-install-recommends nvidia-headless-570-server-open nvidia-utils-570-server']),
])
def test_install_on_ubuntu(available, secure_boot, expected):
    noble = gpu_discovery.os_release(os.path.join(GPUS, 'h200-x1', 'host', 'os-release'))
    # Constructed kernel release (Ubuntu 24.04's ABI naming): the H200 capture host ran a custom kernel.
    facts = facts_of('t4', 'cpu-only', os_release=noble, kernel_release='6.8.0-60-generic', available_packages=available,
                     secure_boot=secure_boot)
    planned = driver_plan.plan(facts, params_of(version='570', kernel_module_type='open', blacklist_nouveau=False))
    assert [action for action in actions(planned) if action.startswith('apt-get')] == expected
    assert planned['packages'] == [spec for action in expected for spec in action.split()[4:]]


def test_installed_and_held_packages_are_not_redone():
    facts = facts_of('t4', 'cpu-only', installed_packages={'nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced',
                                                           'linux-headers-6.1.0-28-amd64'},
                     held_packages={'nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced'},
                     files={READY: None, BLACKLIST: to_bytes(driver_state.blacklist_text())}, persistenced=dict(active=True))
    assert actions(driver_plan.plan(facts, params_of())) == ['modprobe nvidia', 'modprobe nvidia_uvm', 'modprobe nvidia_modeset']


def test_user_packages_without_headers_or_options():
    planned = driver_plan.plan(facts_of('t4', 'cpu-only', secure_boot='enabled'),
                               params_of(packages=['nvidia-smi'], hold=False, blacklist_nouveau=False, load_modules=False,
                                         persistence_mode=False))
    assert actions(planned) == ['apt-get install -y --no-install-recommends nvidia-smi', 'write ' + RECORD]
    assert planned['packages'] == ['nvidia-smi']


def test_nouveau_loaded_means_reboot_and_no_modprobe():
    facts = facts_of('t4', 'cpu-only', modules={'nouveau': 1})
    planned = driver_plan.plan(facts, params_of())
    assert planned['reboot_required'] is True and 'nouveau is loaded' in planned['warnings'][0]
    assert 'write ' + BLACKLIST in actions(planned) and not any(a.startswith('modprobe') for a in actions(planned))


def test_secure_boot_without_signing_key_fails_before_installing():
    with pytest.raises(DriverError, match='Secure Boot is enabled and no DKMS signing key'):
        driver_plan.plan(facts_of('t4', 'cpu-only', secure_boot='enabled'), params_of())
    assert driver_plan.plan(facts_of('t4', 'cpu-only', secure_boot='enabled', signing_key=True), params_of())['steps']


def test_mismatch_is_not_installed_over():
    errors = ['nvidia-smi -q -x failed (rc=18): Failed to initialize NVML: Driver/library version mismatch']  # constructed
    facts = facts_of('h200-x1', smi=dict(binary=SIMULATOR, working=False, version=None, gpus=0, errors=errors))
    for state in ('present', 'validated'):
        with pytest.raises(DriverError, match='Driver/library version mismatch.*Fix: reboot the node'):
            driver_plan.plan(facts, params_of(state=state))


@pytest.mark.parametrize('params, message', [
    (dict(version='latest'), 'neither a driver branch'),
    (dict(packages=['-o Dpkg::Options::=--force-all']), 'not a package name'),
    (dict(packages=['']), 'not a package name'),
])
def test_bad_input(params, message):
    with pytest.raises(DriverError, match=message):
        driver_plan.plan(facts_of('t4', 'cpu-only'), params_of(**params))


def test_absent_without_record_leaves_the_pre_installed_driver():
    planned = driver_plan.plan(facts_of('h200-x1'), params_of(state='absent'))
    assert planned['steps'] == [] and planned['driver']['source'] == 'pre-installed' and planned['deploy_driver_label'] == 'pre-installed'


@pytest.mark.parametrize('ready, removed', [
    (to_bytes(driver_state.driver_ready_text()), True),
    # Not what the validation writes: someone else's file.
    (b'IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\n', False),
])
def test_absent_without_record_removes_only_the_driver_ready_the_validation_wrote(ready, removed):
    """Issue 28 item 13: a validated pre-installed driver keeps its packages, not the driver-ready this role wrote."""
    planned = driver_plan.plan(facts_of('h200-x1', files={READY: ready, BLACKLIST: None}), params_of(state='absent'))
    assert actions(planned) == (['remove ' + READY] if removed else [])
    assert planned['packages'] == [] and planned['driver']['source'] == 'pre-installed'


def test_absent_removes_what_the_record_names():
    record = dict(manager='apt', packages=['nvidia-smi'], installed=['nvidia-smi', 'libnvidia-ml1'], held=['nvidia-smi'],
                  files={BLACKLIST: None})
    facts = facts_of('t4', 'cpu-only', record=record, installed_packages={'nvidia-smi', 'libnvidia-ml1', 'bash'},
                     held_packages={'nvidia-smi'}, modules={'nvidia': 0},
                     files={READY: b'IS_HOST_DRIVER=true\n', BLACKLIST: to_bytes(driver_state.blacklist_text())})
    planned = driver_plan.plan(facts, params_of(state='absent'))
    assert actions(planned) == ['apt-mark unhold nvidia-smi', 'apt-get purge -y nvidia-smi libnvidia-ml1', 'modprobe -r nvidia',
                                'remove ' + BLACKLIST, 'update-initramfs -u', 'remove ' + READY, 'remove ' + RECORD]
    assert planned['packages'] == ['nvidia-smi', 'libnvidia-ml1'] and planned['deploy_driver_label'] == 'false'
    assert planned['driver'] == dict(installed=False, loaded=False, version=None, branch=None, source='none', kernel_module_type=None)


DEBIAN_NAMES = ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced']
HEADERS = 'linux-headers-6.1.0-28-amd64'


@pytest.mark.parametrize('state, initramfs, record, expected', [
    ('present', ['update-initramfs', '-u'], {}, ['write ' + BLACKLIST, 'update-initramfs -u']),
    ('present', ['dracut', '-f'], {}, ['write ' + BLACKLIST, 'dracut -f']),
    # No initramfs tool (the lab's minbase images, direct kernel boot): the node has no initramfs to update.
    ('present', None, {}, ['write ' + BLACKLIST]),
    ('absent', ['update-initramfs', '-u'], dict(manager='apt', files={BLACKLIST: None}), ['remove ' + BLACKLIST, 'update-initramfs -u']),
    ('absent', None, dict(manager='apt', files={BLACKLIST: None}), ['remove ' + BLACKLIST]),
])
def test_initramfs_is_updated_only_where_there_is_a_tool(state, initramfs, record, expected):
    files = {READY: None, BLACKLIST: to_bytes(driver_state.blacklist_text()) if state == 'absent' else None}
    facts = facts_of('t4', 'cpu-only', initramfs=initramfs, record=record, files=files)
    planned = driver_plan.plan(facts, params_of(state=state, packages=['nvidia-smi'], hold=False, load_modules=False,
                                                persistence_mode=False))
    assert [action for action in actions(planned) if 'blacklist' in action or ' -u' in action or ' -f' in action] == expected


@pytest.mark.parametrize('installed, packages', [
    (set(), [HEADERS] + DEBIAN_NAMES),
    ({HEADERS}, DEBIAN_NAMES),
    # A new kernel without its headers: the headers alone (the package lists must be fresh for them too).
    (set(DEBIAN_NAMES), [HEADERS]),
    # Installed but not working yet (waiting for its reboot): nothing to install, so no package list refresh.
    (set(DEBIAN_NAMES) | {HEADERS}, []),
])
def test_packages_are_those_this_run_installs(installed, packages):
    facts = facts_of('t4', 'cpu-only', installed_packages=installed, held_packages=set(DEBIAN_NAMES))
    planned = driver_plan.plan(facts, params_of())
    assert planned['packages'] == packages
    assert planned['packages'] == [spec for step in planned['steps'] if step['kind'] == 'install' for spec in step['packages']]


@pytest.mark.parametrize('package_version, version, branch', [
    ('535.261.03', '535.261.03', '535'),  # installed, not loaded yet: the package's version
    (None, None, None),
])
def test_version_of_a_driver_not_loaded_yet_is_the_package_version(package_version, version, branch):
    record = dict(manager='apt', packages=['nvidia-smi'], installed=['nvidia-smi'], held=['nvidia-smi'], files={})
    facts = facts_of('t4', 'cpu-only', record=record, package_version=package_version, installed_packages={'nvidia-smi'},
                     held_packages={'nvidia-smi'})
    planned = driver_plan.plan(facts, params_of(packages=['nvidia-smi'], load_modules=False, persistence_mode=False))
    assert (planned['driver']['version'], planned['driver']['branch']) == (version, branch) and planned['packages'] == []


OURS = dict(manager='apt', packages=DEBIAN_NAMES, installed=sorted(DEBIAN_NAMES + ['libnvidia-ml1']), held=DEBIAN_NAMES,
            files={BLACKLIST: None})
ROCKY9 = dict(ID='rocky', ID_LIKE='rhel centos fedora', VERSION_ID='9.4')
DNF_NAMES = ['nvidia-driver', 'nvidia-driver-cuda', 'kmod-nvidia-open-dkms']
DNF_RECORD = dict(OURS, manager='dnf', packages=['@nvidia-driver:open-dkms'], held=DNF_NAMES)
REPLACE = 'apt-get install -y --no-install-recommends --allow-downgrades '


def _ours(fixture, smi_fixture=None, **overrides):
    """Facts of a node whose driver packages this module installed and held."""
    values = dict(record=OURS, installed_packages=set(DEBIAN_NAMES) | {HEADERS, 'libnvidia-ml1'}, held_packages=set(DEBIAN_NAMES),
                  persistenced=dict(active=True), files={READY: None, BLACKLIST: to_bytes(driver_state.blacklist_text())})
    values.update(overrides)
    return facts_of(fixture, smi_fixture, **values)


@pytest.mark.parametrize('facts, version, expected, reboot', [
    # The h200's working open module 580.159.04 as if this module had installed it: replaced, the old module stays loaded.
    (_ours('h200-x1'), '570', [
        'apt-mark unhold ' + ' '.join(DEBIAN_NAMES),
        REPLACE + "'nvidia-driver=570.*' 'nvidia-open-kernel-dkms=570.*' 'nvidia-smi=570.*' nvidia-persistenced",
        'apt-mark hold nvidia-driver nvidia-open-kernel-dkms nvidia-smi nvidia-persistenced', 'write ' + RECORD], True),
    (_ours('h200-x1'), '580.82.07', [
        'apt-mark unhold ' + ' '.join(DEBIAN_NAMES),
        REPLACE + "'nvidia-driver=580.82.07-*' 'nvidia-open-kernel-dkms=580.82.07-*' 'nvidia-smi=580.82.07-*' nvidia-persistenced",
        'apt-mark hold nvidia-driver nvidia-open-kernel-dkms nvidia-smi nvidia-persistenced', 'write ' + RECORD], True),
    # Installed, not loaded yet (the lab's bookworm node): its package version is 535.261.03; the new one is loaded right away.
    (_ours('t4', 'cpu-only', package_version='535.261.03'), '550', [
        'apt-mark unhold ' + ' '.join(DEBIAN_NAMES),
        REPLACE + "'nvidia-driver=550.*' 'nvidia-kernel-dkms=550.*' 'nvidia-smi=550.*' nvidia-persistenced",
        'apt-mark hold ' + ' '.join(DEBIAN_NAMES), 'write ' + RECORD,
        'modprobe nvidia', 'modprobe nvidia_uvm', 'modprobe nvidia_modeset'], False),
    # dnf: the versionlocks go, the module stream is switched, then the stream (and any named version) is installed.
    (_ours('h200-x1', os_release=ROCKY9, manager='dnf', record=DNF_RECORD, held_packages=set(DNF_NAMES),
           installed_packages=set(DNF_NAMES) | {'kernel-devel-6.1.0-28-amd64'}), '570.172.08', [
        'dnf versionlock delete ' + ' '.join(DNF_NAMES),
        'dnf module switch-to -y --allowerasing nvidia-driver:570-open',
        'dnf install -y @nvidia-driver:570-open nvidia-driver-570.172.08 nvidia-driver-cuda-570.172.08 kmod-nvidia-open-dkms-570.172.08',
        'dnf versionlock add ' + ' '.join(DNF_NAMES), 'write ' + RECORD], True),
])
def test_driver_this_module_installed_is_replaced_by_another_version(facts, version, expected, reboot):
    planned = driver_plan.plan(facts, params_of(version=version))
    assert actions(planned) == expected
    assert planned['packages'] == next(step['packages'] for step in planned['steps'] if step['kind'] == 'install')
    assert planned['reboot_required'] is reboot
    assert planned['steps'][-1] == dict(kind='validate', argv=[SIMULATOR, '-q', '-x'], pending=reboot, path='/run/nvidia/validations/driver-ready')
    assert planned['driver']['source'] == 'package' and planned['deploy_driver_label'] == 'true'
    assert bool(planned['warnings']) is reboot and all('loaded kernel module stays' in w for w in planned['warnings'])


@pytest.mark.parametrize('facts, version', [
    (_ours('h200-x1'), '580'),
    (_ours('h200-x1'), ''),
    (_ours('t4', 'cpu-only', package_version='535.261.03', modules={'nvidia': 0, 'nvidia_uvm': 0, 'nvidia_modeset': 0}), '535.261.03'),
])
def test_driver_of_the_requested_version_is_not_replaced(facts, version):
    planned = driver_plan.plan(facts, params_of(version=version))
    assert [a for a in actions(planned) if a != 'write ' + READY] == [] and planned['packages'] == []
    assert planned['reboot_required'] is False


@pytest.mark.parametrize('load_modules, reboot', [(True, False), (False, True)])
def test_a_driver_left_unloaded_needs_a_reboot(load_modules, reboot):
    # Installed, not loaded (the t4 capture has no /proc): with load_modules the run loads it (modprobe planned);
    # without, nothing starts the driver before the next boot, and the plan says so.
    record = dict(manager='apt', packages=['nvidia-smi'], installed=['nvidia-smi'], held=['nvidia-smi'], files={})
    facts = facts_of('t4', 'cpu-only', record=record, installed_packages={'nvidia-smi'}, held_packages={'nvidia-smi'})
    planned = driver_plan.plan(facts, params_of(packages=['nvidia-smi'], load_modules=load_modules, persistence_mode=False))
    assert planned['reboot_required'] is reboot
    assert any(action.startswith('modprobe') for action in actions(planned)) is load_modules


def test_absent_writes_back_a_file_the_install_replaced():
    """x__absent__mutmut_115..134 survived: no test had a record of a file that was there before the install."""
    before = 'options nouveau modeset=0\n'  # the admin's own file, which the install replaced with its blacklist
    record = dict(manager='apt', installed=[], held=[], files={BLACKLIST: before})
    facts = facts_of('t4', 'cpu-only', record=record, initramfs=['update-initramfs', '-u'],
                     files={READY: None, BLACKLIST: to_bytes(driver_state.blacklist_text())})
    planned = driver_plan.plan(facts, params_of(state='absent'))
    assert [step for step in planned['steps'] if step.get('path') != RECORD] == [
        dict(kind='write', path=BLACKLIST, data=to_bytes(before)), dict(kind='run', argv=['update-initramfs', '-u'])]
    # Back as it was already (restored by hand): nothing to write, no initramfs to rebuild.
    facts['files'][BLACKLIST] = to_bytes(before)
    assert driver_plan.plan(facts, params_of(state='absent'))['steps'] == [dict(kind='remove', path=RECORD)]


@pytest.mark.parametrize('systemd, active, persistence_mode, step, warned', [
    (True, False, True, True, False),
    (True, True, True, False, False),
    (True, False, False, False, False),
    # systemd is not PID 1 (a container, a CI runner): systemctl cannot enable the service; the run says so instead.
    (False, False, True, False, True),
    (False, False, False, False, False),
])
def test_persistenced_is_enabled_only_where_systemd_runs_the_node(systemd, active, persistence_mode, step, warned):
    planned = driver_plan.plan(facts_of('t4', 'cpu-only', systemd=systemd, persistenced=dict(active=active)),
                               params_of(persistence_mode=persistence_mode))
    assert ('systemctl enable --now nvidia-persistenced.service' in actions(planned)) is step
    notes = [warning for warning in planned['warnings'] if 'nvidia-persistenced' in warning]
    assert notes == (['systemd is not PID 1 on this node: nvidia-persistenced is neither enabled nor started (persistence_mode); '
                      'run it the way this node runs its services'] if warned else [])


# --- check mode's package diff ------------------------------------------------------------------------------------

def _package_diff(facts, steps, simulated):
    return [entry for entry in driver_plan.preview_diff(facts, steps, simulated) if entry['before_header'].startswith('packages')]


def test_install_diff_lists_what_apt_would_install_with_versions_and_holds():
    """apt-get -s's answer for the install step (its dependencies included) and the hold step's names: each package that
    changes, before and after; the blacklist's diff comes first."""
    facts = facts_of('t4', 'cpu-only', installed_packages={'bash': '5.2.15-2+b7'})
    planned = driver_plan.plan(facts, params_of(packages=['nvidia-smi', 'nvidia-persistenced']))
    [install] = driver_plan.package_steps(planned['steps'])
    simulated = {install: {'libnvidia-ml1': '535.261.03-1', 'nvidia-smi': '535.261.03-1', 'nvidia-persistenced': '535.171.04-1~deb12u1'}}
    diff = driver_plan.preview_diff(facts, planned['steps'], simulated)
    assert [entry['after_header'] for entry in diff] == [BLACKLIST, 'packages (apt)']
    assert diff[1] == dict(before_header='packages (apt)', after_header='packages (apt)', before='', after=(
        'libnvidia-ml1 535.261.03-1\nnvidia-persistenced 535.171.04-1~deb12u1 (held)\nnvidia-smi 535.261.03-1 (held)\n'))


def test_without_a_simulation_the_named_packages_show_their_pin():
    """dnf, or a simulation that failed (the package lists not refreshed yet): the step's packages, at their pin."""
    facts = facts_of('t4', 'cpu-only', installed_packages={})
    planned = driver_plan.plan(facts, params_of(version='550'))
    [entry] = _package_diff(facts, planned['steps'], {})
    assert entry['after'] == ('linux-headers-6.1.0-28-amd64 (version picked by the run)\nnvidia-driver 550.* (held)\nnvidia-kernel-dkms 550.* (held)\n'
                              'nvidia-persistenced (version picked by the run) (held)\nnvidia-smi 550.* (held)\n')


def test_replacing_the_driver_shows_the_versions_change_and_the_holds_kept():
    installed = dict((name, '535.261.03-1') for name in DEBIAN_NAMES)
    installed.update({HEADERS: '6.1.119-1', 'libnvidia-ml1': '535.261.03-1'})
    facts = _ours('t4', 'cpu-only', package_version='535.261.03', installed_packages=installed)
    planned = driver_plan.plan(facts, params_of(version='550'))
    [replace] = driver_plan.package_steps(planned['steps'])
    simulated = {replace: dict((name, '550.163.01-2') for name in DEBIAN_NAMES + ['libnvidia-ml1'])}
    [entry] = _package_diff(facts, planned['steps'], simulated)
    assert entry['before'] == ''.join('%s 535.261.03-1%s\n' % (name, '' if name == 'libnvidia-ml1' else ' (held)')
                                      for name in sorted(DEBIAN_NAMES + ['libnvidia-ml1']))
    assert entry['after'] == entry['before'].replace('535.261.03-1', '550.163.01-2')


def test_absent_diff_lists_the_packages_it_removes():
    installed = dict((name, '535.261.03-1') for name in DEBIAN_NAMES + ['libnvidia-ml1'])
    installed['bash'] = '5.2.15-2+b7'
    facts = facts_of('t4', 'cpu-only', record=OURS, installed_packages=installed, held_packages=set(DEBIAN_NAMES))
    planned = driver_plan.plan(facts, params_of(state='absent'))
    [remove] = driver_plan.package_steps(planned['steps'])
    for simulated in ({remove: dict.fromkeys(DEBIAN_NAMES + ['libnvidia-ml1'])}, {}):
        [entry] = _package_diff(facts, planned['steps'], simulated)
        assert entry['after'] == '' and entry['before'].splitlines() == [
            'libnvidia-ml1 535.261.03-1', 'nvidia-driver 535.261.03-1 (held)', 'nvidia-kernel-dkms 535.261.03-1 (held)',
            'nvidia-persistenced 535.261.03-1 (held)', 'nvidia-smi 535.261.03-1 (held)']


def test_a_converged_node_has_no_package_diff():
    facts = _ours('h200-x1', installed_packages=dict((name, '580.159.04-1') for name in DEBIAN_NAMES))
    planned = driver_plan.plan(facts, params_of())
    assert driver_plan.package_steps(planned['steps']) == [] and _package_diff(facts, planned['steps'], {}) == []
