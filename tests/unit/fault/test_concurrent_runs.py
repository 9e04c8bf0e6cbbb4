# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Two runs of one module on one node at once: the directory lock makes them take turns.

Two forked processes run the module on the same files; the first to get the
lock holds it until the other is trying to get it too, so the two really run
at once. The node must end as after one of the two runs one after the
other (no lost update), with an undo record that absent turns back into the
original files byte for byte. Without the lock, the check execute() makes
before writing refuses the run that read stale files; without both, the same
race loses an update (the control that shows the race is real).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import io
import json
import multiprocessing
import shutil
import sys
import time

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from tests.module_runner import run_module
from tests.unit.fault.fault_support import count, snapshot
from tests.unit.fault.test_hostile_inputs import MODULES

FORK = multiprocessing.get_context('fork')
TIMEOUT = 60

RACES = [
    # (case, module, arguments of run A, of run B, arguments of a present run before the race, or None)
    ('docker present vs present', 'docker', dict(set_as_default=True), dict(variants=['cdi']), None),
    ('docker present vs absent', 'docker', dict(set_as_default=True), dict(state='absent'), dict(variants=['legacy'])),
    ('containerd present vs present', 'containerd', dict(set_as_default=True), dict(variants=['cdi'], enable_cdi=True), None),
    ('containerd present vs absent, drop-in', 'containerd', dict(set_as_default=True, drop_in='DROP_IN'),
     dict(state='absent', drop_in='DROP_IN'), dict(variants=['legacy'], drop_in='DROP_IN')),
    ('crio present vs present', 'crio', dict(set_as_default=True), dict(variants=['cdi']), None),
]


class Node(object):
    def __init__(self, top, module_name, before):
        self.top = top
        self.module = MODULES[module_name]
        self.before = before
        top.mkdir()
        self.path = self.module.path(top)
        self.path.write_bytes(self.module.good)
        (top / 'conf.d').mkdir()
        self.original = snapshot(top)

    def args(self, args):
        full = dict(self.module.args, path=str(self.path), **args)
        if full.get('drop_in') == 'DROP_IN':
            full['drop_in'] = str(self.top / 'conf.d' / '99-nvidia.toml')
        return full

    def run(self, capsys, args):
        result = run_module(capsys, self.module.main, self.args(args))
        assert not result.get('failed'), result
        return result

    def prepare(self, capsys):
        if self.before is not None:
            self.run(capsys, self.before)


def _one_after_the_other(capsys, top, module_name, first, second, before):
    node = Node(top, module_name, before)
    node.prepare(capsys)
    node.run(capsys, first)
    node.run(capsys, second)
    after = snapshot(top)
    shutil.rmtree(str(top))
    return after


def _child(node, args, go, hooks, report):
    """Body of a racing process: run the module once go is set; send its result and timings through `report`.

    `hooks` run before and after gather() (which takes the lock and reads the files).
    """
    before_gather, after_gather = hooks
    times = {}
    real_gather = runtime_config.gather

    def gather(paths):
        times['entered'] = time.monotonic()
        before_gather()
        current = real_gather(paths)
        times['read'] = time.monotonic()
        after_gather()
        return current
    runtime_config.gather = gather
    go.wait(TIMEOUT)
    sys.stdout = io.StringIO()
    try:
        with patch_module_args(node.args(args)):
            node.module.main()
    except SystemExit:
        pass
    times['done'] = time.monotonic()
    report.send(dict(result=json.loads(sys.stdout.getvalue()), times=times))


def _nothing():
    pass


def _race(node, first, second, hooks):
    """Run `first` and `second` in two processes at once; their results and timings.

    `hooks` has (before, after) gather() for each.
    """
    go = FORK.Event()
    pipes = [FORK.Pipe(duplex=False) for _run in (first, second)]
    processes = [FORK.Process(target=_child, args=(node, args, go, hook, pipe[1]))
                 for args, hook, pipe in zip((first, second), hooks, pipes)]
    for process in processes:
        process.start()
    go.set()
    reports = [pipe[0].recv() if pipe[0].poll(TIMEOUT) else None for pipe in pipes]
    for process in processes:
        process.join(TIMEOUT)
    assert None not in reports, 'a racing run did not finish'
    return reports


