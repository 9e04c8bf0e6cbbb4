# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The containerd_nvidia_runtime module end to end on temporary files."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.modules import containerd_nvidia_runtime
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_config import STATE_SUFFIX
from tests.module_runner import run_module

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'containerd', 'default-1.7.24.toml')


def run(capsys, failed=False, **args):
    args.setdefault('config_source', 'file')
    return run_module(capsys, containerd_nvidia_runtime.main, args, failed=failed)


@pytest.fixture
def config(tmp_path):
    path = tmp_path / 'config.toml'
    with open(FIXTURE, 'rb') as handle:
        path.write_bytes(handle.read())
    path.chmod(0o640)
    return path


def snapshot(directory):
    return {entry.name: os.readlink(entry) if entry.is_symlink() else entry.read_bytes() for entry in directory.iterdir()}


def test_present_absent_roundtrip_keeps_mode(capsys, config):
    original = config.read_bytes()
    result = run(capsys, path=str(config), set_as_default=True, variants=['cdi'])
    assert result['changed'] is True
    assert result['runtimes'] == ['nvidia', 'nvidia-cdi']
    assert result['default_runtime'] == 'nvidia' and result['previous_default_runtime'] == 'runc'
    assert result['config_version'] == 2 and result['cri_table'] == 'plugins."io.containerd.grpc.v1.cri"'
    assert result['drop_in'] is None and result['backup_file'] is None
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    state = config.parent / (config.name + STATE_SUFFIX)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert b'BinaryName = "/usr/bin/nvidia-container-runtime"' in config.read_bytes()

    again = run(capsys, path=str(config), set_as_default=True, variants=['cdi'])
    assert again['changed'] is False and again['actions'] == []

    removed = run(capsys, path=str(config), state='absent')
    assert removed['changed'] is True and removed['default_runtime'] == 'runc'
    assert config.read_bytes() == original
    assert not state.exists()
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert run(capsys, path=str(config), state='absent')['changed'] is False


def test_check_mode_writes_nothing_and_reports_actions(capsys, config):
    before = snapshot(config.parent)
    result = run(capsys, path=str(config), _ansible_check_mode=True, _ansible_diff=True)
    assert result['changed'] is True
    assert result['actions'] == ['write %s' % config, 'write %s%s' % (config, STATE_SUFFIX)]
    assert snapshot(config.parent) == before
    assert '+        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]' not in result['diff'][0]['before']
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]' in result['diff'][0]['after']


def test_diff_shows_before_and_after(capsys, config):
    original = config.read_text()
    result = run(capsys, path=str(config), _ansible_diff=True)
    assert len(result['diff']) == 1  # the state file is bookkeeping, not shown
    assert result['diff'][0]['before'] == original
    assert result['diff'][0]['after'] == config.read_text()


def test_backup(capsys, config):
    original = config.read_bytes()
    result = run(capsys, path=str(config), backup=True)
    assert result['backup_file'] and os.path.dirname(result['backup_file']) == str(config.parent)
    with open(result['backup_file'], 'rb') as handle:
        assert handle.read() == original


def test_missing_file_is_created_and_removed_again(capsys, tmp_path):
    path = tmp_path / 'config.toml'
    result = run(capsys, path=str(path))
    assert result['changed'] is True and result['config_version'] == 2
    assert path.read_text().startswith('version = 2\n')
    run(capsys, path=str(path), state='absent')
    assert snapshot(tmp_path) == {}


def test_drop_in_roundtrip(capsys, config):
    original = config.read_bytes()
    drop_in = config.parent / 'conf.d' / '99-nvidia.toml'
    drop_in.parent.mkdir()
    result = run(capsys, path=str(config), drop_in=str(drop_in), set_as_default=True)
    assert result['drop_in'] == str(drop_in) and result['default_runtime'] == 'nvidia'
    assert ('"%s"' % drop_in) in config.read_text()
    assert run(capsys, path=str(config), drop_in=str(drop_in), set_as_default=True)['changed'] is False
    run(capsys, path=str(config), drop_in=str(drop_in), state='absent')
    assert config.read_bytes() == original and not drop_in.exists()


