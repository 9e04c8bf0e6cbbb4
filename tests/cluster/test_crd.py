"""CustomResourceDefinitions make their kinds servable: discovery, CRUD, scope, status subresource."""
import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster.helpers import raw, unique


def crd(group, kind, plural, scope):
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{plural}.{group}'},
        'spec': {'group': group, 'scope': scope, 'names': {'kind': kind, 'plural': plural, 'singular': kind.lower(), 'listKind': f'{kind}List'},
                 'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                               'schema': {'openAPIV3Schema': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}]},
    }


@pytest.fixture(name='ext')
def fixture_ext(kube_api):
    return kubernetes.client.ApiextensionsV1Api(kube_api.api_client)


@pytest.fixture(name='custom')
def fixture_custom(kube_api):
    return kubernetes.client.CustomObjectsApi(kube_api.api_client)


def wait_established(kube_api, ext, name):
    for _attempt in range(100):
        conditions = ext.read_custom_resource_definition(name).status.conditions or []
        if any(c.type == 'Established' and c.status == 'True' for c in conditions):
            code, _body = raw(kube_api, 'GET', f'/apis/{name.split(".", 1)[1]}/v1')
            if code == 200:
                return
        __import__('time').sleep(0.2)
    pytest.fail(f'{name} was not established')


# The shape of the GPU Operator's ClusterPolicy CRD (v1, cluster-scoped, status subresource) in a
# throw-away group: nvidia.com may really be installed on a real cluster, and the cluster roles'
# tests install it in the stand-in.
CASES = {'namespaced': ('Widget', 'widgets', 'Namespaced'), 'cluster-scoped ClusterPolicy': ('ClusterPolicy', 'clusterpolicies', 'Cluster')}


@pytest.mark.parametrize('kind,plural,scope', list(CASES.values()), ids=list(CASES))
def test_custom_resources(kube_api, ext, custom, kind, plural, scope):
    group = unique('gpuops') + '.test'
    name = f'{plural}.{group}'
    code, _body = raw(kube_api, 'GET', f'/apis/{group}/v1/{plural}')
    assert code == 404, 'not served before the CRD exists'
    ext.create_custom_resource_definition(crd(group, kind, plural, scope))
    try:
        wait_established(kube_api, ext, name)
        code, discovery = raw(kube_api, 'GET', f'/apis/{group}/v1')
        entries = {r['name']: r for r in discovery['resources']}
        assert entries[plural]['kind'] == kind and entries[plural]['namespaced'] == (scope == 'Namespaced')
        assert f'{plural}/status' in entries
        namespaced = scope == 'Namespaced'
        args = (group, 'v1', kube_api.namespace, plural) if namespaced else (group, 'v1', plural)
        suffix = '_namespaced' if namespaced else '_cluster'
        obj_name = unique('cr')
        body = {'apiVersion': f'{group}/v1', 'kind': kind, 'metadata': {'name': obj_name}, 'spec': {'driver': {'enabled': True}}, 'status': {'state': 'x'}}
        created = getattr(custom, f'create{suffix}_custom_object')(*args, body)
        assert created['metadata']['uid'] and 'status' not in created
        listed = getattr(custom, f'list{suffix}_custom_object')(*args)
        assert listed['kind'] == f'{kind}List' and [i['metadata']['name'] for i in listed['items']] == [obj_name]
        patched = getattr(custom, f'patch{suffix}_custom_object')(*args, obj_name, {'spec': {'driver': {'version': '1'}}, 'status': {'state': 'y'}})
        assert patched['spec']['driver'] == {'enabled': True, 'version': '1'} and 'status' not in patched and patched['metadata']['generation'] == 2
        status = getattr(custom, f'patch{suffix}_custom_object_status')(*args, obj_name, {'status': {'state': 'ready'}, 'spec': {'driver': None}})
        assert status['status'] == {'state': 'ready'} and status['spec']['driver']['enabled'] is True
        path = f'/apis/{group}/v1/' + (f'namespaces/{kube_api.namespace}/' if namespaced else '') + f'{plural}/{obj_name}'
        code, _body = raw(kube_api, 'PATCH', path, {'spec': {}}, 'application/strategic-merge-patch+json')
        assert code == 415, 'custom resources take no strategic merge patch'
        getattr(custom, f'delete{suffix}_custom_object')(*args, obj_name)
        with pytest.raises(ApiException) as caught:
            getattr(custom, f'get{suffix}_custom_object')(*args, obj_name)
        assert caught.value.status == 404
    finally:
        ext.delete_custom_resource_definition(name)


def test_crd_name_must_match(kube_api, ext):
    body = crd('gpuops.test', 'Thing', 'things', 'Cluster')
    body['metadata']['name'] = 'wrong.gpuops.test'
    with pytest.raises(ApiException) as caught:
        ext.create_custom_resource_definition(body)
    assert caught.value.status == 422
