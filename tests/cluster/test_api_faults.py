"""API faults from the stand-in against our API code: 409, 500/429, timeouts and 403, and answers as a proxy may give
them (issue #28 items 11 and 12): an HTML page with 200, an object without resourceVersion, a status of another shape,
list pages that never end.

nfd_labels (Node patching) and cluster_policy_status run in-process, the gpu_cluster_base role through
ansible-playbook. A transient fault is retried and the run succeeds; 403 fails at once with a message naming the
verb, the object and the RBAC rule; an answer that is no Kubernetes object fails at once naming the object and what
came; a re-run after the fault converges (changed false). The counts of faults injected and requests seen are printed
(pytest -s).

Stand-in only: the `kube_faults` fixture skips these tests on a real cluster (KUBECONFIG set).
"""
import functools
import json
import re
import threading
import time

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.prerequisites import cluster_policy_crd
from ansible_collections.gpuops.gpu_operator.plugins.modules import cluster_policy_status
from tests.cluster.helpers import delete_namespace, unique
from tests.cluster.test_cluster_roles import run_roles
from tests.cluster.test_nfd_labels_api import node_meta, run
from tests.module_runner import run_module

POLICY_CRD = 'clusterpolicies.nvidia.com'
RACER = {'gpuops.test/racer': 'yes', 'nvidia.com/gpu.deploy.driver': 'pre-installed'}


def report(capsys, what, *faults):
    """Print the fault counts to the terminal, past the capture that reads the module results."""
    with capsys.disabled():
        print(f'\n{what}: ' + '; '.join(f'{f.method} {f.path.pattern} -> {f.status or "stall %ss" % f.delay}: injected {f.injected}, '
                                        f'requests seen {f.seen}' for f in faults))


@pytest.fixture(name='short_timeout')
def fixture_short_timeout(monkeypatch):
    """Modules wait 0.5 s for an answer instead of 30 s, so that a short stall outlasts it."""
    monkeypatch.setattr(k8s_client, 'Api', functools.partial(k8s_client.Api, timeout=(2, 0.5)))


@pytest.fixture(name='node')
def fixture_node(kube_api, kube_faults):
    """(name, CoreV1Api, Node path) of a throw-away Node carrying a foreign label."""
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    name = unique('gpuops-faults')
    core.create_node({'metadata': {'name': name, 'labels': {'gpuops.test/foreign': 'keep-me'}}})
    yield name, core, f'/api/v1/nodes/{name}'
    core.delete_node(name)


def label(capsys, monkeypatch, kube_api, name, fixture='t4', **args):
    return run(capsys, monkeypatch, fixture, node_name=name, kubeconfig=kube_api.kubeconfig, **args)


def test_nfd_labels_retries_500_and_timeouts(kube_api, kube_faults, node, capsys, monkeypatch, short_timeout):
    name, core, path = node
    errors = kube_faults.inject('PATCH', path, status=500, times=2)
    result = label(capsys, monkeypatch, kube_api, name)
    assert 'failed' not in result, result['msg']
    assert result['changed'] is True and node_meta(core, name)[0]['nvidia.com/gpu.product'] == 'Tesla-T4'
    assert (errors.injected, errors.seen) == (2, 3), 'two 500s, then the third try passed'
    report(capsys, 'nfd_labels, 500', errors)

    # A stalled read and a stalled write: each try waits 0.5 s, then the next one gets through.
    read, write = kube_faults.inject('GET', path, delay=1.5), kube_faults.inject('PATCH', path, delay=1.5)
    started = time.monotonic()
    result = label(capsys, monkeypatch, kube_api, name, 'a100-sxm4-80gb-mig', mig_strategy='single')
    assert 'failed' not in result, result['msg']
    assert result['changed'] is True and node_meta(core, name)[0]['nvidia.com/gpu.product'] == 'NVIDIA-A100-SXM4-80GB'
    assert read.seen >= 2 and write.seen >= 2 and time.monotonic() - started < 5
    report(capsys, 'nfd_labels, timeout', read, write)
    time.sleep(1.5)  # the stalled write then reaches the store with its old resourceVersion: refused, it changes nothing

    again = label(capsys, monkeypatch, kube_api, name, 'a100-sxm4-80gb-mig', mig_strategy='single')
    assert again['changed'] is False and node_meta(core, name)[0]['gpuops.test/foreign'] == 'keep-me'


