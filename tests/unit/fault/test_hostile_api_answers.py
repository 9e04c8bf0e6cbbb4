# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Answers of the Kubernetes API as they may come, through k8s_client.Api and the ClusterPolicy status (issue #28
items 11 and 12), in memory: what a proxy or load balancer answers in the API's place, list pages that never end, a
status of another shape. Each ends in the object, or in an ApiError naming the call and what came; never a traceback,
never a loop without end. The same faults against the stand-in, through the modules: tests/cluster/test_api_faults.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import types

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.policy_status import policy_status
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
