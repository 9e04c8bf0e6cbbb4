# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The drift report from task results (plugin_utils/drift_report.py).

The results have the shapes ansible-core hands a callback (a plain task's dict, a loop's `results`, `diff` as one dict
or a list, a skip in check mode); the callback itself runs through ansible-playbook in tests/drift/.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import drift_report

CONFIG_DIFF = {'before': 'version = 2\n', 'after': 'version = 2\n[runtimes.nvidia]\n', 'before_header': '/etc/containerd/config.toml',
               'after_header': '/etc/containerd/config.toml'}
CONFIG_TEXT = ('--- before: /etc/containerd/config.toml\n+++ after: /etc/containerd/config.toml\n@@ -1 +1,2 @@\n version = 2\n'
               '+[runtimes.nvidia]\n')


@pytest.mark.parametrize('diff, expected', [
    pytest.param(CONFIG_DIFF, CONFIG_TEXT, id='one file, headers'),
    pytest.param([CONFIG_DIFF], CONFIG_TEXT, id='a list of one'),
    pytest.param({'before': {'a': '1'}, 'after': {'a': '1', 'b': '2'}},
                 '--- before\n+++ after\n@@ -1,3 +1,4 @@\n {\n-    "a": "1"\n+    "a": "1",\n+    "b": "2"\n }\n', id='mappings as JSON'),
    pytest.param({'before': None, 'after': 'x'}, '--- before\n+++ after\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n',
                 id='a new file without a final newline'),
    pytest.param({'before': 'same\n', 'after': 'same\n'}, '', id='no difference'),
    pytest.param({'prepared': 'The following packages will be installed: nvidia-smi'},
                 'The following packages will be installed: nvidia-smi\n', id='prepared text (apt)'),
    pytest.param({'dst_binary': 1}, 'diff skipped: destination file appears to be binary\n', id='binary'),
    pytest.param({'src_larger': 104448}, 'diff skipped: source file is larger than 104448 bytes\n', id='too large'),
    pytest.param([], '', id='no diff'),
    pytest.param(['not a diff'], '', id='not a mapping'),
])
def test_render_diff(diff, expected):
    assert drift_report.render_diff(diff) == expected


@pytest.mark.parametrize('result, expected', [
    pytest.param({'changed': False}, [], id='unchanged'),
    pytest.param({'changed': True}, [{'item': None, 'diff': ''}], id='changed, no --diff'),
    pytest.param({'changed': True, 'diff': CONFIG_DIFF}, [{'item': None, 'diff': CONFIG_TEXT}], id='changed with its diff'),
    pytest.param({'changed': True, 'failed': True, 'msg': 'boom'}, [], id='a failure is not a change'),
    pytest.param({'changed': True, 'results': [
        {'changed': False, 'item': 'a', 'ansible_loop_var': 'item'},
        {'changed': True, 'item': 'b', 'ansible_loop_var': 'item', 'diff': CONFIG_DIFF},
        {'changed': True, 'stage': 'c', 'ansible_loop_var': 'stage'},
        {'changed': True, 'item': {'name': 'x'}, '_ansible_item_label': 'the x', 'ansible_loop_var': 'item'},
        {'changed': True, 'failed': True, 'item': 'd', 'ansible_loop_var': 'item'},
    ]}, [{'item': 'b', 'diff': CONFIG_TEXT}, {'item': 'c', 'diff': ''}, {'item': 'the x', 'diff': ''}],
        id='a loop: each changed item with its label and diff'),
    pytest.param({'changed': True, 'results': [{'changed': True, 'item': {'name': 'x' * 200}, 'ansible_loop_var': 'item'}]},
                 [{'item': json.dumps({'name': 'x' * 200})[:117] + '...', 'diff': ''}], id='a long label is cut'),
    pytest.param({'changed': False, 'results': []}, [], id='an empty loop'),
    # kubernetes.core.k8s with several objects in its definition (kubernetes.core 6.2.0, module_utils/k8s/runner.py).
    pytest.param({'changed': True, 'result': {'results': [
        {'changed': False, 'method': 'update', 'result': {'kind': 'Namespace', 'metadata': {'name': 'gpu-operator'}},
         'diff': {'before': {}, 'after': {}}},
        {'changed': True, 'method': 'create', 'result': {'kind': 'RuntimeClass', 'metadata': {'name': 'nvidia'}}},
        {'changed': True, 'method': 'update', 'result': {'kind': 'DaemonSet', 'metadata': {'name': 'ds', 'namespace': 'gpu-operator'}},
         'diff': {'before': {'spec': {'a': 1}}, 'after': {'spec': {'a': 2}}}},
        {'changed': True, 'result': {}},
    ]}}, [{'item': 'create RuntimeClass nvidia', 'diff': ''},
          {'item': 'update DaemonSet gpu-operator/ds',
           'diff': '--- before\n+++ after\n@@ -1,5 +1,5 @@\n {\n     "spec": {\n-        "a": 1\n+        "a": 2\n     }\n }\n'},
          {'item': None, 'diff': ''}], id='kubernetes.core.k8s: each changed object'),
    pytest.param({'changed': False, 'result': {'results': [{'changed': True, 'method': 'create', 'result': {}}]}}, [],
                 id='kubernetes.core.k8s unchanged'),
    pytest.param({'changed': True, 'result': {'kind': 'Node', 'metadata': {'name': 'n'}}, 'diff': CONFIG_DIFF},
                 [{'item': None, 'diff': CONFIG_TEXT}], id='kubernetes.core.k8s with one object: its diff'),
])
def test_changes(result, expected):
    assert drift_report.changes(result) == expected


