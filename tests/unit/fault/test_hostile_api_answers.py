# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Answers of the Kubernetes API as they may come, through k8s_client.Api, the ClusterPolicy status and the Node label
planner (issue #28 items 8, 11 and 12), in memory: what a proxy or load balancer answers in the API's place, list pages
that never end, a status of another shape, a damaged ownership annotation. Each ends in the object, or in an error
naming the call (or the Node) and what came; never a traceback, never a loop without end, never a change planned on a
Node whose record of our labels is damaged. The same faults against the stand-in, through the modules:
tests/cluster/test_api_faults.py and test_nfd_labels_api.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import types

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.policy_status import policy_status
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.node_api import (
    OWNED_ANNOTATION, NodeLabelsError, checked_owned_labels, damage, node_metadata, plan_nodes)
from tests.unit.fault.fault_support import count

HOST = 'https://api.example:6443'
NODES = k8s_client.ObjectRef('Node', '(all)', 'nodes')
SUITE = 'hostile API answers'


def api():
    return k8s_client.Api(types.SimpleNamespace(configuration=types.SimpleNamespace(host=HOST)), sleep=lambda seconds: None)


def answering(*bodies):
    """A client method giving `bodies` (bytes) one after the other, as _preload_content=False answers; records its calls."""
    calls = []

    def method(*args, **kwargs):
        assert kwargs['_preload_content'] is False
        calls.append(kwargs)
        return types.SimpleNamespace(data=bodies[min(len(calls), len(bodies)) - 1])
    return method, calls


# (case, body, what the error says came)
NOT_AN_OBJECT = [
    ('HTML page', b'<html><body><h1>502 Bad Gateway</h1></body></html>', "text that is not JSON, not a Kubernetes object (is a proxy"),
    ('empty body', b'', 'text that is not JSON'),
    ('not UTF-8', b'\xff\xfe{}', 'text that is not JSON'),
    ('JSON array', b'[]', 'a JSON array'),
    ('JSON string', b'"ok"', 'a JSON string'),
    ('JSON null', b'null', 'JSON null'),
    ('JSON number', b'7', 'a JSON number'),
]


@pytest.mark.parametrize('case, body, what', NOT_AN_OBJECT, ids=[case[0] for case in NOT_AN_OBJECT])
def test_an_answer_that_is_no_object_is_named(case, body, what):
    method, _calls = answering(body)
    with pytest.raises(k8s_client.ApiError) as caught:
        api().read('get', k8s_client.ObjectRef('Node', 'gpu-1', 'nodes'), method)
    assert str(caught.value).startswith('cannot get Node gpu-1: the Kubernetes API at %s answered with ' % HOST)
    assert what in str(caught.value)
    count(SUITE, 'cases')


def page(items, token=None):
    return json.dumps({'kind': 'NodeList', 'metadata': {'continue': token} if token else {}, 'items': items}).encode()


NODE = {'metadata': {'name': 'gpu-1'}}


@pytest.mark.parametrize('bodies, error', [
    ([page([NODE], 'a'), page([NODE], 'a')], "the API gave the continue token 'a' a second time"),
    ([page([], 'a'), page([], 'b'), page([], 'a')], "the API gave the continue token 'a' a second time"),
    ([page([], 'x%d' % number) for number in range(k8s_client.MAX_PAGES + 1)], 'still gave a continue token after 1000 pages of 500'),
    ([b'{"items": {"gpu-1": {}}}'], 'has no list of objects under items'),
    ([b'{"items": ["gpu-1"]}'], 'has no list of objects under items'),
    ([page([NODE], 'a'), b'<html></html>'], 'answered with text that is not JSON'),
], ids=['the same token again', 'a token seen before', 'tokens without end', 'items not a list', 'items not objects', 'a page of HTML'])
def test_list_pages_end(bodies, error):
    """Issue #28 item 12: nfd_labels with nodes: followed a repeated continue token for ever."""
    method, calls = answering(*bodies)
    with pytest.raises(k8s_client.ApiError) as caught:
        api().list_items(NODES, method)
    assert str(caught.value).startswith('cannot ') and error in str(caught.value)
    assert len(calls) <= k8s_client.MAX_PAGES
    count(SUITE, 'cases')


def test_list_pages_are_followed_to_their_end():
    method, calls = answering(page([NODE], 'a'), page([{'metadata': {'name': 'gpu-2'}}], 'b'), page([]))
    assert [item['metadata']['name'] for item in api().list_items(NODES, method)] == ['gpu-1', 'gpu-2']
    assert [(call.get('_continue'), call['limit']) for call in calls] == [(None, 500), ('a', 500), ('b', 500)]


@pytest.mark.parametrize('status', [
    None, 'ready', {'conditions': 'Ready'}, {'conditions': ['Ready', 7]}, {'conditions': [{'type': ['Ready']}, {'status': 'True'}]},
    {'conditions': {'Ready': 'True'}},
], ids=['none', 'a string', 'string conditions', 'conditions of strings', 'conditions without a type', 'conditions as an object'])
def test_a_cluster_policy_status_of_another_shape_is_written_anew(status):
    """Issue #28 item 11: string conditions failed with AttributeError; they say nothing of since when they hold."""
    written = policy_status(status, 'ready', 'Reconciled', '', 'gpu-operator', now='2026-11-27T00:00:00Z')
    assert [(c['type'], c['status'], c['lastTransitionTime']) for c in written['conditions']] == [
        ('Ready', 'True', '2026-11-27T00:00:00Z'), ('Error', 'False', '2026-11-27T00:00:00Z')]
    count(SUITE, 'cases')


LABELS = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'Tesla-T4'}


@pytest.mark.parametrize('text, problem', [
    ('not json', 'it is not JSON (Expecting value: line 1 column 1 (char 0))'), ('', 'it is not JSON'), ('{"a": "1"', 'it is not JSON'),
    ('{"a": 1, "b": "x"}', 'not a JSON object of label values'), ('["a", 3]', 'not a JSON object of label values'),
    ('"a"', 'not a JSON object'), ('null', 'not a JSON object'), ('{"a": null}', 'not a JSON object'),
])
def test_a_damaged_ownership_record_touches_nothing(text, problem):
    """Issue #28 item 8: with the record unreadable, absent removed none of the labels and dropped the record."""
    annotations = {OWNED_ANNOTATION: text}
    assert problem in damage(annotations)
    with pytest.raises(NodeLabelsError) as caught:
        checked_owned_labels('gpu-1', annotations)
    assert str(caught.value).startswith('Node gpu-1: annotation %s is damaged: ' % OWNED_ANNOTATION) and problem in str(caught.value)
    assert 'nothing is changed on this Node' in str(caught.value) and 'kubectl annotate node gpu-1 %s-' % OWNED_ANNOTATION in str(caught.value)
    nodes = dict((name, node_metadata({'metadata': {'name': name, 'labels': LABELS, 'annotations': recorded}}))
                 for name, recorded in (('gpu-1', annotations), ('gpu-2', {OWNED_ANNOTATION: json.dumps(LABELS)})))
    for state in ('absent', 'present'):
        planned = plan_nodes(nodes, [('gpu-1', LABELS), ('gpu-2', LABELS)], state)
        assert planned['gpu-1'] == dict(current=LABELS, plan=None, patch=None, error=str(caught.value))
        assert planned['gpu-2']['error'] is None, 'the other Nodes are planned all the same'
    count(SUITE, 'cases')