def test_nfd_labels_conflict_rereads_and_keeps_what_others_set(kube_api, kube_faults, node, capsys, monkeypatch):
    name, core, path = node
    injected = kube_faults.inject('PATCH', path, status=409)
    result = label(capsys, monkeypatch, kube_api, name)
    assert 'failed' not in result and result['changed'] is True
    assert (injected.injected, injected.seen) == (1, 2)
    report(capsys, 'nfd_labels, injected 409', injected)

    # A real conflict: someone marks the driver pre-installed while our patch is on its way (stalled).
    stall = kube_faults.inject('PATCH', path, delay=1.0)
    outcome = []
    module = threading.Thread(target=lambda: outcome.append(label(capsys, monkeypatch, kube_api, name, 'a100-sxm4-80gb-mig')))
    module.start()
    deadline = time.monotonic() + 10
    while stall.seen == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    core.patch_node(name, {'metadata': {'labels': RACER}}, _content_type='application/merge-patch+json')
    module.join(30)
    [result] = outcome
    assert 'failed' not in result, result['msg']
    labels = node_meta(core, name)[0]
    assert labels['nvidia.com/gpu.product'] == 'NVIDIA-A100-SXM4-80GB' and labels['gpuops.test/foreign'] == 'keep-me'
    assert {key: labels[key] for key in RACER} == RACER, 'the re-read plan keeps the racer\'s labels, deploy.driver included'
    assert stall.seen == 3, 'our patch (refused: 409), the racer\'s, our patch after the re-read'
    report(capsys, 'nfd_labels, real 409', stall)
    assert label(capsys, monkeypatch, kube_api, name, 'a100-sxm4-80gb-mig')['changed'] is False


def test_nfd_labels_403_fails_at_once_then_a_rerun_converges(kube_api, kube_faults, node, capsys, monkeypatch):
    name, core, path = node
    forbidden = kube_faults.inject('PATCH', path, status=403)
    result = label(capsys, monkeypatch, kube_api, name, failed=True)
    assert result['failed'] is True
    assert result['msg'] == (
        f'cannot patch Node {name}: API answered 403 Forbidden: nodes "{name}" is forbidden: User "system:serviceaccount:gpuops:standin" '
        'cannot patch resource "nodes" in API group "" at the cluster scope; the credentials lack the RBAC permission '
        'apiGroups [""], resources ["nodes"], verbs ["patch"] (a ClusterRole)')
    assert (forbidden.injected, forbidden.seen) == (1, 1), 'no retry'
    assert not any(key.startswith('nvidia.com/') for key in node_meta(core, name)[0])
    report(capsys, 'nfd_labels, 403', forbidden)
    assert label(capsys, monkeypatch, kube_api, name)['changed'] is True
    assert label(capsys, monkeypatch, kube_api, name)['changed'] is False


HTML = '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>'


def test_nfd_labels_fails_clearly_on_an_answer_that_is_no_kubernetes_object(kube_api, kube_faults, node, capsys, monkeypatch):
    name, core, path = node
    for text, content_type, what in ((HTML, 'text/html', 'text that is not JSON'), ('[]', 'application/json', 'a JSON array')):
        page = kube_faults.inject('GET', path, text=text, content_type=content_type)
        result = label(capsys, monkeypatch, kube_api, name, failed=True)
        assert result['msg'].startswith('cannot get Node %s: the Kubernetes API at %s answered with %s, not a Kubernetes object'
                                        % (name, kube_api.api_client.configuration.host, what)) and 'exception' not in result
        assert (page.injected, page.seen) == (1, 1) and not any(key.startswith('nvidia.com/') for key in node_meta(core, name)[0])
        report(capsys, 'nfd_labels, %s' % what, page)
    assert label(capsys, monkeypatch, kube_api, name)['changed'] is True


def test_nfd_labels_stops_when_the_node_list_pages_never_end(kube_api, kube_faults, node, capsys, monkeypatch):
    """Issue #28 item 12: an answer repeating its continue token was followed for ever."""
    name, core, _path = node
    endless = kube_faults.inject('GET', '/api/v1/nodes', times=50, text=json.dumps(
        {'kind': 'NodeList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': '1', 'continue': 'again'}, 'items': []}))
    nodes = [dict(name=name, labels={'gpuops.test/x': 'y'})]
    result = run(capsys, monkeypatch, 't4', nodes=nodes, kubeconfig=kube_api.kubeconfig, failed=True)
    assert result['msg'].startswith("cannot list Node (all): the API gave the continue token 'again' a second time")
    assert (endless.injected, endless.seen) == (2, 2) and 'gpuops.test/x' not in node_meta(core, name)[0]
    report(capsys, 'nfd_labels nodes:, a repeated continue token', endless)
    kube_faults.clear_faults()
    assert run(capsys, monkeypatch, 't4', nodes=nodes, kubeconfig=kube_api.kubeconfig)['changed'] is True


