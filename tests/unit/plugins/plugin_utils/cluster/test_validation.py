# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The validation stage's objects against the GPU Operator's, and the reading of a node's Pods into its result.

SOURCE of the expected validator: NVIDIA/gpu-operator release v26.7.0 (tag commit 10ee5b3638b89e11e949412aafa5ba99279c3721;
read at a22dbf671f2e26f9a1e342f8eea28e196235e110, identical there): assets/state-operator-validation/0500_daemonset.yaml
(layout, env, mounts, volumes), 0200_role.yaml and 0210_clusterrole.yaml (RBAC), controllers/object_controls.go
TransformValidator / TransformValidatorComponent (runAsUser 0, VALIDATOR_* env, MIG_STRATEGY, the plugin init container
removed when the device plugin is disabled), validator/manifests/plugin-workload-validation.yaml (the plugin Pod) and
cmd/nvidia-validator/main.go (Plugin.runWorkload: nodeName, tolerations of the DaemonSet, one unit of the resource as
request and limit). The validator image's version is the chart's appVersion, which the sources do not show. The same
facts are held against what the API holds after the roles ran in tests/cluster/parity/facts/validator.yml.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

import kubernetes_validate
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.cluster_validation import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.filter.cluster_manifests import FilterModule as ManifestFilters
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import prerequisites as manifests, registry as cluster_registry, validation as v
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import validator as validator_operand

MINORS = ['1.29', '1.34']
FIELD = {'OPERATOR_NAMESPACE': 'metadata.namespace', 'NODE_NAME': 'spec.nodeName'}
# (init container, env as the asset and the transform give it with the shipped values, volume mounts (name, path, propagation))
OPERATOR_INIT_CONTAINERS = [
    ('driver-validation', [('WITH_WAIT', 'true'), ('COMPONENT', 'driver'), ('OPERATOR_NAMESPACE', None)],
     [('host-root', '/host', 'HostToContainer'), ('driver-install-dir', '/run/nvidia/driver', 'HostToContainer'),
      ('run-nvidia-validations', '/run/nvidia/validations', 'Bidirectional'), ('host-dev-char', '/host-dev-char', None)]),
    ('toolkit-validation', [('NVIDIA_VISIBLE_DEVICES', 'all'), ('WITH_WAIT', 'false'), ('COMPONENT', 'toolkit')],
     [('run-nvidia-validations', '/run/nvidia/validations', 'Bidirectional')]),
    ('cuda-validation', [('WITH_WAIT', 'false'), ('COMPONENT', 'cuda'), ('NODE_NAME', None), ('OPERATOR_NAMESPACE', None),
                         ('VALIDATOR_IMAGE', 'nvcr.io/nvidia/gpu-operator:v26.7.0'), ('VALIDATOR_IMAGE_PULL_POLICY', 'IfNotPresent'),
                         ('VALIDATOR_RUNTIME_CLASS', 'nvidia')],
     [('run-nvidia-validations', '/run/nvidia/validations', 'Bidirectional')]),
    ('plugin-validation', [('COMPONENT', 'plugin'), ('WITH_WAIT', 'false'), ('WITH_WORKLOAD', 'false'), ('MIG_STRATEGY', 'single'),
                           ('NODE_NAME', None), ('OPERATOR_NAMESPACE', None), ('VALIDATOR_IMAGE', 'nvcr.io/nvidia/gpu-operator:v26.7.0'),
                           ('VALIDATOR_IMAGE_PULL_POLICY', 'IfNotPresent'), ('VALIDATOR_RUNTIME_CLASS', 'nvidia')],
     [('run-nvidia-validations', '/run/nvidia/validations', 'Bidirectional')]),
]
OPERATOR_VOLUMES = [('run-nvidia-validations', '/run/nvidia/validations', 'DirectoryOrCreate'), ('driver-install-dir', '/run/nvidia/driver', None),
                    ('host-root', '/', None), ('host-dev-char', '/dev/char', None)]
