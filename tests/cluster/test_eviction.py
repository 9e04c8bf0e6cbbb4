"""The Eviction API (POST pods/NAME/eviction), which kubernetes.core.k8s_drain and kubectl drain use."""
import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster.helpers import raw, unique


def make_pod(core, namespace, **metadata):
    name = unique('evictee')
    core.create_namespaced_pod(namespace, {'metadata': dict(metadata, name=name),
                                           'spec': {'containers': [{'name': 'c', 'image': 'registry.example/pause:3.10'}]}})
    return name


def eviction(name, namespace):
    return {'apiVersion': 'policy/v1', 'kind': 'Eviction', 'metadata': {'name': name, 'namespace': namespace}}


def test_eviction_deletes_the_pod(kube_api):
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    name = make_pod(core, kube_api.namespace)
    core.create_namespaced_pod_eviction(name, kube_api.namespace, eviction(name, kube_api.namespace))
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod(name, kube_api.namespace)
    assert caught.value.status == 404


def test_eviction_of_a_pod_with_finalizers_marks_it_deleted(kube_api):
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    name = make_pod(core, kube_api.namespace, finalizers=['gpuops.test/hold'])
    core.create_namespaced_pod_eviction(name, kube_api.namespace, eviction(name, kube_api.namespace))
    assert core.read_namespaced_pod(name, kube_api.namespace).metadata.deletion_timestamp is not None
    core.patch_namespaced_pod(name, kube_api.namespace, {'metadata': {'finalizers': None}})


def test_eviction_errors(kube_api):
    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    name = make_pod(core, kube_api.namespace)
    path = f'/api/v1/namespaces/{kube_api.namespace}/pods'
    assert raw(kube_api, 'POST', f'{path}/{name}/eviction', eviction('another', kube_api.namespace))[0] == 400
    assert raw(kube_api, 'POST', f'{path}/{unique("missing")}/eviction', eviction(None, kube_api.namespace))[0] == 404
    assert raw(kube_api, 'GET', f'{path}/{name}/eviction')[0] in (404, 405), 'an eviction is only created'
    assert core.read_namespaced_pod(name, kube_api.namespace).metadata.deletion_timestamp is None
    core.delete_namespaced_pod(name, kube_api.namespace)


def test_discovery_lists_pods_eviction_as_create(kube_api):
    status, resources = raw(kube_api, 'GET', '/api/v1')
    assert status == 200
    entry = next(item for item in resources['resources'] if item['name'] == 'pods/eviction')
    assert entry['verbs'] == ['create']
