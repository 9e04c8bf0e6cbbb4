"""The action gpuops.gpu_operator.node_outcome: one node's entry of a run for many nodes becomes that node's result."""
from unittest import mock

import pytest

from ansible.playbook.task import Task
from ansible.template import Templar
from ansible_collections.gpuops.gpu_operator.plugins.action.node_outcome import ActionModule


def run(args):
    task = Task()
    task.args = args
    task.action = 'gpuops.gpu_operator.node_outcome'
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=Templar(loader=None), shared_loader_obj=None)
    return action.run(task_vars={})


DIFF = {'before_header': 'Node gpu-1 labels', 'after_header': 'Node gpu-1 labels', 'before': {}, 'after': {'a': 'b'}}


@pytest.mark.parametrize('outcome, expected', [
    # (the node's entry, the keys the task result must have)
    ({'changed': True, 'failed': False, 'labels': {'a': 'b'}, 'diff': DIFF},
     {'changed': True, 'failed': False, 'labels': {'a': 'b'}, 'diff': DIFF}),
    ({'changed': False, 'failed': False, 'labels': {}}, {'changed': False, 'failed': False, 'labels': {}}),
    ({'changed': False, 'failed': True, 'msg': 'cannot patch Node gpu-1: API answered 403'},
     {'changed': False, 'failed': True, 'msg': 'cannot patch Node gpu-1: API answered 403'}),
    ({'failed': True}, {'changed': False, 'failed': True, 'msg': 'failed, with no message'}),
    ({}, {'changed': False, 'failed': False}),
])
def test_the_entry_is_the_result(outcome, expected):
    result = run({'outcome': outcome})
    assert {key: result.get(key) for key in expected} == expected, result


@pytest.mark.parametrize('outcome', [None, 'changed', ['changed'], 3])
def test_an_entry_that_is_not_a_mapping_fails_naming_it(outcome):
    result = run({'outcome': outcome})
    assert result['failed'] is True
    assert result['msg'] == 'outcome: a mapping (one node of a run for many nodes) is needed, not %s' % type(outcome).__name__
