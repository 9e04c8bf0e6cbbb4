# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The gpudirect module end to end on a copy of the captured h100-x1 tree, with a test double of the node's commands.

The double (FakeNode) stands for dpkg/apt and modprobe: apt-get install adds the packages to its list, modprobe NAME adds
a line for NAME to the COPY of the captured proc/modules and (gdrdrv) the device node the module would make, modprobe -r
takes them away. Everything else the module reads is the captured tree.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.modules import gpudirect
from tests.module_runner import run_module

GPUS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'gpus')
DEVICES = dict(gdrdrv='gdrdrv', nvidia_fs='nvidia-fs0')


class FakeNode(object):
    def __init__(self, root):
        self.root = root
        self.installed = {}
        self.held = set()
        self.calls = []

    def modules_file(self):
        return os.path.join(self.root, 'proc', 'modules')

    def run_command(self, args, **kwargs):
        argv = [os.path.basename(args[0])] + list(args[1:])
        self.calls.append(argv)
        if argv[0] == 'dpkg-query':
            return 0, ''.join('ii %s %s\n' % item for item in sorted(self.installed.items())), ''
        if argv[:2] == ['apt-mark', 'showhold']:
            return 0, ''.join('%s\n' % name for name in sorted(self.held)), ''
        if argv[:2] == ['apt-mark', 'hold']:
            self.held |= set(argv[2:])
        elif argv[:2] == ['apt-mark', 'unhold']:
            self.held -= set(argv[2:])
        elif argv[0] == 'apt-get' and argv[1] == 'install':
            self.installed.update((name, '2.5-1') for name in argv[2:] if not name.startswith('-'))
        elif argv[0] == 'apt-get' and argv[1] == 'purge':
            for name in argv[3:]:
                self.installed.pop(name, None)
        elif argv[0] == 'modprobe' and argv[1] == '-r':
            with open(self.modules_file()) as handle:
                lines = [line for line in handle if line.split()[0] not in argv[2:]]
            with open(self.modules_file(), 'w') as handle:
                handle.writelines(lines)
            for name in argv[2:]:
                if os.path.exists(os.path.join(self.root, 'dev', DEVICES.get(name, '-'))):
                    os.remove(os.path.join(self.root, 'dev', DEVICES[name]))
        elif argv[0] == 'modprobe':
            with open(self.modules_file(), 'a') as handle:
                handle.write('%s 14299136 - - Live 0xffffffffc0400000 (O)\n' % argv[1])
            if argv[1] in DEVICES:
                with open(os.path.join(self.root, 'dev', DEVICES[argv[1]]), 'w'):
                    pass
        return 0, '', ''


@pytest.fixture
def node(monkeypatch, tmp_path):
    for part in ('proc', 'sys'):
        shutil.copytree(os.path.join(GPUS, 'h100-x1', part), str(tmp_path / part))
    (tmp_path / 'dev').mkdir()
    (tmp_path / 'os-release').write_text('ID=debian\nVERSION_ID="12"\n')
    fake = FakeNode(str(tmp_path))
    monkeypatch.setattr(AnsibleModule, 'run_command', fake.run_command)
    # No timeout(1): the commands reach the double as the module gives them.
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda self, name, *args, **kwargs: None if name == 'timeout' else '/usr/bin/' + name)
    return fake


def args_of(tmp_path, **overrides):
    args = dict(sysfs_root=str(tmp_path / 'sys'), procfs_root=str(tmp_path / 'proc'), dev_root=str(tmp_path / 'dev'),
                os_release_path=str(tmp_path / 'os-release'), modules_load_dir=str(tmp_path / 'modules-load.d'),
                validations_dir=str(tmp_path / 'validations'), record_file=str(tmp_path / 'lib' / 'gpudirect.json'))
    args.update(overrides)
    return args


def tree(tmp_path):
    """Every directory and file under the node's writable places and the captured proc/modules, with its bytes."""
    found = {}
    for top in ('modules-load.d', 'validations', 'lib', 'dev', 'proc'):
        for base, dirs, names in os.walk(str(tmp_path / top)):
            found[base] = None
            for name in names:
                with open(os.path.join(base, name), 'rb') as handle:
                    found[os.path.join(base, name)] = handle.read()
    return found


