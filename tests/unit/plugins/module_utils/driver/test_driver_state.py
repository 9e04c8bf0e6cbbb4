# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""driver_state on the captured fixtures: NVRM line, /proc/modules, GPUs and NVSwitches, Secure Boot, nvidia-smi failures."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shutil

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, SIMULATOR, sim_runner


@pytest.mark.parametrize('fixture, expected', [
    # The real capture: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)".
    ('h200-x1', dict(version='580.159.04', branch='580', kernel_module_type='open')),
    ('a100-sxm4-80gb-mig', dict(version='535.54.03', branch='535', kernel_module_type='proprietary')),
    ('h100-sxm5-80gb-x1', dict(version='590.48.01', branch='590', kernel_module_type='proprietary')),
    ('t4', None),
    ('cpu-only', None),
])
def test_proc_driver(fixture, expected):
    assert state.proc_driver(os.path.join(GPUS, fixture, 'proc')) == expected


def test_parse_nvrm_needs_the_nvrm_line():
    assert state.parse_nvrm('GCC version:  gcc version 15.3.0 (GCC)\n') is None and state.parse_nvrm(None) is None


def test_loaded_modules_of_the_h200_capture():
    modules = state.loaded_modules(os.path.join(GPUS, 'h200-x1', 'proc'))
    assert modules == {'nvidia_uvm': 0, 'nvidia': 0}
    assert not any(name in modules for name in state.NOUVEAU_MODULES)


@pytest.mark.parametrize('text, expected', [
    # Constructed /proc/modules lines (name size refcount deps state address): use counts and "-" for none.
    ('nouveau 2342912 1 - Live 0x0\nnvidia_uvm 1830912 2 - Live 0x0\n', {'nouveau': 1, 'nvidia_uvm': 2}),
    ('nvidia 14299136 5 nvidia_uvm,nvidia_modeset, Live 0x0\nbroken\n', {'nvidia': 5}),
    ('', {}),
])
def test_parse_proc_modules(text, expected):
    assert state.parse_proc_modules(text) == expected


@pytest.mark.parametrize('fixture, gpus', [
    ('h200-x1', [dict(pci_address='0000:00:06.0', vendor_id='0x10de', device_id='0x2335', class_id='0x0302', mode='compute')]),
    ('t4', [dict(pci_address='0000:00:1e.0', vendor_id='0x10de', device_id='0x1eb8', class_id='0x0302', mode='compute')]),
    ('a100-sxm4-80gb-mig', [dict(pci_address='0000:01:00.0', vendor_id='0x10de', device_id='0x20b2', class_id='0x0302', mode='compute')]),
    # A VirtualBox VGA controller (0x0300, vendor 80ee) and an Intel bridge of class 0x0680: neither GPU nor NVSwitch.
    ('cpu-only', []),
])
def test_gpus_and_nvswitches(fixture, gpus):
    devices = gpu_discovery.pci_devices(os.path.join(GPUS, fixture, 'sys'))
    assert state.gpus(devices) == gpus
    assert gpu_discovery.nvswitch_devices(devices) == []


# No real multi-GPU capture exists (tests/fixtures/gpus/h100-sxm5-80gb-x1/SOURCE.md: no public capture of a multi-GPU
# node with PCI bus ids was found), so a node with several GPUs is composed of the real single-GPU captures, whose PCI
# addresses differ (copytree fails on a clash).
MULTI_GPU_FIXTURES = ('h200-x1', 'h100-sxm5-80gb-x1', 'a100-sxm4-80gb-mig', 't4')
MULTI_GPU_IDS = [('0000:00:06.0', '0x2335'), ('0000:00:09.0', '0x2330'), ('0000:00:1e.0', '0x1eb8'), ('0000:01:00.0', '0x20b2')]


def multi_gpu_sysfs(root, drivers=None):
    """A sysfs root under `root` whose PCI devices are those of the MULTI_GPU_FIXTURES captures together.

    drivers: {address: kernel driver} bound to those devices: a `driver` link to bus/pci/drivers/<driver>, as the kernel
    makes it (the captures keep no link: host/pci-driver of h100-x1 and h200-x1 names the driver bound there, nvidia).
    """
    devices = os.path.join(str(root), 'bus', 'pci', 'devices')
    os.makedirs(devices)
    for fixture in MULTI_GPU_FIXTURES:
        base = os.path.join(GPUS, fixture, 'sys', 'bus', 'pci', 'devices')
        for name in os.listdir(base):
            shutil.copytree(os.path.join(base, name), os.path.join(devices, name))
    for address, driver in (drivers or {}).items():
        os.makedirs(os.path.join(str(root), 'bus', 'pci', 'drivers', driver), exist_ok=True)
        os.symlink(os.path.join('..', '..', 'drivers', driver), os.path.join(devices, address, 'driver'))
    return str(root)