@pytest.mark.parametrize('setup, message', [
    (lambda p: p.mkdir(), 'is a directory'),
    (lambda p: p.symlink_to(p.parent / 'nowhere.toml'), 'does not exist'),
    (lambda p: p.write_text('version = 2\n[plugins\n'), 'line 2, column 9'),
    (lambda p: p.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\ncontainerd = 1\n'),
     'key plugins."io.containerd.grpc.v1.cri".containerd must be a table'),
])
def test_bad_input_fails_and_leaves_file_untouched(capsys, tmp_path, setup, message):
    path = tmp_path / 'config.toml'
    setup(path)
    before = snapshot(tmp_path) if not path.is_dir() else None
    result = run(capsys, path=str(path), failed=True)
    assert result['failed'] is True and message in result['msg']
    if before is not None:
        assert snapshot(tmp_path) == before


def test_unwritable_directory_fails_cleanly(capsys, tmp_path, monkeypatch):
    path = tmp_path / 'config.toml'
    path.write_text('version = 2\n')
    real_access = os.access
    # Simulates a read-only mount: os.access is what reports EROFS for root too.
    monkeypatch.setattr(os, 'access', lambda p, mode: False if mode & os.W_OK else real_access(p, mode))
    result = run(capsys, path=str(path), failed=True)
    assert result['failed'] is True and 'read-only' in result['msg']
    assert path.read_text() == 'version = 2\n'


def test_symlinked_config_stays_a_symlink(capsys, config):
    link = config.parent / 'link.toml'
    link.symlink_to(config)
    run(capsys, path=str(link))
    assert link.is_symlink() and b'nvidia' in config.read_bytes()


def test_command_source_uses_containerd_config_default(capsys, tmp_path, monkeypatch):
    calls = []

    def fake_run_command(self, args, environ_update=None, **_kwargs):
        calls.append((args, environ_update))
        with open(FIXTURE) as handle:
            return 0, handle.read(), ''
    monkeypatch.setattr('ansible.module_utils.basic.AnsibleModule.get_bin_path', lambda self, name, *a, **k: '/usr/bin/' + name)
    monkeypatch.setattr('ansible.module_utils.basic.AnsibleModule.run_command', fake_run_command)
    path = tmp_path / 'config.toml'
    result = run(capsys, path=str(path), config_source='command')
    # run under coreutils' timeout: a hung containerd cannot block the run
    assert calls == [(['/usr/bin/timeout', '--kill-after=5', '120', '/usr/bin/containerd', 'config', 'default'], {'LC_ALL': 'C', 'LANG': 'C'})]
    assert result['changed'] is True and 'SystemdCgroup' in path.read_text()


def _containerd_printing(tmp_path, monkeypatch, version, dump):
    """A containerd on PATH that prints `version` for --version and the captured `dump` for anything else."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    script = bin_dir / 'containerd'
    script.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "%s"; else cat %s; fi\n' % (
        version, os.path.join(os.path.dirname(FIXTURE), dump)))
    script.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))


@pytest.mark.parametrize('version, dump, args, problem', [
    # containerd 1.6.20's reading of its default config: no nvidia runtime.
    ('containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3', 'dump-default-1.6.20.toml', {},
     'no runtime nvidia'),
    # Issue 28 item 9: a containerd that does not say its version reads the runtimes but drops enable_cdi (1.6.20's dump).
    ('containerd (version unknown)', 'dump-enable-cdi-1.6.20.toml', dict(enable_cdi=True, variants=['cdi'], set_as_default=True),
     'enable_cdi is not true (containerd before 1.7 ignores it)'),
])
def test_verify_that_fails_gives_back_what_the_run_wrote(capsys, tmp_path, monkeypatch, version, dump, args, problem):
    """Issue 28 item 10: a run that containerd's reading refutes is not left half done (nor called verified)."""
    node = tmp_path / 'node'
    node.mkdir()
    config = node / 'config.toml'
    with open(FIXTURE, 'rb') as handle:
        config.write_bytes(handle.read())
    before = snapshot(node)
    _containerd_printing(tmp_path, monkeypatch, version, dump)
    result = run(capsys, failed=True, path=str(config), verify=True, **args)
    assert result['msg'] == ('containerd --config %s config dump does not show the NVIDIA runtimes as written: %s; what this run '
                             'wrote was undone (%s%s, %s)' % (config, problem, config, STATE_SUFFIX, config))
    assert snapshot(node) == before


