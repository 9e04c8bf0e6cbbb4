"""The stand-in's API semantics through the kubernetes Python client (each case fails against bare kmock 0.8)."""
import time

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster.helpers import raw, unique


@pytest.fixture(name='core')
def fixture_core(kube_api):
    return kubernetes.client.CoreV1Api(kube_api.api_client)


@pytest.fixture(name='apps')
def fixture_apps(kube_api):
    return kubernetes.client.AppsV1Api(kube_api.api_client)


def deployment(name, containers=(('main', 'img:1'),), labels=None):
    return {'metadata': {'name': name, 'labels': labels or {}},
            'spec': {'selector': {'matchLabels': {'app': name}},
                     'template': {'metadata': {'labels': {'app': name}},
                                  'spec': {'containers': [{'name': n, 'image': i} for n, i in containers]}}}}


def test_namespace_crud(core):
    name = unique('ns')
    created = core.create_namespace({'metadata': {'name': name}})
    assert created.status.phase == 'Active' and created.metadata.uid
    assert core.read_namespace(name).metadata.name == name
    assert name in [ns.metadata.name for ns in core.list_namespace().items]
    core.patch_namespace(name, {'metadata': {'labels': {'x': 'y'}}})
    assert core.read_namespace(name).metadata.labels['x'] == 'y'
    core.delete_namespace(name)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a real cluster takes a while to finish the namespace
        try:
            core.read_namespace(name)
        except ApiException as exc:
            assert exc.status == 404
            break
        time.sleep(0.5)
    else:
        pytest.fail('the namespace was not deleted')


def test_list_has_kind_and_api_version(kube_api):
    code, body = raw(kube_api, 'GET', f'/apis/apps/v1/namespaces/{kube_api.namespace}/daemonsets')
    assert code == 200 and body['kind'] == 'DaemonSetList' and body['apiVersion'] == 'apps/v1'
    assert body['metadata']['resourceVersion']


SELECTOR_CASES = [
    ({'label_selector': 'role=a'}, {'a'}),
    ({'label_selector': 'role in (a, b)'}, {'a', 'b'}),
    ({'label_selector': 'role!=a,gpuops.test/sel'}, {'b', 'c'}),
    ({'label_selector': '!role'}, set()),
    ({'field_selector': 'metadata.name=sel-b'}, {'b'}),
    ({'field_selector': 'metadata.name!=sel-b', 'label_selector': 'gpuops.test/sel'}, {'a', 'c'}),
]


@pytest.mark.parametrize('query,expected', SELECTOR_CASES)
def test_selectors(kube_api, core, query, expected):
    existing = {cm.metadata.name for cm in core.list_namespaced_config_map(kube_api.namespace, label_selector='gpuops.test/sel').items}
    for role in ('a', 'b', 'c'):
        if f'sel-{role}' not in existing:
            core.create_namespaced_config_map(kube_api.namespace, {'metadata': {'name': f'sel-{role}', 'labels': {'role': role, 'gpuops.test/sel': ''}}})
    found = core.list_namespaced_config_map(kube_api.namespace, **query).items
    assert {cm.metadata.name.removeprefix('sel-') for cm in found if 'gpuops.test/sel' in (cm.metadata.labels or {})} == expected


def test_replace_with_put_and_stale_resource_version(kube_api, core):
    name = unique('put')
    created = core.create_namespaced_config_map(kube_api.namespace, {'metadata': {'name': name}, 'data': {'k': 'v1'}})
    stale = {'name': name, 'resourceVersion': created.metadata.resource_version}
    replaced = core.replace_namespaced_config_map(name, kube_api.namespace, {'metadata': stale, 'data': {'other': 'v2'}})
    assert replaced.data == {'other': 'v2'} and replaced.metadata.uid == created.metadata.uid
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    for write in (lambda: core.replace_namespaced_config_map(name, kube_api.namespace, {'metadata': stale}),
                  lambda: core.patch_namespaced_config_map(name, kube_api.namespace, {'metadata': stale, 'data': {}})):
        with pytest.raises(ApiException) as caught:
            write()
        assert caught.value.status == 409
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map(kube_api.namespace, {'metadata': {'name': name}})
    assert caught.value.status == 409 and '"reason": "AlreadyExists"' in caught.value.body.replace('":"', '": "')


