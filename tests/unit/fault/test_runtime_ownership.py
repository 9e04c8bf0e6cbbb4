# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the runtime modules own, and what they leave: the second probe's cases (issue 28), in-process on temporary files.

- Ownership is recorded, never inferred: without an undo record (none, deleted, or one naming another file) absent
  changes nothing and says so (RV notes, a warning); a runtime that was there before present first changed the file
  stays, also when absent has to undo key by key.
- absent follows the record: the drop-in it names (not the drop_in option) is removed, with the directory created for
  it; `actions` lists only what is done.
- A drop-in gets no more of config.toml than it needs, and never a wider mode than the file its CRI table came from.
- Leftovers: temp files of a killed run are removed by the next run, whatever it has to do; a backup that cannot be
  written completely leaves nothing behind.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import json
import os
import stat

import pytest

from ansible.module_utils import basic
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from tests.unit.fault.fault_support import count, snapshot
from tests.unit.fault.test_hostile_inputs import CRI, MODULES, run

NVIDIA = '/usr/bin/nvidia-container-runtime'
# What `nvidia-ctk runtime configure --set-as-default` (or a node image) leaves: the runtime and the default are there,
# and this collection never wrote them.
CONFIGURED_BEFORE = {
    'containerd': ('version = 2\n[%s.containerd]\n  default_runtime_name = "nvidia"\n[%s.containerd.runtimes.nvidia]\n'
                   '  runtime_type = "io.containerd.runc.v2"\n[%s.containerd.runtimes.nvidia.options]\n'
                   '  BinaryName = "%s"\n' % (CRI, CRI, CRI, NVIDIA)).encode(),
    'docker': ('{\n    "default-runtime": "nvidia",\n    "runtimes": {\n        "nvidia": {\n            "path": "%s",\n'
               '            "args": []\n        }\n    }\n}\n' % NVIDIA).encode(),
    'crio': ('[crio.runtime]\ndefault_runtime = "nvidia"\n[crio.runtime.runtimes.nvidia]\nruntime_path = "%s"\n'
             'runtime_type = "oci"\n' % NVIDIA).encode(),
}
# The runtime is there, but not the default: present changes the file (and records it), the runtime was not its.
RUNTIME_BEFORE = {
    'containerd': ('version = 2\n[%s.containerd]\n  default_runtime_name = "crun"\n[%s.containerd.runtimes.nvidia]\n'
                   '  runtime_type = "io.containerd.runc.v2"\n[%s.containerd.runtimes.nvidia.options]\n'
                   '  BinaryName = "%s"\n' % (CRI, CRI, CRI, NVIDIA)).encode(),
    'docker': ('{\n    "default-runtime": "crun",\n    "runtimes": {\n        "nvidia": {\n            "path": "%s",\n'
               '            "args": []\n        }\n    }\n}\n' % NVIDIA).encode(),
    'crio': ('[crio.runtime]\ndefault_runtime = "crun"\n[crio.runtime.runtimes.nvidia]\nruntime_path = "%s"\n'
             'runtime_type = "oci"\n' % NVIDIA).encode(),
}
# A user's edit after present: the file is no longer as written, so absent undoes key by key.
EDIT = {'containerd': b'# edited\n', 'docker': None, 'crio': b'# edited\n'}
REGISTRY = ('version = 2\n[%s.registry.configs."registry.example.internal".auth]\n  username = "puller"\n'
            '  password = "s3cret-pa55"\n' % CRI).encode()


def record_of(module, path):
    return module.state_of(str(path))


def _edit(module_name, path):
    if EDIT[module_name] is None:
        doc = json.loads(path.read_text())
        doc['log-level'] = 'warn'
        path.write_text(json.dumps(doc, indent=4) + '\n')
    else:
        path.write_bytes(EDIT[module_name] + path.read_bytes())