def test_object_diffs_lift_each_changed_objects_diff_with_its_header():
    """gpuops.gpu_operator.k8s_objects: kubernetes.core.k8s's per-object diffs as the task's own `diff` list, which
    ansible-core's callbacks print (CallbackBase._get_diff takes a list, each with before/after and their headers)."""
    result = {'changed': True, 'result': {'results': [
        {'changed': False, 'method': 'update', 'result': {'kind': 'Namespace', 'metadata': {'name': 'gpu-operator'}},
         'diff': {'before': {}, 'after': {}}},
        {'changed': True, 'method': 'update', 'result': {'kind': 'ConfigMap', 'metadata': {'name': 'c', 'namespace': 'gpu-operator'}},
         'diff': {'before': {'data': {'password': 'old'}}, 'after': {'data': {'password': 'new', 'x': '1'}}}},
        {'changed': True, 'method': 'create', 'result': {'kind': 'RuntimeClass', 'metadata': {'name': 'nvidia'}}},
    ]}}
    assert drift_report.object_diffs(result) == [
        {'before': {'data': {'password': '********'}}, 'after': {'data': {'password': '********', 'x': '1'}},
         'before_header': 'update ConfigMap gpu-operator/c', 'after_header': 'update ConfigMap gpu-operator/c'}]
    assert drift_report.object_diffs({'changed': True, 'result': {'kind': 'Node'}, 'diff': CONFIG_DIFF}) is None, 'one object: at the top'
    assert drift_report.object_diffs({'changed': False, 'result': {'results': [{'changed': False}]}}) is None


WHERE = {'host': 'node-a', 'stage': 'container_toolkit', 'task': 'Register'}


