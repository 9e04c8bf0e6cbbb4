# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The GPU Operator chart's values (`gpu_operator_helm_values`) as the ClusterPolicy its templates/clusterpolicy.yaml
renders, at policy.OPERATOR_RELEASE.

Values are taken as `helm install -f values.yaml` takes them (laid over the chart's defaults, CHART_VALUES: maps merge,
a list or a scalar replaces, a null removes) or as `helm get values -a` prints them (all of them). `cluster_policy_spec()`
then does what the template does, field by field: which fields it writes only when set, which it quotes, the driver's
upgrade policy (`gpuPodDeletion` is the CR's `podDeletion`), the operand labels it adds to `daemonsets.labels`. The
chart's config sections' `create` and `data` (the ConfigMaps its other templates create) go where the ClusterPolicy
sections here take them; the settings that are not ClusterPolicy fields are checked or handed on (`chart_settings()`),
as fields.CHART_FIELDS says.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy

# The chart's name and the version and appVersion it is published with.
CHART = 'gpu-operator'
# What `helm get values` prints above the values, should it be pasted with them.
HEADERS = ('USER-SUPPLIED VALUES', 'COMPUTED VALUES')

# The chart's defaults: deployments/gpu-operator/values.yaml of the release (tests/fixtures/gpu-operator/values.yaml is the
# file itself, which the tests compare with this).
CHART_VALUES = {
    'platform': {'openshift': False},
    'nfd': {'enabled': True, 'nodefeaturerules': False},
    'psa': {'enabled': False},
    'cdi': {'enabled': True, 'nriPluginEnabled': False},
    'sandboxWorkloads': {'enabled': False, 'defaultWorkload': 'container', 'mode': 'kubevirt'},
    'hostPaths': {'rootFS': '/', 'driverInstallDir': '/run/nvidia/driver'},
    'daemonsets': {
        'labels': {},
        'annotations': {},
        'priorityClassName': 'system-node-critical',
        'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
        'updateStrategy': 'RollingUpdate',
        'rollingUpdate': {'maxUnavailable': '1'},
    },
    'validator': {
        'repository': 'nvcr.io/nvidia',
        'image': 'gpu-operator',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'args': [],
        'resources': {},
        'hostNetwork': False,
        'plugin': {'env': []},
    },
    'operator': {
        'repository': 'nvcr.io/nvidia',
        'image': 'gpu-operator',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'priorityClassName': 'system-node-critical',
        'runtimeClass': 'nvidia',
        'nodeSelector': {'kubernetes.io/os': 'linux'},
        'use_ocp_driver_toolkit': False,
        'cleanupCRD': False,
        'upgradeCRD': True,
        'tolerations': [{'key': 'node-role.kubernetes.io/control-plane', 'operator': 'Equal', 'value': '', 'effect': 'NoSchedule'}],
        'annotations': {'openshift.io/scc': 'restricted-readonly'},
        'affinity': {
            'nodeAffinity': {
                'preferredDuringSchedulingIgnoredDuringExecution': [
                    {
                        'weight': 1,
                        'preference': {'matchExpressions': [{'key': 'node-role.kubernetes.io/control-plane', 'operator': 'In', 'values': ['']}]},
                    },
                ],
            },
        },
        'logging': {'timeEncoding': 'epoch', 'level': 'info', 'develMode': False},
        'resources': {'limits': {'cpu': '500m', 'memory': '350Mi'}, 'requests': {'cpu': '200m', 'memory': '100Mi'}},
    },
    'mig': {'strategy': 'single'},
    'driver': {
        'enabled': True,
        'nvidiaDriverCRD': {'enabled': False, 'deployDefaultCR': True, 'driverType': 'gpu', 'nodeSelector': {}},
        'kernelModuleType': 'auto',
        'usePrecompiled': False,
        'repository': 'nvcr.io/nvidia',
        'image': 'driver',
        'version': '595.91.07',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'startupProbe': {'initialDelaySeconds': 60, 'periodSeconds': 10, 'timeoutSeconds': 60, 'failureThreshold': 120},
        'rdma': {'enabled': False, 'useHostMofed': False},
        'upgradePolicy': {
            'autoUpgrade': True,
            'maxParallelUpgrades': 1,
            'maxUnavailable': '25%',
            'waitForCompletion': {'timeoutSeconds': 0, 'podSelector': ''},
            'gpuPodDeletion': {'force': False, 'timeoutSeconds': 300, 'deleteEmptyDir': False},
            'drain': {'enable': False, 'force': False, 'podSelector': '', 'timeoutSeconds': 300, 'deleteEmptyDir': False},
        },
        'manager': {
            'repository': 'nvcr.io/nvidia/cloud-native',
            'image': 'k8s-driver-manager',
            'version': 'v0.12.0',
            'imagePullPolicy': 'IfNotPresent',
            'env': [],
        },
        'env': [],
        'resources': {},
        'repoConfig': {'configMapName': ''},
        'certConfig': {'name': ''},
        'licensingConfig': {'secretName': '', 'nlsEnabled': True},
        'virtualTopology': {'config': ''},
        'kernelModuleConfig': {'name': ''},
        'secretEnv': '',
        'hostNetwork': False,
    },
    'toolkit': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia/k8s',
        'image': 'container-toolkit',
        'version': 'v1.20.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'resources': {},
        'installDir': '/usr/local/nvidia',
        'hostNetwork': False,
    },
    'devicePlugin': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia',
        'image': 'k8s-device-plugin',
        'version': 'v0.20.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'args': [],
        'env': [],
        'resources': {},
        'config': {'create': False, 'name': '', 'default': '', 'data': {}},
        'mps': {'root': '/run/nvidia/mps'},
        'hostNetwork': False,
    },
    'dcgm': {
        'enabled': False,
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'dcgm',
        'version': '4.6.0-1-ubuntu24.04',
        'imagePullPolicy': 'IfNotPresent',
        'args': [],
        'env': [],
        'resources': {},
        'hostNetwork': False,
    },
    'dcgmExporter': {
        'enabled': True,
        'annotations': {},
        'repository': 'nvcr.io/nvidia/k8s',
        'image': 'dcgm-exporter',
        'version': '4.6.0-4.8.3-distroless',
        'imagePullPolicy': 'IfNotPresent',
        'env': [],
        'resources': {},
        'hostPID': False,
        'hostNetwork': False,
        'enablePodLabels': False,
        'enablePodUID': False,
        'service': {'internalTrafficPolicy': 'Cluster'},
        'serviceMonitor': {'enabled': True, 'interval': '15s', 'scrapeTimeout': '10s', 'honorLabels': False, 'additionalLabels': {}, 'relabelings': []},
    },
    'gfd': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia',
        'image': 'k8s-device-plugin',
        'version': 'v0.20.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'resources': {},
        'hostNetwork': False,
    },
    'migManager': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'k8s-mig-manager',
        'version': 'v0.15.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'resources': {},
        'config': {'default': 'all-disabled', 'create': False, 'name': '', 'data': {}},
        'gpuClientsConfig': {'name': ''},
        'hostNetwork': False,
    },
    'nodeStatusExporter': {
        'enabled': False,
        'repository': 'nvcr.io/nvidia',
        'image': 'gpu-operator',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'resources': {},
        'hostNetwork': False,
    },
    'gds': {
        'enabled': False,
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'nvidia-fs',
        'version': '2.29.4',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'args': [],
    },
    'gdrcopy': {
        'enabled': False,
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'gdrdrv',
        'version': 'v2.6',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'args': [],
    },
    'vgpuManager': {
        'enabled': False,
        'repository': '',
        'image': 'vgpu-manager',
        'version': '',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'resources': {},
        'driverManager': {
            'repository': 'nvcr.io/nvidia/cloud-native',
            'image': 'k8s-driver-manager',
            'version': 'v0.12.0',
            'imagePullPolicy': 'IfNotPresent',
            'env': [],
        },
        'kernelModuleConfig': {'name': ''},
        'hostNetwork': False,
    },
    'vgpuDeviceManager': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'vgpu-device-manager',
        'version': 'v0.5.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'config': {'name': '', 'default': 'default'},
        'hostNetwork': False,
    },
    'vfioManager': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'k8s-driver-manager',
        'version': 'v0.12.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'resources': {},
        'driverManager': {
            'repository': 'nvcr.io/nvidia/cloud-native',
            'image': 'k8s-driver-manager',
            'version': 'v0.12.0',
            'imagePullPolicy': 'IfNotPresent',
            'env': [],
        },
        'hostNetwork': False,
    },
    'kataManager': {
        'enabled': False,
        'config': {},
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'env': [],
        'resources': {},
        'hostNetwork': False,
    },
    'sandboxDevicePlugin': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia',
        'image': 'kubevirt-gpu-device-plugin',
        'version': 'v1.6.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'args': [],
        'env': [],
        'resources': {},
        'hostNetwork': False,
    },
    'kataSandboxDevicePlugin': {
        'enabled': True,
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'nvidia-sandbox-device-plugin',
        'version': 'v0.0.5',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'args': [],
        'env': [],
        'resources': {},
        'hostNetwork': False,
    },
    'ccManager': {
        'enabled': True,
        'defaultMode': 'on',
        'repository': 'nvcr.io/nvidia/cloud-native',
        'image': 'k8s-cc-manager',
        'version': 'v0.4.3',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'resources': {},
        'hostNetwork': False,
    },
    'clusterPolicy': {'deployCR': True},
    'gpuCluster': {'deployCR': False},
    'draDriver': {
        'repository': 'nvcr.io/nvidia',
        'image': 'dra-driver-nvidia-gpu',
        'version': 'v0.5.0',
        'imagePullPolicy': 'IfNotPresent',
        'imagePullSecrets': [],
        'featureGates': {},
        'gpus': {'kubeletPlugin': {}},
        'computeDomains': {'enabled': True, 'controller': {}, 'kubeletPlugin': {}},
    },
    'extraObjects': [],
    'node-feature-discovery': {
        'priorityClassName': 'system-node-critical',
        'gc': {'enable': True, 'replicaCount': 1, 'serviceAccount': {'name': 'node-feature-discovery', 'create': False}},
        'worker': {
            'serviceAccount': {'name': 'node-feature-discovery', 'create': False},
            'tolerations': [
                {'key': 'node-role.kubernetes.io/control-plane', 'operator': 'Equal', 'value': '', 'effect': 'NoSchedule'},
                {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'},
            ],
            'config': {'sources': {'pci': {'deviceClassWhitelist': ['02', '0200', '0207', '0300', '0302'], 'deviceLabelFields': ['vendor']}}},
        },
        'master': {'serviceAccount': {'name': 'node-feature-discovery', 'create': True}, 'config': {'extraLabelNs': ['nvidia.com']}},
    },
}


