# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The API call helper: which faults are retried and after how long, what the errors say, read-modify-write on 409."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from types import SimpleNamespace

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.client import Api, ApiError, ObjectRef

NODE = ObjectRef('Node', 'gpu-1', 'nodes')
POLICY_STATUS = ObjectRef('ClusterPolicy', 'cluster-policy', 'clusterpolicies', 'nvidia.com', subresource='status')
SECRET = ObjectRef('Secret', 'pull', 'secrets', namespace='gpu-operator')
HOST = 'https://api.example:6443'


def answer(status, message=None, retry_after=None, reason=None):
    """An ApiException as the client raises it for an HTTP answer with a v1 Status body."""
    exc = ApiException(status=status, reason=reason or {409: 'Conflict', 403: 'Forbidden', 503: 'Service Unavailable'}.get(status, 'Error'))
    exc.body = json.dumps({'kind': 'Status', 'code': status, 'message': message or 'the message'})
    exc.headers = {'Retry-After': retry_after} if retry_after is not None else {}
    return exc


READ_TIMEOUT = urllib3.exceptions.ReadTimeoutError(None, '/api/v1/nodes/gpu-1', 'Read timed out. (read timeout=30)')
REFUSED = urllib3.exceptions.NewConnectionError(None, 'Failed to establish a new connection: [Errno 111] Connection refused')


@pytest.mark.parametrize('exc, expected', [
    (answer(500), (500, True, None)),
    (answer(502), (502, True, None)),
    (answer(503, retry_after='2'), (503, True, 2.0)),
    (answer(504), (504, True, None)),
    (answer(429, retry_after='Wed, 21 Oct 2015 07:28:00 GMT'), (429, True, None)),
    (answer(409), (409, False, None)),
    (answer(401), (401, False, None)),
    (answer(403), (403, False, None)),
    (answer(404), (404, False, None)),
    (answer(422), (422, False, None)),
    (ApiException(status=0, reason='SSLError'), (None, False, None)),
    (READ_TIMEOUT, (None, True, None)),
    (urllib3.exceptions.ConnectTimeoutError(None, 'timed out'), (None, True, None)),
    (urllib3.exceptions.ProtocolError('Connection aborted.', ConnectionResetError(104, 'reset')), (None, True, None)),
    (REFUSED, (None, False, None)),
    (ValueError('not ours'), None),
])
def test_classify(exc, expected):
    assert k8s_client.classify(exc) == expected


@pytest.mark.parametrize('tries, retry_after, expected', [
    (1, None, 0.5), (2, None, 1.0), (3, None, 2.0), (7, None, 10.0),  # doubled, capped
    (1, 3.0, 3.0), (3, 0.0, 0.0), (1, 600.0, 10.0), (1, -5.0, 0.0),  # the server's Retry-After wins, capped
])
def test_retry_delay(tries, retry_after, expected):
    assert k8s_client.retry_delay(tries, 0.5, retry_after) == expected


@pytest.mark.parametrize('exc, ref, verb, tries, expected', [
    (answer(403, 'nodes "gpu-1" is forbidden: User "u" cannot patch resource "nodes" in API group "" at the cluster scope'), NODE, 'patch', 1,
     'cannot patch Node gpu-1: API answered 403 Forbidden: nodes "gpu-1" is forbidden: User "u" cannot patch resource "nodes" in API group "" '
     'at the cluster scope; the credentials lack the RBAC permission apiGroups [""], resources ["nodes"], verbs ["patch"] (a ClusterRole)'),
    (answer(403), POLICY_STATUS, 'patch', 1,
     'cannot patch ClusterPolicy cluster-policy status: API answered 403 Forbidden: the message; the credentials lack the RBAC permission '
     'apiGroups ["nvidia.com"], resources ["clusterpolicies/status"], verbs ["patch"] (a ClusterRole)'),
    (answer(403), SECRET, 'get', 1,
     'cannot get Secret gpu-operator/pull: API answered 403 Forbidden: the message; the credentials lack the RBAC permission '
     'apiGroups [""], resources ["secrets"], verbs ["get"] (a Role in namespace gpu-operator or a ClusterRole)'),
    (answer(401, 'Unauthorized', reason='Unauthorized'), NODE, 'get', 1,
     'cannot get Node gpu-1: API answered 401 Unauthorized: Unauthorized; the API did not accept the credentials (kubeconfig user, api_key, '
     'client certificate)'),
    (answer(503), NODE, 'get', 4, 'cannot get Node gpu-1: API answered 503 Service Unavailable: the message (gave up after 4 tries)'),
    (READ_TIMEOUT, NODE, 'get', 4, 'cannot get Node gpu-1: the Kubernetes API at %s did not answer within 30s (gave up after 4 tries)' % HOST),
    (REFUSED, NODE, 'get', 1, 'cannot get Node gpu-1: the Kubernetes API at %s is unreachable: %s' % (HOST, REFUSED)),
])
def test_describe(exc, ref, verb, tries, expected):
    assert k8s_client.describe(exc, verb, ref, HOST, (10, 30), tries) == expected