def test_metadata_and_generation(kube_api, apps):
    name = unique('gen')
    created = apps.create_namespaced_deployment(kube_api.namespace, deployment(name))
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.generation == 1 and created.metadata.creation_timestamp
    relabeled = apps.patch_namespaced_deployment(name, kube_api.namespace, {'metadata': {'labels': {'a': 'b'}}})
    assert relabeled.metadata.generation == 1, 'a metadata change does not bump the generation'
    assert relabeled.metadata.resource_version != created.metadata.resource_version
    respec = apps.patch_namespaced_deployment(name, kube_api.namespace, {'spec': {'replicas': 3}})
    assert respec.metadata.generation == 2
    same = apps.patch_namespaced_deployment(name, kube_api.namespace, {'spec': {'replicas': 3}})
    assert same.metadata.resource_version == respec.metadata.resource_version, 'a no-op patch changes nothing'


def test_strategic_merge_patch_merges_containers(kube_api, apps):
    name = unique('smp')
    apps.create_namespaced_deployment(kube_api.namespace, deployment(name, containers=(('a', 'a:1'), ('b', 'b:1'))))
    patched = apps.patch_namespaced_deployment(name, kube_api.namespace, {'spec': {'template': {'spec': {'containers': [{'name': 'b', 'image': 'b:2'}]}}}})
    assert [(c.name, c.image) for c in patched.spec.template.spec.containers] == [('a', 'a:1'), ('b', 'b:2')]


def test_server_side_apply_creates_and_updates(kube_api):
    name = unique('ssa')
    path = f'/api/v1/namespaces/{kube_api.namespace}/configmaps/{name}'
    body = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name}, 'data': {'k': 'v'}}
    code, created = raw(kube_api, 'PATCH', path, body, 'application/apply-patch+yaml', {'fieldManager': 'test'})
    assert code == 201 and created['data'] == {'k': 'v'}
    code, updated = raw(kube_api, 'PATCH', path, dict(body, data={'k': 'w'}), 'application/apply-patch+yaml', {'fieldManager': 'test'})
    assert code == 200 and updated['data'] == {'k': 'w'}


def replicas(obj):
    return (obj.status.replicas if obj.status else None) or 0


def test_status_subresource(kube_api, apps):
    name = unique('status')
    created = apps.create_namespaced_deployment(kube_api.namespace, dict(deployment(name), status={'replicas': 7}))
    assert replicas(created) == 0, 'a create ignores the status'
    apps.patch_namespaced_deployment(name, kube_api.namespace, {'status': {'replicas': 5}, 'metadata': {'labels': {'main': 'yes'}}})
    assert replicas(apps.read_namespaced_deployment(name, kube_api.namespace)) == 0, 'the main endpoint ignores the status'
    everything = {'status': {'replicas': 5}, 'spec': {'replicas': 9}, 'metadata': {'labels': {'status': 'yes'}}}
    status = apps.patch_namespaced_deployment_status(name, kube_api.namespace, everything)
    assert status.status.replicas == 5 and status.spec.replicas != 9
    assert 'status' not in (status.metadata.labels or {})


def test_watch_honours_timeout_and_streams_changes(kube_api, core):
    name = unique('watch')
    core.create_namespaced_config_map(kube_api.namespace, {'metadata': {'name': name}})
    listed = core.list_namespaced_config_map(kube_api.namespace, field_selector=f'metadata.name={name}')
    core.patch_namespaced_config_map(name, kube_api.namespace, {'data': {'k': 'v'}})
    core.delete_namespaced_config_map(name, kube_api.namespace)
    started = time.monotonic()
    events = [(e['type'], e['object'].metadata.name) for e in kubernetes.watch.Watch().stream(
        core.list_namespaced_config_map, kube_api.namespace, field_selector=f'metadata.name={name}',
        resource_version=listed.metadata.resource_version, timeout_seconds=2)]
    assert events == [('MODIFIED', name), ('DELETED', name)]
    assert time.monotonic() - started < 10


def test_pod_log(kube_api, core):
    name = unique('log')
    core.create_namespaced_pod(kube_api.namespace, {'metadata': {'name': name}, 'spec': {'containers': [{'name': 'c', 'image': 'busybox'}]}})
    if kube_api.real:
        pytest.skip('a real pod has no log before it runs')
    assert core.read_namespaced_pod_log(name, kube_api.namespace) == ''


