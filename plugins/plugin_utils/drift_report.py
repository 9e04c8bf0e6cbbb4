# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The drift report: task results of a playbook run in, one entry per host out (pure).

The callback gpuops.gpu_operator.drift_report turns each task result into an event with `event()` (None when the
result says nothing about drift), and at the end of the run `build()` joins the events with the run's statistics into
the report, `summary_lines()` and `text()` render it for people. In check mode a change is drift: what a run would
change; in a real run it is what the run changed (a repair). Credentials in what the results show (a config file's
registry password in a diff, a Kubernetes Secret's data, a loop item) are redacted: the report is printed and kept.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.redact import redact_data, redact_text

REPORT_FORMAT = 1
# The words for a host with and without changes, by mode.
WORDS = {
    'check': {'changed': 'drift', 'unchanged': 'no drift', 'verb': 'would change'},
    'run': {'changed': 'changed', 'unchanged': 'no change', 'verb': 'changed'},
}
FAILED, UNREACHABLE = 'failed', 'unreachable'
# An item label longer than this is cut in the report: some loops run over whole objects.
LABEL_CHARS = 120
# In what ansible-core's modules and action plugins say when they skip a task in check mode ("remote module (x) does
# not support check mode", "Command would have run if not in check mode"); a skip by a condition has no message.
NO_CHECK_MODE = 'check mode'
# The fact site.yml sets on a node it ends after its labels, saying why (no NVIDIA GPU): no later stage ran there.
END_FACT = 'site_node_end'


def _text(value):
    """A diff side as text: mappings and lists as indented JSON (as ansible-core shows them), None as nothing; credentials
    redacted (each side is a whole file or object: a diff's hunks could cut a multi-line string in two)."""
    if value is None:
        return ''
    if isinstance(value, (dict, list)):
        return json.dumps(redact_data(value), indent=4, sort_keys=True) + '\n'
    return redact_text(value if isinstance(value, str) else str(value))


def render_diff(diff):
    """One result's `diff` (a dict or a list of them) as unified diff text, without colours, credentials redacted."""
    parts = []
    for one in diff if isinstance(diff, list) else [diff]:
        if not isinstance(one, dict):
            continue
        for key, what in (('dst_binary', 'destination file appears to be binary'), ('src_binary', 'source file appears to be binary'),
                          ('dst_larger', 'destination file is larger than %s bytes'), ('src_larger', 'source file is larger than %s bytes')):
            if key in one:
                parts.append('diff skipped: ' + (what % one[key] if '%s' in what else what) + '\n')
        if 'before' in one and 'after' in one:
            before, after = _text(one['before']).splitlines(True), _text(one['after']).splitlines(True)
            for lines in (before, after):
                if lines and not lines[-1].endswith('\n'):
                    lines[-1] += '\n\\ No newline at end of file\n'
            parts.extend(difflib.unified_diff(before, after, fromfile='before: %s' % one['before_header'] if 'before_header' in one else 'before',
                                              tofile='after: %s' % one['after_header'] if 'after_header' in one else 'after'))
        if one.get('prepared'):
            prepared = redact_text(one['prepared'])
            parts.append(prepared if prepared.endswith('\n') else prepared + '\n')
    return ''.join(parts)


def _label(result):
    label = result.get('_ansible_item_label', result.get(result.get('ansible_loop_var') or 'item'))
    if label is None:
        return None
    label = redact_text(label) if isinstance(label, str) else json.dumps(redact_data(label), sort_keys=True)
    return label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 3] + '...'


def _object_label(one):
    """'create DaemonSet gpu-operator/nvidia-dcgm-exporter': what kubernetes.core.k8s did to one object."""
    found = one.get('result') if isinstance(one.get('result'), dict) else {}
    metadata = found.get('metadata') if isinstance(found.get('metadata'), dict) else {}
    name = '/'.join(part for part in (metadata.get('namespace'), metadata.get('name')) if part)
    return ' '.join(str(part) for part in (one.get('method'), found.get('kind'), name) if part) or None