@pytest.mark.parametrize('status, result, check, expected', [
    pytest.param('ok', {'changed': False}, True, None, id='unchanged: no event'),
    pytest.param('ok', {'changed': True, 'diff': CONFIG_DIFF}, True,
                 dict(WHERE, kind='changed', changes=[{'item': None, 'diff': CONFIG_TEXT}]), id='a change'),
    pytest.param('failed', {'changed': True, 'msg': 'no such file\nsecond line'}, True,
                 dict(WHERE, kind='failed', message='no such file\nsecond line', changes=[]), id='a failure, its changed flag is no change'),
    pytest.param('failed', {'changed': True, 'msg': 'One or more items failed', 'results': [
        {'changed': True, 'item': 'a', 'ansible_loop_var': 'item'}, {'changed': True, 'failed': True, 'item': 'b', 'ansible_loop_var': 'item'}]},
        True, dict(WHERE, kind='failed', message='One or more items failed', changes=[{'item': 'a', 'diff': ''}]),
        id='a loop that failed: the items that changed before'),
    pytest.param('failed', {}, False, dict(WHERE, kind='failed', message='failed', changes=[]), id='a failure without a message'),
    pytest.param('unreachable', {'msg': 'ssh: connect to host node-a port 22: No route to host'}, True,
                 dict(WHERE, kind='unreachable', message='ssh: connect to host node-a port 22: No route to host'), id='unreachable'),
    # A skipped task's own result has no `skipped` (ansible-core drops it: the status says it); its items keep theirs.
    pytest.param('skipped', {'false_condition': 'x', 'skip_reason': 'Conditional result was False'}, True, None,
                 id='a skip by its condition'),
    pytest.param('skipped', {'msg': 'remote module (x.y.z) does not support check mode'}, True,
                 dict(WHERE, kind='not_checked', message='remote module (x.y.z) does not support check mode'), id='a module without check mode'),
    pytest.param('skipped', {'msg': 'remote module (x.y.z) does not support check mode'}, False, None,
                 id='the same skip outside check mode says nothing'),
    pytest.param('skipped', {'results': [{'skipped': True, 'msg': 'This action (x) does not support check mode.'}]},
                 True, dict(WHERE, kind='not_checked', message='This action (x) does not support check mode.'), id='a loop skipped in check mode'),
    pytest.param('skipped', {'results': [{'skipped': True, 'false_condition': 'x'}, {'changed': False, 'msg': 'check mode'}]},
                 True, None, id='a loop whose items were skipped by their condition'),
    pytest.param('skipped', {'changed': False, 'cmd': ['/bin/true'], 'msg': 'Command would have run if not in check mode', 'rc': 0},
                 True, dict(WHERE, kind='not_checked', message='Command would have run if not in check mode'), id='a command in check mode'),
    # site.yml ends a node without an NVIDIA GPU after its labels, with a fact that says so (issue #25).
    pytest.param('ok', {'changed': False, 'ansible_facts': {'site_node_stage': 'done', 'site_node_end': 'no NVIDIA GPU'}}, False,
                 dict(WHERE, kind='ended', message='no NVIDIA GPU'), id='a node ended early'),
    pytest.param('ok', {'changed': False, 'ansible_facts': {'site_node_stage': 'done'}}, True, None, id='another fact: no event'),
])
def test_event(status, result, check, expected):
    assert drift_report.event('node-a', 'container_toolkit', 'Register', status, result, check) == expected


def _changed(host, stage, task, diff='', item=None):
    return {'host': host, 'stage': stage, 'task': task, 'kind': 'changed', 'changes': [{'item': item, 'diff': diff}]}


STATS = {'localhost': {}, 'node-a': {}, 'node-b': {}}
LABELS = _changed('node-b', 'gpu_node_labels', 'Apply them to the Node from the API host', '+label\n')
RUNTIME = _changed('node-b', 'container_toolkit', 'Register the NVIDIA runtime with containerd', CONFIG_TEXT)
RESTART = _changed('node-b', 'container_toolkit', 'Restart the container runtime')
STOPPED = {'host': 'node-a', 'stage': 'nvidia_driver', 'task': 'Install', 'kind': 'failed', 'message': 'no package', 'changes': []}
FAILED_AT_END = {'host': 'node-a', 'stage': 'Fail the nodes', 'task': 'Fail the node', 'kind': 'failed',
                 'message': "nvidia_driver stage failed in task 'Install': no package", 'changes': []}


def _hosts(report, key):
    return {name: entry[key] for name, entry in report['hosts'].items()}


@pytest.mark.parametrize('events, stats, expected', [
    pytest.param([], STATS, {'localhost': 'no drift', 'node-a': 'no drift', 'node-b': 'no drift'}, id='a converged cluster'),
    pytest.param([LABELS, RUNTIME, RESTART], STATS, {'localhost': 'no drift', 'node-a': 'no drift', 'node-b': 'drift'},
                 id='drift on one node'),
    pytest.param([_changed('localhost', 'gpu_cluster_operands', 'Apply')], STATS,
                 {'localhost': 'drift', 'node-a': 'no drift', 'node-b': 'no drift'}, id='drift of the cluster objects'),
    pytest.param([STOPPED, FAILED_AT_END], dict(STATS, **{'node-a': {'failures': 1}}),
                 {'localhost': 'no drift', 'node-a': 'failed', 'node-b': 'no drift'}, id='a node that stopped'),
    pytest.param([STOPPED], STATS, {'localhost': 'no drift', 'node-a': 'no drift', 'node-b': 'no drift'},
                 id='a failure the run rescued and got past'),
    pytest.param([dict(WHERE, kind='unreachable', message='no route')], dict(STATS, **{'node-a': {'unreachable': 1, 'failures': 0}}),
                 {'localhost': 'no drift', 'node-a': 'unreachable', 'node-b': 'no drift'}, id='unreachable'),
    pytest.param([_changed('node-c', 'gpu_node_labels', 'Apply')], STATS,
                 {'localhost': 'no drift', 'node-a': 'no drift', 'node-b': 'no drift', 'node-c': 'drift'}, id='a host only the events name'),
])
def test_build_status(events, stats, expected):
    report = drift_report.build(events, stats, {'localhost'}, True, True, 'playbooks/site.yml', '2026-11-26T15:00:00Z')
    assert _hosts(report, 'status') == expected
    assert list(report['hosts'])[0] == 'localhost', 'the cluster entry comes first'
    assert {name: status for status, names in report['summary'].items() for name in names} == expected