@pytest.mark.parametrize('module', ['containerd_nvidia_runtime', 'crio_nvidia_runtime'])
def test_without_tomlkit_check_mode_says_why_and_a_run_fails(capsys, monkeypatch, config, module):
    """A fresh node has no tomlkit until the container toolkit stage installs python3-tomlkit, which check mode does not:
    the preview is skipped with a message that says so (the drift report lists it as not checked), a run fails naming the
    library (issue #25). The config is not read, let alone written."""
    from ansible_collections.gpuops.gpu_operator.plugins.modules import crio_nvidia_runtime  # pylint: disable=import-outside-toplevel
    main = {'containerd_nvidia_runtime': containerd_nvidia_runtime, 'crio_nvidia_runtime': crio_nvidia_runtime}[module]
    monkeypatch.setattr(main, 'HAS_TOMLKIT', False)
    monkeypatch.setattr(main, 'TOMLKIT_IMPORT_ERROR', 'ModuleNotFoundError: No module named tomlkit')
    before = snapshot(config.parent)
    checked = run_module(capsys, main.main, dict(path=str(config), _ansible_check_mode=True))
    assert checked['skipped'] is True and checked['changed'] is False and checked['actions'] == []
    assert checked['msg'].startswith('check mode: the preview of %s needs tomlkit on the node' % config), checked['msg']
    assert checked['notes'] == [checked['msg']] and checked['runtimes'] is None and checked['path'] == str(config)
    failed = run_module(capsys, main.main, dict(path=str(config)), failed=True)
    assert 'tomlkit' in failed['msg'] and 'skipped' not in failed
    assert snapshot(config.parent) == before


@pytest.mark.parametrize('module', ['containerd_nvidia_runtime', 'crio_nvidia_runtime'])
def test_absent_without_tomlkit_reads_nothing_without_a_record_and_fails_naming_it_with_one(capsys, monkeypatch, config, module):
    """uninstall.yml installs no python3-tomlkit (the role installs it for state=present only): on a node without tomlkit
    and without an undo record (a node the role never configured, a vm-passthrough node) absent changes nothing, in check
    mode and in a run, and says the config was not read; with an undo record, which absent cannot follow without tomlkit,
    both fail naming the library and the record. Nothing is written."""
    from ansible_collections.gpuops.gpu_operator.plugins.modules import crio_nvidia_runtime  # pylint: disable=import-outside-toplevel
    main = {'containerd_nvidia_runtime': containerd_nvidia_runtime, 'crio_nvidia_runtime': crio_nvidia_runtime}[module]
    monkeypatch.setattr(main, 'HAS_TOMLKIT', False)
    monkeypatch.setattr(main, 'TOMLKIT_IMPORT_ERROR', 'ModuleNotFoundError: No module named tomlkit')
    record = main.runtime_config.state_path(str(config)) if module == 'containerd_nvidia_runtime' else main.state_path(str(config))
    before = snapshot(config.parent)
    for check_mode in (True, False):
        result = run_module(capsys, main.main, dict(path=str(config), state='absent', _ansible_check_mode=check_mode))
        assert (result['changed'], result['actions'], result['runtimes'], result.get('skipped')) == (False, [], [], None), result
        assert result['notes'] == ['%s: there is no undo record (%s), so state=absent has nothing of this module to undo there; '
                                   'tomlkit is not installed, so the file was not read (runtimes someone else configured in it stay)'
                                   % (config, record)]
    assert snapshot(config.parent) == before
    with open(record, 'w') as handle:
        handle.write('{}')
    before = snapshot(config.parent)
    for check_mode in (True, False):
        failed = run_module(capsys, main.main, dict(path=str(config), state='absent', _ansible_check_mode=check_mode), failed=True)
        assert 'tomlkit' in failed['msg'] and 'to undo what the undo record %s names in %s' % (record, config) in failed['msg'], failed['msg']
    assert snapshot(config.parent) == before