@pytest.fixture(name='policy')
def fixture_policy(kube_api, kube_faults):
    """(name, path) of a throw-away ClusterPolicy; the CRD is created for it when missing and then removed."""
    ext = kubernetes.client.ApiextensionsV1Api(kube_api.api_client)
    custom = kubernetes.client.CustomObjectsApi(kube_api.api_client)
    try:
        ext.read_custom_resource_definition(POLICY_CRD)
        created_crd = False
    except ApiException as exc:
        assert exc.status == 404
        ext.create_custom_resource_definition(cluster_policy_crd())
        created_crd = True
    name = unique('gpuops-faults')
    custom.create_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy',
                                                                                'metadata': {'name': name}, 'spec': {}})
    yield name, f'/apis/nvidia.com/v1/clusterpolicies/{name}'
    custom.delete_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', name)
    if created_crd:
        ext.delete_custom_resource_definition(POLICY_CRD)


def record(capsys, kube_api, name, state='ready', reason='Reconciled', failed=False):
    args = dict(name=name, state=state, reason=reason, detail='faults', namespace='gpu-operator', kubeconfig=kube_api.kubeconfig)
    return run_module(capsys, cluster_policy_status.main, args, failed=failed)


def stored_state(kube_api, name):
    policy = kubernetes.client.CustomObjectsApi(kube_api.api_client).get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', name)
    return (policy.get('status') or {}).get('state')


def test_cluster_policy_status_rereads_on_409_and_retries_500_and_429(kube_api, kube_faults, policy, capsys):
    name, path = policy
    read_error = kube_faults.inject('GET', path, status=500)
    conflict = kube_faults.inject('PATCH', f'{path}/status', status=409)
    result = record(capsys, kube_api, name)
    assert 'failed' not in result, result['msg']
    assert (read_error.injected, read_error.seen) == (1, 3), 'a 500, the read it retried, the read after the conflict'
    assert (conflict.injected, conflict.seen) == (1, 2)
    assert result['changed'] is True and stored_state(kube_api, name) == 'ready'
    report(capsys, 'cluster_policy_status, 500 and 409', read_error, conflict)

    throttled = kube_faults.inject('GET', path, status=429, retry_after=1)
    started = time.monotonic()
    again = record(capsys, kube_api, name)
    assert again['changed'] is False and 'failed' not in again
    assert throttled.seen == 2 and time.monotonic() - started >= 1.0, 'Retry-After: 1 is honoured (the backoff alone is 0.5 s)'
    report(capsys, 'cluster_policy_status, 429', throttled)


def test_cluster_policy_status_retries_a_timeout(kube_api, kube_faults, policy, capsys, short_timeout):
    name, path = policy
    stall = kube_faults.inject('PATCH', f'{path}/status', delay=1.5)
    result = record(capsys, kube_api, name, 'notReady', 'OperandNotReady')
    assert 'failed' not in result, result['msg']
    assert result['changed'] is True and stored_state(kube_api, name) == 'notReady'
    assert stall.seen >= 2
    report(capsys, 'cluster_policy_status, timeout', stall)
    time.sleep(1.5)  # the stalled write arrives with its old resourceVersion: refused
    assert record(capsys, kube_api, name, 'notReady', 'OperandNotReady')['changed'] is False


def test_cluster_policy_status_403_names_the_rbac_rule(kube_api, kube_faults, policy, capsys):
    name, path = policy
    forbidden = kube_faults.inject('PATCH', f'{path}/status', status=403)
    result = record(capsys, kube_api, name, failed=True)
    assert result['failed'] is True and result['msg'].startswith(f'cannot patch ClusterPolicy {name} status: API answered 403 Forbidden: ')
    assert result['msg'].endswith('; the credentials lack the RBAC permission apiGroups ["nvidia.com"], resources ["clusterpolicies/status"], '
                                  'verbs ["patch"] (a ClusterRole)')
    assert (forbidden.injected, forbidden.seen) == (1, 1) and stored_state(kube_api, name) is None
    report(capsys, 'cluster_policy_status, 403', forbidden)
    assert record(capsys, kube_api, name)['changed'] is True
    assert record(capsys, kube_api, name)['changed'] is False