def test_build_keeps_stages_in_run_order_with_their_diffs():
    report = drift_report.build([LABELS, RUNTIME, RESTART], STATS, {'localhost'}, True, True, 'site.yml', 'now')
    assert report['hosts']['node-b']['stages'] == {
        'gpu_node_labels': [{'task': 'Apply them to the Node from the API host', 'item': None, 'diff': '+label\n'}],
        'container_toolkit': [{'task': 'Register the NVIDIA runtime with containerd', 'item': None, 'diff': CONFIG_TEXT},
                              {'task': 'Restart the container runtime', 'item': None, 'diff': ''}],
    }
    assert list(report['hosts']['node-b']['stages']) == ['gpu_node_labels', 'container_toolkit']
    assert report['hosts']['node-a']['stages'] == {} and report['hosts']['localhost']['cluster'] is True
    assert report['summary'] == {'no drift': ['localhost', 'node-a'], 'drift': ['node-b']}
    assert (report['format'], report['mode'], report['diff'], report['playbook']) == (1, 'check', True, 'site.yml')
    json.dumps(report)  # the callback writes it as JSON


def test_build_run_mode_words_and_failures():
    report = drift_report.build([STOPPED, FAILED_AT_END, RUNTIME], dict(STATS, **{'node-a': {'failures': 1}}), {'localhost'}, False, False,
                                'site.yml', 'now')
    assert _hosts(report, 'status') == {'localhost': 'no change', 'node-a': 'failed', 'node-b': 'changed'}
    assert report['hosts']['node-a']['failures'] == [
        {'stage': 'nvidia_driver', 'task': 'Install', 'message': 'no package', 'unreachable': False},
        {'stage': 'Fail the nodes', 'task': 'Fail the node', 'message': "nvidia_driver stage failed in task 'Install': no package",
         'unreachable': False}]


def test_not_checked_is_listed_once_with_why():
    why = 'check mode: the preview of /etc/containerd/config.toml needs tomlkit on the node'
    skipped = dict(WHERE, kind='not_checked', message=why)
    report = drift_report.build([skipped, skipped], STATS, {'localhost'}, True, True, 'site.yml', 'now')
    assert report['hosts']['node-a']['not_checked'] == [{'stage': 'container_toolkit', 'task': 'Register', 'message': why}]
    assert report['hosts']['node-a']['status'] == 'no drift'
    assert drift_report.summary_lines(report)[2] == 'node-a: no drift; not checked in check mode: container_toolkit / Register'
    assert drift_report.text(report)[-3:] == ['', 'node-a / container_toolkit / Register not checked:', '    ' + why]


def test_a_node_ended_early_says_why():
    """A node site.yml ended after its labels (no NVIDIA GPU): its entry and its summary line say so (issue #25)."""
    ended = dict(WHERE, kind='ended', message='no NVIDIA GPU')
    report = drift_report.build([ended, LABELS], STATS, {'localhost'}, True, True, 'site.yml', 'now')
    assert (report['hosts']['node-a']['ended'], report['hosts']['node-a']['status']) == ('no NVIDIA GPU', 'no drift')
    assert report['hosts']['node-b']['ended'] is None
    assert drift_report.summary_lines(report)[2] == 'node-a: no drift; ended: no NVIDIA GPU'


def test_summary_lines():
    events = [LABELS, RUNTIME, RESTART, STOPPED, FAILED_AT_END, dict(WHERE, host='node-c', kind='unreachable', message='no route\nmore')]
    stats = dict(STATS, **{'node-a': {'failures': 1}, 'node-c': {'unreachable': 1}})
    report = drift_report.build(events, stats, {'localhost'}, True, True, 'playbooks/site.yml', '2026-11-26T15:00:00Z')
    assert drift_report.summary_lines(report) == [
        'Drift report (check mode) of playbooks/site.yml, 2026-11-26T15:00:00Z',
        'localhost (cluster): no drift',
        "node-a: FAILED in Fail the nodes / Fail the node: nvidia_driver stage failed in task 'Install': no package",
        'node-b: drift in gpu_node_labels (Apply them to the Node from the API host), container_toolkit (Register the NVIDIA runtime '
        'with containerd, Restart the container runtime)',
        'node-c: UNREACHABLE in container_toolkit / Register: no route',
    ]


