# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Every cluster-side manifest rendered from ClusterPolicy settings and validated against Kubernetes 1.29 to 1.34."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import jsonschema
import kubernetes_validate
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.cluster_manifests import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import manifests as cm

MINORS = ['1.29', '1.30', '1.31', '1.32', '1.33', '1.34']
# Kinds outside the Kubernetes core schemas that kubernetes-validate ships: checked otherwise (see below) or not at all.
NOT_IN_CORE_SCHEMAS = {'ServiceMonitor', 'ClusterPolicy'}
TIME_SLICING = {'sharing': {'timeSlicing': {'renameByDefault': True, 'failRequestsGreaterThanOne': True,
                                            'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}
MPS = {'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}}
SCENARIOS = {
    'defaults': {},
    'registry': {'registry': 'mirror.example:5000/nv'},
    'per-image override': {'registry': 'mirror.example', 'policy': {'dcgmExporter': {'repository': 'quay.example/dcgm', 'version': '4.0.0'}}},
    'tolerations and OnDelete': {'policy': {'daemonsets': {'tolerations': [{'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoExecute',
                                                                           'tolerationSeconds': 30}],
                                                           'updateStrategy': 'OnDelete', 'priorityClassName': 'gpu-critical'}}},
    'maxUnavailable percent': {'policy': {'daemonsets': {'rollingUpdate': {'maxUnavailable': '25%'}, 'labels': {'team': 'ml'}, 'annotations': {'a': 'b'}}}},
    'mig none': {'policy': {'mig': {'strategy': 'none'}}},
    'mig mixed with MIG time-slicing': {'policy': {'mig': {'strategy': 'mixed'}},
                                        'config': {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/mig-1g.10gb', 'replicas': 2}]}}}},
    'time-slicing': {'config': TIME_SLICING},
    'mps': {'config': MPS},
    'everything on, pull secrets, resources, args': {
        'monitor': True,
        'policy': {'gfd': {'enabled': True},
                   'devicePlugin': {'imagePullSecrets': ['pull'], 'args': ['--fail-on-init-error=false'],
                                    'resources': {'limits': {'memory': '100Mi', 'cpu': 1}}},
                   'dcgmExporter': {'serviceMonitor': {'honorLabels': True, 'additionalLabels': {'release': 'prom'},
                                                       'relabelings': [{'sourceLabels': ['__meta_kubernetes_pod_node_name'], 'targetLabel': 'instance'}]}}}},
}


def render(scenario):
    return cm.operands(scenario.get('policy'), 'gpu-operator', scenario.get('registry', ''), scenario.get('config'),
                       scenario.get('mig_configs'), scenario.get('monitor', False))


def every_object(scenario):
    rendered = render(scenario)
    return rendered['present'] + cm.prerequisites('gpu-operator') + [cm.cluster_policy(rendered['resolved'])]


@pytest.mark.parametrize('minor', MINORS)
@pytest.mark.parametrize('name', list(SCENARIOS))
def test_manifests_validate(name, minor):
    skipped = set()
    for obj in every_object(SCENARIOS[name]):
        if obj['kind'] in NOT_IN_CORE_SCHEMAS:
            skipped.add(obj['kind'])
            continue
        kubernetes_validate.validate(obj, minor, strict=True)
    assert skipped <= NOT_IN_CORE_SCHEMAS and 'ClusterPolicy' in skipped


@pytest.mark.parametrize('name', list(SCENARIOS))
def test_cluster_policy_matches_its_crd_schema(name):
    """The CR against the openAPIV3Schema of our CRD (jsonschema ignores the x-kubernetes-* extensions)."""
    schema = cm.cluster_policy_crd()['spec']['versions'][0]['schema']['openAPIV3Schema']
    jsonschema.validate(cm.cluster_policy(render(SCENARIOS[name])['resolved']), schema)


def test_nvidia_crd_required_sections_are_present():
    # NVIDIA's own CRD (used when installed) requires these spec sections.
    spec = cm.cluster_policy(cm.resolve_policy())['spec']
    assert {'daemonsets', 'dcgm', 'dcgmExporter', 'devicePlugin', 'driver', 'gfd', 'nodeStatusExporter', 'operator', 'toolkit'} <= set(spec)


def test_defaults_and_selectors():
    rendered = render({})
    daemonsets = {o['metadata']['name']: o for o in rendered['present'] if o['kind'] == 'DaemonSet'}
    assert sorted(daemonsets) == ['nvidia-dcgm-exporter', 'nvidia-device-plugin-daemonset', 'nvidia-mig-manager']
    assert rendered['absent'] == [{'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'gpu-feature-discovery', 'namespace': 'gpu-operator'}}]
    selectors = {name: ds['spec']['template']['spec']['nodeSelector'] for name, ds in daemonsets.items()}
    assert selectors == {'nvidia-dcgm-exporter': {'nvidia.com/gpu.deploy.dcgm-exporter': 'true'},
                         'nvidia-device-plugin-daemonset': {'nvidia.com/gpu.deploy.device-plugin': 'true'},
                         'nvidia-mig-manager': {'nvidia.com/gpu.deploy.mig-manager': 'true'}}
    plugin = daemonsets['nvidia-device-plugin-daemonset']
    assert plugin['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {'maxUnavailable': 1}}
    pod = plugin['spec']['template']['spec']
    assert pod['priorityClassName'] == 'system-node-critical' and pod['runtimeClassName'] == 'nvidia'
    assert pod['tolerations'] == [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    assert pod['containers'][0]['image'] == 'nvcr.io/nvidia/k8s-device-plugin:v0.16.1-ubi8'
    assert not any(o['kind'] == 'ServiceMonitor' for o in rendered['present']), 'no ServiceMonitor without its CRD'


def test_registry_rewrite_and_per_image_override():
    images = {o['metadata']['name']: o['spec']['template']['spec']['containers'][0]['image']
              for o in render(SCENARIOS['per-image override'])['present'] if o['kind'] == 'DaemonSet'}
    assert images == {'nvidia-device-plugin-daemonset': 'mirror.example/nvidia/k8s-device-plugin:v0.16.1-ubi8',
                      'nvidia-dcgm-exporter': 'quay.example/dcgm/dcgm-exporter:4.0.0',
                      'nvidia-mig-manager': 'mirror.example/nvidia/cloud-native/k8s-mig-manager:v0.8.0-ubuntu20.04'}


def test_device_plugin_config_file_and_rollout_checksum():
    plain, sliced = render({}), render({'config': TIME_SLICING})
    config_map = next(o for o in sliced['present'] if o['kind'] == 'ConfigMap' and o['metadata']['name'] == cm.DEVICE_PLUGIN_CONFIG_MAP)
    assert yaml.safe_load(config_map['data']['config.yaml']) == {'version': 'v1', 'flags': {'migStrategy': 'single'}, **TIME_SLICING}

    def checksum(rendered):
        ds = next(o for o in rendered['present'] if o['metadata']['name'] == 'nvidia-device-plugin-daemonset')
        return ds['spec']['template']['metadata']['annotations']['gpuops.gpu_operator/config-sha256']
    assert checksum(plain) != checksum(sliced), 'a new config rolls the device plugin pods'


@pytest.mark.parametrize('config,message', [
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 1}]}}}, 'replicas must be an integer >= 2'),
    ({'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': '4'}]}}}, 'replicas must be an integer >= 2'),
    ({'sharing': {'timeSlicing': {'resources': []}}}, 'resources must be a non-empty list'),
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'amd.com/gpu', 'replicas': 2}]}}}, 'must be nvidia.com/gpu or nvidia.com/mig-<profile>'),
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/mig-1g.10gb', 'replicas': 2}]}}}, 'only advertised with migStrategy mixed'),
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}, 'mps': {}}}, 'exactly one of timeSlicing, mps'),
    ({'sharing': {'timeSlicing': {'renameByDefault': 'yes', 'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}},
     'renameByDefault must be true or false'),
    ({'flags': {'migStrategy': 'double'}}, 'flags.migStrategy must be one of none, single, mixed'),
    ({'version': 'v2'}, 'version must be v1'),
    ({'shareing': {}}, "unknown key(s) shareing"),
])
def test_bad_device_plugin_config(config, message):
    with pytest.raises(cm.ManifestError, match='device plugin config') as caught:
        render({'config': config})
    assert message in str(caught.value)


@pytest.mark.parametrize('policy,message', [
    ({'driverr': {}}, 'unknown ClusterPolicy section(s) driverr'),
    ({'mig': {'strategy': 'triple'}}, 'mig.strategy must be one of'),
    ({'daemonsets': {'updateStrategy': 'Recreate'}}, 'daemonsets.updateStrategy must be RollingUpdate or OnDelete'),
    ({'daemonsets': {'rollingUpdate': {'maxUnavailable': 'many'}}}, 'maxUnavailable must be a number or a percentage'),
    ({'devicePlugin': {'version': ''}}, 'devicePlugin.version must not be empty'),
    ({'migManager': {'config': {'default': 'all-3g'}}}, "'all-3g' is not one of the MIG profiles"),
])
def test_bad_policy(policy, message):
    with pytest.raises(cm.ManifestError) as caught:
        render({'policy': policy})
    assert message in str(caught.value)


def test_filter_reports_setting_errors():
    operands = FilterModule().filters()['cluster_operands']
    with pytest.raises(AnsibleFilterError, match='gpuops.gpu_operator: device plugin config: sharing.mps.resources'):
        operands({}, device_plugin_settings={'sharing': {'mps': {}}})


def test_rbac_is_least_privilege():
    objects = cm.rbac('gpu-operator')
    roles = [o for o in objects if o['kind'] == 'ClusterRole']
    assert roles, 'operands that call the API get a ClusterRole'
    for role in roles:
        for rule in role['rules']:
            assert '*' not in rule['verbs'] + rule['resources'] + rule['apiGroups'], role['metadata']['name']
    bindings = [o for o in objects if o['kind'] == 'ClusterRoleBinding']
    assert all(b['roleRef']['name'] == b['metadata']['name'] != 'cluster-admin' for b in bindings)
    accounts = {o['metadata']['name'] for o in objects if o['kind'] == 'ServiceAccount'}
    assert accounts == {c['name'] for c in cm.COMPONENTS.values()} | {cm.VALIDATOR_ACCOUNT}


def test_namespace_runtime_classes_and_crd():
    namespace = cm.namespace_object('gpu-operator')
    assert namespace['metadata']['labels']['pod-security.kubernetes.io/enforce'] == 'privileged'
    handlers = {(o['metadata']['name'], o['handler']) for o in cm.runtime_classes()}
    assert handlers == {('nvidia', 'nvidia'), ('nvidia-cdi', 'nvidia-cdi'), ('nvidia-legacy', 'nvidia-legacy')}
    crd = cm.cluster_policy_crd()
    version = crd['spec']['versions'][0]
    assert crd['spec']['scope'] == 'Cluster' and version['subresources'] == {'status': {}}
    assert [c['jsonPath'] for c in version['additionalPrinterColumns']] == ['.status.state', '.metadata.creationTimestamp']
    assert cm.prerequisites(with_crd=False)[-1]['kind'] != 'CustomResourceDefinition'


def test_mig_profiles_config_map():
    rendered = render({'mig_configs': {'all-1g.10gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}]}})
    config_map = next(o for o in rendered['present'] if o['metadata']['name'] == cm.MIG_CONFIG_MAP)
    configs = yaml.safe_load(config_map['data']['config.yaml'])
    assert configs['version'] == 'v1' and sorted(configs['mig-configs']) == ['all-1g.10gb', 'all-disabled', 'all-enabled']
    with pytest.raises(cm.ManifestError, match="MIG profile 'broken'"):
        render({'mig_configs': {'broken': [{'devices': 'all'}]}})
