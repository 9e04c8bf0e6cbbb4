"""The cluster-side roles (gpu_cluster_base, gpu_cluster_operands) applied by ansible-playbook against the API."""
import json
import os
import re
import subprocess
import sys

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster.helpers import REPO, delete_namespace, fixture_fresh, unique  # noqa: F401 pylint: disable=unused-import

# DaemonSet: (deploy label it selects on, its ServiceAccount), as the GPU Operator names them.
DAEMONSETS = {'nvidia-device-plugin-daemonset': ('device-plugin', 'nvidia-device-plugin'),
              'nvidia-device-plugin-mps-control-daemon': ('device-plugin', 'nvidia-device-plugin'),
              'nvidia-dcgm-exporter': ('dcgm-exporter', 'nvidia-dcgm-exporter'), 'nvidia-mig-manager': ('mig-manager', 'nvidia-mig-manager')}
MONITOR_CRD = 'servicemonitors.monitoring.coreos.com'
POLICY_CRD = 'clusterpolicies.nvidia.com'
MANAGED_BY = 'app.kubernetes.io/managed-by=gpuops.gpu_operator'


def run_roles(kube_api, tmp_path, roles, variables, plays=False, args=()):
    """Run `roles` on localhost with `variables`; returns (returncode, changed count or None, output).

    A role is its short name, or a dict {role: short name, <role parameter>: value} (a role listed twice with
    different parameters runs twice). With `plays`, `roles` is a list of plays, each a list of roles.
    """
    def entries(play):
        return [f'gpuops.gpu_operator.{r}' if isinstance(r, str) else dict(r, role=f'gpuops.gpu_operator.{r["role"]}') for r in play]
    playbook = tmp_path / 'cluster.yml'
    playbook.write_text(json.dumps([{'hosts': 'localhost', 'gather_facts': False, 'roles': entries(play)} for play in (roles if plays else [roles])]))
    extra = tmp_path / 'vars.json'
    extra.write_text(json.dumps(dict(variables, ansible_python_interpreter=sys.executable)))
    env = kube_api.env()
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    env.update(ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_NOCOLOR='1')
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, '-i', 'localhost,', '-c', 'local', str(playbook), '-e', f'@{extra}', *args],
                            env=env, capture_output=True, text=True, timeout=300, check=False, cwd=REPO)
    recap = re.search(r'localhost\s*:\s*ok=\d+\s+changed=(\d+)', result.stdout)
    return result.returncode, int(recap.group(1)) if recap else None, result.stdout + result.stderr


@pytest.fixture(name='namespace')
def fixture_namespace(kube_api):
    """A throw-away operator namespace (the roles create it), deleted afterwards."""
    name = unique('gpuops-cluster')
    yield name
    delete_namespace(kube_api, name)


def variables(namespace, **extra):
    return dict(gpu_cluster_base_namespace=namespace, gpu_cluster_operands_namespace=namespace, **extra)


def daemonsets(kube_api, namespace):
    items = kubernetes.client.AppsV1Api(kube_api.api_client).list_namespaced_daemon_set(namespace).items
    return {ds.metadata.name: ds for ds in items}


def test_apply_twice_then_unchanged(kube_api, tmp_path, namespace):
    code, changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base', 'gpu_cluster_operands'], variables(namespace))
    assert code == 0, out
    assert changed and changed > 0, out
    code, changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base', 'gpu_cluster_operands'], variables(namespace))
    assert code == 0 and changed == 0, out
    # The CRD was waited for by the run that created it: no round trip to wait again.
    assert task_status(out, 'gpu_cluster_base', 'Wait until the ClusterPolicy CRD is established') == 'skipping', out

    core = kubernetes.client.CoreV1Api(kube_api.api_client)
    labels = core.read_namespace(namespace).metadata.labels
    assert labels['pod-security.kubernetes.io/enforce'] == 'privileged'
    # Without CDI on the GPU nodes (none here) only the runtime class the operands name exists, as with the Operator.
    handlers = {item.metadata.name: item.handler for item in kubernetes.client.NodeV1Api(kube_api.api_client).list_runtime_class(
        label_selector=MANAGED_BY).items}
    assert handlers == {'nvidia': 'nvidia'}

    found = daemonsets(kube_api, namespace)
    assert set(found) == set(DAEMONSETS), 'gfd is off by default'
    for name, (deploy, account) in DAEMONSETS.items():
        assert found[name].spec.template.spec.node_selector[f'nvidia.com/gpu.deploy.{deploy}'] == 'true'
        assert found[name].spec.template.spec.service_account_name == account
        assert core.read_namespaced_service_account(account, namespace)
    configs = core.read_namespaced_config_map('default-mig-parted-config', namespace).data['config.yaml']
    assert 'all-balanced:' in configs and 'all-1g.10gb:' in configs
    assert core.read_namespaced_service('nvidia-dcgm-exporter', namespace).spec.ports[0].port == 9400

    rbac = kubernetes.client.RbacAuthorizationV1Api(kube_api.api_client)
    for role in rbac.list_cluster_role(label_selector='app.kubernetes.io/managed-by=gpuops.gpu_operator').items:
        for rule in role.rules:
            assert '*' not in rule.verbs and '*' not in rule.resources, role.metadata.name

    policy = kubernetes.client.CustomObjectsApi(kube_api.api_client).get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')
    assert 'config' not in policy['spec']['devicePlugin'], 'no device plugin config unless one is given, as with the Operator'
    assert policy['spec']['gfd']['enabled'] is False and policy['spec']['driver'] == {'enabled': False}