def object_diffs(result):
    """Each changed object's diff of a kubernetes.core.k8s result given several objects (under result.results), as one
    `diff` list the way ansible-core's callbacks print a task's diff, each headed by what was done to the object;
    credentials redacted. None for a result of one object (its `diff` is at the top already) or without diffs."""
    applied = result.get('result') if isinstance(result.get('result'), dict) else {}
    if not isinstance(applied.get('results'), list):
        return None
    found = []
    for one in applied['results']:
        if not isinstance(one, dict) or not one.get('changed') or not isinstance(one.get('diff'), dict):
            continue
        header = _object_label(one) or 'object'
        found.append(dict(redact_data(one['diff']), before_header=header, after_header=header))
    return found or None


def _changed_items(items, label):
    return [{'item': label(one), 'diff': render_diff(one.get('diff') or [])}
            for one in items if isinstance(one, dict) and one.get('changed') and not one.get('failed')]


def changes(result):
    """What one task result changed: a list of {'item', 'diff'} (item None outside loops), empty when nothing did.

    A loop's result counts its changed items, each with its own diff. kubernetes.core.k8s given several objects in one
    definition returns each object's own result under result.results (kubernetes.core 6.2.0,
    plugins/module_utils/k8s/runner.py run_module): each changed object is an item, labelled with what would be done
    to it (create, update, patch, delete), its kind and name.
    """
    if isinstance(result.get('results'), list):
        return _changed_items(result['results'], _label)
    applied = result.get('result') if isinstance(result.get('result'), dict) else {}
    if result.get('changed') and isinstance(applied.get('results'), list):
        return _changed_items(applied['results'], _object_label)
    if result.get('changed') and not result.get('failed'):
        return [{'item': None, 'diff': render_diff(result.get('diff') or [])}]
    return []


def _message(result):
    return redact_text(str(result.get('msg') or result.get('reason') or result.get('stderr') or 'failed').strip())


def event(host, stage, task, status, result, check):
    """The event of one task result, or None when it says nothing for the report.

    status is how the run ended the task on the host: ok, failed, unreachable or skipped. stage is the role the task
    belongs to (the play's name outside roles). A change, a failure, an unreachable host, and in check mode a task
    skipped because it cannot run in check mode (drift could hide there, its message says why), and a node a playbook ends
    early (END_FACT) are events.
    """
    base = {'host': host, 'stage': stage, 'task': task}
    if status == UNREACHABLE:
        return dict(base, kind=UNREACHABLE, message=_message(result))
    if status == FAILED:
        # ansible-core drops `failed` from the task's own result (the status says it): a failed task's `changed` is
        # not a change; the items of a loop that did change before another failed are.
        return dict(base, kind=FAILED, message=_message(result), changes=changes(result) if isinstance(result.get('results'), list) else [])
    if status == 'skipped':
        # Likewise `skipped`: the task's own message counts, and those of the items a loop skipped.
        said = [result.get('msg')] + [one.get('msg') for one in result.get('results') or [] if isinstance(one, dict) and one.get('skipped')]
        why = [str(msg) for msg in said if NO_CHECK_MODE in str(msg or '').lower()]
        return dict(base, kind='not_checked', message=redact_text(why[0])) if check and why else None
    ended = (result.get('ansible_facts') or {}).get(END_FACT) if isinstance(result.get('ansible_facts'), dict) else None
    if ended:
        return dict(base, kind='ended', message=str(ended))
    found = changes(result)
    return dict(base, kind='changed', changes=found) if found else None


