# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The vfio_manager module on a copy of the h100-x1 capture (a real H100's sysfs and kernel command line).

That GPU was captured inside a Firecracker guest without an IOMMU: its tree has no kernel/iommu_groups and no driver
links, and plain files cannot act as the kernel. build_node() adds to the copy, and only there:
- bus/pci/devices/0000:00:06.0/driver -> ../../drivers/nvidia: the driver the capture recorded (host/pci-driver);
- bus/pci/drivers/{nvidia,vfio-pci}/{bind,unbind} and bus/pci/drivers_probe: the kernel's write-only attributes, as
  empty files, so the test reads what the module wrote to them;
- bus/pci/devices/0000:00:06.0/driver_override holding "(null)": what the kernel shows when no override is set;
- with iommu=True, kernel/iommu_groups/14/devices/0000:00:06.0 and the function's iommu_group link (the group number
  is the test's: the capture host had no IOMMU) and the captured cmdline with " intel_iommu=on iommu=pt" put before its
  " -- " (what follows that is init's, not the kernel's).
kernel() then does what the kernel does on those writes (moves the driver link), so a second run sees a bound node.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.vfio import executor as vfio_executor
from ansible_collections.gpuops.gpu_operator.plugins.modules import vfio_manager
from tests.module_runner import run_module

CAPTURE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'gpus', 'h100-x1')
GPU = '0000:00:06.0'


def build_node(tmp_path, iommu=True, vfio_loaded=True):
    sysfs = tmp_path / 'sys'
    shutil.copytree(os.path.join(CAPTURE, 'sys'), str(sysfs))
    pci = sysfs / 'bus' / 'pci'
    captured_driver = open(os.path.join(CAPTURE, 'host', 'pci-driver')).read().strip()
    for driver in [captured_driver] + (['vfio-pci'] if vfio_loaded else []):
        (pci / 'drivers' / driver).mkdir(parents=True)
        for attribute in ('bind', 'unbind'):
            (pci / 'drivers' / driver / attribute).write_text('')
    (pci / 'drivers_probe').write_text('')
    device = pci / 'devices' / GPU
    os.symlink('../../drivers/' + captured_driver, str(device / 'driver'))
    (device / 'driver_override').write_text('(null)\n')
    cmdline = open(os.path.join(CAPTURE, 'host', 'proc-cmdline')).read().rstrip('\n')
    if iommu:
        group = sysfs / 'kernel' / 'iommu_groups' / '14' / 'devices'
        group.mkdir(parents=True)
        os.symlink('../../../../bus/pci/devices/' + GPU, str(group / GPU))
        os.symlink('../../../kernel/iommu_groups/14', str(device / 'iommu_group'))
        kernel_part, init_part = cmdline.split(' -- ', 1)
        cmdline = kernel_part + ' intel_iommu=on iommu=pt -- ' + init_part
    (tmp_path / 'proc').mkdir()
    (tmp_path / 'proc' / 'cmdline').write_text(cmdline + '\n')
    return dict(sysfs_root=str(sysfs), procfs_root=str(tmp_path / 'proc'), record_file=str(tmp_path / 'state' / 'vfio.json'),
                udev_rules_file=str(tmp_path / 'etc' / 'udev' / 'rules.d' / '60-gpuops-vfio-pci.rules'),
                modules_load_file=str(tmp_path / 'etc' / 'modules-load.d' / 'gpuops-vfio-pci.conf'))


def kernel(args):
    """What the kernel does on the writes the module made: a written unbind drops the driver link, a written bind sets
    it; the attributes read empty again afterwards, as write-only ones do."""
    pci = os.path.join(args['sysfs_root'], 'bus', 'pci')
    for attribute in ('unbind', 'bind'):
        for driver in sorted(os.listdir(os.path.join(pci, 'drivers'))):
            path = os.path.join(pci, 'drivers', driver, attribute)
            address = open(path).read().strip()
            if not address:
                continue
            link = os.path.join(pci, 'devices', address, 'driver')
            if attribute == 'unbind':
                assert os.readlink(link).endswith('/' + driver), 'unbind written to a driver the function is not bound to'
                os.unlink(link)
            else:
                assert not os.path.lexists(link), 'bind written for a function still bound'
                os.symlink('../../drivers/' + driver, link)
            open(path, 'w').close()