def task_status(out, role, task):
    """The status word (ok, changed, skipping, failed) the output shows for the task of `role` named `task`."""
    found = re.search(r'TASK \[gpuops\.gpu_operator\.%s : %s\][ *]*\s+(\w+):' % (role, re.escape(task)), out)
    return found.group(1) if found else None


def task_changed(out, role, task):
    """Whether the output shows the task (name starting with `task`) of `role` reporting changed."""
    return re.search(r'TASK \[gpuops\.gpu_operator\.%s : %s[^\]]*\][ *]*\s+changed:' % (role, re.escape(task)), out) is not None


def leftovers(kube_api, namespace):
    """Everything of ours still there: objects labelled managed-by gpuops.gpu_operator, our names, the namespace."""
    client = kube_api.api_client
    found = []
    core, rbac = kubernetes.client.CoreV1Api(client), kubernetes.client.RbacAuthorizationV1Api(client)
    lists = {'Namespace': lambda: core.list_namespace(field_selector=f'metadata.name={namespace}').items,
             'RuntimeClass': lambda: [rc for rc in kubernetes.client.NodeV1Api(client).list_runtime_class().items
                                      if rc.metadata.name in ('nvidia', 'nvidia-cdi', 'nvidia-legacy')],
             'ClusterRole': lambda: rbac.list_cluster_role(label_selector=MANAGED_BY).items,
             'ClusterRoleBinding': lambda: rbac.list_cluster_role_binding(label_selector=MANAGED_BY).items,
             'CustomResourceDefinition': lambda: kubernetes.client.ApiextensionsV1Api(client).list_custom_resource_definition(
                 label_selector=MANAGED_BY).items}
    for kind, listing in lists.items():
        found += [f'{kind} {item.metadata.name}' for item in listing()]
    for kind, listing in (('ServiceAccount', core.list_service_account_for_all_namespaces), ('Secret', core.list_secret_for_all_namespaces),
                          ('ConfigMap', core.list_config_map_for_all_namespaces), ('Service', core.list_service_for_all_namespaces),
                          ('Pod', core.list_pod_for_all_namespaces),
                          ('DaemonSet', kubernetes.client.AppsV1Api(client).list_daemon_set_for_all_namespaces)):
        found += [f'{kind} {item.metadata.namespace}/{item.metadata.name}' for item in listing(label_selector=MANAGED_BY).items]
    if kube_api.standin is not None:
        # The stand-in can list every stored object of every kind, custom resources included.
        found += [f'{obj.raw["kind"]} {obj.raw["metadata"].get("namespace") or ""}/{obj.raw["metadata"]["name"]}'
                  for obj in kube_api.standin.objects.values()
                  if not obj.deleted and (obj.raw['metadata'].get('labels') or {}).get('app.kubernetes.io/managed-by') == 'gpuops.gpu_operator'
                  and obj.raw['metadata'].get('namespace') in (None, namespace)]
    return sorted(set(found))


def nfd_installed(kube_api, namespace):
    """The NFD workloads of the chart in `namespace` and the NFD CRDs, by name."""
    apps = kubernetes.client.AppsV1Api(kube_api.api_client)
    crds = kubernetes.client.ApiextensionsV1Api(kube_api.api_client).list_custom_resource_definition().items
    workers = [item for item in apps.list_namespaced_daemon_set(namespace).items if 'node-feature-discovery' in item.metadata.name]
    return sorted([f'DaemonSet {item.metadata.name}' for item in workers]
                  + [f'Deployment {item.metadata.name}' for item in apps.list_namespaced_deployment(namespace).items]
                  + [f'CRD {item.metadata.name}' for item in crds if item.metadata.name.endswith('.nfd.k8s-sigs.io')])