ERROR_CASES = {
    'missing object': ('GET', '/api/v1/namespaces/{ns}/configmaps/absent', None, 'application/json', 404, 'NotFound'),
    'unknown resource': ('GET', '/api/v1/namespaces/{ns}/nosuchthings', None, 'application/json', 404, 'NotFound'),
    'unknown group': ('GET', '/apis/nosuch.example.com/v1/things', None, 'application/json', 404, 'NotFound'),
    'invalid name': ('POST', '/api/v1/namespaces/{ns}/configmaps', {'metadata': {'name': 'Bad_Name'}}, 'application/json', 422, 'Invalid'),
    'missing name': ('POST', '/api/v1/namespaces/{ns}/configmaps', {'metadata': {}}, 'application/json', 422, 'Invalid'),
    'non-string label': ('POST', '/api/v1/namespaces/{ns}/configmaps', {'metadata': {'name': 'x', 'labels': {'a': 1}}}, 'application/json', 422, 'Invalid'),
    'kind mismatch': ('POST', '/api/v1/namespaces/{ns}/configmaps', {'kind': 'Secret', 'apiVersion': 'v1', 'metadata': {'name': 'x'}},
                      'application/json', 400, 'BadRequest'),
    'not an object': ('POST', '/api/v1/namespaces/{ns}/configmaps', 'text', 'application/json', 400, 'BadRequest'),
    'missing namespace': ('POST', '/api/v1/namespaces/gpuops-absent-ns/configmaps', {'metadata': {'name': 'x'}}, 'application/json', 404, 'NotFound'),
    'POST on an object': ('POST', '/api/v1/namespaces/{ns}/configmaps/x', {'metadata': {'name': 'x'}}, 'application/json', 405, 'MethodNotAllowed'),
    'bad selector': ('GET', '/api/v1/namespaces/{ns}/configmaps?labelSelector=a%20in%20(', None, 'application/json', 400, 'BadRequest'),
    'unknown patch type': ('PATCH', '/api/v1/namespaces/default/configmaps/x', '{}', 'text/plain', 415, 'UnsupportedMediaType'),
}


@pytest.mark.parametrize('method,path,body,content_type,code,reason', list(ERROR_CASES.values()), ids=list(ERROR_CASES))
def test_errors_are_status_objects(kube_api, method, path, body, content_type, code, reason):
    path, _sep, query = path.format(ns=kube_api.namespace).partition('?')
    status, answer = raw(kube_api, method, path, body, content_type, dict([query.split('=', 1)]) if query else None)
    assert status == code
    assert answer['kind'] == 'Status' and answer['status'] == 'Failure' and answer['code'] == code
    assert answer['reason'] == reason, answer


DISCOVERY = [
    ('v1', 'namespaces', 'Namespace', False), ('v1', 'nodes', 'Node', False), ('v1', 'pods', 'Pod', True), ('v1', 'pods/log', 'Pod', True),
    ('v1', 'services', 'Service', True), ('v1', 'configmaps', 'ConfigMap', True), ('v1', 'secrets', 'Secret', True),
    ('v1', 'serviceaccounts', 'ServiceAccount', True), ('v1', 'events', 'Event', True),
    ('apps/v1', 'daemonsets', 'DaemonSet', True), ('apps/v1', 'deployments', 'Deployment', True),
    ('rbac.authorization.k8s.io/v1', 'roles', 'Role', True), ('rbac.authorization.k8s.io/v1', 'rolebindings', 'RoleBinding', True),
    ('rbac.authorization.k8s.io/v1', 'clusterroles', 'ClusterRole', False),
    ('rbac.authorization.k8s.io/v1', 'clusterrolebindings', 'ClusterRoleBinding', False),
    ('node.k8s.io/v1', 'runtimeclasses', 'RuntimeClass', False),
    ('apiextensions.k8s.io/v1', 'customresourcedefinitions', 'CustomResourceDefinition', False),
]


@pytest.mark.parametrize('group_version,plural,kind,namespaced', DISCOVERY)
def test_discovery(kube_api, group_version, plural, kind, namespaced):
    code, body = raw(kube_api, 'GET', f'/api/{group_version}' if group_version == 'v1' else f'/apis/{group_version}')
    assert code == 200 and body['groupVersion'] == group_version
    entry = next(r for r in body['resources'] if r['name'] == plural)
    assert (entry['kind'], entry['namespaced']) == (kind, namespaced)


def test_version(kube_api):
    info = kubernetes.client.VersionApi(kube_api.api_client).get_code()
    assert info.major == '1' and info.git_version.startswith('v1.')


def test_a_node_created_without_spec_reads_back_with_a_spec(core):
    name = unique('node')
    core.create_node({'metadata': {'name': name}})
    try:
        # A struct, never null, as a real API server returns it (kubernetes.core.k8s_drain reads spec.unschedulable).
        assert isinstance(core.read_node(name, _preload_content=False).json()['spec'], dict)
    finally:
        core.delete_node(name)
