# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Hostile inputs for the three runtime modules, run in-process on temporary files.

Each failing case must end in a clean module failure whose message names the
file and the problem, with every file as it was (byte for byte, nothing added:
no undo record, no temp file). A few hostile-looking inputs are valid and must
work: CRLF line ends, no final newline, an empty file, and a symlink at the
path, which is followed: the file it names is edited, the link stays, and
absent gives that file back byte for byte (read_bytes and write_atomic in
files.py; a dangling link or a loop fails). So must files the runtimes load as
they are (issue #28 item 11): the runtimes table as a dotted key holding an
inline table, a lone surrogate escape in daemon.json.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import fcntl
import json
import os
import tomllib

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.modules import containerd_nvidia_runtime, crio_nvidia_runtime, docker_nvidia_runtime
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.crio_config import state_path as crio_state_path
from tests.module_runner import run_module
from tests.unit.fault.fault_support import count, snapshot

CRI = 'plugins."io.containerd.grpc.v1.cri"'
HUGE = 20 * 1024 * 1024


class Module(object):
    def __init__(self, name, main, file_name, directory, state_of, good, args):
        self.name, self.main, self.file_name, self.directory = name, main, file_name, directory
        self.state_of, self.good, self.args = state_of, good, args

    def path(self, tmp_path):
        directory = tmp_path / self.directory if self.directory else tmp_path
        directory.mkdir(exist_ok=True)
        return directory / self.file_name


MODULES = {
    'containerd': Module('containerd_nvidia_runtime', containerd_nvidia_runtime.main, 'config.toml', None,
                         lambda path: path + runtime_config.STATE_SUFFIX,
                         ('version = 2\n[%s.containerd]\n  default_runtime_name = "runc"\n' % CRI).encode(), {'config_source': 'file'}),
    'docker': Module('docker_nvidia_runtime', docker_nvidia_runtime.main, 'daemon.json', None,
                     lambda path: path + runtime_config.STATE_SUFFIX, b'{\n    "default-runtime": "runc"\n}\n', {}),
    'crio': Module('crio_nvidia_runtime', crio_nvidia_runtime.main, '99-nvidia.conf', 'crio.conf.d', crio_state_path,
                   b'[crio.runtime]\nlog_level = "warn"\n', {}),
}

# Content that must be refused: (case, bytes, what the message says).
BAD_CONTENT = {
    'containerd': [
        ('invalid syntax', b'version = 2\n[plugins\n', 'invalid TOML at line 2, column 9'),
        ('wrong type: plugins', b'version = 2\nplugins = 1\n', 'key plugins must be a table'),
        ('wrong type: CRI table', b'version = 2\n[plugins]\n"io.containerd.grpc.v1.cri" = "x"\n', 'key %s must be a table' % CRI),
        ('wrong type: containerd', ('version = 2\n[%s]\ncontainerd = []\n' % CRI).encode(), 'key %s.containerd must be a table' % CRI),
        ('wrong type: runtimes', ('version = 2\n[%s.containerd]\nruntimes = "x"\n' % CRI).encode(), 'key %s.containerd.runtimes must be a table' % CRI),
        ('wrong type: our runtime', ('version = 2\n[%s.containerd.runtimes]\nnvidia = 1\n' % CRI).encode(),
         'key %s.containerd.runtimes.nvidia must be a table' % CRI),
        ('wrong type: options', ('version = 2\n[%s.containerd.runtimes.nvidia]\noptions = 1\n' % CRI).encode(),
         'key %s.containerd.runtimes.nvidia.options must be a table' % CRI),
        ('wrong type: inherited runtime', ('version = 2\n[%s.containerd.runtimes]\nrunc = "x"\n' % CRI).encode(),
         'key %s.containerd.runtimes.runc must be a table' % CRI),
        ('wrong type: default_runtime_name', ('version = 2\n[%s.containerd]\ndefault_runtime_name = 1\n' % CRI).encode(),
         'default_runtime_name must be a string'),
        ('wrong type: enable_cdi', ('version = 2\n[%s]\nenable_cdi = "yes"\n' % CRI).encode(), 'enable_cdi must be true or false'),
        ('wrong type: version', b'version = "2"\n', 'key "version" must be a positive integer'),
        ('duplicate key', b'version = 2\nversion = 2\n', 'Key "version" already exists'),
        ('duplicate table', b'version = 2\n[metrics]\na = 1\n[metrics]\nb = 2\n', 'invalid TOML'),
        ('table redefined by a sub-table', b'version = 2\n[a]\nb = 1\n[a.b]\nc = 1\n', 'invalid TOML: Key "b" already exists'),
        ('control character', b'version = 2\nroot = "a\x01b"\n', 'invalid TOML at line 2'),
        ('nested too deeply', b'version = 2\na = ' + b'[' * 5000 + b']' * 5000 + b'\n', 'invalid TOML'),
    ],
    'docker': [
        ('invalid syntax', b'{"debug": true,}\n', 'invalid JSON at line 1, column 16'),
        ('wrong type: top level', b'[]\n', 'the top level must be a JSON object, found an array'),
        ('wrong type: runtimes', b'{"runtimes": []}\n', 'key runtimes must be a JSON object, found an array'),
        ('wrong type: our runtime', b'{"runtimes": {"nvidia": "x"}}\n', 'key runtimes.nvidia must be a JSON object, found a string'),
        ('wrong type: default-runtime', b'{"default-runtime": 1}\n', 'key default-runtime must be a string, found a number'),
        ('wrong type: features', b'{"features": true}\n', 'key features must be a JSON object, found a boolean'),
        ('wrong type: features.cdi', b'{"features": {"cdi": "yes"}}\n', 'key features.cdi must be true or false'),
        ('duplicate key', b'{"debug": true, "debug": false}\n', 'duplicate key "debug"'),
        ('duplicate nested key', b'{"runtimes": {"a": {}, "a": {}}}\n', 'duplicate key "a"'),
        ('NaN', b'{"x": NaN}\n', 'NaN is not valid JSON'),
        ('nested too deeply', b'{"x": ' + b'[' * 100000 + b']' * 100000 + b'}\n', 'nested too deeply'),
        ('control character', b'{"x": "a\x01b"}\n', 'invalid JSON'),
        ('truncated', b'{"runtimes": {"nvidia": {"path": "/usr/bin', 'invalid JSON'),
    ],
    'crio': [
        ('invalid syntax', b'[crio.runtime\n', 'invalid TOML at line 1'),
        ('wrong type: crio', b'crio = "x"\n', 'key crio must be a table'),
        ('wrong type: crio.runtime', b'[crio]\nruntime = 1\n', 'key crio.runtime must be a table'),
        ('wrong type: runtimes', b'[crio.runtime]\nruntimes = []\n', 'key crio.runtime.runtimes must be a table'),
        ('wrong type: our runtime', b'[crio.runtime.runtimes]\nnvidia = "x"\n', 'key crio.runtime.runtimes.nvidia must be a table'),
        ('wrong type: default_runtime', b'[crio.runtime]\ndefault_runtime = 1\n', 'default_runtime must be a string'),
        ('duplicate key', b'[crio.runtime]\na = 1\na = 2\n', 'Key "a" already exists'),
        ('duplicate table', b'[crio.runtime]\n[crio.runtime]\n', 'invalid TOML'),
        ('table redefined by a sub-table', b'[crio]\nruntime = {}\n[crio.runtime.runtimes]\n', 'invalid TOML'),
        ('control character', b'[crio.runtime]\nlog_level = "a\x7fb"\n', 'invalid TOML at line 2'),
        ('nested too deeply', b'a = ' + b'{ b = ' * 5000 + b'1' + b' }' * 5000 + b'\n', 'invalid TOML'),
    ],
}
for module_name, cases in BAD_CONTENT.items():
    cases += [
        ('byte order mark', b'\xef\xbb\xbf' + MODULES[module_name].good, 'starts with a UTF-8 byte order mark'),
        ('not UTF-8', b'# caf\xe9\n', 'not UTF-8 at byte 5'),
        ('huge file', b'#' * HUGE, 'is larger than 1048576 bytes'),
    ]


def run(capsys, module, path, failed=False, **args):
    args = dict(module.args, path=str(path), **args)
    return run_module(capsys, module.main, args, failed=failed)


def assert_clean_failure(result, names, problem):
    assert result.get('failed') is True, result
    assert problem in result['msg']
    assert any(str(name) in result['msg'] for name in names), result['msg']
    assert 'exception' not in result  # a handled failure, not a traceback


@pytest.mark.parametrize('module_name, case, content, problem', [
    (module_name, case, content, problem) for module_name, cases in sorted(BAD_CONTENT.items()) for case, content, problem in cases
], ids=lambda value: value if isinstance(value, str) and len(value) < 40 else '')
def test_bad_content_fails_and_leaves_everything_as_it_was(capsys, tmp_path, module_name, case, content, problem):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(content)
    before = snapshot(tmp_path)
    result = run(capsys, module, path, failed=True)
    assert_clean_failure(result, [path], problem)
    assert snapshot(tmp_path) == before
    count('hostile inputs %s' % module.name, 'cases')


def _fifo(path, module):
    os.mkfifo(str(path))


def _dangling(path, module):
    path.symlink_to(path.parent / 'nowhere')


def _loop(path, module):
    path.symlink_to(path)


def _directory(path, module):
    path.mkdir()


def _state(data):
    def setup(path, module):
        path.write_bytes(module.good)
        with open(module.state_of(str(path)), 'wb') as handle:
            handle.write(data)
    return setup


def _state_directory(path, module):
    path.write_bytes(module.good)
    os.mkdir(module.state_of(str(path)))


# Things at the path or in the undo record: (case, setup(path, module), state, what the message says, file named).
BAD_FILES = [
    ('directory at the path', _directory, 'present', 'is a directory', 'path'),
    ('dangling symlink', _dangling, 'present', 'which does not exist', 'path'),
    ('symlink loop', _loop, 'present', 'Too many levels of symbolic links', 'path'),
    ('FIFO at the path', _fifo, 'present', 'is not a regular file', 'path'),
    ('undo record not JSON', _state(b'{"format": 1, '), 'absent', 'unreadable state file', 'state'),
    ('undo record not JSON (present)', _state(b'\x00\x01'), 'present', 'unreadable state file', 'state'),
    ('undo record of another format', _state(b'{"format": 2}'), 'absent', 'unknown state file format', 'state'),
    ('undo record with keys missing', _state(b'{"format": 1, "path": "x"}'), 'absent', 'corrupt state file (key enable_cdi_set is missing)', 'state'),
    ('undo record with a wrong type', _state(b'{"format": 1, "path": "x", "runtimes": ["nvidia"], "files": [], "previous_default": null, '
                                             b'"previous_enable_cdi": null, "enable_cdi_set": false}'),
     'present', 'corrupt state file (key files has the wrong type)', 'state'),
    ('undo record with a bad file entry', _state(b'{"format": 1, "path": "x", "runtimes": ["nvidia"], "files": {"x": {"existed": true}}, '
                                                 b'"previous_default": null, "previous_enable_cdi": null, "enable_cdi_set": false}'),
     'absent', 'corrupt state file (key files.x.original is missing)', 'state'),
    ('undo record is a directory', _state_directory, 'present', 'is a directory', 'state'),
]


@pytest.mark.parametrize('module_name', sorted(MODULES))
@pytest.mark.parametrize('case, setup, state, problem, named', BAD_FILES, ids=[case[0] for case in BAD_FILES])
def test_bad_file_fails_and_leaves_everything_as_it_was(capsys, tmp_path, module_name, case, setup, state, problem, named):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    setup(path, module)
    before = snapshot(tmp_path)
    result = run(capsys, module, path, state=state, failed=True)
    assert_clean_failure(result, [path] if named == 'path' else [module.state_of(str(path))], problem)
    assert snapshot(tmp_path) == before
    count('hostile inputs %s' % module.name, 'cases')


def _erofs(*_args, **_kwargs):
    raise OSError(errno.EROFS, os.strerror(errno.EROFS))


def _enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _no_write_access(monkeypatch):
    real_access = os.access
    # What a read-only mount looks like to os.access, even for root.
    monkeypatch.setattr(os, 'access', lambda p, mode: False if mode & os.W_OK else real_access(p, mode))


def _unreadable(monkeypatch, path):
    real_open = os.open

    def fake_open(name, flags, *args, **kwargs):
        if str(name) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(name))
        return real_open(name, flags, *args, **kwargs)
    monkeypatch.setattr(os, 'open', fake_open)