NFD_OBJECTS = ['CRD nodefeaturegroups.nfd.k8s-sigs.io', 'CRD nodefeaturerules.nfd.k8s-sigs.io', 'CRD nodefeatures.nfd.k8s-sigs.io',
               'DaemonSet gpu-operator-node-feature-discovery-worker', 'Deployment gpu-operator-node-feature-discovery-gc',
               'Deployment gpu-operator-node-feature-discovery-master']


def test_disabling_removes_and_absent_uninstalls(kube_api, tmp_path, namespace):
    """NFD (the chart's nfd.enabled, issue 24) rides along: installed by the first run, removed with its CRDs by the second."""
    roles = ['gpu_cluster_base', 'gpu_cluster_operands']
    credentials = [{'name': 'old-pull', 'registry': 'mirror.example:5000', 'username': 'robot', 'password': 'not-printed'}]
    code, _changed, out = run_roles(kube_api, tmp_path, roles,
                                    variables(namespace, gpu_cluster_base_registry_credentials=credentials, gpu_operator_nfd={'enabled': True}))
    assert code == 0, out
    assert nfd_installed(kube_api, namespace) == NFD_OBJECTS
    policy = {'gfd': {'enabled': True}, 'dcgmExporter': {'enabled': False}}
    # The credentials are no longer listed: uninstalling must still remove their Secret.
    code, _changed, out = run_roles(kube_api, tmp_path, roles, variables(namespace, gpu_operator_policy=policy))
    assert code == 0, out
    assert nfd_installed(kube_api, namespace) == [], 'NFD turned off: this collection removes its NFD and CRDs'
    assert set(daemonsets(kube_api, namespace)) == {'nvidia-device-plugin-daemonset', 'nvidia-device-plugin-mps-control-daemon',
                                                    'gpu-feature-discovery', 'nvidia-mig-manager'}
    services = kubernetes.client.CoreV1Api(kube_api.api_client).list_namespaced_service(namespace).items
    assert [s.metadata.name for s in services] == [], 'the disabled DCGM exporter keeps no Service'
    assert leftovers(kube_api, namespace), 'the check below sees what is installed'

    code, _changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_operands', 'gpu_cluster_base'],
                                    variables(namespace, gpu_cluster_operands_state='absent', gpu_cluster_base_state='absent'))
    assert code == 0, out
    # The namespace is gone with whatever it held, so the operands' own removal is checked in the output.
    assert task_changed(out, 'gpu_cluster_operands', 'Remove the objects of disabled operands'), out
    assert leftovers(kube_api, namespace) == []
    with pytest.raises(ApiException) as caught:
        kubernetes.client.CustomObjectsApi(kube_api.api_client).get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')
    assert caught.value.status == 404


@pytest.mark.parametrize('check', [['--check'], []], ids=['check', 'run'])
def test_uninstall_where_the_api_has_no_cluster_policy_kind(fresh, tmp_path, check):
    """Uninstalling from a cluster where the kind ClusterPolicy is unknown (never installed, or uninstalled already):
    there is nothing of ours to remove, and nothing fails (on the stand-in of the other tests a deleted CRD's kind
    stays known, so this one runs on a stand-in of its own)."""
    api, namespace = fresh
    code, changed, out = run_roles(api, tmp_path, ['gpu_cluster_operands', 'gpu_cluster_base'],
                                   variables(namespace, gpu_cluster_operands_state='absent', gpu_cluster_base_state='absent'), args=check)
    assert code == 0 and changed == 0, out