@pytest.mark.parametrize('module_name', sorted(MODULES))
def test_absent_leaves_a_runtime_configured_before(capsys, tmp_path, monkeypatch, module_name):
    """Issue 28 item 1: configured by someone else, present keeps no record and absent removes nothing."""
    # Caught where the module hands it over: with ansible's controller code imported in this process (another test
    # file's), module warnings no longer reach the result's `warnings`.
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda _self, warning: warned.append(warning))
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(CONFIGURED_BEFORE[module_name])
    before = snapshot(tmp_path)
    done = run(capsys, module, path, set_as_default=True)
    assert done['changed'] is False and snapshot(tmp_path) == before
    assert 'not registered by this module' in ' '.join(done['notes'])
    gone = run(capsys, module, path, state='absent')
    assert gone['changed'] is False and gone['actions'] == [] and gone['runtimes'] == []
    assert snapshot(tmp_path) == before
    assert len(gone['notes']) == 1 and 'no undo record' in gone['notes'][0]
    assert warned == gone['notes']  # shown by ansible-playbook (test_runtime_modules_playbook)
    count('runtime ownership', 'cases')


@pytest.mark.parametrize('module_name', sorted(MODULES))
def test_absent_without_its_record_changes_nothing(capsys, tmp_path, module_name):
    """Issue 28 item 13: the record deleted, absent does not guess (the default before was crun, not none)."""
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(RUNTIME_BEFORE[module_name].replace(b'nvidia', b'gpu-other'))
    assert run(capsys, module, path, set_as_default=True)['changed'] is True
    os.unlink(record_of(module, path))
    before = snapshot(tmp_path)
    gone = run(capsys, module, path, state='absent')
    assert gone['changed'] is False and snapshot(tmp_path) == before
    assert 'no undo record' in ' '.join(gone['notes'])
    count('runtime ownership', 'cases')


@pytest.mark.parametrize('module_name', sorted(MODULES))
def test_absent_keeps_a_runtime_that_was_there_before_present_changed_the_file(capsys, tmp_path, module_name):
    """Issue 28 item 1: the record says which runtimes present found; absent undoing key by key keeps them."""
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(RUNTIME_BEFORE[module_name])
    done = run(capsys, module, path, set_as_default=True, variants=['cdi'])
    assert done['changed'] is True
    _edit(module_name, path)
    gone = run(capsys, module, path, state='absent')
    assert gone['changed'] is True and gone['runtimes'] == ['nvidia-cdi'] and not os.path.exists(record_of(module, path))
    text = path.read_text()
    assert NVIDIA + '"' in text and 'nvidia-cdi' not in text and 'crun' in text
    count('runtime ownership', 'cases')


def _drop_in_node(tmp_path, config=b'version = 2\n'):
    module = MODULES['containerd']
    path = module.path(tmp_path)
    path.write_bytes(config)
    return module, path, tmp_path / 'conf.d' / '99-nvidia.toml'


def test_absent_follows_the_record_to_its_drop_in(capsys, tmp_path):
    """Issue 28 item 5: absent without drop_in removes the drop-in the record names, and the directory made for it."""
    module, path, drop_in = _drop_in_node(tmp_path)
    before = snapshot(tmp_path)
    assert run(capsys, module, path, drop_in=str(drop_in), set_as_default=True)['changed'] is True
    gone = run(capsys, module, path, state='absent')
    assert gone['actions'] == ['remove %s' % drop_in, 'write %s' % path, 'remove %s' % record_of(module, path),
                               'remove directory %s' % drop_in.parent]
    assert snapshot(tmp_path) == before
    count('runtime ownership', 'cases')


def test_actions_name_only_what_absent_does(capsys, tmp_path):
    """Issue 28 item 5: a directory that keeps someone's file is not reported as removed."""
    module, path, drop_in = _drop_in_node(tmp_path)
    assert run(capsys, module, path, drop_in=str(drop_in))['changed'] is True
    (drop_in.parent / '50-other.toml').write_text('version = 2\n')
    gone = run(capsys, module, path, drop_in=str(drop_in), state='absent')
    assert 'remove directory %s' % drop_in.parent not in gone['actions'] and not drop_in.exists()
    assert (drop_in.parent / '50-other.toml').exists()
    count('runtime ownership', 'cases')