# Failures of the file system: (case, inject(monkeypatch, path), what the message says).
FS_FAULTS = [
    ('read-only file system (access)', lambda monkeypatch, path: _no_write_access(monkeypatch), 'read-only'),
    ('read-only file system (EROFS creating the temp file)', lambda monkeypatch, path: monkeypatch.setattr(files.tempfile, 'mkstemp', _erofs),
     'Read-only file system'),
    ('disk full (ENOSPC writing the temp file)', lambda monkeypatch, path: monkeypatch.setattr(os, 'fsync', _enospc), 'No space left on device'),
    ('rename refused (EROFS)', lambda monkeypatch, path: monkeypatch.setattr(os, 'rename', _erofs), 'Read-only file system'),
    ('unreadable file (EACCES)', _unreadable, 'Permission denied'),
]


@pytest.mark.parametrize('module_name', sorted(MODULES))
@pytest.mark.parametrize('case, inject, problem', FS_FAULTS, ids=[case[0] for case in FS_FAULTS])
def test_file_system_fault_fails_and_leaves_everything_as_it_was(capsys, tmp_path, monkeypatch, module_name, case, inject, problem):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(module.good)
    before = snapshot(tmp_path)
    inject(monkeypatch, path)
    result = run(capsys, module, path, failed=True)
    monkeypatch.undo()
    assert_clean_failure(result, [path, module.state_of(str(path))], problem)
    assert snapshot(tmp_path) == before
    count('hostile inputs %s' % module.name, 'cases')