def snapshot(root):
    """Every file and link under root with its content or target: the byte-exact view."""
    seen = {}
    for directory, dirs, names in os.walk(root):
        for name in dirs + names:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                seen[os.path.relpath(path, root)] = 'link:' + os.readlink(path)
            elif os.path.isfile(path):
                seen[os.path.relpath(path, root)] = open(path, 'rb').read()
    return seen


def test_binds_the_gpu_keeps_it_and_gives_it_back_byte_exact(tmp_path, capsys):
    args = build_node(tmp_path)
    before = snapshot(str(tmp_path))
    device = os.path.join(args['sysfs_root'], 'bus', 'pci', 'devices', GPU)

    checked = run_module(capsys, vfio_manager.main, dict(args, _ansible_check_mode=True, _ansible_diff=True))
    assert checked['changed'] is True
    assert checked['actions'] == [dict(action='override', address=GPU, value='vfio-pci'),
                                  dict(action='unbind', address=GPU, driver='nvidia'),
                                  dict(action='bind', address=GPU, driver='vfio-pci')]
    assert [dev['address'] for dev in checked['functions']] == [GPU]
    assert checked['iommu'] == dict(groups=1, kernel_parameters={'intel_iommu': 'on', 'iommu': 'pt'})
    assert 'KERNEL=="0000:00:06.0", ATTR{driver_override}="vfio-pci"' in checked['diff'][1]['after']
    assert snapshot(str(tmp_path)) == before, 'check mode wrote something'

    bound = run_module(capsys, vfio_manager.main, args)
    assert bound['actions'] == checked['actions'] and bound['changed'] is True
    # The writes, observed in the copy before the kernel double acts on them.
    assert open(os.path.join(device, 'driver_override')).read() == 'vfio-pci'
    assert open(os.path.join(args['sysfs_root'], 'bus', 'pci', 'drivers', 'nvidia', 'unbind')).read() == GPU
    assert open(os.path.join(args['sysfs_root'], 'bus', 'pci', 'drivers', 'vfio-pci', 'bind')).read() == GPU
    assert open(args['udev_rules_file']).read().splitlines()[-1] == \
        'ACTION=="add", SUBSYSTEM=="pci", KERNEL=="0000:00:06.0", ATTR{driver_override}="vfio-pci"'
    assert open(args['modules_load_file']).read().splitlines()[-1] == 'vfio-pci'
    assert json.load(open(args['record_file']))['functions'] == {GPU: dict(driver='nvidia', driver_override=None)}
    assert oct(os.stat(args['record_file']).st_mode & 0o777) == '0o600'
    kernel(args)
    assert os.readlink(os.path.join(device, 'driver')) == '../../drivers/vfio-pci'

    again = run_module(capsys, vfio_manager.main, args)
    assert (again['changed'], again['actions'], again['files']) == (False, [], [])

    undo_check = run_module(capsys, vfio_manager.main, dict(args, state='absent', _ansible_check_mode=True))
    assert undo_check['actions'] == [dict(action='unbind', address=GPU, driver='vfio-pci'),
                                     dict(action='override', address=GPU, value=None),
                                     dict(action='bind', address=GPU, driver='nvidia')]
    undone = run_module(capsys, vfio_manager.main, dict(args, state='absent'))
    assert undone['actions'] == undo_check['actions'] and undone['changed'] is True
    assert open(os.path.join(args['sysfs_root'], 'bus', 'pci', 'drivers', 'nvidia', 'bind')).read() == GPU
    kernel(args)
    # The kernel shows "(null)" again once an empty override is written.
    assert open(os.path.join(device, 'driver_override')).read() == '\n'
    with open(os.path.join(device, 'driver_override'), 'w') as handle:
        handle.write('(null)\n')
    after = snapshot(str(tmp_path))
    # The directories the module made for its files stay empty; every file and link is as before.
    assert after == before
    assert run_module(capsys, vfio_manager.main, dict(args, state='absent'))['changed'] is False