def test_uninstall_keeps_nvidias_crd(kube_api, tmp_path, namespace):
    """A ClusterPolicy CRD that is not ours is used as it is and survives the uninstall. With nfd.enabled and an NFD worker
    not ours running in another namespace (issue 24), no second NFD is installed and the run says so."""
    ext = kubernetes.client.ApiextensionsV1Api(kube_api.api_client)
    try:
        existing = ext.read_custom_resource_definition(POLICY_CRD)
    except ApiException as exc:
        assert exc.status == 404
        existing = None
    # On a real cluster NVIDIA's installed CRD is the foreign one; ours (or none) is swapped for a stand-in of NVIDIA's.
    swap = existing is None or (existing.metadata.labels or {}).get('app.kubernetes.io/managed-by') == 'gpuops.gpu_operator'
    if swap:
        if existing is not None:
            ext.delete_custom_resource_definition(POLICY_CRD)
        ext.create_custom_resource_definition({
            'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': POLICY_CRD, 'labels': {'app.kubernetes.io/name': 'gpu-operator'}},
            'spec': {'group': 'nvidia.com', 'scope': 'Cluster',
                     'names': {'kind': 'ClusterPolicy', 'plural': 'clusterpolicies', 'singular': 'clusterpolicy', 'listKind': 'ClusterPolicyList'},
                     'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                                   'schema': {'openAPIV3Schema': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}]}})
    apps = kubernetes.client.AppsV1Api(kube_api.api_client)
    theirs = apps.create_namespaced_daemon_set(kube_api.namespace, {
        'metadata': {'name': 'nfd-worker', 'labels': {'app': 'nfd-worker'}},
        'spec': {'selector': {'matchLabels': {'app': 'nfd-worker'}}, 'template': {'metadata': {'labels': {'app': 'nfd-worker'}}, 'spec': {
            'containers': [{'name': 'nfd-worker', 'image': 'registry.k8s.io/nfd/node-feature-discovery:v0.17.3', 'command': ['nfd-worker']}]}}}})
    try:
        uid = ext.read_custom_resource_definition(POLICY_CRD).metadata.uid
        code, _changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base', {'role': 'gpu_cluster_base', 'gpu_cluster_base_state': 'absent'}],
                                        variables(namespace, gpu_operator_nfd={'enabled': True}))
        assert code == 0, out
        assert 'msg: clusterpolicies.nvidia.com is installed and not managed by gpuops.gpu_operator' in out, out
        assert f'NFD runs already (DaemonSet {kube_api.namespace}/nfd-worker, not installed by gpuops.gpu_operator)' in ' '.join(out.split()), out
        assert task_status(out, 'gpu_cluster_base', "Apply NFD's CRDs (NodeFeature, NodeFeatureGroup, NodeFeatureRule)") == 'skipping', out
        assert apps.read_namespaced_daemon_set('nfd-worker', kube_api.namespace).metadata.uid == theirs.metadata.uid
        assert task_changed(out, 'gpu_cluster_base', 'Remove the operator namespace'), out
        assert ext.read_custom_resource_definition(POLICY_CRD).metadata.uid == uid
        assert leftovers(kube_api, namespace) == []
    finally:
        apps.delete_namespaced_daemon_set('nfd-worker', kube_api.namespace)
        if swap:
            ext.delete_custom_resource_definition(POLICY_CRD)


def test_the_cluster_policy_is_resolved_once_per_run(kube_api, tmp_path, namespace):
    """Role gpu_operator_policy resolves gpu_operator_policy in the first play that needs it, on the API host; the roles of
    the later plays read that resolution (site.yml: prerequisites, node labels, operands, validation)."""
    code, _changed, out = run_roles(kube_api, tmp_path, [['gpu_cluster_base'], ['gpu_cluster_operands']], variables(namespace), plays=True)
    assert code == 0, out
    resolved = re.findall(r'TASK \[gpuops\.gpu_operator\.gpu_operator_policy : Resolve the ClusterPolicy of this run, once, on the API host\]'
                          r'[ *]*\s+(\w+):', out)
    assert resolved == ['ok', 'skipping'], out


def test_replaced_variables_are_refused_by_name(kube_api, tmp_path, namespace):
    """The per-role ClusterPolicy variables and their like are gone: a run that still sets one fails before anything is
    applied, naming what to set instead."""
    code, _changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base', 'gpu_cluster_operands'], variables(
        namespace, gpu_cluster_operands_policy={'gfd': {'enabled': True}}, gpu_node_labels_gfd_enabled=False, gpu_node_labels_nfd_enabled=True))
    assert code != 0
    assert 'gpu_cluster_operands_policy is gone: set gpu_operator_policy instead.' in out, out
    assert 'gpu_node_labels_gfd_enabled is gone: set gpu_operator_policy.gfd.enabled' in out, out
    assert 'gpu_node_labels_nfd_enabled is gone: set gpu_operator_nfd.enabled' in out, out
    with pytest.raises(ApiException) as caught:
        kubernetes.client.CoreV1Api(kube_api.api_client).read_namespace(namespace)
    assert caught.value.status == 404, 'nothing was applied, not even the namespace'


def test_bad_device_plugin_config_applies_nothing(kube_api, tmp_path, namespace):
    config = {'name': 'plugin-config', 'data': {'any': {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 1}]}}}}}
    code, _changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_operands'],
                                    variables(namespace, gpu_operator_policy={'devicePlugin': {'config': config}}))
    assert code != 0
    assert 'devicePlugin.config.data.any: sharing.timeSlicing.resources[0].replicas must be an integer >= 2' in out, out
    with pytest.raises(ApiException) as caught:
        kubernetes.client.CoreV1Api(kube_api.api_client).read_namespace(namespace)
    assert caught.value.status == 404, 'nothing was applied, not even the namespace'