def test_another_drop_in_than_the_recorded_one_is_refused(capsys, tmp_path):
    """Issue 28 item 5: moving the runtimes to drop-in B while the record holds drop-in A would leave A behind."""
    module, path, drop_in = _drop_in_node(tmp_path)
    run(capsys, module, path, drop_in=str(drop_in))
    before = snapshot(tmp_path)
    other = tmp_path / 'other.d' / '99-nvidia.toml'
    moved = run(capsys, module, path, drop_in=str(other), failed=True)
    assert 'names the drop-in %s' % drop_in in moved['msg'] and 'state=absent' in moved['msg']
    assert snapshot(tmp_path) == before
    count('runtime ownership', 'cases')


def test_a_symlink_to_the_config_is_not_a_drop_in(capsys, tmp_path):
    """Issue 28 item 7: the drop_in == path guard compares the files, not the names."""
    module, path, _drop_in = _drop_in_node(tmp_path)
    link = tmp_path / 'link.toml'
    link.symlink_to(path)
    before = snapshot(tmp_path)
    refused = run(capsys, module, path, drop_in=str(link), failed=True)
    assert 'is the config itself' in refused['msg']
    assert snapshot(tmp_path) == before
    count('runtime ownership', 'cases')


def test_a_drop_in_gets_the_mode_of_the_config_it_copies(capsys, tmp_path):
    """Issue 28 item 2: the CRI table of a 0600 config.toml (a registry password) is not copied into a 0644 file."""
    module, path, drop_in = _drop_in_node(tmp_path, REGISTRY)
    path.chmod(0o600)
    run(capsys, module, path, drop_in=str(drop_in), set_as_default=True)
    assert stat.S_IMODE(drop_in.stat().st_mode) == 0o600
    count('runtime ownership', 'cases')


def _leave_temp_files(module, path):
    """What a run killed while writing leaves: temp files beside the record (see runtime_config.execute)."""
    directory = os.path.dirname(record_of(module, path))
    left = [os.path.join(directory, '.%s.abcd1234.tmp' % os.path.basename(name)) for name in (str(path), record_of(module, path))]
    for name in left:
        with open(name, 'wb') as handle:
            handle.write(b'half')
    return left


@pytest.mark.parametrize('module_name', sorted(MODULES))
def test_temp_files_of_a_killed_run_are_removed_by_absent(capsys, tmp_path, module_name):
    """Issue 28 item 13: a run killed before it wrote anything leaves temp files; absent (with nothing else to do) removes them."""
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(module.good)
    before = snapshot(tmp_path)
    left = _leave_temp_files(module, path)
    gone = run(capsys, module, path, state='absent')
    assert gone['changed'] is True and gone['actions'] == ['remove %s' % name for name in left]
    assert snapshot(tmp_path) == before
    count('runtime ownership', 'cases')


@pytest.mark.parametrize('module_name', ['containerd', 'docker'])
def test_a_backup_on_a_full_disk_leaves_nothing(capsys, tmp_path, monkeypatch, module_name):
    """Issue 28 item 13: backup: true on a disk that fills up once the undo record is written fails cleanly: no (empty)
    backup file, no record; the config as it was."""
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(module.good)
    before = snapshot(tmp_path)
    real_fsync = os.fsync

    def full(*_args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fsync(fd):
        # The data of any file but the record's temp file does not fit (directories sync fine).
        if stat.S_ISREG(os.fstat(fd).st_mode) and runtime_config.STATE_SUFFIX not in os.readlink('/proc/self/fd/%d' % fd):
            full()
        return real_fsync(fd)
    monkeypatch.setattr(os, 'fsync', fsync)
    monkeypatch.setattr(os, 'sendfile', full)  # how shutil copies a file on Linux
    failed = run(capsys, module, path, backup=True, failed=True)
    monkeypatch.undo()
    assert 'No space left on device' in failed['msg']
    assert snapshot(tmp_path) == before
    count('runtime ownership', 'cases')
