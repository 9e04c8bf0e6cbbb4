"""kubernetes.dynamic.DynamicClient against the API: discovery, get/list, client- and server-side apply, patch."""
import pytest
from kubernetes.dynamic import DynamicClient

from tests.cluster.helpers import unique


@pytest.fixture(name='dyn', scope='module')
def fixture_dyn(kube_api):
    return DynamicClient(kube_api.api_client)


def test_get_list_apply_patch(kube_api, dyn):
    configmaps = dyn.resources.get(api_version='v1', kind='ConfigMap')
    name = unique('dyn')
    body = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': kube_api.namespace, 'labels': {'dyn': 'yes'}}, 'data': {'a': '1'}}
    created = configmaps.server_side_apply(body=body, field_manager='gpuops-test')
    assert created.data.a == '1'
    applied = configmaps.server_side_apply(body=dict(body, data={'a': '2'}), field_manager='gpuops-test')
    assert applied.data.a == '2' and applied.metadata.resourceVersion != created.metadata.resourceVersion
    replaced = configmaps.replace(body=dict(applied.to_dict(), data={'a': '2', 'r': '1'}))
    assert replaced.data.r == '1'
    patched = configmaps.patch(body={'metadata': {'name': name}, 'data': {'b': '3'}}, namespace=kube_api.namespace, content_type='application/merge-patch+json')
    assert dict(patched.data) == {'a': '2', 'r': '1', 'b': '3'}
    smp = configmaps.patch(body={'metadata': {'name': name}, 'data': {'r': None}}, namespace=kube_api.namespace)  # strategic by default
    assert dict(smp.data) == {'a': '2', 'b': '3'}
    assert configmaps.get(name=name, namespace=kube_api.namespace).metadata.uid == created.metadata.uid
    listed = configmaps.get(namespace=kube_api.namespace, label_selector='dyn=yes')
    assert listed.kind == 'ConfigMapList' and [item.metadata.name for item in listed.items] == [name]


def test_cluster_scoped_and_apps(kube_api, dyn):
    nodes = dyn.resources.get(api_version='v1', kind='Node').get()
    assert nodes.kind == 'NodeList'
    daemonsets = dyn.resources.get(api_version='apps/v1', kind='DaemonSet')
    assert daemonsets.namespaced and daemonsets.get(namespace=kube_api.namespace).kind == 'DaemonSetList'
