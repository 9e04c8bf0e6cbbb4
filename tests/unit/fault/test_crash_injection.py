# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A run stopped at every step of writing its files.

Steps are the calls files.py makes to write a file: creating the temp file,
writing it (stopped half way), fsync, the rename, chmod, syncing the
directory, and removing a file. A run is killed before and after each call
(a forked child that os._exit()s, like SIGKILL or a power cut: no cleanup
runs), or a call fails with an I/O error (in-process: the module must fail
cleanly). Then:

- every file is its old or its new content, never a mix; nothing but the
  undo record and temp files appears (and no temp file in CRI-O's drop-in
  directory, which CRI-O loads whole);
- after an I/O error every file is as it was before the run (the module gives
  back what it wrote: no undo record of a change that did not happen) and no
  temp file is left at all; after a kill the next run removes the one left
  behind;
- running the module again converges on what an undisturbed run writes, and
  absent then gives back the original files byte for byte.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import os
import shutil
import tempfile

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from tests.module_runner import run_module
from tests.unit.fault.fault_support import count, snapshot
from tests.unit.fault.test_hostile_inputs import MODULES

KILLED = 137


class Steps(object):
    """Counts the steps of writing files; stops the run at step `stop_at` by `stop()`.

    With `after_calls` off, only the points before a call count: an I/O error
    makes a call fail, it does not undo one that succeeded.
    """

    def __init__(self, monkeypatch, stop_at, stop, after_calls=True):
        self.seen = []
        self.stop_at = stop_at
        self.stop = stop
        self.after_calls = after_calls
        for module, name in ((tempfile, 'mkstemp'), (os, 'fsync'), (os, 'rename'), (os, 'chmod'), (os, 'unlink')):
            monkeypatch.setattr(module, name, self._wrap(name, getattr(module, name)))
        real_fdopen = os.fdopen

        def fdopen(fd, mode='r', *args, **kwargs):
            handle = real_fdopen(fd, mode, *args, **kwargs)
            return _HalfWay(handle, self) if mode == 'wb' else handle
        monkeypatch.setattr(os, 'fdopen', fdopen)

    def step(self, name):
        self.seen.append(name)
        if len(self.seen) - 1 == self.stop_at:
            self.stop()

    def _wrap(self, name, real):
        def wrapped(*args, **kwargs):
            self.step('before ' + name)
            value = real(*args, **kwargs)
            if self.after_calls:
                self.step('after ' + name)
            return value
        return wrapped