def test_gpus_of_a_node_with_several_gpus(tmp_path):
    devices = gpu_discovery.pci_devices(multi_gpu_sysfs(tmp_path / 'sys'))
    gpus = state.gpus(devices)
    assert [(gpu['pci_address'], gpu['device_id']) for gpu in gpus] == MULTI_GPU_IDS
    assert all(gpu['vendor_id'] == '0x10de' and gpu['mode'] == 'compute' for gpu in gpus)
    assert gpu_discovery.nvswitch_devices(devices) == []
    # Turing (T4) to Hopper, no Blackwell: the open module from branch 560 on, as for each GPU alone.
    assert state.resolve_kernel_module_type('auto', gpus, '580', None) == 'open'
    assert state.resolve_kernel_module_type('auto', gpus, '550', None) == 'proprietary'


def test_nvswitch_and_graphics_class():
    # Constructed device dicts (not a capture): an NVIDIA bridge of class 0x0680 is an NVSwitch; 0x0300 is a graphics GPU.
    devices = [dict(address='0000:05:00.0', vendor='0x10de', device='0x22a3', pci_class='0x068000'),
               dict(address='0000:06:00.0', vendor='0x10de', device='0x2684', pci_class='0x030000'),
               dict(address='0000:07:00.0', vendor='0x10de', device='0x22ba', pci_class='0x040300')]
    assert [dev['address'] for dev in gpu_discovery.nvswitch_devices(devices)] == ['0000:05:00.0']
    assert [(gpu['pci_address'], gpu['mode']) for gpu in state.gpus(devices)] == [('0000:06:00.0', 'graphics')]


@pytest.mark.parametrize('data, expected', [
    # Constructed efivarfs contents: 4 attribute bytes (0x06 = boot service + runtime access) then the value byte.
    (b'\x06\x00\x00\x00\x01', 'enabled'),
    (b'\x06\x00\x00\x00\x00', 'disabled'),
    (b'\x06\x00\x00\x00\x02', 'unknown'),
    (b'\x01', 'unknown'),
    (b'', 'unknown'),
    (None, 'unknown'),
])
def test_secure_boot_state(data, expected):
    assert state.secure_boot_state(data) == expected


def test_secure_boot_reads_the_efi_variable(tmp_path):
    # The h200 capture has no EFI variables (a Firecracker VM): unknown.
    assert state.secure_boot(os.path.join(GPUS, 'h200-x1', 'sys')) == 'unknown'
    var = tmp_path / state.SECURE_BOOT_VAR
    var.parent.mkdir(parents=True)
    var.write_bytes(b'\x06\x00\x00\x00\x01')  # constructed, enabled
    assert state.secure_boot(str(tmp_path)) == 'enabled'


@pytest.mark.parametrize('requested, device, branch, loaded, expected', [
    ('open', '0x1db1', None, None, 'open'),
    ('proprietary', '0x2335', '580', None, 'proprietary'),
    ('auto', '0x2335', None, dict(kernel_module_type='open'), 'open'),
    ('auto', '0x2335', '570', None, 'open'),
    ('auto', '0x2335', '550', None, 'proprietary'),
    ('auto', '0x2335', None, None, 'proprietary'),
    ('auto', '0x1eb8', '560', None, 'open'),       # T4: Turing, the oldest the open module supports
    ('auto', '0x1db1', '570', None, 'proprietary'),  # V100: Volta, proprietary only
    ('auto', '0x2901', '550', None, 'open'),       # B200: Blackwell, open only
])
def test_resolve_kernel_module_type(requested, device, branch, loaded, expected):
    gpus = [dict(pci_address='0000:00:06.0', vendor_id='0x10de', device_id=device, class_id='0x0302', mode='compute')]
    assert state.resolve_kernel_module_type(requested, gpus, branch, loaded) == expected


@pytest.mark.parametrize('version, ok', [('', True), ('550', True), ('550.163', True), ('550.163.01', True),
                                         ('r550', False), ('550.163.01.1', False), ('550 ', False), ('latest', False)])
def test_check_version(version, ok):
    if ok:
        assert state.check_version(version) == version
    else:
        with pytest.raises(state.DriverError, match='neither a driver branch'):
            state.check_version(version)


def test_no_driver_message_from_the_simulator():
    # cpu-only has no nvidia-smi capture: the simulator answers like nvidia-smi without a driver (exit 9).
    errors = gpu_discovery.query_nvidia_smi(sim_runner(os.path.join(GPUS, 'cpu-only')), SIMULATOR)[3]
    kind, message = state.smi_failure(errors, None)
    assert kind == 'no-driver' and message.startswith('no NVIDIA driver is loaded') and "couldn't communicate" in message


def test_mismatch_message_names_the_fix():
    # Constructed: nvidia-smi's NVML error text (quoted in many public reports) as the runner reports a failure;
    # the exit code is a placeholder. The loaded module is the h200 capture's.
    errors = ['nvidia-smi -q -x failed (rc=18): Failed to initialize NVML: Driver/library version mismatch']
    kind, message = state.smi_failure(errors, state.proc_driver(os.path.join(GPUS, 'h200-x1', 'proc')))
    assert kind == 'mismatch'
    assert 'kernel module 580.159.04' in message and 'reboot the node' in message and 'modprobe -r nvidia_drm' in message