class HelmValuesError(policy.PolicyError):
    """Chart values that cannot be honoured; the message names the value."""


def coalesce(defaults, values):
    """Helm's merge of values over the chart's defaults: maps merge key by key, anything else replaces, a null removes."""
    merged = copy.deepcopy(defaults)
    for key, value in (values or {}).items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = coalesce(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def values_of(given):
    """The chart's values with the user's laid over them; the `helm get values` header line, if pasted too, left out."""
    if not isinstance(given, dict):
        raise HelmValuesError('gpu_operator_helm_values must be the mapping of a values file, not %r' % (given,))
    return coalesce(CHART_VALUES, dict((key, value) for key, value in given.items() if not (key in HEADERS and value is None)))


# --- the template's ways of writing a value ------------------------------------------------------

def _truthy(value):
    """Go templates' `if`: false, 0, nil and empty strings, maps and lists are false."""
    return value not in (None, False, 0, '') and value != {} and value != []


def _text(value):
    """A value as Go's %v prints it into the template."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return '' if value is None else str(value)


def _plain(value):
    """`key: {{ value }}`: the printed value, read back as YAML (a string may become a bool or a number)."""
    import yaml  # pylint: disable=import-outside-toplevel  # the controller has PyYAML
    if isinstance(value, (dict, list)):
        return copy.deepcopy(value)
    try:
        return yaml.safe_load(_text(value))
    except yaml.YAMLError:
        return _text(value)


def _default(value, fallback):
    """Sprig's `default`: the fallback when the value is empty."""
    return value if _truthy(value) else fallback


# A field's way (the template's): 'if' (written only when set), 'quote' (written when set, as a string), 'yaml' (written
# when set, as toYaml gives it), 'always' (always written), 'always-quote' (always written, as a string).
IMAGE = (('repository', 'if'), ('image', 'if'), ('version', 'quote'), ('imagePullPolicy', 'if'), ('imagePullSecrets', 'yaml'))
COMPONENT = IMAGE + (('resources', 'yaml'), ('env', 'yaml'), ('args', 'yaml'))
MANAGER = (('repository', 'if'), ('image', 'if'), ('version', 'quote'), ('imagePullPolicy', 'if'), ('env', 'yaml'))


def _write(target, key, value, way):
    if way == 'always':
        target[key] = _plain(value)
    elif way == 'always-quote':
        target[key] = _text(value)
    elif _truthy(value):
        target[key] = {'if': _plain, 'quote': _text, 'yaml': copy.deepcopy}[way](value)


def _section(values, ways, enabled='always'):
    """A section as the template writes it: `enabled` first (its way), then each field its way."""
    found = {}
    if enabled:
        _write(found, 'enabled', values.get('enabled'), enabled)
    for key, way in ways:
        _write(found, key, values.get(key), way)
    return found


def _env_sections(values, names):
    """validator.plugin and the others: written when set, with `env: []` when they have none."""
    return dict((name, {'env': copy.deepcopy(values[name].get('env') or [])}) for name in names if _truthy(values.get(name)))


# --- the ClusterPolicy of the values -------------------------------------------------------------

def _daemonsets(values):
    common = values.get('daemonsets') or {}
    # gpu-operator.operand-labels: the chart's labels, then the user's; without the chart's app.kubernetes.io/managed-by,
    # which every object here has as gpuops.gpu_operator (policy.accept leaves it out of a ClusterPolicy that has it).
    labels = {'helm.sh/chart': '%s-%s' % (CHART, policy.OPERATOR_RELEASE)}
    labels.update(common.get('labels') or {})
    found = {'labels': labels}
    for key, way in (('annotations', 'yaml'), ('tolerations', 'yaml'), ('priorityClassName', 'if'), ('updateStrategy', 'if')):
        _write(found, key, common.get(key), way)
    if _truthy(common.get('rollingUpdate')):
        found['rollingUpdate'] = {'maxUnavailable': _text(common['rollingUpdate'].get('maxUnavailable'))}
    return found


def _validator(values):
    validator = values.get('validator') or {}
    found = _section(validator, (('repository', 'if'), ('image', 'if')), enabled=None)
    found['version'] = _text(_default(validator.get('version'), policy.OPERATOR_RELEASE))
    found.update(_section(validator, (('imagePullPolicy', 'if'), ('imagePullSecrets', 'yaml'), ('resources', 'yaml'), ('env', 'yaml'),
                                      ('args', 'yaml'), ('hostNetwork', 'if')), enabled=None))
    found.update(_env_sections(validator, ('plugin', 'cuda', 'driver', 'toolkit', 'vfioPCI', 'vgpuManager', 'vgpuDevices')))
    return found


def _upgrade_policy(upgrade):
    wait, deletion, drain = (upgrade.get(key) or {} for key in ('waitForCompletion', 'gpuPodDeletion', 'drain'))
    found = {'autoUpgrade': _default(upgrade.get('autoUpgrade'), False), 'maxParallelUpgrades': _default(upgrade.get('maxParallelUpgrades'), 0),
             'maxUnavailable': _plain(_default(upgrade.get('maxUnavailable'), '25%')),
             'waitForCompletion': {'timeoutSeconds': _plain(wait.get('timeoutSeconds'))},
             'podDeletion': {'force': _default(deletion.get('force'), False), 'timeoutSeconds': _plain(deletion.get('timeoutSeconds')),
                             'deleteEmptyDir': _default(deletion.get('deleteEmptyDir'), False)},
             'drain': {'enable': _default(drain.get('enable'), False), 'force': _default(drain.get('force'), False)}}
    _write(found['waitForCompletion'], 'podSelector', wait.get('podSelector'), 'if')
    _write(found['drain'], 'podSelector', drain.get('podSelector'), 'if')
    found['drain'].update(timeoutSeconds=_plain(drain.get('timeoutSeconds')), deleteEmptyDir=_default(drain.get('deleteEmptyDir'), False))
    return found


def _driver(values):
    driver = values.get('driver') or {}
    crd = (driver.get('nvidiaDriverCRD') or {}).get('enabled')
    found = {'enabled': _plain(driver.get('enabled')), 'useNvidiaDriverCRD': _plain(crd)}
    if not _truthy(crd):
        found.update(kernelModuleType=_plain(driver.get('kernelModuleType')), usePrecompiled=_plain(driver.get('usePrecompiled')))
        found.update(_section(driver, IMAGE + (('startupProbe', 'yaml'), ('livenessProbe', 'yaml'), ('readinessProbe', 'yaml')), enabled=None))
        rdma = driver.get('rdma') or {}
        found['rdma'] = {'enabled': _plain(rdma.get('enabled')), 'useHostMofed': _plain(rdma.get('useHostMofed'))}
        found['manager'] = _section(driver.get('manager') or {}, MANAGER, enabled=None)
        found.update(_section(driver, (('repoConfig', 'yaml'), ('certConfig', 'yaml'), ('licensingConfig', 'yaml'), ('virtualTopology', 'yaml'),
                                       ('kernelModuleConfig', 'yaml'), ('secretEnv', 'if'), ('resources', 'yaml'), ('env', 'yaml'),
                                       ('args', 'yaml')), enabled=None))
    if _truthy(driver.get('upgradePolicy')):
        found['upgradePolicy'] = _upgrade_policy(driver['upgradePolicy'])
    _write(found, 'hostNetwork', driver.get('hostNetwork'), 'if')
    return found


def _with_manager(values, extra):
    """vgpuManager and vfioManager: a component with a driverManager."""
    found = _section(values, COMPONENT + extra)
    found['driverManager'] = _section(values.get('driverManager') or {}, MANAGER, enabled=None)
    return found


def _config(values, name_way, default_way):
    """devicePlugin.config and migManager.config as the CR holds them (name and default); None: not written."""
    config = values.get('config')
    found = {}
    _write(found, 'name', (config or {}).get('name'), name_way)
    if default_way:
        _write(found, 'default', (config or {}).get('default'), default_way)
    return found


def cluster_policy_spec(values):
    """The spec of the ClusterPolicy templates/clusterpolicy.yaml renders with these (coalesced) values."""
    def get(key):
        return values.get(key) or {}

    host_paths = get('hostPaths')
    spec = {'hostPaths': {'rootFS': _plain(host_paths.get('rootFS')), 'driverInstallDir': _plain(host_paths.get('driverInstallDir'))}}
    _write(spec['hostPaths'], 'kubeletRootDir', host_paths.get('kubeletRootDir'), 'if')
    operator = get('operator')
    # operator.defaultGPUMode is written too, but is no field of the CRD: the API server drops it.
    spec['operator'] = _section(operator, (('runtimeClass', 'if'), ('use_ocp_driver_toolkit', 'if')), enabled=None)
    if _truthy(operator.get('metrics')):
        spec['operator']['metrics'] = _section(operator['metrics'], (('serviceMonitor', 'yaml'),), enabled=None)
    spec['daemonsets'] = _daemonsets(values)
    spec['validator'] = _validator(values)
    spec['mig'] = _section(get('mig'), (('strategy', 'if'),), enabled=None)
    spec['psa'] = {'enabled': _plain(get('psa').get('enabled'))}
    cdi = get('cdi')
    spec['cdi'] = {'enabled': _plain(cdi.get('enabled'))}
    if _truthy(cdi.get('enabled')) and _truthy(cdi.get('nriPluginEnabled')):
        spec['cdi']['nriPluginEnabled'] = _plain(cdi['nriPluginEnabled'])
    spec['driver'] = _driver(values)
    spec['vgpuManager'] = _with_manager(get('vgpuManager'), (('kernelModuleConfig', 'yaml'), ('hostNetwork', 'if')))
    spec['kataManager'] = _section(get('kataManager'), (('config', 'yaml'),) + COMPONENT + (('hostNetwork', 'if'),))
    spec['vfioManager'] = _with_manager(get('vfioManager'), (('hostNetwork', 'if'),))
    spec['vgpuDeviceManager'] = _section(get('vgpuDeviceManager'), COMPONENT + (('config', 'yaml'), ('hostNetwork', 'if')))
    spec['ccManager'] = _section(get('ccManager'), (('defaultMode', 'always-quote'),) + COMPONENT + (('hostNetwork', 'if'),))
    spec['toolkit'] = _section(get('toolkit'), IMAGE + (('resources', 'yaml'), ('env', 'yaml'), ('installDir', 'if'), ('hostNetwork', 'if')))
    spec['devicePlugin'] = _section(get('devicePlugin'), COMPONENT)
    if _truthy((get('devicePlugin').get('config') or {}).get('name')):
        spec['devicePlugin']['config'] = _config(get('devicePlugin'), 'quote', 'always-quote')
    _write(spec['devicePlugin'], 'hostNetwork', get('devicePlugin').get('hostNetwork'), 'if')
    spec['dcgm'] = _section(get('dcgm'), COMPONENT + (('hostNetwork', 'if'),))
    exporter = get('dcgmExporter')
    spec['dcgmExporter'] = _section(exporter, (('annotations', 'yaml'),) + COMPONENT)
    if _truthy(exporter.get('config')) and _truthy(exporter['config'].get('name')):
        spec['dcgmExporter']['config'] = _config(exporter, 'if', None)
    spec['dcgmExporter'].update(_section(exporter, (('serviceMonitor', 'yaml'), ('service', 'yaml'), ('hostPID', 'if'), ('hostNetwork', 'if'),
                                                    ('hpcJobMapping', 'yaml'), ('enablePodLabels', 'if'), ('enablePodUID', 'if'),
                                                    ('podLabelAllowlistRegex', 'yaml')), enabled=None))
    spec['gfd'] = _section(get('gfd'), COMPONENT + (('hostNetwork', 'if'),))
    manager = get('migManager')
    spec['migManager'] = _section(manager, COMPONENT)
    if _truthy(manager.get('config')):
        spec['migManager']['config'] = _config(manager, 'if', 'always-quote')
    spec['migManager'].update(_section(manager, (('gpuClientsConfig', 'yaml'), ('hostNetwork', 'if')), enabled=None))
    exporter = get('nodeStatusExporter')
    spec['nodeStatusExporter'] = _section(exporter, (('repository', 'if'), ('image', 'if')))
    spec['nodeStatusExporter']['version'] = _text(_default(exporter.get('version'), policy.OPERATOR_RELEASE))
    spec['nodeStatusExporter'].update(_section(exporter, COMPONENT[3:] + (('hostNetwork', 'if'),), enabled=None))
    for name in ('gds', 'gdrcopy'):
        if _truthy(values.get(name)):
            section = values[name]
            spec[name] = {'enabled': _plain(section.get('enabled')) if name == 'gds' else _default(section.get('enabled'), False)}
            spec[name].update(_section(section, (('repository', 'if'), ('image', 'if'), ('version', 'always-quote'), ('imagePullPolicy', 'if'),
                                                 ('imagePullSecrets', 'yaml'), ('env', 'yaml'), ('args', 'yaml')), enabled=None))
    spec['sandboxWorkloads'] = _section(get('sandboxWorkloads'), (('defaultWorkload', 'if'), ('mode', 'quote')))
    spec['sandboxDevicePlugin'] = _section(get('sandboxDevicePlugin'), COMPONENT + (('hostNetwork', 'if'),), enabled='if')
    kata = get('kataSandboxDevicePlugin')
    spec['kataSandboxDevicePlugin'] = _section(kata, COMPONENT + (('hostNetwork', 'if'),), enabled='always' if kata.get('enabled') is not None else None)
    return spec


def config_data(values):
    """The ConfigMaps the chart's other templates create (plugin_config.yaml, dcgm_exporter_config.yaml, mig_config.yaml: with
    `create` and data), as the ClusterPolicy sections here take them: {section: {config: {create, data}}}."""
    found = {}
    for section in ('devicePlugin', 'dcgmExporter', 'migManager'):
        config = (values.get(section) or {}).get('config') or {}
        if config.get('create') and _truthy(config.get('data')):
            found[section] = {'config': {'create': True, 'data': copy.deepcopy(config['data'])}}
    return found


def chart_settings(values):
    """The chart's settings that are not ClusterPolicy fields and belong elsewhere: NFD (`nfd`, `node-feature-discovery`).
    Refuses (HelmValuesError) those that would be wrong to ignore."""
    refused = (
        ((values.get('clusterPolicy') or {}).get('deployCR') is False, 'clusterPolicy.deployCR is false: the chart would deploy no ClusterPolicy, '
         'and this collection deploys what a ClusterPolicy says'),
        (_truthy((values.get('gpuCluster') or {}).get('deployCR')), 'gpuCluster.deployCR is true: the GPUCluster (DRA driver) stack is not '
         'deployed by this collection'),
        (_truthy((values.get('platform') or {}).get('openshift')), 'platform.openshift is true: OpenShift is not a target of this collection '
         '(deviation: openshift)'),
        (_truthy(values.get('extraObjects')), 'extraObjects is not empty: apply your own objects with kubernetes.core.k8s in your playbook'),
    )
    for found, message in refused:
        if found:
            raise HelmValuesError('gpu_operator_helm_values: %s; see %s' % (message, policy.DOCS))
    return dict((key, copy.deepcopy(values.get(key) or {})) for key in ('nfd', 'node-feature-discovery'))


def from_values(given):
    """{'spec': the ClusterPolicy spec of the chart's values `given` (with the config sections' create and data), 'chart': the
    chart's settings for elsewhere (chart_settings)}."""
    values = values_of(given)
    chart = chart_settings(values)
    return {'spec': policy.merge(cluster_policy_spec(values), config_data(values)), 'chart': chart}