def test_iommu_off_fails_before_writing(tmp_path, capsys):
    """The captured command line (no IOMMU parameter) and no iommu_groups, as on the capture host."""
    args = build_node(tmp_path, iommu=False)
    before = snapshot(str(tmp_path))
    for check_mode in (True, False):
        failed = run_module(capsys, vfio_manager.main, dict(args, _ansible_check_mode=check_mode), failed=True)
        assert failed['msg'].startswith('the IOMMU is off: /sys/kernel/iommu_groups is empty (IOMMU kernel parameters: none)')
    assert snapshot(str(tmp_path)) == before


def test_vfio_pci_missing_fails_naming_it(tmp_path, capsys, monkeypatch):
    """No bus/pci/drivers/vfio-pci: modprobe is planned and run; a modprobe that succeeds without bringing the driver
    (a kernel built without it) fails the run before any function is unbound."""
    args = build_node(tmp_path, vfio_loaded=False)
    checked = run_module(capsys, vfio_manager.main, dict(args, _ansible_check_mode=True))
    assert checked['actions'][0] == dict(action='load', driver='vfio-pci')
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'modprobe').write_text('#!/bin/sh\necho "$@" >> %s\n' % (tmp_path / 'modprobe.log'))
    (bin_dir / 'modprobe').chmod(0o755)
    monkeypatch.setenv('PATH', str(bin_dir) + os.pathsep + os.environ['PATH'])
    monkeypatch.setattr('ansible.module_utils.basic.get_bin_path', lambda arg, *a, **k: str(bin_dir / arg) if arg == 'modprobe' else shutil.which(arg))
    failed = run_module(capsys, vfio_manager.main, args, failed=True)
    assert 'the kernel has no vfio-pci driver' in failed['msg']
    assert (tmp_path / 'modprobe.log').read_text() == 'vfio-pci\n'
    assert open(os.path.join(args['sysfs_root'], 'bus', 'pci', 'drivers', 'nvidia', 'unbind')).read() == ''


def test_a_function_already_on_vfio_is_not_ours(tmp_path, capsys):
    """A GPU someone else bound to vfio-pci: nothing to do, nothing recorded, and state=absent leaves it there."""
    args = build_node(tmp_path)
    device = os.path.join(args['sysfs_root'], 'bus', 'pci', 'devices', GPU)
    os.unlink(os.path.join(device, 'driver'))
    os.symlink('../../drivers/vfio-pci', os.path.join(device, 'driver'))
    result = run_module(capsys, vfio_manager.main, args)
    assert (result['changed'], result['actions']) == (False, [])
    assert not os.path.exists(args['record_file'])
    assert run_module(capsys, vfio_manager.main, dict(args, state='absent'))['actions'] == []


def test_a_damaged_record_fails(tmp_path, capsys):
    args = build_node(tmp_path)
    os.makedirs(os.path.dirname(args['record_file']))
    open(args['record_file'], 'w').write('{"functions": []}')
    failed = run_module(capsys, vfio_manager.main, dict(args, state='absent'), failed=True)
    assert 'is not the JSON record vfio_manager writes' in failed['msg']


def test_another_vendors_function_in_the_group_is_left_to_the_host(tmp_path, capsys, monkeypatch):
    """The copy gets a second function in the GPU's IOMMU group: the real Intel 82540EM NIC (0000:00:03.0) of the
    cpu-only capture, its sysfs files copied unchanged and put in group 14 by the test (no capture shows a GPU sharing a
    group). The GPU is bound; the NIC is not touched and the run warns that the group is not viable."""
    args = build_node(tmp_path)
    nic = '0000:00:03.0'
    devices = os.path.join(args['sysfs_root'], 'bus', 'pci', 'devices')
    shutil.copytree(os.path.join(CAPTURE, '..', 'cpu-only', 'sys', 'bus', 'pci', 'devices', nic), os.path.join(devices, nic))
    os.symlink('../../../kernel/iommu_groups/14', os.path.join(devices, nic, 'iommu_group'))
    os.symlink('../../../../bus/pci/devices/' + nic, os.path.join(args['sysfs_root'], 'kernel', 'iommu_groups', '14', 'devices', nic))
    warnings = []
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, msg: warnings.append(msg))
    result = run_module(capsys, vfio_manager.main, args)
    assert [dev['address'] for dev in result['functions']] == [GPU]
    assert {action.get('address') for action in result['actions']} == {GPU}
    assert [warning[:100] for warning in warnings] == [
        'IOMMU group 14 of the GPUs also holds 0000:00:03.0 (vendor 0x8086, class 0x020000, driver none), whi']