@pytest.mark.parametrize('case, module_name, first, second, before', RACES, ids=[race[0] for race in RACES])
def test_concurrent_runs_take_turns(capsys, tmp_path, case, module_name, first, second, before):
    top = tmp_path / 'node'
    serial = [_one_after_the_other(capsys, top, module_name, first, second, before),
              _one_after_the_other(capsys, top, module_name, first=second, second=first, before=before)]
    node = Node(top, module_name, before)
    node.prepare(capsys)

    # Whichever run gets the lock first holds it until the other is trying to get it too.
    trying = [FORK.Event(), FORK.Event()]
    reports = _race(node, first, second, [(trying[0].set, lambda: trying[1].wait(TIMEOUT)),
                                          (trying[1].set, lambda: trying[0].wait(TIMEOUT))])

    assert [report['result'].get('failed') for report in reports] == [None, None], reports
    # Both were running at once: each entered gather() before the other finished ...
    assert max(report['times']['entered'] for report in reports) < min(report['times']['done'] for report in reports)
    # ... and one read its files only after the other was done.
    assert max(report['times']['read'] for report in reports) >= min(report['times']['done'] for report in reports)
    assert snapshot(top) in serial
    node.run(capsys, dict(first, state='absent'))
    assert snapshot(top) == node.original
    count('concurrent runs', 'races')


def _interleaved(node, monkeypatch, first, second):
    """Race without the lock: both runs read the same files, then the first writes, then the second."""
    monkeypatch.setattr(files, 'lock_directory', lambda directory, timeout=None: None)
    first_done, second_read = FORK.Event(), FORK.Event()

    def first_hook():
        second_read.wait(TIMEOUT)

    def second_hook():
        second_read.set()
        first_done.wait(TIMEOUT)

    real_execute = runtime_config.execute

    def execute(*args, **kwargs):
        try:
            return real_execute(*args, **kwargs)
        finally:
            first_done.set()
    monkeypatch.setattr(runtime_config, 'execute', execute)
    return _race(node, first, second, [(_nothing, first_hook), (_nothing, second_hook)])


CONTROLS = RACES[:1] + RACES[2:3]


@pytest.mark.parametrize('case, module_name, first, second, before', CONTROLS, ids=[race[0] for race in CONTROLS])
def test_without_the_lock_the_late_writer_fails_cleanly(capsys, tmp_path, monkeypatch, case, module_name, first, second, before):
    top = tmp_path / 'node'
    node = Node(top, module_name, before)
    node.prepare(capsys)
    reports = _interleaved(node, monkeypatch, first, second)
    assert reports[0]['result'].get('failed') is None
    assert 'changed while this run was planning; nothing was written' in reports[1]['result']['msg']
    monkeypatch.undo()
    node.run(capsys, dict(second, state='absent'))
    assert snapshot(top) == node.original
    count('concurrent runs', 'late writers refused without the lock')


@pytest.mark.parametrize('case, module_name, first, second, before', CONTROLS, ids=[race[0] for race in CONTROLS])
def test_without_lock_and_check_an_update_is_lost(capsys, tmp_path, monkeypatch, case, module_name, first, second, before):
    # The control: shows that the race above is real.
    top = tmp_path / 'node'
    serial = [_one_after_the_other(capsys, top, module_name, first, second, before),
              _one_after_the_other(capsys, top, module_name, first=second, second=first, before=before)]
    node = Node(top, module_name, before)
    node.prepare(capsys)
    monkeypatch.setattr(runtime_config, '_check_unchanged', lambda plan: None)
    _interleaved(node, monkeypatch, first, second)
    assert snapshot(top) not in serial
    count('concurrent runs', 'lost updates without lock and check')
