# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Every cluster-side manifest rendered from ClusterPolicy settings and validated against Kubernetes 1.29 to 1.34.

The Operator facts each object must carry are checked through ansible-playbook in tests/cluster/test_parity.py;
these are the renderer's own rules, table-driven.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.filter.cluster_manifests import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import (
    plugin_config, policy, prerequisites as cm, registry, skeleton, validation, vgpu_profiles)

REPO = Path(__file__).resolve().parents[5]
MINORS = ['1.29', '1.30', '1.31', '1.32', '1.33', '1.34']
# Kinds outside the Kubernetes core schemas that kubernetes-validate ships: checked otherwise (see below) or not at all.
NOT_IN_CORE_SCHEMAS = {'ServiceMonitor', 'ClusterPolicy', 'NodeFeatureRule'}
TIME_SLICING = {'version': 'v1', 'sharing': {'timeSlicing': {'renameByDefault': True, 'failRequestsGreaterThanOne': True,
                                                             'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}
MPS = {'version': 'v1', 'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}}
CONFIGS = {'config': {'name': 'plugin-configs', 'default': 'ts', 'data': {'ts': TIME_SLICING, 'mps': yaml.safe_dump(MPS)}}}
MIG_CONFIG = {'version': 'v1', 'mig-configs': {'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
                                               'two-3g': [{'devices': [0], 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2}}]}}
CDI_NODES = [{'host': 'a', 'cdi_enabled': True}, {'host': 'b', 'cdi_enabled': True}]
SCENARIOS = {
    'defaults': {},
    'registry': {'registry': 'mirror.example:5000/nv'},
    'per-image override': {'registry': 'mirror.example', 'policy': {'dcgmExporter': {'repository': 'quay.example/dcgm', 'version': '4.0.0'}}},
    'tolerations and OnDelete': {'policy': {'daemonsets': {'tolerations': [{'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoExecute',
                                                                           'tolerationSeconds': 30}],
                                                           'updateStrategy': 'OnDelete', 'priorityClassName': 'gpu-critical',
                                                           'podSecurityContext': {'runAsUser': 0}}}},
    'maxUnavailable percent': {'policy': {'daemonsets': {'rollingUpdate': {'maxUnavailable': '25%'}, 'labels': {'team': 'ml'}, 'annotations': {'a': 'b'}}}},
    'mig none': {'policy': {'mig': {'strategy': 'none'}}},
    'mig mixed with MIG time-slicing': {'policy': {'mig': {'strategy': 'mixed'}, 'devicePlugin': {'config': {'name': 'c', 'default': 'x', 'data': {
        'x': {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/mig-1g.10gb', 'replicas': 2}]}}}}}}}},
    'time-slicing and MPS configs, per node': {'policy': {'devicePlugin': CONFIGS, 'gfd': {'enabled': True}}},
    'external device plugin ConfigMap': {'policy': {'devicePlugin': {'config': {'name': 'theirs', 'default': 'any'}}}},
    'CDI': {'nodes': CDI_NODES, 'policy': {'operator': {'runtimeClass': 'nvidia'}}},
    'custom MIG config, GPU clients, metrics, MPS root': {'policy': {
        'migManager': {'config': {'name': 'my-mig', 'data': {'config.yaml': MIG_CONFIG}}, 'gpuClientsConfig': {'name': 'my-clients'}},
        'dcgmExporter': {'config': {'name': 'my-metrics', 'data': 'DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization.\n'},
                         'hpcJobMapping': {'enabled': True}, 'enablePodLabels': True, 'podLabelAllowlistRegex': ['^app$'],
                         'service': {'type': 'NodePort'}, 'hostPID': True, 'annotations': {'x': 'y'}},
        'devicePlugin': {'mps': {'root': '/var/run/mps'}, 'hostNetwork': True}}},
    'validator component env, args, env, host network': {'policy': {'validator': {
        'env': [{'name': 'DEBUG', 'value': 'true'}], 'args': ['sleep infinity'], 'hostNetwork': True,
        'driver': {'env': [{'name': 'DISABLE_DEV_CHAR_SYMLINK_CREATION', 'value': 'true'}]},
        'toolkit': {'env': [{'name': 'NVIDIA_VISIBLE_DEVICES', 'value': 'void'}]}, 'cuda': {'env': [{'name': 'WITH_WORKLOAD', 'value': 'false'}]},
        'plugin': {'env': [{'name': 'WITH_WORKLOAD', 'value': 'true'}]}, 'vfioPCI': {'env': [{'name': 'X', 'value': 'y'}]}},
        'gfd': {'enabled': True}}},
    'host paths of a host mounted elsewhere': {'policy': {
        'hostPaths': {'rootFS': '/host-root', 'driverInstallDir': '/opt/nvidia/driver', 'kubeletRootDir': '/var/lib/k0s/kubelet'},
        'psa': {'enabled': True}, 'validator': {'driver': {'env': [{'name': 'DRIVER_INSTALL_DIR', 'value': '/given'}]}},
        'devicePlugin': {'env': [{'name': 'HOST_ROOT', 'value': '/given'}]}}},
    'everything on, pull secrets, resources, args, env': {
        'monitor': True, 'registry': 'mirror.example:5000/nv', 'nfd': {'enabled': True, 'nodefeaturerules': True},
        'policy': {'gfd': {'enabled': True, 'env': [{'name': 'MIG_STRATEGY', 'value': 'none'}]}, 'dcgm': {'enabled': True},
                   'validator': {'imagePullSecrets': ['pull'], 'resources': {'limits': {'memory': '50Mi'}}},
                   'devicePlugin': {'imagePullSecrets': ['pull'], 'args': ['--fail-on-init-error=false'],
                                    'env': [{'name': 'DEVICE_LIST_STRATEGY', 'value': 'volume-mounts'}],
                                    'resources': {'limits': {'memory': '100Mi', 'cpu': 1}}},
                   'nodeStatusExporter': {'enabled': True, 'imagePullSecrets': ['pull']},
                   'dcgmExporter': {'serviceMonitor': {'honorLabels': True, 'additionalLabels': {'release': 'prom'},
                                                       'relabelings': [{'sourceLabels': ['__meta_kubernetes_pod_node_name'], 'targetLabel': 'instance'}]}}}},
}


def resolution(scenario):
    return registry.resolution(scenario.get('policy'), scenario.get('registry', ''), scenario.get('nodes'), nfd=scenario.get('nfd'))


def render(scenario):
    """{'present', 'absent', 'resolved': the resolution they come from}."""
    resolved = resolution(scenario)
    return dict(registry.render(resolved, 'gpu-operator', service_monitor_crd=scenario.get('monitor', False)), resolved=resolved)


def validator_objects(scenario):
    return validation.validator('gpu-operator', resolution(scenario))['objects']


def every_object(scenario):
    rendered = render(scenario)
    nfd = registry.nfd(rendered['resolved'], 'gpu-operator')
    return rendered['present'] + cm.prerequisites('gpu-operator', True, rendered['resolved']) + nfd['crds'] + nfd['present'] + [
        registry.cluster_policy(rendered['resolved'])] + validator_objects(scenario)


def label_settings(spec, node_config='', nfd_enabled=False):
    return plugin_config.node_label_settings(registry.resolution(spec, nfd={'enabled': nfd_enabled}), node_config)


def by_name(objects, kind):
    return dict((o['metadata']['name'], o) for o in objects if o['kind'] == kind)


def pod_of(rendered, name):
    return by_name(rendered['present'], 'DaemonSet')[name]['spec']['template']['spec']


def env_of(container):
    return dict((e['name'], e.get('value', e.get('valueFrom'))) for e in container.get('env', []))


def distinct_objects():
    """{object as JSON: the first scenario rendering it}: scenarios share most objects, each is validated once."""
    found = {}
    for name, scenario in SCENARIOS.items():
        for obj in every_object(scenario):
            found.setdefault(json.dumps(obj, sort_keys=True), name)
    return found


@pytest.mark.parametrize('minor', MINORS)
def test_manifests_validate(minor):
    skipped = set()
    for text, scenario in distinct_objects().items():
        obj = json.loads(text)
        if obj['kind'] in NOT_IN_CORE_SCHEMAS:
            skipped.add(obj['kind'])
            continue
        try:
            kubernetes_validate.validate(obj, minor, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError('%s %s of scenario %r: %s' % (obj['kind'], obj['metadata']['name'], scenario, exc)) from None
    assert skipped == NOT_IN_CORE_SCHEMAS


@pytest.mark.parametrize('name', list(SCENARIOS))
def test_cluster_policy_matches_its_crd_schema(name):
    """The CR against the openAPIV3Schema of our CRD (jsonschema ignores the x-kubernetes-* extensions)."""
    schema = cm.cluster_policy_crd()['spec']['versions'][0]['schema']['openAPIV3Schema']
    jsonschema.validate(registry.cluster_policy(render(SCENARIOS[name])['resolved']), schema)


def test_defaults():
    rendered = render({})
    assert sorted(by_name(rendered['present'], 'DaemonSet')) == [
        'nvidia-dcgm-exporter', 'nvidia-device-plugin-daemonset', 'nvidia-device-plugin-mps-control-daemon', 'nvidia-mig-manager']
    # off by default (GFD: deviation gfd-default; the node status exporter and the standalone DCGM as in the chart; the sandbox
    # operands without sandboxWorkloads.enabled)
    assert {o['metadata']['name'] for o in rendered['absent'] if o['kind'] == 'DaemonSet'} == {
        'gpu-feature-discovery', 'nvidia-node-status-exporter', 'nvidia-dcgm', 'nvidia-vgpu-device-manager', 'nvidia-sandbox-validator',
        'nvidia-vfio-manager', 'nvidia-sandbox-device-plugin-daemonset', 'nvidia-kata-sandbox-device-plugin-daemonset', 'nvidia-cc-manager'}
    plugin = by_name(rendered['present'], 'DaemonSet')['nvidia-device-plugin-daemonset']
    assert plugin['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {'maxUnavailable': 1}}
    pod = plugin['spec']['template']['spec']
    assert [c['name'] for c in pod['initContainers']] == ['toolkit-validation'] and [c['name'] for c in pod['containers']] == ['nvidia-device-plugin']
    assert pod['containers'][0]['image'] == 'nvcr.io/nvidia/k8s-device-plugin:v0.20.0'
    assert pod['initContainers'][0]['image'] == 'nvcr.io/nvidia/gpu-operator:v26.7.0'
    assert not any(o['kind'] == 'ServiceMonitor' for o in rendered['present']), 'no ServiceMonitor without its CRD'
    assert 'shareProcessNamespace' not in pod, 'no config-manager, nothing to share'


def test_empty_priority_class_and_tolerations_keep_the_assets():
    """The Operator overrides a DaemonSet's priority class and tolerations only with a non-empty value (SOURCE:
    NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go applyCommonDaemonsetConfig; each asset DaemonSet has
    system-node-critical and the nvidia.com/gpu toleration), so "" and [] keep them, on the operands and the validator."""
    scenario = {'policy': {'daemonsets': {'priorityClassName': '', 'tolerations': []}}}
    daemonsets = by_name(render(scenario)['present'] + validator_objects(scenario), 'DaemonSet')
    assert daemonsets
    for daemonset in daemonsets.values():
        pod = daemonset['spec']['template']['spec']
        assert pod['priorityClassName'] == 'system-node-critical'
        assert pod['tolerations'] == [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    custom = render({'policy': {'daemonsets': {'priorityClassName': 'gpu-critical'}}})['present']
    assert by_name(custom, 'DaemonSet')['nvidia-device-plugin-daemonset']['spec']['template']['spec']['priorityClassName'] == 'gpu-critical'


def test_release_defaults_are_stated_once():
    """The images come from each operand's `image`, the one place a bump changes (the validator's is the release's)."""
    resolved = render({})['resolved']['spec']
    owners = [operand for operand in registry.OPERANDS if operand.image]
    assert {operand.section for operand in owners} == {'validator', 'devicePlugin', 'dcgm', 'dcgmExporter', 'gfd', 'migManager', 'nodeStatusExporter',
                                                       'vgpuDeviceManager', 'vfioManager', 'sandboxDevicePlugin', 'kataSandboxDevicePlugin',
                                                       'ccManager'}
    for operand in owners:
        spec = resolved[operand.section]
        assert (spec['repository'], spec['image'], spec['version']) == operand.image
    assert next(operand for operand in owners if operand.section == 'validator').image[2] == policy.OPERATOR_RELEASE


def test_registry_rewrite_and_per_image_override():
    rendered = render(SCENARIOS['per-image override'])
    images = dict((name, ds['spec']['template']['spec']['containers'][0]['image'])
                  for name, ds in by_name(rendered['present'], 'DaemonSet').items())
    assert images == {'nvidia-device-plugin-daemonset': 'mirror.example/nvidia/k8s-device-plugin:v0.20.0',
                      'nvidia-device-plugin-mps-control-daemon': 'mirror.example/nvidia/k8s-device-plugin:v0.20.0',
                      'nvidia-dcgm-exporter': 'quay.example/dcgm/dcgm-exporter:4.0.0',
                      'nvidia-mig-manager': 'mirror.example/nvidia/cloud-native/k8s-mig-manager:v0.15.0'}
    init_images = set(c['image'] for ds in by_name(rendered['present'], 'DaemonSet').values()
                      for c in ds['spec']['template']['spec']['initContainers'] if 'validation' in c['name'])
    assert init_images == {'mirror.example/nvidia/gpu-operator:v26.7.0'}, 'the validation init containers follow the mirror too'


def test_digest_version_pins_with_at():
    digest = 'sha256:' + 'ab' * 32
    pod = pod_of(render({'policy': {'migManager': {'version': digest}}}), 'nvidia-mig-manager')
    assert pod['containers'][0]['image'] == 'nvcr.io/nvidia/cloud-native/k8s-mig-manager@' + digest


def test_env_and_args_merge_by_name():
    """One env entry or arg overrides that name only: the Operator's defaults stay (issue: DCGM lost its collectors)."""
    rendered = render({'policy': {'dcgmExporter': {'env': [{'name': 'DCGM_EXPORTER_INTERVAL', 'value': '10000'},
                                                           {'name': 'DCGM_EXPORTER_LISTEN', 'value': ':9500'}]},
                                  'devicePlugin': {'env': [{'name': 'PASS_DEVICE_SPECS', 'value': 'false'}], 'args': ['--mig-strategy=none']},
                                  'migManager': {'args': ['--with-reboot', '--mode=x', '--mode=y']}}})
    exporter = pod_of(rendered, 'nvidia-dcgm-exporter')['containers'][0]
    assert [e['name'] for e in exporter['env']] == ['DCGM_EXPORTER_LISTEN', 'DCGM_EXPORTER_KUBERNETES', 'DCGM_EXPORTER_COLLECTORS', 'NODE_NAME',
                                                    'DCGM_EXPORTER_INTERVAL']
    assert env_of(exporter)['DCGM_EXPORTER_LISTEN'] == ':9500' and env_of(exporter)['DCGM_EXPORTER_KUBERNETES'] == 'true'
    plugin = pod_of(rendered, 'nvidia-device-plugin-daemonset')['containers'][0]
    assert env_of(plugin)['PASS_DEVICE_SPECS'] == 'false' and env_of(plugin)['DEVICE_ID_STRATEGY'] == 'uuid'
    # the entrypoint stays: the args reach the plugin through it
    assert plugin['command'] == ['/bin/sh', '-c'] and plugin['args'] == ['exec /bin/entrypoint.sh "$@"', 'entrypoint.sh', '--mig-strategy=none']
    assert pod_of(rendered, 'nvidia-mig-manager')['containers'][0]['args'][2:] == ['--with-reboot', '--mode=y']
    assert policy.merge_args(['--a=1', 'x', '--b'], ['--b=2', '--a=3', 'y']) == ['--a=3', 'x', '--b=2', 'y']


def test_validator_component_env_reaches_its_validation_init_containers():
    """Issue 24: validator.<component>.env on that component's init container, last (SOURCE: NVIDIA/gpu-operator v26.7.0
    controllers/object_controls.go TransformValidatorComponent for the validator, transformValidationInitContainer for the
    toolkit-validation init container of every operand); validator.args replace the main container's, validator.env and
    hostNetwork (TransformValidatorShared, TransformValidator) go to the validator's Pod."""
    scenario = SCENARIOS['validator component env, args, env, host network']
    pod = pod_of({'present': validator_objects(scenario)}, 'nvidia-operator-validator')
    init = dict((item['name'], env_of(item)) for item in pod['initContainers'])
    assert init['driver-validation']['DISABLE_DEV_CHAR_SYMLINK_CREATION'] == 'true' and init['driver-validation']['WITH_WAIT'] == 'true'
    assert init['toolkit-validation']['NVIDIA_VISIBLE_DEVICES'] == 'void'
    assert init['cuda-validation']['WITH_WORKLOAD'] == 'false' and init['cuda-validation']['VALIDATOR_IMAGE']
    assert init['plugin-validation']['WITH_WORKLOAD'] == 'true' and init['plugin-validation']['MIG_STRATEGY'] == 'single'
    assert [name for name in init if 'X' in init[name]] == []  # the sandbox validator's components reach no container here
    main = pod['containers'][0]
    assert main['args'] == ['sleep infinity'] and env_of(main) == {'DEBUG': 'true'}
    assert pod['hostNetwork'] is True and pod['dnsPolicy'] == 'ClusterFirstWithHostNet'
    rendered = render(scenario)
    waiting = [(obj['metadata']['name'], item) for obj in rendered['present'] if obj['kind'] == 'DaemonSet'
               for item in obj['spec']['template']['spec'].get('initContainers', []) if item['name'] == 'toolkit-validation']
    assert len(waiting) >= 5 and all(env_of(item).get('NVIDIA_VISIBLE_DEVICES') == 'void' for _name, item in waiting), waiting
    cluster_policy = registry.cluster_policy(rendered['resolved'])['spec']['validator']
    assert cluster_policy['plugin'] == {'env': [{'name': 'WITH_WORKLOAD', 'value': 'true'}]} and cluster_policy['vgpuDevices'] == {'env': []}
    assert cluster_policy['vfioPCI'] == {'env': [{'name': 'X', 'value': 'y'}]}


def test_host_paths_reach_the_operands_that_mount_them():
    """Issue 24: hostPaths as the Operator applies them to every operand (SOURCE: NVIDIA/gpu-operator v26.7.0
    controllers/object_controls.go preProcessDaemonSet: transformForHostRoot, transformForDriverInstallDir, before each
    operand's transform, whose user env therefore wins; TransformDCGMExporter: kubeletRootDir's pod-resources)."""
    rendered = render(SCENARIOS['host paths of a host mounted elsewhere'])
    roots = {}
    for obj in rendered['present'] + validator_objects(SCENARIOS['host paths of a host mounted elsewhere']):
        if obj['kind'] == 'DaemonSet':
            pod = obj['spec']['template']['spec']
            volumes = dict((volume['name'], volume.get('hostPath', {}).get('path')) for volume in pod['volumes'])
            roots[obj['metadata']['name']] = (volumes.get('host-root'), sorted(set(
                env_of(item).get('HOST_ROOT') for item in pod.get('initContainers', []) + pod['containers'])), volumes.get('driver-install-dir'))
    assert roots['nvidia-device-plugin-daemonset'] == ('/host-root', ['/given', '/host-root'], '/opt/nvidia/driver')
    assert roots['nvidia-mig-manager'] == ('/host-root', ['/host-root'], '/opt/nvidia/driver')
    assert roots['nvidia-operator-validator'] == ('/host-root', ['/host-root'], '/opt/nvidia/driver')
    assert roots['nvidia-dcgm-exporter'] == (None, [None], None), 'no host-root volume: no HOST_ROOT'
    validator = pod_of({'present': validator_objects(SCENARIOS['host paths of a host mounted elsewhere'])}, 'nvidia-operator-validator')
    driver = validator['initContainers'][0]
    assert driver['name'] == 'driver-validation' and env_of(driver)['DRIVER_INSTALL_DIR'] == '/given'
    assert env_of(driver)['DRIVER_INSTALL_DIR_CTR_PATH'] == '/opt/nvidia/driver'
    assert {'name': 'driver-install-dir', 'mountPath': '/opt/nvidia/driver', 'mountPropagation': 'HostToContainer'} in driver['volumeMounts']
    assert {'name': 'host-dev-char', 'hostPath': {'path': '/host-root/dev/char'}} in validator['volumes']
    exporter = pod_of(rendered, 'nvidia-dcgm-exporter')
    assert {'name': 'pod-gpu-resources', 'hostPath': {'path': '/var/lib/k0s/kubelet/pod-resources'}} in exporter['volumes']
    assert {'mountPath': '/var/lib/kubelet/pod-resources', 'name': 'pod-gpu-resources', 'readOnly': True} in exporter['containers'][0]['volumeMounts']
    spec = registry.cluster_policy(rendered['resolved'])['spec']
    assert spec['psa'] == {'enabled': True} and spec['hostPaths']['kubeletRootDir'] == '/var/lib/k0s/kubelet'
    # at the defaults nothing changes; empty is the default, as the Operator reads it
    for paths in ({}, {'rootFS': '', 'driverInstallDir': '', 'kubeletRootDir': ''}):
        defaults = render({'policy': {'hostPaths': paths}})
        plugin = pod_of(defaults, 'nvidia-device-plugin-daemonset')
        assert {'name': 'host-root', 'hostPath': {'path': '/'}} in plugin['volumes'] and 'HOST_ROOT' not in env_of(plugin['containers'][0])
        assert {'name': 'driver-install-dir', 'hostPath': {'path': '/run/nvidia/driver', 'type': 'DirectoryOrCreate'}} in plugin['volumes']
        assert {'name': 'pod-gpu-resources', 'hostPath': {'path': '/var/lib/kubelet/pod-resources'}} in pod_of(defaults, 'nvidia-dcgm-exporter')['volumes']


LOCAL_HOSTENGINE = [{'name': 'DCGM_REMOTE_HOSTENGINE_INFO', 'value': 'localhost:5555'}]


# SOURCE: NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go TransformDCGMExporter (DCGM.IsEnabled: the remote
# hostengine nvidia-dcgm:5555 set before the user's env, which wins; else a localhost hostengine: hostNetwork and
# ClusterFirstWithHostNet), controllers/transforms_test.go "dcgm running on the host itself(DGX BaseOS)".
@pytest.mark.parametrize('dcgm, env, hostengine, host_network', [
    (False, [], None, False),                                       # the exporter's embedded hostengine
    (True, [], 'nvidia-dcgm:5555', False),                          # the standalone DCGM's Service
    (True, LOCAL_HOSTENGINE, 'localhost:5555', False),              # the user's env wins; DCGM enabled: no host network
    (False, LOCAL_HOSTENGINE, 'localhost:5555', True),              # issue 24 item 2: on the host (DGX OS), deviation dcgm-on-host
    (False, [{'name': 'DCGM_REMOTE_HOSTENGINE_INFO', 'value': 'dcgm.example:5555'}], 'dcgm.example:5555', False),
])
def test_dcgm_exporter_reads_the_hostengine_it_is_pointed_at(dcgm, env, hostengine, host_network):
    rendered = render({'policy': {'dcgm': {'enabled': dcgm}, 'dcgmExporter': {'env': env}}})
    pod = pod_of(rendered, 'nvidia-dcgm-exporter')
    assert env_of(pod['containers'][0]).get('DCGM_REMOTE_HOSTENGINE_INFO') == hostengine
    assert (pod.get('hostNetwork'), pod.get('dnsPolicy')) == ((True, 'ClusterFirstWithHostNet') if host_network else (None, None))
    assert ('nvidia-dcgm' in by_name(rendered['present'], 'DaemonSet')) is dcgm
    assert ('nvidia-dcgm' in by_name(rendered['present'], 'Service')) is dcgm


def test_gfd_keeps_mig_strategy_over_user_env():
    pod = pod_of(render(SCENARIOS['everything on, pull secrets, resources, args, env']), 'gpu-feature-discovery')
    assert env_of(pod['containers'][0])['MIG_STRATEGY'] == 'single'


def test_device_plugin_configs_per_node():
    rendered = render(SCENARIOS['time-slicing and MPS configs, per node'])
    config_map = by_name(rendered['present'], 'ConfigMap')['plugin-configs']
    assert sorted(config_map['data']) == ['mps', 'ts']
    assert yaml.safe_load(config_map['data']['ts']) == TIME_SLICING and yaml.safe_load(config_map['data']['mps']) == MPS
    for name, process in (('nvidia-device-plugin-daemonset', 'nvidia-device-plugin'), ('gpu-feature-discovery', 'gpu-feature-discovery'),
                          ('nvidia-device-plugin-mps-control-daemon', '/usr/bin/mps-control-daemon')):
        pod = pod_of(rendered, name)
        sidecar = next(c for c in pod['containers'] if c['name'] == 'config-manager')
        assert env_of(sidecar)['PROCESS_TO_SIGNAL'] == process and env_of(sidecar)['DEFAULT_CONFIG'] == 'ts'
        assert env_of(sidecar)['FALLBACK_STRATEGIES'] == 'empty'
        init = next(c for c in pod['initContainers'] if c['name'] == 'config-manager-init')
        assert env_of(init)['ONESHOT'] == 'true'
        assert env_of(pod['containers'][0])['CONFIG_FILE'] == '/config/config.yaml'
        assert {'name': 'plugin-configs', 'configMap': {'name': 'plugin-configs'}} in pod['volumes']
        assert pod.get('shareProcessNamespace') is (None if pod.get('hostPID') else True)
    mps = by_name(rendered['present'], 'DaemonSet')['nvidia-device-plugin-mps-control-daemon']['spec']['template']['spec']
    assert mps['nodeSelector'] == {'nvidia.com/gpu.deploy.device-plugin': 'true', 'nvidia.com/mps.capable': 'true'}
    assert mps['serviceAccountName'] == 'nvidia-device-plugin'


def test_config_changes_roll_the_pods():
    def checksum(scenario):
        template = by_name(render(scenario)['present'], 'DaemonSet')['nvidia-device-plugin-daemonset']['spec']['template']
        return template['metadata']['annotations'][skeleton.CHECKSUM]
    changed = {'policy': {'devicePlugin': {'config': dict(CONFIGS['config'], data={'ts': MPS, 'mps': MPS})}}}
    assert checksum(SCENARIOS['time-slicing and MPS configs, per node']) != checksum(changed) != checksum({})


def test_label_settings_follow_the_plugin_config():
    """The node labels are computed from the same config the plugin gets (one source of truth)."""
    spec = SCENARIOS['time-slicing and MPS configs, per node']['policy']
    # GFD is on in this scenario but publishes through NFD only: without NFD the node labels stage writes its labels
    assert label_settings(spec) == {'mig_strategy': 'single', 'mig_config': 'all-disabled', 'labels': {}, 'gfd_labels': True, 'nfd_enabled': False,
                                    'sharing': {'strategy': 'time-slicing', 'replicas': 4, 'rename_by_default': True},
                                    'sandbox_workloads': {'enabled': False, 'defaultWorkload': 'container', 'mode': 'kubevirt'}}
    assert label_settings(spec, nfd_enabled=True)['gfd_labels'] is False and label_settings({}, nfd_enabled=True)['gfd_labels'] is True
    assert label_settings({}, nfd_enabled=True)['nfd_enabled'] is True
    assert label_settings(spec, 'mps')['sharing'] == {'strategy': 'mps', 'replicas': 2, 'rename_by_default': False}
    assert label_settings(spec, 'mps')['labels'] == {'nvidia.com/device-plugin.config': 'mps'}
    assert label_settings({})['sharing'] == {'strategy': 'none', 'replicas': 1, 'rename_by_default': False}
    assert label_settings({'migManager': {'enabled': False}, 'mig': {'strategy': 'mixed'}})['mig_config'] == ''
    with pytest.raises(GpuOpsError, match="no device plugin config 'other' in devicePlugin.config.data"):
        label_settings(spec, 'other')
    with pytest.raises(GpuOpsError, match='the ConfigMap was not read'):
        label_settings(SCENARIOS['external device plugin ConfigMap']['policy'])
    # GFD Pods (with NFD) read the ConfigMap themselves; without NFD the labels stage would write their labels and cannot
    external_with_gfd = dict(SCENARIOS['external device plugin ConfigMap']['policy'], gfd={'enabled': True})
    assert label_settings(external_with_gfd, nfd_enabled=True)['sharing']['strategy'] == 'none'
    with pytest.raises(GpuOpsError, match='the ConfigMap was not read'):
        label_settings(external_with_gfd)


NVIDIA_TIME_SLICING = yaml.safe_load((REPO / 'tests' / 'fixtures' / 'nvidia-docs' / 'time-slicing-config-all.yaml').read_text())
FOUR_REPLICAS = {'strategy': 'time-slicing', 'replicas': 4, 'rename_by_default': False}


def test_nvidias_time_slicing_example_under_the_default_strategy():
    """NVIDIA's documented ConfigMap (tests/fixtures/nvidia-docs/SOURCE.md), unchanged, says flags.migStrategy none: the
    plugin's MIG_STRATEGY (mig.strategy, single by default) wins over it, so it is accepted and read under single - as
    the chart's config.data, and as the ConfigMap its user created and the policy names (the kubectl flow)."""
    named = {'devicePlugin': {'config': {'name': 'time-slicing-config-all', 'default': 'any'}}}
    given = {'devicePlugin': {'config': dict(named['devicePlugin']['config'], data=NVIDIA_TIME_SLICING['data'])}}
    assert label_settings(given)['sharing'] == FOUR_REPLICAS
    assert plugin_config.configs(registry.resolution(given)['spec']['devicePlugin']['config'], 'mixed')['any']['flags'] == {'migStrategy': 'none'}

    resolved = registry.resolution(named)
    assert plugin_config.config_map_to_read(resolved) == 'time-slicing-config-all'
    read = plugin_config.with_config_map(resolved, {'resources': [NVIDIA_TIME_SLICING]})
    assert plugin_config.node_label_settings(read)['sharing'] == FOUR_REPLICAS
    assert read['spec']['devicePlugin']['config']['create'] is False, 'the ConfigMap is its user\'s'
    assert plugin_config.config_maps(read['spec'], 'gpu-operator') == [] and registry.cluster_policy(read)['spec']['devicePlugin']['config'] == {
        'name': 'time-slicing-config-all', 'default': 'any'}
    assert plugin_config.with_config_map(registry.resolution(given), None) == registry.resolution(given), 'data given: nothing to read'
    with pytest.raises(GpuOpsError, match="there is no ConfigMap time-slicing-config-all in namespace gpu-operator"):
        plugin_config.with_config_map(resolved, {'resources': []})
    with pytest.raises(GpuOpsError, match="devicePlugin.config.default 'other' is not in ConfigMap gpu-operator/time-slicing-config-all"):
        plugin_config.with_config_map(registry.resolution({'devicePlugin': {'config': {'name': 'time-slicing-config-all', 'default': 'other'}}}),
                                      {'resources': [NVIDIA_TIME_SLICING]})


def test_config_maps_made_from_data_are_removed_once_no_longer_named():
    """Each ConfigMap made from a config section's data carries gpuops.io/config-of; a later run removes those its settings
    neither make nor mount (the policy stopped naming them), never one without the label (its user's)."""
    scenario = {'policy': {'devicePlugin': {'config': {'name': 'plugin-a', 'default': 'ts', 'data': {'ts': TIME_SLICING}}},
                           'dcgmExporter': {'config': {'name': 'metrics-a', 'data': 'DCGM_FI_DEV_GPU_UTIL, gauge, util\n'}}}}
    made = dict((o['metadata']['name'], o['metadata']['labels'].get(skeleton.CONFIG_OF)) for o in render(scenario)['present'] if o['kind'] == 'ConfigMap')
    assert made['plugin-a'] == 'devicePlugin.config' and made['metrics-a'] == 'dcgmExporter.config'
    assert made['default-mig-parted-config'] is None and made['nvidia-device-plugin-entrypoint'] is None, 'only those made from data'

    def cluster_map(name, section=None):
        labels = {'app.kubernetes.io/managed-by': 'gpuops.gpu_operator'}
        if section:
            labels[skeleton.CONFIG_OF] = section
        return {'metadata': {'name': name, 'namespace': 'gpu-operator', 'labels': labels}, 'data': {}}

    found = [cluster_map('plugin-a', 'devicePlugin.config'), cluster_map('plugin-old', 'devicePlugin.config'),
             cluster_map('metrics-a', 'dcgmExporter.config'), cluster_map('users-own')]
    operands = FilterModule().filters()['cluster_operands']
    stale = [o for o in operands(resolution(scenario), config_maps=found)['absent']
             if o['kind'] == 'ConfigMap' and o['metadata']['name'] != vgpu_profiles.VGPU_CONFIG_MAP]  # the vGPU device manager's, off
    assert stale == [{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'plugin-old', 'namespace': 'gpu-operator'}}]
    # Named without data now (NVIDIA's kubectl flow over a map an earlier run made): mounted, so kept.
    named = resolution({'policy': {'devicePlugin': {'config': {'name': 'plugin-old'}}}})
    assert [o['metadata']['name'] for o in operands(named, config_maps=found)['absent']
            if o['kind'] == 'ConfigMap' and o['metadata']['name'] != vgpu_profiles.VGPU_CONFIG_MAP] == ['plugin-a', 'metrics-a']


def test_cdi_follows_the_nodes():
    rendered = render(SCENARIOS['CDI'])
    plugin = env_of(pod_of(rendered, 'nvidia-device-plugin-daemonset')['containers'][0])
    assert (plugin['CDI_ENABLED'], plugin['DEVICE_LIST_STRATEGY'], plugin['NVIDIA_CDI_HOOK_PATH']) == (
        'true', 'cdi-annotations,cdi-cri', '/usr/bin/nvidia-cdi-hook')
    assert env_of(pod_of(rendered, 'nvidia-mig-manager')['containers'][0])['CDI_ENABLED'] == 'true'
    assert [o['metadata']['name'] for o in cm.prerequisites(resolved=resolution({'nodes': CDI_NODES})) if o['kind'] == 'RuntimeClass'] == [
        'nvidia', 'nvidia-cdi', 'nvidia-legacy']
    assert [o['metadata']['name'] for o in cm.prerequisites(resolved=resolution({})) if o['kind'] == 'RuntimeClass'] == ['nvidia']
    assert [o['metadata']['name'] for o in cm.unused_runtime_classes(resolution({}))] == ['nvidia-cdi', 'nvidia-legacy']
    assert cm.unused_runtime_classes(resolution({'nodes': CDI_NODES})) == []
    assert 'CDI_ENABLED' not in env_of(pod_of(render({}), 'nvidia-device-plugin-daemonset')['containers'][0])


def test_runtime_class_follows_the_toolkit():
    nodes = [{'host': 'a', 'runtime_name': 'nvidia-gpu'}, {'host': 'b', 'runtime_name': 'nvidia-gpu', 'install_dir': '/opt/bin'}]
    rendered = render({'nodes': nodes})
    assert set(ds['spec']['template']['spec']['runtimeClassName'] for ds in by_name(rendered['present'], 'DaemonSet').values()) == {'nvidia-gpu'}
    assert [o['handler'] for o in cm.prerequisites(resolved=resolution({'nodes': nodes})) if o['kind'] == 'RuntimeClass'] == ['nvidia-gpu']
    # with CDI, the variants the nodes register under that name (contract.runtime_names), not nvidia-cdi / nvidia-legacy
    cdi_nodes = [dict(node, cdi_enabled=True, install_dir='/usr/bin') for node in nodes]
    assert [(o['metadata']['name'], o['handler']) for o in cm.prerequisites(resolved=resolution({'nodes': cdi_nodes})) if o['kind'] == 'RuntimeClass'] == [
        ('nvidia-gpu', 'nvidia-gpu'), ('nvidia-gpu-cdi', 'nvidia-gpu-cdi'), ('nvidia-gpu-legacy', 'nvidia-gpu-legacy')]
    assert [o['metadata']['name'] for o in cm.unused_runtime_classes(resolution({'nodes': nodes}))] == ['nvidia-gpu-cdi', 'nvidia-gpu-legacy']
    with pytest.raises(GpuOpsError, match="the GPU nodes differ in container_toolkit_runtime_name .a='nvidia-gpu', b='nvidia'"):
        render({'nodes': [nodes[0], {'host': 'b'}]})
    with pytest.raises(GpuOpsError, match="operator.runtimeClass is 'nvidia' but container_toolkit_runtime_name='nvidia-gpu' on a, b"):
        render({'nodes': nodes, 'policy': {'operator': {'runtimeClass': 'nvidia'}}})
    with pytest.raises(GpuOpsError, match='container_toolkit_install_dir'):
        render({'nodes': [dict(node, cdi_enabled=True) for node in nodes]})


def test_mig_manager_configs():
    rendered = render({})
    manager = pod_of(rendered, 'nvidia-mig-manager')
    config = yaml.safe_load(by_name(rendered['present'], 'ConfigMap')['default-mig-parted-config']['data']['config.yaml'])
    assert len(config['mig-configs']) == 81 and 'all-balanced' in config['mig-configs']
    assert env_of(manager['containers'][0])['DEFAULT_CONFIG_FILE'] == '/mig-parted-config/config-default.yaml'
    assert env_of(manager['containers'][0])['DEFAULT_GPU_CLIENTS_NAMESPACE'] == {'fieldRef': {'fieldPath': 'metadata.namespace'}}
    entrypoint = by_name(rendered['present'], 'ConfigMap')['nvidia-mig-manager-entrypoint']['data']['entrypoint.sh']
    assert 'WITH_SHUTDOWN_HOST_GPU_CLIENTS=${IS_HOST_DRIVER' in entrypoint and '/run/nvidia/validations/driver-ready' in entrypoint
    custom = render(SCENARIOS['custom MIG config, GPU clients, metrics, MPS root'])
    manager = pod_of(custom, 'nvidia-mig-manager')
    assert env_of(manager['containers'][0])['CONFIG_FILE'] == '/mig-parted-config/config.yaml'
    volumes = dict((v['name'], v) for v in manager['volumes'])
    assert volumes['mig-parted-config']['configMap'] == {'name': 'my-mig'} and volumes['gpu-clients']['configMap'] == {'name': 'my-clients'}
    assert {o['metadata']['name'] for o in custom['absent'] if o['kind'] == 'ConfigMap'} == {
        'default-mig-parted-config', 'default-gpu-clients', vgpu_profiles.VGPU_CONFIG_MAP}  # the last: the vGPU device manager is off
    assert 'my-mig' in by_name(custom['present'], 'ConfigMap')


def test_dcgm_exporter_options():
    custom = render(SCENARIOS['custom MIG config, GPU clients, metrics, MPS root'])
    pod = pod_of(custom, 'nvidia-dcgm-exporter')
    env = env_of(pod['containers'][0])
    assert env['DCGM_EXPORTER_COLLECTORS'] == '/etc/dcgm-exporter/dcgm-metrics.csv'
    assert env['DCGM_HPC_JOB_MAPPING_DIR'] == '/var/lib/dcgm-exporter/job-mapping'
    assert env['DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS'] == 'true' and pod['automountServiceAccountToken'] is True
    assert pod['hostPID'] is True
    assert 'nvidia-dcgm-exporter-read-pods' in by_name(custom['present'], 'ClusterRole')
    assert by_name(custom['present'], 'Service')['nvidia-dcgm-exporter']['spec']['type'] == 'NodePort'
    assert pod_of(render({}), 'nvidia-dcgm-exporter')['automountServiceAccountToken'] is False
    plugin = pod_of(custom, 'nvidia-device-plugin-daemonset')
    assert {'name': 'mps-root', 'hostPath': {'path': '/var/run/mps', 'type': 'DirectoryOrCreate'}} in plugin['volumes']
    assert env_of(plugin['containers'][0])['MPS_ROOT'] == '/var/run/mps' and plugin['hostNetwork'] is True


def test_service_monitor_only_with_its_crd():
    everything = render(SCENARIOS['everything on, pull secrets, resources, args, env'])
    monitor = by_name(everything['present'], 'ServiceMonitor')['nvidia-dcgm-exporter']
    assert monitor['spec']['endpoints'][0]['honorLabels'] is True and monitor['spec']['jobLabel'] == 'app'
    assert monitor['metadata']['labels']['release'] == 'prom'
    off = render({'policy': {'dcgmExporter': {'serviceMonitor': {'enabled': False}}}, 'monitor': True})
    assert any(o['kind'] == 'ServiceMonitor' for o in off['absent'])


@pytest.mark.parametrize('spec,message', [
    ({'driverr': {}}, 'driverr is not a field of the ClusterPolicy CRD (nvidia.com/v1) of GPU Operator v26.7.0'),
    ({'dcgmExporter': {'hostPaths': {}}}, 'dcgmExporter.hostPaths is not a field of the ClusterPolicy CRD'),
    ({'gds': {'enabled': 'yes'}}, "gds.enabled must be true or false, not 'yes'"),
    ({'driver': {'usePrecompiled': True}}, "driver.usePrecompiled is True: set by role nvidia_driver's variables (nvidia_driver_*)"),
    ({'driver': {'repoConfig': {'configMapName': 'repo-config'}}}, "driver.repoConfig.configMapName is 'repo-config': the Operator mounts"),
    ({'driver': {'kernelModuleType': 'closed'}}, 'driver.kernelModuleType must be one of auto, open, proprietary'),
    ({'driver': {'upgradePolicy': {'podDeletion': {'force': 'maybe'}}}}, "driver.upgradePolicy takes autoUpgrade"),
    ({'toolkit': {'installDir': 'nvidia'}}, 'toolkit.installDir must be an absolute path'),
    ({'toolkit': {'env': [{'name': 'CONTAINERD_RUNTIME_TYPE', 'value': 'x'}]}}, 'toolkit.env CONTAINERD_RUNTIME_TYPE: the toolkit is set up'),
    ({'toolkit': {'env': [{'name': 'CONTAINERD_SET_AS_DEFAULT', 'value': 'yes'}]}}, 'CONTAINERD_SET_AS_DEFAULT must be true or false'),
    ({'toolkit': {'env': [{'name': 'CONTAINERD_CONFIG', 'value': 'config.toml'}]}}, 'CONTAINERD_CONFIG must be an absolute path'),
    ({'psa': {'enabled': 'yes'}}, 'psa.enabled must be true or false'),
    ({'hostPaths': {'rootFS': 'host'}}, "hostPaths.rootFS must be an absolute path on the host, not 'host'"),
    ({'hostPaths': {'kubeletRootDir': 'var/lib/kubelet'}}, "hostPaths.kubeletRootDir must be an absolute path on the host, not 'var/lib/kubelet'"),
    ({'mig': {'strategy': 'triple'}}, 'mig.strategy must be one of'),
    ({'daemonsets': {'updateStrategy': 'Recreate'}}, 'daemonsets.updateStrategy must be RollingUpdate or OnDelete'),
    ({'daemonsets': {'rollingUpdate': {'maxUnavailable': 'many'}}}, 'maxUnavailable must be a number or a percentage'),
    ({'devicePlugin': {'version': ''}}, 'devicePlugin.version must be a non-empty string'),
    ({'devicePlugin': {'imagePullPolicy': 'Sometimes'}}, 'devicePlugin.imagePullPolicy must be one of Always, Never, IfNotPresent'),
    ({'devicePlugin': {'env': [{'name': 'A', 'value': True}]}}, 'devicePlugin.env[0] (A): the value must be a string'),
    ({'devicePlugin': {'env': [{'name': 'A', 'valueFrom': {}}]}}, 'devicePlugin.env[0].valueFrom is not a field of the ClusterPolicy CRD'),
    ({'devicePlugin': {'env': [{'value': 'a'}]}}, 'devicePlugin.env[0] must be {name, value}'),
    ({'devicePlugin': {'enabled': 'yes'}}, 'devicePlugin.enabled must be true or false'),
    ({'devicePlugin': {'mps': {'root': 'mps'}}}, 'devicePlugin.mps.root must be an absolute path'),
    ({'migManager': {'config': {'default': 'all-3g'}}}, "migManager.config.default must be all-disabled or ''"),
    ({'migManager': {'config': {'name': 'default-mig-parted-config'}}}, 'is the name of the default ConfigMap'),
    ({'migManager': {'config': {'name': 'm', 'data': {'config.yaml': {'version': 'v1', 'mig-configs': {'x': [{'devices': 'all'}]}}}}}},
     "profile 'x': each entry needs devices and mig-enabled"),
    ({'migManager': {'config': {'name': 'm', 'data': {'config.yaml': {'version': 'v1', 'mig-configs': {
        'x': [{'devices': 'all', 'mig-enabled': False}]}}}}}}, 'has no all-disabled profile'),
    ({'devicePlugin': {'config': {'data': {'a': {}}}}}, 'devicePlugin.config.name is required with devicePlugin.config.data'),
    ({'devicePlugin': {'config': {'name': 'c', 'create': True}}}, 'devicePlugin.config.create is true but devicePlugin.config.data is empty'),
    ({'devicePlugin': {'config': {'name': 'c', 'create': False, 'data': {'a': {}}}}}, 'the data would be ignored'),
    ({'devicePlugin': {'config': {'name': 'c', 'default': 'b', 'data': {'a': {}}}}}, "devicePlugin.config.default 'b' is not one of"),
])
def test_bad_policy(spec, message):
    with pytest.raises(GpuOpsError) as caught:
        render({'policy': spec})
    assert message in str(caught.value)


def sharing(kind, resources, **extra):
    return {'devicePlugin': {'config': {'name': 'c', 'data': {'x': dict({'sharing': {kind: dict({'resources': resources}, **extra)}})}}}}


@pytest.mark.parametrize('spec,message', [
    (sharing('timeSlicing', [{'name': 'nvidia.com/gpu', 'replicas': 1}]), 'replicas must be an integer >= 2'),
    (sharing('mps', [{'name': 'nvidia.com/gpu', 'replicas': '4'}]), 'replicas must be an integer >= 2'),
    (sharing('timeSlicing', []), 'resources must be a non-empty list'),
    (sharing('timeSlicing', [{'name': 'amd.com/gpu', 'replicas': 2}]), 'must be nvidia.com/gpu or nvidia.com/mig-<profile>'),
    (sharing('timeSlicing', [{'name': 'nvidia.com/mig-1g.10gb', 'replicas': 2}]), 'only advertised with migStrategy mixed'),
    (sharing('timeSlicing', [{'name': 'nvidia.com/gpu', 'replicas': 2, 'rename': 'x'}]), 'rename is ignored by the device plugin'),
    (sharing('timeSlicing', [{'name': 'nvidia.com/gpu', 'replicas': 2, 'devices': [0]}]), 'devices: the device plugin shares all devices'),
    (sharing('timeSlicing', [{'name': 'nvidia.com/gpu', 'replicas': 2}], renameByDefault='yes'), 'renameByDefault must be true or false'),
    (dict(sharing('mps', [{'name': 'nvidia.com/gpu', 'replicas': 2}]), mig={'strategy': 'mixed'}), 'refuses MPS with migStrategy mixed'),
    ({'devicePlugin': {'config': {'name': 'c', 'data': {'x': {'flags': {'migStrategy': 'all'}}}}}}, 'flags.migStrategy must be one of'),
    ({'devicePlugin': {'config': {'name': 'c', 'data': {'x': {'version': 'v2'}}}}}, 'version must be v1'),
    ({'devicePlugin': {'config': {'name': 'c', 'data': {'x': {'shareing': {}}}}}}, 'unknown key(s) shareing'),
    ({'devicePlugin': {'config': {'name': 'c', 'data': {'x': 'sharing: [a'}}}}, 'devicePlugin.config.data.x is not valid YAML'),
    ({'devicePlugin': {'config': {'name': 'c', 'data': {'x': {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]},
                                                                          'mps': {}}}}}}}, 'exactly one of mps, timeSlicing'),
])
def test_bad_device_plugin_config(spec, message):
    with pytest.raises(GpuOpsError, match='devicePlugin.config.data.x') as caught:
        render({'policy': spec})
    assert message in str(caught.value)


def test_filter_reports_setting_errors():
    resolve = FilterModule().filters()['resolve_cluster_policy']
    with pytest.raises(AnsibleFilterError, match='gpuops.gpu_operator: devicePlugin.config.data.x: sharing.mps.resources'):
        resolve(sharing('mps', None))


def test_rbac_is_the_operators_without_wildcards():
    scenario = SCENARIOS['everything on, pull secrets, resources, args, env']
    objects = render(scenario)['present'] + validator_objects(scenario)
    roles = list(by_name(objects, 'ClusterRole').values()) + list(by_name(objects, 'Role').values())
    assert roles
    for role in roles:
        for rule in role['rules']:
            assert '*' not in rule['verbs'] + rule['resources'] + rule['apiGroups'], role['metadata']['name']
            assert 'security.openshift.io' not in rule['apiGroups']
    for binding in list(by_name(objects, 'ClusterRoleBinding').values()) + list(by_name(objects, 'RoleBinding').values()):
        assert binding['roleRef']['name'] == binding['metadata']['name'] != 'cluster-admin'
    accounts = set(by_name(objects, 'ServiceAccount'))
    used = set(ds['spec']['template']['spec']['serviceAccountName'] for ds in by_name(objects, 'DaemonSet').values())
    # the sandbox operands' with sandboxWorkloads.enabled (test_sandbox_operands.py)
    assert accounts == used == set(operand.account for operand in registry.OPERANDS if not isinstance(operand, skeleton.SandboxOperand))


def test_namespace_and_crd():
    namespace = cm.namespace_object('gpu-operator')
    assert namespace['metadata']['labels']['pod-security.kubernetes.io/enforce'] == 'privileged'
    crd = cm.cluster_policy_crd()
    version = crd['spec']['versions'][0]
    assert crd['spec']['scope'] == 'Cluster' and version['subresources'] == {'status': {}}
    assert cm.prerequisites(with_crd=False)[-1]['kind'] != 'CustomResourceDefinition'


def test_cluster_policy_object():
    spec = registry.cluster_policy(render(SCENARIOS['time-slicing and MPS configs, per node'])['resolved'])['spec']
    assert spec['devicePlugin']['config'] == {'name': 'plugin-configs', 'default': 'ts'}, "the chart's create/data stay out of the CR"
    assert spec['migManager']['config'] == {'default': 'all-disabled'}
    assert spec['driver'] == spec['toolkit'] == {'enabled': False}
    assert spec['cdi'] == {'enabled': False} and spec['operator'] == {'runtimeClass': 'nvidia'}
    assert 'config' not in registry.cluster_policy(render({})['resolved'])['spec']['devicePlugin']