def test_the_gpus_audio_function_goes_with_it_and_comes_back(tmp_path, capsys, monkeypatch):
    """No captured GPU here has an audio function (data-centre GPUs have none), so the test adds one to the copy, as a
    GeForce card shows it: function 1 of the GPU's slot, vendor 0x10de, device 0x1aef, class 0x040300 (the RTX 3090's HD
    audio, "pci 0000:01:00.1: [10de:1aef] type 00 class 0x040300 PCIe Endpoint" in a public kernel log of such a host),
    bound to snd_hda_intel, in the GPU's IOMMU group. Both are bound to vfio-pci, recorded with their drivers, and given
    back each to its own. Two functions mean several writes to one attribute, so kernel() acts after each write here
    (the writes are kept in order), as the kernel does."""
    args = build_node(tmp_path)
    audio = GPU[:-1] + '1'
    pci = os.path.join(args['sysfs_root'], 'bus', 'pci')
    device = os.path.join(pci, 'devices', audio)
    os.makedirs(device)
    for name, value in (('vendor', '0x10de'), ('device', '0x1aef'), ('class', '0x040300'), ('driver_override', '(null)')):
        open(os.path.join(device, name), 'w').write(value + '\n')
    os.makedirs(os.path.join(pci, 'drivers', 'snd_hda_intel'))
    for attribute in ('bind', 'unbind'):
        open(os.path.join(pci, 'drivers', 'snd_hda_intel', attribute), 'w').close()
    os.symlink('../../drivers/snd_hda_intel', os.path.join(device, 'driver'))
    os.symlink('../../../kernel/iommu_groups/14', os.path.join(device, 'iommu_group'))
    os.symlink('../../../../bus/pci/devices/' + audio, os.path.join(args['sysfs_root'], 'kernel', 'iommu_groups', '14', 'devices', audio))
    before = snapshot(str(tmp_path))
    writes = []
    write = vfio_executor._sysfs_write

    def write_then_kernel(path, text):
        write(path, text)
        writes.append((os.path.relpath(path, pci), text))
        kernel(args)
    monkeypatch.setattr(vfio_executor, '_sysfs_write', write_then_kernel)

    bound = run_module(capsys, vfio_manager.main, args)
    assert [(dev['address'], dev['role']) for dev in bound['functions']] == [(GPU, 'gpu'), (audio, 'companion')]
    assert sorted(writes) == sorted([
        ('devices/%s/driver_override' % GPU, 'vfio-pci'), ('drivers/nvidia/unbind', GPU), ('drivers/vfio-pci/bind', GPU),
        ('devices/%s/driver_override' % audio, 'vfio-pci'), ('drivers/snd_hda_intel/unbind', audio), ('drivers/vfio-pci/bind', audio)])
    assert json.load(open(args['record_file']))['functions'] == {GPU: dict(driver='nvidia', driver_override=None),
                                                                 audio: dict(driver='snd_hda_intel', driver_override=None)}
    assert 'KERNEL=="%s", ATTR{driver_override}="vfio-pci"' % audio in open(args['udev_rules_file']).read()
    assert [os.readlink(os.path.join(pci, 'devices', function, 'driver')) for function in (GPU, audio)] == ['../../drivers/vfio-pci'] * 2

    del writes[:]
    run_module(capsys, vfio_manager.main, dict(args, state='absent'))
    assert ('drivers/snd_hda_intel/bind', audio) in writes and ('drivers/nvidia/bind', GPU) in writes
    for function in (GPU, audio):
        with open(os.path.join(pci, 'devices', function, 'driver_override'), 'w') as handle:
            handle.write('(null)\n')  # what the kernel shows once an empty override is written
    assert snapshot(str(tmp_path)) == before
