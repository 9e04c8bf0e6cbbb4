# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: drift_report
short_description: Per host, what a run would change (drift, in --check) or changed, by stage, with the diffs
description:
  - Records every task that reports C(changed) on a host, with its stage (the role the task belongs to, such as
    C(gpu_node_labels), C(nvidia_driver), C(container_toolkit), C(gpu_cluster_base), C(gpu_cluster_operands); the play's
    name for a task outside roles), the task's name, and its diff (run with C(--diff)); for a loop each changed item's,
    for M(kubernetes.core.k8s) given several objects each changed object's.
  - At the end of the run it writes a JSON report and a text report and prints the text's summary, one line per host
    with C(no drift) or each stage that would change with its tasks in check mode, C(no change) or what changed in a
    real run. The hosts of the cluster-wide plays (the C(kube_api) group) are the cluster's entry.
  - A host that failed or was unreachable is reported as such, never as without drift. In check mode a task skipped
    because its module cannot run in check mode is listed as not checked.
  - "Run C(ansible-playbook -i INVENTORY gpuops.gpu_operator.site --check --diff --skip-tags validation) with this
    callback enabled to find drift without changing anything; the same command without C(--check) repairs it."
  - Enable it with C(callbacks_enabled) in ansible.cfg or E(ANSIBLE_CALLBACKS_ENABLED).
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
type: aggregate
options:
  report_path:
    description:
      - Where the JSON report is written; the text report is written beside it, with C(.txt) in place of C(.json).
      - A relative path is relative to the directory ansible-playbook runs in. The directory must exist; a report
        that cannot be written is a warning, and the summary is still printed.
      - Both reports are written with mode C(0600) (they show diffs of node config files); credentials in the diffs
        (registry passwords and tokens of a container runtime config, the data of a Kubernetes Secret) are redacted.
    type: path
    default: gpuops-drift-report.json
    env:
      - name: GPUOPS_DRIFT_REPORT_PATH
    ini:
      - section: gpuops_drift_report
        key: report_path
  cluster_group:
    description: The inventory group of the host that runs the cluster-wide plays; its hosts are the cluster's entry.
    type: str
    default: kube_api
    env:
      - name: GPUOPS_DRIFT_CLUSTER_GROUP
    ini:
      - section: gpuops_drift_report
        key: cluster_group
"""

import datetime
import json
import os
import tempfile

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import drift_report


class CallbackModule(CallbackBase):
    """Events from the task results, the report from the events at the end (plugin_utils/drift_report.py)."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'gpuops.gpu_operator.drift_report'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._events = []
        self._cluster_hosts = set()
        self._play = ''

    def _record(self, result, status):
        task, host = result.task, result.host
        role = getattr(task, '_role', None)
        stage = role.get_name(include_role_fqcn=False) if role else self._play
        if self.get_option('cluster_group') in (group.get_name() for group in host.get_groups()):
            self._cluster_hosts.add(host.get_name())
        found = drift_report.event(host.get_name(), stage, result.task_name, status, result.result, bool(context.CLIARGS.get('check')))
        if found is not None:
            self._events.append(found)

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()

    def v2_runner_on_ok(self, result):
        self._record(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, 'ok' if ignore_errors else drift_report.FAILED)

    def v2_runner_on_unreachable(self, result):
        self._record(result, drift_report.UNREACHABLE)

    def v2_runner_on_skipped(self, result):
        self._record(result, 'skipped')

    def v2_playbook_on_stats(self, stats):
        counts = {host: {'failures': stats.failures.get(host, 0), 'unreachable': stats.dark.get(host, 0)} for host in stats.processed}
        generated = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
        playbooks = ' '.join(context.CLIARGS.get('args') or ())
        report = drift_report.build(self._events, counts, self._cluster_hosts, bool(context.CLIARGS.get('check')),
                                    bool(context.CLIARGS.get('diff')), playbooks, generated)
        path = os.path.abspath(self.get_option('report_path'))
        text_path = (path[:-len('.json')] if path.endswith('.json') else path) + '.txt'
        lines = drift_report.summary_lines(report)
        written = []
        for where, content in ((path, json.dumps(report, indent=2) + '\n'), (text_path, '\n'.join(drift_report.text(report)) + '\n')):
            try:
                _write(where, content)
                written.append(where)
            except OSError as exc:
                self._display.warning('gpuops.gpu_operator.drift_report: the report could not be written to %s: %s' % (where, exc))
        if written:
            lines.append('Written to %s' % ' and '.join(written))
        self._display.banner('GPUOPS DRIFT REPORT')
        self._display.display('\n'.join(lines))


def _write(path, content):
    """Through a temporary file in the target directory and a rename: a reader never sees half a report.

    The report holds diffs of node config files, some of them readable by root alone (a containerd config with registry
    credentials): it is mkstemp's 0600, for its owner only, whatever it replaces.
    """
    handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.' + os.path.basename(path) + '.')
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as stream:
            stream.write(content)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
