"""The stand-in's fault injection itself: error Status answers, stalls, matching, spending and clearing.

Stand-in only: on a real cluster (KUBECONFIG set) the `kube_faults` fixture skips these tests.
"""
import time

import kubernetes
import pytest
import urllib3

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from tests.cluster.helpers import raw, unique


def no_retry_core(kube_api):
    """A CoreV1Api without urllib3's own retries (k8s_client's configuration), so that a stall shows as a timeout."""
    client = kubernetes.client.ApiClient(k8s_client.client_configuration({'kubeconfig': kube_api.kubeconfig}))
    return kubernetes.client.CoreV1Api(client)


def test_error_answers_are_statuses_then_the_fault_is_spent(kube_api, kube_faults):
    path = f'/api/v1/namespaces/{kube_api.namespace}'
    fault = kube_faults.inject('get', path, status=503, times=2)
    other = kube_faults.inject('PATCH', path, status=500)
    answers = [raw(kube_api, 'GET', path) for attempt in range(3)]
    assert [code for code, body in answers] == [503, 503, 200]
    assert answers[0][1] == {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'code': 503,
                             'reason': 'ServiceUnavailable', 'message': 'injected fault (503)',
                             'details': {'name': kube_api.namespace, 'group': '', 'kind': 'namespaces'}}
    assert answers[2][1]['metadata']['name'] == kube_api.namespace
    assert (fault.seen, fault.injected) == (3, 2) and (other.seen, other.injected) == (0, 0), 'PATCH is not GET'
    # The Retry-After header reaches the client (one without urllib3's retries, which would honour it itself).
    kube_faults.inject('GET', path, status=429, retry_after=3)
    with pytest.raises(kubernetes.client.ApiException) as caught:
        no_retry_core(kube_api).read_namespace(kube_api.namespace)
    assert caught.value.status == 429 and caught.value.headers['Retry-After'] == '3'
    # Only a full match of the path: the namespace's configmaps are not the namespace.
    assert raw(kube_api, 'GET', f'{path}/configmaps')[0] == 200
    print(f'\nfaults injected {fault.injected}, requests seen {fault.seen}')


def test_403_and_409_are_worded_as_the_apiserver_words_them(kube_api, kube_faults):
    node = unique('gpuops-fault-node')
    kube_faults.inject('PATCH', f'/api/v1/nodes/{node}', status=403)
    kube_faults.inject('GET', f'/api/v1/namespaces/{kube_api.namespace}/configmaps', status=403)
    kube_faults.inject('PATCH', '/apis/nvidia.com/v1/clusterpolicies/[^/]+/status', status=403)
    kube_faults.inject('PUT', '/api/v1/nodes/.*', status=409)
    code, body = raw(kube_api, 'PATCH', f'/api/v1/nodes/{node}', {'metadata': {}}, 'application/merge-patch+json')
    assert code == 403 and body['reason'] == 'Forbidden' and body['message'] == (
        f'nodes "{node}" is forbidden: User "system:serviceaccount:gpuops:standin" cannot patch resource "nodes" in API group "" at the cluster scope')
    code, body = raw(kube_api, 'GET', f'/api/v1/namespaces/{kube_api.namespace}/configmaps')
    assert code == 403 and body['message'] == ('configmaps is forbidden: User "system:serviceaccount:gpuops:standin" cannot list resource '
                                               f'"configmaps" in API group "" in the namespace "{kube_api.namespace}"')
    code, body = raw(kube_api, 'PATCH', '/apis/nvidia.com/v1/clusterpolicies/p1/status', {}, 'application/merge-patch+json')
    assert code == 403 and 'cannot patch resource "clusterpolicies/status" in API group "nvidia.com" at the cluster scope' in body['message']
    code, body = raw(kube_api, 'PUT', f'/api/v1/nodes/{node}', {'metadata': {'name': node}})
    assert code == 409 and body['reason'] == 'Conflict' and body['message'].startswith(f'Operation cannot be fulfilled on nodes "{node}"')


def test_a_stall_outlasts_a_client_timeout_or_delays_the_answer(kube_api, kube_faults):
    path = f'/api/v1/namespaces/{kube_api.namespace}'
    core = no_retry_core(kube_api)
    kube_faults.inject('GET', path, delay=1.0)
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        core.read_namespace(kube_api.namespace, _request_timeout=0.3)
    assert time.monotonic() - started < 0.9
    # Without a status the stalled request is then served: a slow server, not an error.
    fault = kube_faults.inject('GET', path, delay=0.4)
    started = time.monotonic()
    assert core.read_namespace(kube_api.namespace).metadata.name == kube_api.namespace
    assert time.monotonic() - started >= 0.4 and fault.injected == 1
    # A stall followed by a status.
    kube_faults.inject('GET', path, delay=0.2, status=504)
    assert raw(kube_api, 'GET', path)[0] == 504


def test_an_answer_of_another_kind_is_given_as_it_is(kube_api, kube_faults):
    """A proxy's HTML page with 200, or a JSON body of the test's own: what the client reads, unchanged (issue #28)."""
    path = f'/api/v1/namespaces/{kube_api.namespace}'
    kube_faults.inject('GET', path, text='<html><body>Bad Gateway</body></html>', content_type='text/html')
    kube_faults.inject('GET', path, status=500, text='{"kind": "Status"}')
    assert raw(kube_api, 'GET', path) == (200, '<html><body>Bad Gateway</body></html>')
    assert raw(kube_api, 'GET', path) == (500, {'kind': 'Status'})
    assert raw(kube_api, 'GET', path)[1]['metadata']['name'] == kube_api.namespace


def test_faults_are_cleared_and_bad_ones_refused(kube_api, kube_faults):
    path = f'/api/v1/namespaces/{kube_api.namespace}'
    kube_faults.inject('*', path, status=500, times=10)
    assert raw(kube_api, 'GET', path)[0] == 500
    kube_faults.clear_faults()
    assert kube_faults.faults == [] and raw(kube_api, 'GET', path)[0] == 200
    for bad in (dict(), dict(status=200), dict(status=500, times=0), dict(status=199, text='')):
        with pytest.raises(ValueError):
            kube_faults.inject('GET', path, **bad)