def test_install_load_check_then_absent_restores_the_node(capsys, node, tmp_path):
    (tmp_path / 'modules-load.d').mkdir()
    (tmp_path / 'modules-load.d' / 'gpuops-gpudirect.conf').write_bytes(b'# left here by an admin\n')
    before, installed_before = tree(tmp_path), dict(node.installed)
    check = run_module(capsys, gpudirect.main, dict(args_of(tmp_path, gds=True, gdrcopy=True), _ansible_check_mode=True))
    assert check['changed'] is True and tree(tmp_path) == before and node.installed == {}
    assert check['actions'][:2] == ['apt-get install -y --no-install-recommends nvidia-fs gdrdrv-dkms', 'apt-mark hold nvidia-fs gdrdrv-dkms']
    assert [found['loaded'] for found in check['checks']] == [False, False] and check['ready'] is False

    result = run_module(capsys, gpudirect.main, args_of(tmp_path, gds=True, gdrcopy=True))
    assert result['ready'] is True and result['changed'] is True
    assert result['labels'] == {'nvidia.com/gds.capable': 'true', 'nvidia.com/gdrcopy.capable': 'true'}
    assert sorted(os.listdir(str(tmp_path / 'validations'))) == ['gdrcopy-ready', 'nvidia-fs-ready']
    assert node.held == {'nvidia-fs', 'gdrdrv-dkms'}
    again = run_module(capsys, gpudirect.main, args_of(tmp_path, gds=True, gdrcopy=True))
    assert again['changed'] is False and again['actions'] == []

    removed = run_module(capsys, gpudirect.main, args_of(tmp_path, state='absent'))
    assert removed['changed'] is True and removed['packages'] == ['gdrdrv-dkms', 'nvidia-fs']
    assert tree(tmp_path) == before and node.installed == installed_before and node.held == set()


def test_a_feature_that_is_not_ready_is_warned_about(capsys, node, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, msg: seen.append(msg))
    node.run_command = lambda args, **kwargs: (1, '', 'modprobe: FATAL: Module gdrdrv not found') if 'modprobe' in args[0] else (0, '', '')
    monkeypatch.setattr(AnsibleModule, 'run_command', lambda self, args, **kwargs: node.run_command(args))
    result = run_module(capsys, gpudirect.main, args_of(tmp_path, gdrcopy=True, packages=dict(gdrcopy=[])))
    assert result['ready'] is False and result['reboot_required'] is True
    expected = ['modprobe gdrdrv failed', 'gdrcopy.enabled is not ready: kernel module gdrdrv is not loaded']
    assert [warning.split(' (')[0] for warning in seen] == expected


def test_a_package_already_there_is_not_removed(capsys, node, tmp_path):
    node.installed['nvidia-fs'] = '2.24-1'  # the admin's
    run_module(capsys, gpudirect.main, args_of(tmp_path, gds=True, gdrcopy=True, hold=False))
    run_module(capsys, gpudirect.main, args_of(tmp_path, state='absent'))
    assert node.installed == {'nvidia-fs': '2.24-1'}
    assert ['apt-get', 'purge', '-y', 'gdrdrv-dkms'] in node.calls


def test_a_node_without_gpu_is_left_alone(capsys, node, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, msg: seen.append(msg))
    result = run_module(capsys, gpudirect.main, args_of(tmp_path, gds=True, gdrcopy=True,
                                                        sysfs_root=os.path.join(GPUS, 'cpu-only', 'sys')))
    assert (result['changed'], result['actions'], result['checks'], seen) == (False, [], [], [])
    assert node.installed == {} and not os.path.exists(str(tmp_path / 'modules-load.d'))


def test_use_host_mofed_without_rdma_core_fails(capsys, node, tmp_path):
    result = run_module(capsys, gpudirect.main, args_of(tmp_path, rdma=True, use_host_mofed=True), failed=True)
    assert 'ib_core' in result['msg'] and not os.path.exists(str(tmp_path / 'lib' / 'gpudirect.json'))