def test_other_failure_with_a_loaded_module():
    errors = ['nvidia-smi was not found (searched /usr/bin, /usr/sbin, /bin, /sbin, /opt/bin and PATH)']
    kind, message = state.smi_failure(errors, state.proc_driver(os.path.join(GPUS, 'h200-x1', 'proc')))
    assert kind == 'failed' and message.startswith('the NVIDIA kernel module 580.159.04 is loaded but nvidia-smi fails')
    assert state.smi_failure(errors, None)[0] == 'no-driver'


def test_files_the_module_writes():
    # Host-driver values of NVIDIA/gpu-operator cmd/nvidia-validator/driver.go getDriverInfo, in main.go createStatusFile's order.
    assert state.driver_ready_text() == ('IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\n'
                                         'NVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n')
    lines = state.blacklist_text().splitlines()
    assert 'blacklist nouveau' in lines and 'blacklist nova_core' in lines and 'options nouveau modeset=0' in lines


# A record as Executor writes it.
RECORD = dict(manager='apt', packages=['nvidia-driver'], installed=['nvidia-driver', 'nvidia-smi'], held=['nvidia-driver'],
              files={'/etc/modprobe.d/blacklist-nouveau.conf': None})


@pytest.mark.parametrize('text, expected', [(None, {}), (json.dumps(RECORD), RECORD),
                                            (json.dumps(dict(RECORD, manager=None, files={'/etc/x': 'old text\n'})),
                                             dict(RECORD, manager=None, files={'/etc/x': 'old text\n'}))])
def test_parse_record(text, expected):
    assert state.parse_record(text, '/var/lib/gpuops/nvidia_driver.json') == expected


@pytest.mark.parametrize('text', ['{', '[]'])
def test_parse_record_rejects_other_content(text):
    with pytest.raises(state.DriverError, match='not the JSON record'):
        state.parse_record(text, '/var/lib/gpuops/nvidia_driver.json')


@pytest.mark.parametrize('change, said', [
    (dict(packages=5), 'packages must be a list of package names'),
    (dict(installed=3), 'installed must be a list of package names'),
    (dict(held=[1]), 'held must be a list of package names'),
    (dict(files=7), 'files must be an object of file paths'),
    (dict(files={'/etc/x': 1}), 'files must be an object of file paths'),
    (dict(manager=['apt']), 'manager must be a package manager name or null'),
    (dict(installed=None), 'installed must be a list'),
])
def test_parse_record_rejects_wrong_types(change, said):
    # The record ({"packages": 5, ...}) made state=absent crash with "'int' object is not iterable".
    with pytest.raises(state.DriverError, match='is not the record nvidia_driver writes: %s' % said):
        state.parse_record(json.dumps(dict(RECORD, **change)), '/var/lib/gpuops/nvidia_driver.json')


def test_parse_record_rejects_missing_keys():
    with pytest.raises(state.DriverError, match='held must be'):
        state.parse_record(json.dumps(dict((key, value) for key, value in RECORD.items() if key != 'held')), '/r.json')


@pytest.mark.parametrize('present, record, source', [
    (True, {}, 'pre-installed'),
    (False, {}, 'none'),
    (True, {'packages': ['nvidia-driver']}, 'package'),
    (False, {'packages': ['nvidia-driver']}, 'package'),
    (True, {'packages': []}, 'pre-installed'),
])
def test_driver_source(present, record, source):
    assert state.driver_source(present, record) == source


@pytest.mark.parametrize('gpu_count, source, label', [
    (1, 'pre-installed', 'pre-installed'),
    (8, 'package', 'true'),
    (1, 'none', 'false'),
    (0, 'pre-installed', 'false'),
])
def test_deploy_driver_label(gpu_count, source, label):
    assert state.deploy_driver_label(gpu_count, source) == label


def test_load_record(tmp_path):
    assert state.load_record(str(tmp_path / 'absent.json')) == {}
    (tmp_path / 'r.json').write_text(json.dumps(RECORD))
    assert state.load_record(str(tmp_path / 'r.json')) == RECORD
    (tmp_path / 'bad.json').write_text('[1]')
    with pytest.raises(state.DriverError, match='bad.json'):
        state.load_record(str(tmp_path / 'bad.json'))


@pytest.mark.parametrize('have, wanted, matches', [
    ('580.159.04', '', True), ('580.159.04', '580', True), ('580.159.04', '580.159.04', True), ('580.159.04', '580.159', True),
    ('580.159.04', '58', False), ('580.159.04', '570', False), ('580.159.04', '580.159.05', False), (None, '580', False),
])
def test_version_matches(have, wanted, matches):
    assert state.version_matches(have, wanted) is matches