def test_registry_rewrite_pull_secret_and_service_monitor(kube_api, tmp_path, namespace):
    ext = kubernetes.client.ApiextensionsV1Api(kube_api.api_client)
    created_crd = False
    try:
        ext.read_custom_resource_definition(MONITOR_CRD)
    except ApiException as exc:
        assert exc.status == 404
        ext.create_custom_resource_definition({
            'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition', 'metadata': {'name': MONITOR_CRD},
            'spec': {'group': 'monitoring.coreos.com', 'scope': 'Namespaced',
                     'names': {'kind': 'ServiceMonitor', 'plural': 'servicemonitors', 'singular': 'servicemonitor', 'listKind': 'ServiceMonitorList'},
                     'versions': [{'name': 'v1', 'served': True, 'storage': True,
                                   'schema': {'openAPIV3Schema': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}]}})
        created_crd = True
    secret = 'S3cret-never-printed'
    try:
        policy = {'devicePlugin': {'imagePullSecrets': ['mirror-pull']}, 'migManager': {'repository': 'quay.example/mig'},
                  'dcgmExporter': {'serviceMonitor': {'interval': '30s', 'additionalLabels': {'release': 'prometheus'}}}}
        code, _changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base', 'gpu_cluster_operands'], variables(
            namespace, gpu_operator_registry='mirror.example:5000', gpu_operator_policy=policy,
            gpu_cluster_base_registry_credentials=[{'name': 'mirror-pull', 'registry': 'mirror.example:5000', 'username': 'robot', 'password': secret}]))
        assert code == 0, out
        assert secret not in out
        found = daemonsets(kube_api, namespace)
        images = {name: ds.spec.template.spec.containers[0].image for name, ds in found.items()}
        assert images == {'nvidia-device-plugin-daemonset': 'mirror.example:5000/nvidia/k8s-device-plugin:v0.20.0',
                          'nvidia-device-plugin-mps-control-daemon': 'mirror.example:5000/nvidia/k8s-device-plugin:v0.20.0',
                          'nvidia-dcgm-exporter': 'mirror.example:5000/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless',
                          'nvidia-mig-manager': 'quay.example/mig/k8s-mig-manager:v0.15.0'}
        assert [s.name for s in found['nvidia-device-plugin-daemonset'].spec.template.spec.image_pull_secrets] == ['mirror-pull']
        stored = kubernetes.client.CoreV1Api(kube_api.api_client).read_namespaced_secret('mirror-pull', namespace)
        assert stored.type == 'kubernetes.io/dockerconfigjson'
        monitor = kubernetes.client.CustomObjectsApi(kube_api.api_client).get_namespaced_custom_object(
            'monitoring.coreos.com', 'v1', namespace, 'servicemonitors', 'nvidia-dcgm-exporter')
        assert monitor['metadata']['labels']['release'] == 'prometheus'
        assert monitor['spec']['endpoints'][0]['interval'] == '30s'
    finally:
        if created_crd:
            ext.delete_custom_resource_definition(MONITOR_CRD)


def test_status_module_writes_once(kube_api, tmp_path, namespace):
    code, _changed, out = run_roles(kube_api, tmp_path, ['gpu_cluster_base', 'gpu_cluster_operands'], variables(namespace))
    assert code == 0, out
    playbook = tmp_path / 'status.yml'
    playbook.write_text(json.dumps([{'hosts': 'localhost', 'gather_facts': False, 'tasks': [{
        'name': 'Record ready', 'gpuops.gpu_operator.cluster_policy_status': {'state': 'ready', 'detail': 'checked', 'namespace': namespace}}]}]))
    env = dict(kube_api.env(), ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    recaps = []
    for _run in range(2):
        result = subprocess.run([ansible, '-i', 'localhost,', '-c', 'local', str(playbook), '-e', f'ansible_python_interpreter={sys.executable}'],
                                env=env, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)
        assert result.returncode == 0, result.stdout + result.stderr
        recaps.append(int(re.search(r'localhost\s*:\s*ok=\d+\s+changed=(\d+)', result.stdout).group(1)))
    assert recaps == [1, 0], 'the same outcome is written once'
    status = kubernetes.client.CustomObjectsApi(kube_api.api_client).get_cluster_custom_object(
        'nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')['status']
    assert status['state'] == 'ready' and status['namespace'] == namespace
    assert {c['type']: (c['status'], c['reason'], c['message']) for c in status['conditions']} == {
        'Ready': ('True', 'Reconciled', 'checked'), 'Error': ('False', 'Ready', '')}