class Script(object):
    """A client method that raises or returns the scripted outcomes in turn and records its calls."""

    def __init__(self, *outcomes):
        self.outcomes, self.calls = list(outcomes), []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def api(sleeps):
    return Api(SimpleNamespace(configuration=SimpleNamespace(host=HOST)), sleep=sleeps.append)


@pytest.mark.parametrize('outcomes, result, sleeps, calls', [
    (['ok'], 'ok', [], 1),
    ([answer(500), answer(503, retry_after='3'), 'ok'], 'ok', [0.5, 3.0], 3),
    ([READ_TIMEOUT, answer(429), answer(502), 'ok'], 'ok', [0.5, 1.0, 2.0], 4),
])
def test_call_retries_transient_faults_with_backoff(outcomes, result, sleeps, calls):
    slept = []
    method = Script(*outcomes)
    assert api(slept).call('get', NODE, method, 'gpu-1', _preload_content=False) == result
    assert slept == sleeps and len(method.calls) == calls
    assert method.calls[0] == (('gpu-1',), {'_preload_content': False, '_request_timeout': k8s_client.REQUEST_TIMEOUT})


@pytest.mark.parametrize('outcomes, status, tries, sleeps', [
    ([answer(500)] * 4, 500, 4, [0.5, 1.0, 2.0]),  # bounded: 4 tries in all
    ([answer(403)], 403, 1, []),
    ([answer(404)], 404, 1, []),
    ([answer(409)], 409, 1, []),  # only a fresh read gets past a conflict: read_modify_write's job
    ([answer(422)], 422, 1, []),
    ([REFUSED], None, 1, []),
])
def test_call_gives_up(outcomes, status, tries, sleeps):
    slept = []
    with pytest.raises(ApiError) as caught:
        api(slept).call('patch', NODE, Script(*outcomes))
    assert (caught.value.status, caught.value.tries, slept) == (status, tries, sleeps)
    assert str(caught.value).startswith('cannot patch Node gpu-1: ')


def test_call_lets_other_exceptions_through():
    with pytest.raises(ValueError):
        api([]).call('get', NODE, Script(ValueError('a bug')))


def conflict(tries=1):
    return ApiError('cannot patch Node gpu-1: API answered 409 Conflict: the object has been modified', 409, tries)


@pytest.mark.parametrize('reads, writes, check_mode, expected', [
    (['same'], [], False, ('same', False)),
    (['planned'], ['ok'], False, ('planned', True)),
    (['planned'], [], True, ('planned', True)),  # check mode writes nothing
    (['planned', 'replanned'], [conflict(), 'ok'], False, ('replanned', True)),  # re-read and re-planned
    # The first write timed out, was sent again and met a conflict: the read then shows the write done.
    (['planned', 'same'], [conflict(tries=2)], False, ('planned', True)),
    # A conflict with a single try is someone else's change; nothing is left to do after it.
    (['planned', 'same'], [conflict()], False, ('same', False)),
])
def test_read_modify_write(reads, writes, check_mode, expected):
    plans = iter(reads)
    write = Script(*writes)

    def attempt():
        plan = next(plans)
        return plan, None if plan == 'same' else write

    assert api([]).read_modify_write(attempt, check_mode) == expected
    assert len(write.calls) == len(writes) and next(plans, 'all read') == 'all read', 'each round reads once'


def test_read_modify_write_gives_up_on_a_conflict_that_does_not_end():
    write = Script(conflict(), conflict(), conflict())
    with pytest.raises(ApiError) as caught:
        api([]).read_modify_write(lambda: ('planned', write))
    assert caught.value.status == 409 and str(caught.value).endswith('(the object changed between read and write 3 times)')
    assert len(write.calls) == 3


def test_read_modify_write_lets_other_errors_through():
    with pytest.raises(ApiError) as caught:
        api([]).read_modify_write(lambda: ('planned', Script(ApiError('forbidden', 403))))
    assert caught.value.status == 403


def test_client_configuration_turns_urllib3_retries_off(tmp_path):
    kubeconfig = tmp_path / 'kubeconfig'
    kubeconfig.write_text(json.dumps({'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
                                      'clusters': [{'name': 'c', 'cluster': {'server': HOST}}], 'users': [{'name': 'c', 'user': {}}],
                                      'contexts': [{'name': 'c', 'context': {'cluster': 'c', 'user': 'c'}}]}))
    configuration = k8s_client.client_configuration({'kubeconfig': str(kubeconfig)})
    assert configuration.host == HOST and configuration.retries is False