# The Operator's Role without its OpenShift rule (docs/coming-from-gpu-operator.md, deviation: openshift).
OPERATOR_ROLE_RULES = [([''], ['pods'], ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete']),
                       (['apps'], ['daemonsets'], ['get', 'list', 'watch'])]


def rendered(policy=None, registry='', nodes=None):
    return v.validator('gpu-operator', cluster_registry.resolution(policy, registry, nodes))


def operand_objects(policy=None, registry='', nodes=None):
    return cluster_registry.render(cluster_registry.resolution(policy, registry, nodes), 'gpu-operator')['present']


def the_daemonset(found):
    return next(obj for obj in found['objects'] if obj['kind'] == 'DaemonSet')


def env_of(container):
    return [(e['name'], e.get('value') if 'value' in e else None) for e in container['env']]


def test_daemonset_is_the_operators():
    ds = the_daemonset(rendered())
    assert ds['metadata']['name'] == 'nvidia-operator-validator'
    assert ds['spec']['selector']['matchLabels'] == {'app': 'nvidia-operator-validator', 'app.kubernetes.io/part-of': 'gpu-operator'}
    pod = ds['spec']['template']['spec']
    assert pod['nodeSelector'] == {'nvidia.com/gpu.deploy.operator-validator': 'true'}
    assert pod['tolerations'] == [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    assert (pod['priorityClassName'], pod['serviceAccountName'], pod['runtimeClassName']) == (
        'system-node-critical', 'nvidia-operator-validator', 'nvidia')
    init = pod['initContainers']
    assert [c['name'] for c in init] == [row[0] for row in OPERATOR_INIT_CONTAINERS]
    for container, (name, env, mounts) in zip(init, OPERATOR_INIT_CONTAINERS):
        assert env_of(container) == env, name
        for entry in container['env']:
            if 'valueFrom' in entry:
                assert entry['valueFrom'] == {'fieldRef': {'fieldPath': FIELD[entry['name']]}}
        assert [(m['name'], m['mountPath'], m.get('mountPropagation')) for m in container['volumeMounts']] == mounts, name
        assert (container['command'], container['args'], container['image']) == (['sh', '-c'], ['nvidia-validator'], 'nvcr.io/nvidia/gpu-operator:v26.7.0')
        assert container['securityContext']['privileged'] is True and container['securityContext']['runAsUser'] == 0
    assert init[0]['securityContext']['seLinuxOptions'] == {'level': 's0'} and init[0]['volumeMounts'][0]['readOnly'] is True
    main = pod['containers'][0]
    assert main['name'] == 'nvidia-operator-validator' and main['args'] == ['echo all validations are successful; while true; do sleep 86400; done']
    assert main['lifecycle']['preStop']['exec']['command'] == ['sh', '-c', 'rm -f /run/nvidia/validations/*-ready']
    assert [(vol['name'], vol['hostPath']['path'], vol['hostPath'].get('type')) for vol in pod['volumes']] == OPERATOR_VOLUMES


def test_rbac_is_the_operators_without_the_finalizers_rule():
    objects = {obj['kind']: obj for obj in rendered()['objects']}
    assert objects['ServiceAccount']['metadata'] == {'name': 'nvidia-operator-validator', 'namespace': 'gpu-operator',
                                                     'labels': {'app.kubernetes.io/managed-by': 'gpuops.gpu_operator'}}
    assert [(r['apiGroups'], r['resources'], r['verbs']) for r in objects['Role']['rules']] == OPERATOR_ROLE_RULES
    assert objects['ClusterRole']['rules'] == [{'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch']}]
    for binding in ('RoleBinding', 'ClusterRoleBinding'):
        assert objects[binding]['subjects'] == [{'kind': 'ServiceAccount', 'name': 'nvidia-operator-validator', 'namespace': 'gpu-operator'}]
    # One place: the prerequisites no longer carry the validator's account.
    assert not [obj for obj in manifests.prerequisites() if obj['kind'] == 'ServiceAccount']


POLICY = {'daemonsets': {'tolerations': [{'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}],
                         'priorityClassName': 'gpu-critical', 'labels': {'team': 'ml'}, 'annotations': {'a': 'b'},
                         'updateStrategy': 'OnDelete'},
          'mig': {'strategy': 'mixed'}}


def test_daemonsets_settings_come_from_the_operands_policy():
    found = rendered(policy=POLICY)
    ds = the_daemonset(found)
    pod = ds['spec']['template']['spec']
    # The Operator replaces the tolerations with daemonsets.tolerations (not merged).
    assert pod['tolerations'] == POLICY['daemonsets']['tolerations'] == found['tolerations']
    assert pod['priorityClassName'] == 'gpu-critical' and ds['spec']['updateStrategy'] == {'type': 'OnDelete'}
    assert ds['spec']['template']['metadata'] == {'labels': {'team': 'ml', 'app': 'nvidia-operator-validator', 'app.kubernetes.io/part-of': 'gpu-operator'},
                                                  'annotations': {'a': 'b'}}
    assert ds['metadata']['labels']['team'] == 'ml' and ds['metadata']['annotations'] == {'a': 'b'}
    assert ('MIG_STRATEGY', 'mixed') in env_of(pod['initContainers'][3]) and found['mig_strategy'] == 'mixed'
    assert ds['spec']['selector']['matchLabels'] == validator_operand.LABELS, 'the selector does not follow the labels (it is immutable)'


def test_device_plugin_disabled_removes_the_plugin_component():
    found = rendered(policy={'devicePlugin': {'enabled': False}})
    assert [c['name'] for c in the_daemonset(found)['spec']['template']['spec']['initContainers']] == [
        'driver-validation', 'toolkit-validation', 'cuda-validation']
    assert found['plugin'] is False


def init_images(pod):
    return {c['image'] for c in pod['initContainers'] if 'validation' in c['name']}


def test_one_validator_image_for_the_validator_and_the_operands():
    """The ClusterPolicy validator section sets the image of the validator DaemonSet, of the Pods it starts and of the
    operands' validation init containers (as in the Operator), and the mirror moves them all."""
    policy = {'validator': {'imagePullSecrets': ['pull-a', 'pull-b'], 'imagePullPolicy': 'Always', 'resources': {'limits': {'memory': '50Mi'}}}}
    found = rendered(registry='mirror.example:5000/nv', policy=policy)
    pod = the_daemonset(found)['spec']['template']['spec']
    reference = 'mirror.example:5000/nv/nvidia/gpu-operator:v26.7.0'
    assert {c['image'] for c in pod['initContainers'] + pod['containers']} == {reference} and found['image']['reference'] == reference
    assert {c['imagePullPolicy'] for c in pod['initContainers'] + pod['containers']} == {'Always'}
    assert {str(c['resources']) for c in pod['initContainers'] + pod['containers']} == {str({'limits': {'memory': '50Mi'}})}
    assert pod['imagePullSecrets'] == [{'name': 'pull-a'}, {'name': 'pull-b'}]
    assert ('VALIDATOR_IMAGE', reference) in env_of(pod['initContainers'][2])
    assert ('VALIDATOR_IMAGE_PULL_SECRETS', 'pull-a,pull-b') in env_of(pod['initContainers'][2])
    operand_pods = [obj['spec']['template']['spec'] for obj in operand_objects(policy, registry='mirror.example:5000/nv')
                    if obj['kind'] == 'DaemonSet']
    assert operand_pods and all(init_images(operand) == {reference} for operand in operand_pods)
    own = rendered(registry='mirror.example', policy={'validator': {'repository': 'quay.example/nv', 'version': 'sha256:' + 'a' * 64}})
    pod = the_daemonset(own)['spec']['template']['spec']
    assert pod['containers'][0]['image'] == 'quay.example/nv/gpu-operator@sha256:' + 'a' * 64, 'a repository of its own wins over the mirror'


def test_runtime_class_is_the_operands():
    """The validator Pods and the Pods they start name the runtime class the operands name (policy.resolve)."""
    nodes = [{'host': 'a', 'runtime_name': 'nvidia-gpu'}, {'host': 'b', 'runtime_name': 'nvidia-gpu'}]
    found = rendered(nodes=nodes)
    pod = the_daemonset(found)['spec']['template']['spec']
    operand = next(obj for obj in operand_objects(nodes=nodes) if obj['kind'] == 'DaemonSet')
    assert pod['runtimeClassName'] == operand['spec']['template']['spec']['runtimeClassName'] == found['runtime_class'] == 'nvidia-gpu'
    assert ('VALIDATOR_RUNTIME_CLASS', 'nvidia-gpu') in env_of(pod['initContainers'][2])
    checks = [{'item': {'ansible_job_id': '1', 'item': [{'node': 'gpu-1'}, 'nvidia.com/gpu']}, 'finished': 1, 'registered': True}]
    assert v.plugin_pods('gpu-operator', found, v.capacity_checks(checks))[0]['spec']['runtimeClassName'] == 'nvidia-gpu'
    with pytest.raises(GpuOpsError, match='the GPU nodes differ in container_toolkit_runtime_name'):
        rendered(nodes=[nodes[0], {'host': 'b'}])


def test_validator_env_args_and_host_network_reach_its_main_container_only():
    """As TransformValidatorShared: validator.env is set in the main container, validator.args replace its args,
    validator.hostNetwork makes the Pod use the host's network; the component init containers keep their own env."""
    default = the_daemonset(rendered())['spec']['template']['spec']
    pod = the_daemonset(rendered(policy={'validator': {'env': [{'name': 'WITH_WORKLOAD', 'value': 'false'}], 'args': ['sleep infinity'],
                                                       'hostNetwork': True}}))['spec']['template']['spec']
    assert env_of(pod['containers'][0]) == [('WITH_WORKLOAD', 'false')] and pod['containers'][0]['args'] == ['sleep infinity']
    assert (pod['hostNetwork'], pod['dnsPolicy']) == (True, 'ClusterFirstWithHostNet')
    assert pod['initContainers'] == default['initContainers'] and 'env' not in default['containers'][0]


@pytest.mark.parametrize('validator, message', [
    ({'tag': 'x'}, 'validator.tag is not a field of the ClusterPolicy CRD (nvidia.com/v1) of GPU Operator v26.7.0'),
    ({'imagePullSecrets': 'pull'}, "validator.imagePullSecrets must be a list of strings, not 'pull'"),
    ({'version': ''}, 'validator.version must be a non-empty string'),
    ({'args': 'x'}, "validator.args must be a list of strings, not 'x'"),
    ({'plugin': {'env': [{'name': 'WITH_WORKLOAD'}], 'args': []}}, 'validator.plugin.args is not a field of the ClusterPolicy CRD'),
])
def test_bad_image_settings(validator, message):
    with pytest.raises(GpuOpsError, match=re.escape(message)):
        rendered(policy={'validator': validator})


def test_filters_report_setting_errors():
    with pytest.raises(AnsibleFilterError, match="gpuops.gpu_operator: nonsense is not a field of the ClusterPolicy CRD"):
        ManifestFilters().filters()['resolve_cluster_policy']({'nonsense': {}})


@pytest.mark.parametrize('minor', MINORS)
def test_objects_are_valid_kubernetes(minor):
    found = rendered(policy=dict(POLICY, validator={'imagePullSecrets': ['pull']}))
    checks = [{'item': {'ansible_job_id': '1', 'item': [{'node': 'gpu-1'}, 'nvidia.com/mig-1g.10gb']}, 'finished': 1, 'registered': True}]
    for obj in found['objects'] + FilterModule().filters()['plugin_validation_pods'](checks, 'gpu-operator', found):
        kubernetes_validate.validate(obj, minor, strict=True)


# --- which nodes, which resources (contract.gpu_resources: tests/unit/plugins/module_utils/common/test_contract.py) ---------

TIME_SLICED = {'sharing': {'timeSlicing': {'renameByDefault': True, 'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}


def node(name, **labels):
    return {'metadata': {'name': name, 'labels': dict({'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.count': '1'}, **labels)}}


def test_targets():
    nodes = [node('b'), node('a', **{'nvidia.com/gpu.deploy.operator-validator': 'false'}), {'metadata': {'name': 'cpu', 'labels': {}}},
             {'metadata': {'name': 'listed', 'labels': {}}}, node('off', **{'nvidia.com/gpu.deploy.operands': 'false'})]
    found = v.targets(nodes, run_nodes=['listed', 'gone', 'b'])
    # operands=false: the Operator takes every deploy label off the Node, the validator's too (issue 24 item 1)
    assert [(t['node'], t['exists'], t['skip'], t['resources']) for t in found] == [
        ('a', True, 'the Node is labelled nvidia.com/gpu.deploy.operator-validator=false', ['nvidia.com/gpu']),
        ('b', True, '', ['nvidia.com/gpu']), ('off', True, 'the Node is labelled nvidia.com/gpu.deploy.operands=false', ['nvidia.com/gpu']),
        ('gone', False, '', []), ('listed', True, '', ['nvidia.com/gpu'])]
    assert [t['node'] for t in v.targets(nodes, selector={'nvidia.com/gpu.count': '1'})] == ['a', 'b', 'off']


def test_targets_take_the_computed_labels_a_node_lacks():
    """GFD's count label, left to GFD's Pods where NFD runs, may not be on the Node yet: the run's computed labels give it;
    the Node's own win."""
    bare = {'metadata': {'name': 'a', 'labels': {'nvidia.com/gpu.present': 'true'}}}
    computed = {'a': {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.count': '8', 'nvidia.com/gpu.replicas': '1'},
                'b': {'nvidia.com/gpu.count': '8'}}
    found = v.targets([bare, node('b')], node_labels=computed)
    assert [(t['node'], t['resources'], t['computed']) for t in found] == [
        ('a', ['nvidia.com/gpu'], {'nvidia.com/gpu': {'gpu_count': 8, 'replicas': 1}}),
        ('b', ['nvidia.com/gpu'], {'nvidia.com/gpu': {'gpu_count': None, 'replicas': None}})]
    assert v.targets([bare])[0]['computed'] == {'nvidia.com/gpu': {'gpu_count': None, 'replicas': None}}
    # mig.strategy mixed: the MIG resources a Node should advertise come from GFD's labels, the computed ones until GFD's land
    mig = {'a': {'nvidia.com/gpu.present': 'true', 'nvidia.com/mig-1g.10gb.count': '7'}}
    assert [t['resources'] for t in v.targets([bare], mig_strategy='mixed', node_labels=mig)] == [['nvidia.com/mig-1g.10gb']]


def test_targets_follow_the_config_each_node_runs():
    """The ClusterPolicy's devicePlugin.config: a node runs the config its label names, else the default (config-manager)."""
    config = {'name': 'plugin-configs', 'default': 'shared', 'data': {'shared': TIME_SLICED, 'whole': 'version: v1\n'}}
    nodes = [node('a'), node('b', **{'nvidia.com/device-plugin.config': 'whole'})]
    found = v.targets(nodes, device_plugin_config=config)
    assert [(t['node'], t['resources']) for t in found] == [('a', ['nvidia.com/gpu.shared']), ('b', ['nvidia.com/gpu'])]
    rendered_config = rendered(policy={'devicePlugin': {'config': config}})['device_plugin_config']
    assert v.targets(nodes, device_plugin_config=rendered_config) == found
    assert [t['resources'] for t in v.targets(nodes)] == [['nvidia.com/gpu'], ['nvidia.com/gpu']], 'no config: nothing renamed'


def test_plugin_pods():
    found = rendered(policy=POLICY)
    checks = [{'item': {'ansible_job_id': '1', 'item': [{'node': 'gpu-1'}, 'nvidia.com/mig-1g.20gb']}, 'finished': 1, 'registered': True},
              {'item': {'ansible_job_id': '2', 'item': [{'node': 'gpu-2'}, 'nvidia.com/gpu']}, 'finished': 1, 'failed': True, 'msg': 'no'},
              {'item': {'skipped': True, 'item': [{'node': 'gpu-3'}, 'nvidia.com/gpu']}}]
    pods = FilterModule().filters()['plugin_validation_pods'](checks, 'gpu-operator', found)
    assert len(pods) == 1, 'only the pairs whose capacity check passed'
    pod = pods[0]
    assert pod['metadata']['name'] == v.plugin_pod_name('gpu-1', 'nvidia.com/mig-1g.20gb') != v.plugin_pod_name('gpu-2', 'nvidia.com/mig-1g.20gb')
    assert pod['metadata']['labels']['app'] == 'nvidia-device-plugin-validator'
    assert pod['metadata']['annotations'] == {'gpuops.gpu_operator/gpu-resource': 'nvidia.com/mig-1g.20gb'}
    spec = pod['spec']
    assert (spec['nodeName'], spec['restartPolicy'], spec['runtimeClassName']) == ('gpu-1', 'Never', 'nvidia')
    assert spec['tolerations'] == POLICY['daemonsets']['tolerations']
    assert spec['initContainers'][0]['resources'] == {'limits': {'nvidia.com/mig-1g.20gb': '1'}, 'requests': {'nvidia.com/mig-1g.20gb': '1'}}
    assert spec['initContainers'][0]['args'] == ['vectorAdd'] and 'resources' not in spec['containers'][0]


# --- one result per node -------------------------------------------------------------------------

def test_report_takes_the_first_step_a_node_did_not_pass():
    targets = [{'node': n, 'exists': n != 'gone', 'skip': 'opted out' if n == 'skip' else '', 'resources': ['nvidia.com/gpu']}
               for n in ('a', 'b', 'c', 'd', 'gone', 'skip')]
    passed = {'state': 'passed', 'component': None, 'summary': 'driver, toolkit, cuda, plugin validation passed', 'evidence': []}
    validator_results = {'a': passed, 'b': passed, 'c': passed,
                         'd': {'state': 'failed', 'component': 'toolkit', 'summary': 'toolkit validation failed', 'evidence': ['x']}}
    capacity = [{'item': {'ansible_job_id': str(i), 'item': [{'node': n}, 'nvidia.com/gpu']}, 'finished': 1, 'registered': n != 'b',
                 'failed': n == 'b', 'msg': 'count mismatch' if n == 'b' else ''} for i, n in enumerate('abc')]
    plugin_results = {'a': {'state': 'passed', 'component': None, 'summary': 'a Pod requesting nvidia.com/gpu ran vectorAdd', 'evidence': []},
                      'c': {'state': 'failed', 'component': 'plugin', 'summary': 'plugin validation failed: the Pod ...', 'evidence': ['y']}}
    found = {r['node']: (r['state'], r['component'], r['summary']) for r in v.report(targets, validator_results, capacity, plugin_results)}
    assert found == {
        'a': ('passed', None, 'driver, toolkit, cuda and plugin validation passed; a Pod requesting nvidia.com/gpu ran vectorAdd'),
        'b': ('failed', 'plugin', 'plugin validation failed: count mismatch'),
        'c': ('failed', 'plugin', 'plugin validation failed: the Pod ...'),
        'd': ('failed', 'toolkit', 'toolkit validation failed'),
        'gone': ('failed', None, 'no Node object gone: the kubelet has not registered the node'),
        'skip': ('skipped', None, 'not validated: opted out'),
    }
    # Without the plugin component (devicePlugin.enabled false) the validator's result is the node's.
    assert v.report(targets[:1], validator_results, plugin_enabled=False)[0]['summary'] == 'driver, toolkit, cuda, plugin validation passed'


@pytest.mark.parametrize('results, expected', [
    ([], {'hosts': {}, 'outside': ''}),
    ([{'node': 'gpu-1', 'state': 'passed'}, {'node': 'gpu-2', 'state': 'pending', 'summary': 'waiting'}], {'hosts': {}, 'outside': ''}),
    ([{'node': 'gpu-2', 'state': 'failed', 'summary': 'plugin validation failed'}],
     {'hosts': {'host-2': 'GPU validation failed on gpu-2: plugin validation failed'}, 'outside': ''}),
    ([{'node': 'gpu-9', 'state': 'failed', 'summary': 'cuda validation failed'}, {'node': 'gpu-8', 'state': 'failed'},
      {'node': 'gpu-1', 'state': 'failed', 'summary': 'driver validation failed'}],
     {'hosts': {'host-1': 'GPU validation failed on gpu-1: driver validation failed'},
      'outside': 'GPU validation failed on gpu-9: cuda validation failed; gpu-8: '}),
])
def test_failures_name_the_host_that_fails(results, expected):
    assert v.failures(results, {'host-1': 'gpu-1', 'host-2': 'gpu-2'}) == expected
