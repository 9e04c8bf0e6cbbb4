# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Benchmark-only callback: what one playbook run costs each host, as JSON lines.

Used by bench/site_bench.py (not shipped in playbooks, not needed to run the
collection). Besides the per-task results a callback sees, it counts the round
trips a callback cannot see, by wrapping ansible's own methods in the worker
processes (forked from this one, so they inherit the wrappers):

- module: one module shipped to and run on a host (ActionBase._execute_module);
- exec: one command run over the connection (ActionBase._low_level_execute_command:
  temp dir, chmod, the module itself, clean-up);
- put: one file transfer (ActionBase._transfer_file);
- podman: one podman client process started by the containers.podman.podman
  connection (mount, exec, cp), the real cost of a round trip to a lab node.

exec and podman events also carry `cpu`: the CPU seconds of the processes the
call started and waited for (RUSAGE_CHILDREN of the worker, which runs one
task for one host and nothing else meanwhile): the module's own Python when it
runs on the controller (local connection), the podman client for a lab node.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: gpuops_bench
type: aggregate
short_description: Record per-host tasks and round trips of a playbook run for bench/site_bench.py
description:
  - Writes one JSON object per line to the file named by E(GPUOPS_BENCH_EVENTS); does nothing when it is unset.
requirements:
  - enabled with ANSIBLE_CALLBACKS_ENABLED=gpuops_bench and ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins
'''

import json
import os
import resource
import time

from ansible.executor.task_executor import TaskExecutor
from ansible.plugins.action import ActionBase
from ansible.plugins.callback import CallbackBase

try:
    from ansible_collections.containers.podman.plugins.connection import podman as podman_connection
except ImportError:  # the podman connection is only counted where containers.podman is installed
    podman_connection = None

EVENTS = os.environ.get('GPUOPS_BENCH_EVENTS')
# The host and task a worker process runs: each worker runs one task for one host.
_CURRENT = {'host': None, 'task': None}


def record(event, **fields):
    """Append one event; a single O_APPEND write keeps lines from several workers whole."""
    fields.update(ev=event, pid=os.getpid())
    line = (json.dumps(fields, sort_keys=True) + '\n').encode('utf-8')
    fd = os.open(EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(event, describe):
    """Wrap a method so each call records `event` with its duration, child CPU and describe(self, args, kwargs)."""
    def wrap(method):
        def wrapper(self, *args, **kwargs):
            start, cpu = time.perf_counter(), _children_cpu()
            try:
                return method(self, *args, **kwargs)
            finally:
                record(event, host=_CURRENT['host'], task=_CURRENT['task'], s=round(time.perf_counter() - start, 6), cpu=round(_children_cpu() - cpu, 6),
                       **describe(self, args, kwargs))
        return wrapper
    return wrap


def _transport(action):
    return getattr(action._connection, 'transport', None)


def _module(action, args, kwargs):
    name = kwargs.get('module_name') or (args[0] if args else None) or action._task.action
    return dict(module=name, transport=_transport(action))


def _plain(action, _args, _kwargs):
    return dict(transport=_transport(action))


def _podman(_connection, args, _kwargs):
    cmd = args[0] if args else None
    return dict(sub=cmd if isinstance(cmd, str) else (cmd or ['?'])[0])


def _set_host(run):
    def wrapper(self):
        _CURRENT.update(host=self._host.get_name(), task=self._task.get_name())
        return run(self)
    return wrapper


def install_wrappers():
    TaskExecutor.run = _set_host(TaskExecutor.run)
    ActionBase._execute_module = timed('module', _module)(ActionBase._execute_module)
    ActionBase._low_level_execute_command = timed('exec', _plain)(ActionBase._low_level_execute_command)
    ActionBase._transfer_file = timed('put', _plain)(ActionBase._transfer_file)
    if podman_connection is not None:
        podman_connection.Connection._podman = timed('podman', _podman)(podman_connection.Connection._podman)


if EVENTS:
    install_wrappers()


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'gpuops_bench'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._play = None
        self._started = {}

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()
        if EVENTS:
            record('play', play=self._play, t=time.time())

    def v2_runner_on_start(self, host, task):
        self._started[(host.get_name(), task._uuid)] = time.time()

    def _task_done(self, result, status):
        if not EVENTS:
            return
        host, task = result.host.get_name(), result.task
        start = self._started.pop((host, task._uuid), None)
        end = time.time()
        record('task', host=host, play=self._play, task=task.get_name(), action=task.action, status=status,
               changed=bool(result.result.get('changed')), delegated=bool(task.delegate_to),
               start=start, end=end, s=None if start is None else round(end - start, 6))

    def v2_runner_on_ok(self, result):
        self._task_done(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._task_done(result, 'ignored' if ignore_errors else 'failed')

    def v2_runner_on_skipped(self, result):
        self._task_done(result, 'skipped')

    def v2_runner_on_unreachable(self, result):
        self._task_done(result, 'unreachable')

    def v2_playbook_on_stats(self, stats):
        if EVENTS:
            own = resource.getrusage(resource.RUSAGE_SELF)
            # main_cpu: ansible-playbook's own process; workers_cpu: the worker processes reaped so far, with all they waited for.
            record('stats', t=time.time(), hosts={host: stats.summarize(host) for host in sorted(stats.processed)},
                   main_cpu=round(own.ru_utime + own.ru_stime, 3), workers_cpu=round(_children_cpu(), 3))