def test_role_retries_transient_faults_and_stops_at_403(kube_api, kube_faults, tmp_path, capsys):
    namespace = unique('gpuops-faults')
    # The namespace is the role's first object in the namespace's name (unique to this test).
    namespaces, own = '/api/v1/namespaces', f'/api/v1/namespaces/{namespace}'
    variables = dict(gpu_cluster_base_namespace=namespace)
    try:
        # kubernetes.core waits out a stall (it sets no request timeout); a 500 and a 409 fail the apply: it runs again.
        faults = [kube_faults.inject('POST', namespaces, status=500), kube_faults.inject('POST', namespaces, status=409),
                  kube_faults.inject('GET', own, delay=0.5)]
        code, changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base'], variables)
        assert code == 0, out
        retries = re.findall(r'FAILED - RETRYING: \[localhost\]: Apply the namespace', out)
        assert len(retries) == 2 and changed > 0, out
        assert [f.injected for f in faults] == [1, 1, 1]
        report(capsys, f'gpu_cluster_base, {len(retries)} retries', *faults)

        forbidden = kube_faults.inject('GET', own, status=403)
        code, changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base'], variables)
        assert code != 0 and 'FAILED - RETRYING' not in out, out
        assert 'cannot get resource "namespaces" in API group "" at the cluster scope' in out.replace('\\', ''), out
        assert (forbidden.injected, forbidden.seen) == (1, 1)
        report(capsys, 'gpu_cluster_base, 403', forbidden)

        code, changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base'], variables)
        assert code == 0 and changed == 0, out
    finally:
        delete_namespace(kube_api, namespace)


def test_cluster_policy_status_fails_clearly_on_answers_of_another_kind(kube_api, kube_faults, policy, capsys):
    name, path = policy
    page = kube_faults.inject('GET', path, text=HTML, content_type='text/html')
    result = record(capsys, kube_api, name, failed=True)
    assert result['msg'].startswith('cannot get ClusterPolicy %s: the Kubernetes API at %s answered with text that is not JSON'
                                    % (name, kube_api.api_client.configuration.host)) and 'exception' not in result
    # An object without metadata.resourceVersion: the write it guards cannot be made.
    bare = kube_faults.inject('GET', path, text=json.dumps({'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': name}}))
    result = record(capsys, kube_api, name, failed=True)
    assert result['msg'].startswith('cannot get ClusterPolicy %s: the API\'s answer has no metadata.resourceVersion' % name)
    assert (page.injected, bare.injected) == (1, 1) and stored_state(kube_api, name) is None
    report(capsys, 'cluster_policy_status, HTML and no resourceVersion', page, bare)


@pytest.mark.parametrize('status', [{'conditions': 'Ready'}, {'conditions': ['Ready', {'type': ['x']}, {'type': 'Ready'}]}, 'ready'])
def test_cluster_policy_status_replaces_a_status_of_another_shape(kube_api, kube_faults, policy, capsys, status):
    """String conditions (issue #28 item 11) said nothing of since when they hold: the status is written anew."""
    name, _path = policy
    custom = kubernetes.client.CustomObjectsApi(kube_api.api_client)
    custom.patch_cluster_custom_object_status('nvidia.com', 'v1', 'clusterpolicies', name, {'status': status})
    result = record(capsys, kube_api, name)
    assert result['changed'] is True and stored_state(kube_api, name) == 'ready'
    assert [condition['type'] for condition in result['status']['conditions']] == ['Ready', 'Error']
    assert record(capsys, kube_api, name)['changed'] is False


def test_a_removal_goes_on_when_another_run_removed_an_object_first(kube_api, kube_faults, tmp_path, capsys):
    """A sliced uninstall: every slice removes the cluster prerequisites at the same time, so one slice's DELETE may come
    after another's and be answered 404. Here the role's DELETE of RuntimeClass nvidia is held back 3 s; meanwhile the test
    deletes the RuntimeClass, as the other slice would, and the held request then meets the 404 a real apiserver gives.
    The removal runs again, finds the object gone and the uninstall ends."""
    namespace = unique('gpuops-faults')
    variables = dict(gpu_cluster_base_namespace=namespace)
    node = kubernetes.client.NodeV1Api(kube_api.api_client)
    try:
        code, _changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base'], variables)
        assert code == 0, out
        held = kube_faults.inject('DELETE', '/apis/node.k8s.io/v1/runtimeclasses/nvidia', delay=3.0)
        outcome = {}
        removal = threading.Thread(target=lambda: outcome.update(zip(
            ('code', 'changed', 'out'), run_roles(kube_api, tmp_path, [{'role': 'gpu_cluster_base', 'gpu_cluster_base_state': 'absent'}], variables))))
        removal.start()
        deadline = time.monotonic() + 120
        while held.injected == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert held.injected == 1, 'the role never deleted RuntimeClass nvidia'
        node.delete_runtime_class('nvidia')
        removal.join(300)
        assert outcome['code'] == 0, outcome['out']
        retries = re.findall(r'FAILED - RETRYING: \[localhost\]: Remove the RuntimeClasses', outcome['out'])
        assert len(retries) == 1, outcome['out']
        assert 'nvidia' not in [rc.metadata.name for rc in node.list_runtime_class().items]
        report(capsys, 'gpu_cluster_base absent, the RuntimeClass removed by another run first', held)
    finally:
        delete_namespace(kube_api, namespace)