class _HalfWay(object):
    """A temp file whose write can be stopped with half the data written (and flushed)."""

    def __init__(self, handle, steps):
        self.handle, self.steps = handle, steps

    def write(self, data):
        self.handle.write(data[:len(data) // 2])
        self.handle.flush()
        self.steps.step('half written')
        return self.handle.write(data[len(data) // 2:])

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.handle.__exit__(*exc)


def _kill():
    os._exit(KILLED)


def _io_error():
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def _run_killed(module, args, stop_at):
    """Run the module in a forked child killed at step `stop_at`; True when it was (the step exists)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            with pytest.MonkeyPatch.context() as monkeypatch:
                Steps(monkeypatch, stop_at, _kill)
                with patch_module_args(args):
                    with open(os.devnull, 'w') as devnull:
                        os.dup2(devnull.fileno(), 1)
                        module.main()
        except SystemExit as exc:
            code = exc.code or 0
        except BaseException:
            code = 1
        os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == KILLED


SCENARIOS = [
    # (case, module, arguments, set up the node before the run: None or a present run first)
    ('docker present', 'docker', dict(set_as_default=True, enable_cdi=True), False),
    ('docker absent', 'docker', dict(state='absent'), True),
    ('containerd present', 'containerd', dict(set_as_default=True, variants=['cdi']), False),
    ('containerd present with drop-in', 'containerd', dict(set_as_default=True, drop_in='DROP_IN'), False),
    ('containerd absent with drop-in', 'containerd', dict(state='absent', drop_in='DROP_IN'), True),
    ('crio present', 'crio', dict(set_as_default=True), False),
    ('crio absent', 'crio', dict(state='absent'), True),
]


class Node(object):
    """A scenario's files under `top`: the module's file with its original content, maybe configured already."""

    def __init__(self, capsys, top, scenario):
        self.capsys, self.top = capsys, top
        _case, module_name, args, configured = scenario
        self.module = MODULES[module_name]
        self.path = self.module.path(top)
        self.args = dict(self.module.args, path=str(self.path))
        self.args.update(args)
        if self.args.get('drop_in') == 'DROP_IN':
            (top / 'conf.d').mkdir()
            self.args['drop_in'] = str(top / 'conf.d' / '99-nvidia.toml')
        self.path.write_bytes(self.module.good)
        self.original = snapshot(top)
        if configured:
            self.run(state='present')
        self.before = snapshot(top)

    def run(self, **overrides):
        result = run_module(self.capsys, self.module.main, dict(self.args, **overrides))
        assert not result.get('failed'), result
        return result


def _temp_files(state):
    return sorted(path for path in state if os.path.basename(path).endswith(files.TEMP_SUFFIX))


def _check_old_or_new(node, after, undisturbed):
    """Each file is as before the run or as an undisturbed run leaves it; other entries are temp files."""
    for path in set(after) | set(node.before) | set(undisturbed):
        if path.endswith(files.TEMP_SUFFIX):
            continue
        assert after.get(path) in (node.before.get(path), undisturbed.get(path)), path
    crio_drop_in_dir = str(node.path.parent) if node.module.directory else None
    assert not [path for path in _temp_files(after) if crio_drop_in_dir and os.path.dirname(path) == crio_drop_in_dir]


def _recover_and_undo(node, undisturbed):
    node.run()
    assert snapshot(node.top) == undisturbed  # converged, no temp file left
    node.run(state='absent')
    assert snapshot(node.top) == node.original


def _undisturbed(capsys, top, scenario):
    """What the run leaves when nothing disturbs it (in `top`, where the disturbed runs happen too)."""
    top.mkdir()
    node = Node(capsys, top, scenario)
    node.run()
    after = snapshot(top)
    shutil.rmtree(str(top))
    return after


@pytest.mark.parametrize('scenario', SCENARIOS, ids=[scenario[0] for scenario in SCENARIOS])
def test_killed_at_every_step(capsys, tmp_path, scenario):
    top = tmp_path / 'node'
    undisturbed = _undisturbed(capsys, top, scenario)
    step = 0
    while True:
        top.mkdir()
        node = Node(capsys, top, scenario)
        if not _run_killed(node.module, node.args, step):
            break  # the run finished: every step has been tried
        _check_old_or_new(node, snapshot(top), undisturbed)
        _recover_and_undo(node, undisturbed)
        shutil.rmtree(str(top))
        count('crash injection', 'kills')
        step += 1
    assert step >= 8  # the steps were found (mkstemp, write, fsync, rename for each file at least)


@pytest.mark.parametrize('scenario', SCENARIOS, ids=[scenario[0] for scenario in SCENARIOS])
def test_io_error_at_every_step(capsys, tmp_path, monkeypatch, scenario):
    top = tmp_path / 'node'
    undisturbed = _undisturbed(capsys, top, scenario)
    step = 0
    while True:
        top.mkdir()
        node = Node(capsys, top, scenario)
        with monkeypatch.context() as patched:
            steps = Steps(patched, step, _io_error, after_calls=False)
            # Whether this step fails is known only after the run: how many steps it took (asserted below).
            result = run_module(capsys, node.module.main, node.args, failed=None)
        if step >= len(steps.seen):
            assert not result.get('failed'), result
            break
        assert result.get('failed') is True and 'exception' not in result, result
        after = snapshot(top)
        # A run that fails (unlike one that is killed) gives back what it wrote: no undo record of a change that
        # did not happen, no half-configured node.
        assert after == node.before, result['msg']
        assert _temp_files(after) == []
        _recover_and_undo(node, undisturbed)
        shutil.rmtree(str(top))
        count('crash injection', 'I/O errors')
        step += 1
    assert step >= 6  # mkstemp, write, fsync for each file at least