def _vanish(path):
    path.unlink()


def _rewrite(path):
    path.write_bytes(path.read_bytes() + b'\n')


@pytest.mark.parametrize('module_name', sorted(MODULES))
@pytest.mark.parametrize('case, meddle', [('file vanishing mid-run', _vanish), ('file edited mid-run', _rewrite)])
def test_file_changed_by_someone_else_mid_run(capsys, tmp_path, monkeypatch, module_name, case, meddle):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(module.good)
    real_gather = runtime_config.gather
    meddled = []

    def gather_then_meddle(paths):
        current = real_gather(paths)
        meddle(path)
        meddled.append(snapshot(tmp_path))
        return current
    monkeypatch.setattr(runtime_config, 'gather', gather_then_meddle)
    result = run(capsys, module, path, failed=True)
    assert_clean_failure(result, [path], 'changed while this run was planning; nothing was written')
    assert snapshot(tmp_path) == meddled[0]
    count('hostile inputs %s' % module.name, 'cases')


@pytest.mark.parametrize('module_name', sorted(MODULES))
def test_lock_held_by_another_run(capsys, tmp_path, monkeypatch, module_name):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(module.good)
    before = snapshot(tmp_path)
    monkeypatch.setattr(files, 'LOCK_TIMEOUT', 0.3)
    holder = os.open(str(path.parent), os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        result = run(capsys, module, path, failed=True)
    finally:
        os.close(holder)
    assert_clean_failure(result, [path.parent], 'another run still holds it after 0.3 seconds')
    assert snapshot(tmp_path) == before
    count('hostile inputs %s' % module.name, 'cases')


def _crlf(module):
    return module.good.replace(b'\n', b'\r\n')


def _unterminated(module):
    return module.good.rstrip(b'\n')


@pytest.mark.parametrize('module_name', sorted(MODULES))
@pytest.mark.parametrize('case, content', [('CRLF line ends', _crlf), ('no final newline', _unterminated), ('empty file', lambda module: b'')])
def test_valid_but_unusual_file_round_trips(capsys, tmp_path, module_name, case, content):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    original = content(module)
    path.write_bytes(original)
    before = snapshot(tmp_path)
    assert run(capsys, module, path, set_as_default=True)['changed'] is True
    assert b'nvidia' in path.read_bytes()
    assert run(capsys, module, path, set_as_default=True)['changed'] is False
    assert run(capsys, module, path, state='absent')['changed'] is True
    assert snapshot(tmp_path) == before
    count('hostile inputs %s' % module.name, 'cases')


@pytest.mark.parametrize('module_name', sorted(MODULES))
def test_symlink_at_the_path_is_followed(capsys, tmp_path, module_name):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    real = tmp_path / 'elsewhere' / module.file_name
    real.parent.mkdir()
    real.write_bytes(module.good)
    path.symlink_to(real)
    before = snapshot(tmp_path)
    assert run(capsys, module, path, set_as_default=True)['changed'] is True
    assert path.is_symlink() and b'nvidia' in real.read_bytes()
    assert run(capsys, module, path, state='absent')['changed'] is True
    assert snapshot(tmp_path) == before
    count('hostile inputs %s' % module.name, 'cases')


# Files the runtime loads as they are, which must be edited faithfully (issue #28 item 11): (case, bytes).
# containerd 1.6, 1.7 and 2.1 load the first two, 2.1 the third (version 3), and each the module's
# output with the nvidia runtime as the default (containerd config dump in the lab images; the captures kept are
# described in tests/unit/fixtures/containerd/SOURCE.md).
INLINE = '{ runc = { runtime_type = "io.containerd.runc.v2", options = { SystemdCgroup = true } } }'
LOADED_AS_IS = {
    'containerd': [
        ('runtimes as a dotted key holding an inline table', ('version = 2\n[%s]\n  containerd.runtimes = %s\n' % (CRI, INLINE)).encode()),
        ('the same with the default runtime as a dotted key', ('version = 2\n[%s]\n  containerd.default_runtime_name = "runc"\n'
                                                               '  containerd.runtimes = %s\n' % (CRI, INLINE)).encode()),
        ('the same from the top level, version 3', ('version = 3\nplugins."io.containerd.cri.v1.runtime".containerd.runtimes = %s\n'
                                                    % INLINE).encode()),
    ],
    'crio': [('runtimes as a dotted key holding an inline table', b'[crio]\nruntime.runtimes = { crun = { runtime_path = "/usr/bin/crun" } }\n')],
    'docker': [('a lone surrogate escape', b'{\n    "log-opts": {"tag": "\\udc80"},\n    "runtimes": {}\n}\n')],
}


def _runtimes(module_name, data):
    if module_name == 'docker':
        return json.loads(data)['runtimes']
    doc = tomllib.loads(data.decode('utf-8'))
    if module_name == 'crio':
        return doc['crio']['runtime']['runtimes']
    cri = doc['plugins'].get('io.containerd.grpc.v1.cri') or doc['plugins']['io.containerd.cri.v1.runtime']
    return cri['containerd']['runtimes']


@pytest.mark.parametrize('module_name, case, content', [
    (module_name, case, content) for module_name, cases in sorted(LOADED_AS_IS.items()) for case, content in cases
], ids=lambda value: value if isinstance(value, str) and len(value) < 60 else '')
def test_file_the_runtime_loads_is_edited_faithfully(capsys, tmp_path, module_name, case, content):
    module = MODULES[module_name]
    path = module.path(tmp_path)
    path.write_bytes(content)
    before = snapshot(tmp_path)
    assert run(capsys, module, path, set_as_default=True)['changed'] is True
    written = path.read_bytes()
    runtimes = _runtimes(module_name, written)
    nvidia = runtimes['nvidia']
    binary = dict(docker=nvidia.get('path'), crio=nvidia.get('runtime_path'), containerd=nvidia.get('options', {}).get('BinaryName'))
    assert binary[module_name].endswith('/nvidia-container-runtime'), nvidia
    assert set(_runtimes(module_name, content)) < set(runtimes), 'the runtimes found are kept'
    if module_name == 'docker':
        assert b'"tag": "\\udc80"' in written and json.loads(written)['log-opts'] == json.loads(content)['log-opts']
    assert run(capsys, module, path, set_as_default=True)['changed'] is False
    assert run(capsys, module, path, state='absent')['changed'] is True
    assert snapshot(tmp_path) == before
    count('hostile inputs %s' % module.name, 'cases')