def build(events, stats, cluster_hosts, check, diff, playbook, generated):
    """The report of one run.

    events: what event() returned, in the order of the run; stats: {host: {'failures': n, 'unreachable': n}} for every
    host the run processed (ansible-core's stats at the end: rescued failures are not failures there); cluster_hosts:
    the hosts of the cluster-wide plays, reported as the cluster's entry. A host that failed or was unreachable is
    reported as such, never as unchanged. check and diff: the run's --check and --diff.
    """
    words = WORDS['check' if check else 'run']
    hosts = {}
    for name in list(stats) + [one['host'] for one in events]:
        hosts.setdefault(name, {'cluster': name in cluster_hosts, 'status': words['unchanged'], 'stages': {}, 'failures': [],
                                'not_checked': [], 'ended': None})
    for one in events:
        entry, where = hosts[one['host']], {'stage': one['stage'], 'task': one['task']}
        for change in one.get('changes', []):
            entry['stages'].setdefault(one['stage'], []).append(dict(change, task=one['task']))
        if one['kind'] in (FAILED, UNREACHABLE):
            entry['failures'].append(dict(where, message=one['message'], unreachable=one['kind'] == UNREACHABLE))
        elif one['kind'] == 'not_checked' and dict(where, message=one['message']) not in entry['not_checked']:
            entry['not_checked'].append(dict(where, message=one['message']))
        elif one['kind'] == 'ended':
            entry['ended'] = one['message']
    # Only the stats say whether a host failed: a failure the run rescued and got past is none (it stays in `failures`
    # as context), a node stage that stopped its node is one, as site.yml fails that node at its end.
    for name, entry in hosts.items():
        counts = stats.get(name, {})
        if counts.get('unreachable'):
            entry['status'] = UNREACHABLE
        elif counts.get('failures'):
            entry['status'] = FAILED
        elif entry['stages']:
            entry['status'] = words['changed']
    order = sorted(hosts, key=lambda name: (not hosts[name]['cluster'], name))
    summary = {}
    for name in order:
        summary.setdefault(hosts[name]['status'], []).append(name)
    return {'format': REPORT_FORMAT, 'mode': 'check' if check else 'run', 'diff': diff, 'playbook': playbook, 'generated': generated,
            'summary': summary, 'hosts': {name: hosts[name] for name in order}}


def _stages(entry):
    return ', '.join('%s (%s)' % (stage, ', '.join(dict.fromkeys(change['task'] for change in found)))
                     for stage, found in entry['stages'].items())


def summary_lines(report):
    """One line per host: its status, and the stages that changed with their tasks or why it failed."""
    words = WORDS[report['mode']]
    lines = ['%s report (%s mode) of %s, %s' % ('Drift' if report['mode'] == 'check' else 'Change', report['mode'], report['playbook'],
                                                report['generated'])]
    for name, entry in report['hosts'].items():
        parts = []
        if entry['status'] in (FAILED, UNREACHABLE):
            last = entry['failures'][-1] if entry['failures'] else {'stage': '?', 'task': '?', 'message': entry['status']}
            parts.append('%s in %s / %s: %s' % (entry['status'].upper(), last['stage'], last['task'], last['message'].splitlines()[0]
                                                if last['message'] else ''))
        if entry['stages']:
            parts.append('%s in %s' % (words['changed'], _stages(entry)))
        elif entry['status'] not in (FAILED, UNREACHABLE):
            parts.append(words['unchanged'])
        if entry['ended']:
            parts.append('ended: %s' % entry['ended'])
        if entry['not_checked']:
            parts.append('not checked in check mode: %s' % ', '.join('%s / %s' % (one['stage'], one['task']) for one in entry['not_checked']))
        lines.append('%s%s: %s' % (name, ' (cluster)' if entry['cluster'] else '', '; '.join(parts)))
    return lines


def text(report):
    """The summary lines, then each change with its diff, indented, and why each task not checked was skipped."""
    lines = summary_lines(report)
    verb = WORDS[report['mode']]['verb']
    no_diff = '(no diff)' if report['diff'] else '(no diff: run with --diff)'
    for name, entry in report['hosts'].items():
        for skipped in entry['not_checked']:
            lines.extend(['', '%s / %s / %s not checked:' % (name, skipped['stage'], skipped['task']), '    ' + skipped['message']])
        for stage, found in entry['stages'].items():
            for change in found:
                lines.extend(['', '%s / %s / %s%s %s:' % (name, stage, change['task'], ' [%s]' % change['item'] if change['item'] else '', verb)])
                lines.extend('    ' + line for line in (change['diff'] or no_diff).splitlines())
    return lines