def test_summary_lines_run_mode():
    report = drift_report.build([RUNTIME, RUNTIME], STATS, {'localhost'}, False, True, 'site.yml', 'now')
    assert drift_report.summary_lines(report)[1:] == [
        'localhost (cluster): no change', 'node-a: no change',
        'node-b: changed in container_toolkit (Register the NVIDIA runtime with containerd)']
    assert drift_report.summary_lines(report)[0].startswith('Change report (run mode)')


@pytest.mark.parametrize('diff, placeholder', [(True, '    (no diff)'), (False, '    (no diff: run with --diff)')])
def test_text_gives_each_change_with_its_diff(diff, placeholder):
    looped = _changed('localhost', 'gpu_cluster_operands', 'Apply', '+kind: DaemonSet\n', item='nvidia-device-plugin-daemonset')
    report = drift_report.build([looped, RUNTIME, RESTART], STATS, {'localhost'}, True, diff, 'site.yml', 'now')
    lines = drift_report.text(report)
    assert lines[:len(drift_report.summary_lines(report))] == drift_report.summary_lines(report)
    assert lines[len(drift_report.summary_lines(report)):] == [
        '', 'localhost / gpu_cluster_operands / Apply [nvidia-device-plugin-daemonset] would change:', '    +kind: DaemonSet',
        '', 'node-b / container_toolkit / Register the NVIDIA runtime with containerd would change:',
    ] + ['    ' + line for line in CONFIG_TEXT.splitlines()] + [
        '', 'node-b / container_toolkit / Restart the container runtime would change:', placeholder]


# A 0600 containerd config with registry credentials (containerd/containerd docs/cri/registry.md, release/1.7): the
# password falls in the diff's context of a change two lines below it, and the whole file is each side of the diff.
SECRET_CONFIG = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example".auth]\n'
                 '  username = "robot"\n  password = "pa55-word"\n  auth = "cm9ib3Q6cGE1NS13b3Jk"\n')
SECRET_DIFF = {'before': SECRET_CONFIG, 'after': SECRET_CONFIG + '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n',
               'before_header': '/etc/containerd/config.toml', 'after_header': '/etc/containerd/config.toml'}
PULL_SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'mirror-pull', 'namespace': 'gpu-operator'},
               'type': 'kubernetes.io/dockerconfigjson', 'data': {'.dockerconfigjson': 'eyJhdXRocyI6IHt9fQ=='}}


@pytest.mark.parametrize('status, result', [
    pytest.param('ok', {'changed': True, 'diff': SECRET_DIFF}, id='a file diff (ansible.builtin.copy, a module of another collection)'),
    pytest.param('ok', {'changed': True, 'result': {'results': [{'changed': True, 'method': 'create', 'result': PULL_SECRET,
                                                                 'diff': {'before': {}, 'after': PULL_SECRET}}]}}, id='a Secret object'),
    pytest.param('ok', {'changed': True, 'results': [{'changed': True, 'ansible_loop_var': 'item', 'diff': SECRET_DIFF,
                                                      'item': {'name': 'mirror-pull', 'password': 'pa55-word'}}]},
                 id='a loop item without a label'),
    pytest.param('failed', {'msg': 'cannot parse line 4: password = "pa55-word"'}, id='a failure quoting the config'),
])
def test_credentials_stay_out_of_the_report(status, result):
    """The report says what changed, never a credential: the callback prints and writes it (0600, tests/drift)."""
    found = drift_report.event('node-a', 'container_toolkit', 'Register', status, result, True)
    report = drift_report.build([found], STATS, {'localhost'}, True, True, 'site.yml', 'now')
    written = json.dumps(report) + '\n'.join(drift_report.text(report))
    for secret in ('pa55-word', 'cm9ib3Q6cGE1NS13b3Jk', 'eyJhdXRocyI6IHt9fQ=='):
        assert secret not in written
    assert '********' in written, 'the redacted line is still shown'
