# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The cluster side's Kubernetes objects, rendered from ClusterPolicy-style settings.

One renderer serves every operand: a table (COMPONENTS) says what differs between them
(name, deploy label, volumes, security, extra env), and `daemonset()` builds all of them the
same way from the ClusterPolicy vocabulary (enabled, repository, image, version,
imagePullPolicy, imagePullSecrets, resources, args, env; daemonsets.*). Pure functions of plain
data, so the unit tests validate every manifest without a cluster.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import hashlib

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import images

MANAGED_BY = {'app.kubernetes.io/managed-by': 'gpuops.gpu_operator'}
POLICY_NAME = 'cluster-policy'  # the name NVIDIA's Helm chart gives its ClusterPolicy
RUNTIME_CLASSES = ('nvidia', 'nvidia-cdi', 'nvidia-legacy')  # each handler is the containerd runtime of that name
DEVICE_PLUGIN_CONFIG_MAP = 'nvidia-device-plugin-config'
DEVICE_PLUGIN_CONFIG_KEY = 'config.yaml'
MIG_CONFIG_MAP = 'default-mig-parted-config'
MIG_STRATEGIES = ('none', 'single', 'mixed')
SHARING_KINDS = ('timeSlicing', 'mps')
METRICS_PORT = 9400

# The GPU Operator's defaults (deployments/gpu-operator/values.yaml, v24.6 chart); gfd is off by
# default here because the node-labelling role writes the same labels once.
DEFAULT_POLICY = {
    'daemonsets': {
        'labels': {},
        'annotations': {},
        'priorityClassName': 'system-node-critical',
        'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
        'updateStrategy': 'RollingUpdate',
        'rollingUpdate': {'maxUnavailable': '1'},
    },
    'mig': {'strategy': 'single'},
    'devicePlugin': {
        'enabled': True, 'repository': 'nvcr.io/nvidia', 'image': 'k8s-device-plugin', 'version': 'v0.16.1-ubi8',
        'env': [
            {'name': 'PASS_DEVICE_SPECS', 'value': 'true'},
            {'name': 'FAIL_ON_INIT_ERROR', 'value': 'true'},
            {'name': 'DEVICE_LIST_STRATEGY', 'value': 'envvar'},
            {'name': 'DEVICE_ID_STRATEGY', 'value': 'uuid'},
            {'name': 'NVIDIA_VISIBLE_DEVICES', 'value': 'all'},
            {'name': 'NVIDIA_DRIVER_CAPABILITIES', 'value': 'all'},
        ],
    },
    'dcgmExporter': {
        'enabled': True, 'repository': 'nvcr.io/nvidia/k8s', 'image': 'dcgm-exporter', 'version': '3.3.7-3.5.0-ubuntu22.04',
        'env': [
            {'name': 'DCGM_EXPORTER_LISTEN', 'value': ':%d' % METRICS_PORT},
            {'name': 'DCGM_EXPORTER_KUBERNETES', 'value': 'true'},
            {'name': 'DCGM_EXPORTER_COLLECTORS', 'value': '/etc/dcgm-exporter/dcp-metrics-included.csv'},
        ],
        # enabled here means "whenever the Prometheus Operator's CRD exists"
        'serviceMonitor': {'enabled': True, 'interval': '15s', 'honorLabels': False, 'additionalLabels': {}, 'relabelings': []},
    },
    'gfd': {
        'enabled': False, 'repository': 'nvcr.io/nvidia', 'image': 'k8s-device-plugin', 'version': 'v0.16.1-ubi8',
        'env': [{'name': 'GFD_SLEEP_INTERVAL', 'value': '60s'}, {'name': 'GFD_FAIL_ON_INIT_ERROR', 'value': 'true'}],
    },
    'migManager': {
        'enabled': True, 'repository': 'nvcr.io/nvidia/cloud-native', 'image': 'k8s-mig-manager', 'version': 'v0.8.0-ubuntu20.04',
        'env': [{'name': 'WITH_REBOOT', 'value': 'false'}],
        'config': {'default': 'all-disabled'},
    },
}
COMMON_DEFAULTS = {'imagePullPolicy': 'IfNotPresent', 'imagePullSecrets': [], 'resources': {}, 'args': []}

# mig-parted's own "all-disabled" / "all-enabled" profiles; model-specific layouts come from the user.
DEFAULT_MIG_CONFIGS = {
    'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
    'all-enabled': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}],
}


def _host(name, path, mount, read_only=False):
    mount_spec = {'name': name, 'mountPath': mount}
    if read_only:
        mount_spec['readOnly'] = True
    return {'volume': {'name': name, 'hostPath': {'path': path}}, 'mount': mount_spec}


def _field_env(name, path):
    return {'name': name, 'valueFrom': {'fieldRef': {'fieldPath': path}}}


# What differs between the operands. `deploy` is the suffix of the nvidia.com/gpu.deploy.* node label.
COMPONENTS = {
    'devicePlugin': {
        'name': 'nvidia-device-plugin-daemonset', 'deploy': 'device-plugin', 'container': 'nvidia-device-plugin',
        'command': ['nvidia-device-plugin'],
        'env': [{'name': 'CONFIG_FILE', 'value': '/config/' + DEVICE_PLUGIN_CONFIG_KEY}, _field_env('NODE_NAME', 'spec.nodeName')],
        'host': [_host('device-plugin', '/var/lib/kubelet/device-plugins', '/var/lib/kubelet/device-plugins'),
                 _host('mps-root', '/run/nvidia/mps', '/mps')],
        'config_map': DEVICE_PLUGIN_CONFIG_MAP,
        'security': {'privileged': True},
        'rules': [{'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch']}],
    },
    'dcgmExporter': {
        'name': 'nvidia-dcgm-exporter', 'deploy': 'dcgm-exporter', 'container': 'nvidia-dcgm-exporter',
        'command': [],
        'env': [_field_env('NODE_NAME', 'spec.nodeName')],
        'host': [_host('pod-gpu-resources', '/var/lib/kubelet/pod-resources', '/var/lib/kubelet/pod-resources', read_only=True)],
        'ports': [{'name': 'metrics', 'containerPort': METRICS_PORT}],
        'security': {'privileged': False, 'capabilities': {'add': ['SYS_ADMIN']}},
        'rules': [],  # it reads the kubelet's pod-resources socket, not the API
    },
    'gfd': {
        'name': 'gpu-feature-discovery', 'deploy': 'gpu-feature-discovery', 'container': 'gpu-feature-discovery',
        'command': ['gpu-feature-discovery'],
        'env': [_field_env('NODE_NAME', 'spec.nodeName')],
        'host': [_host('output-dir', '/etc/kubernetes/node-feature-discovery/features.d', '/etc/kubernetes/node-feature-discovery/features.d'),
                 _host('host-sys', '/sys', '/sys', read_only=True)],
        'security': {'privileged': True},
        'rules': [{'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch']},
                  {'apiGroups': ['nfd.k8s-sigs.io'], 'resources': ['nodefeatures'], 'verbs': ['get', 'list', 'watch', 'create', 'update']}],
    },
    'migManager': {
        'name': 'nvidia-mig-manager', 'deploy': 'mig-manager', 'container': 'nvidia-mig-manager',
        'command': ['nvidia-mig-manager'],
        'env': [_field_env('NODE_NAME', 'spec.nodeName'), {'name': 'CONFIG_FILE', 'value': '/mig-parted-config/config.yaml'}],
        'host': [_host('host-sys', '/sys', '/sys'), _host('host-root', '/', '/host')],
        'config_map': MIG_CONFIG_MAP,
        'security': {'privileged': True},
        'host_pid': True,
        # it relabels its node (nvidia.com/mig.config.state) and evicts GPU pods before repartitioning
        'rules': [{'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch', 'patch', 'update']},
                  {'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch', 'delete']}],
    },
}
# Accounts with no operand of their own: the validator's vectorAdd pod.
VALIDATOR_ACCOUNT = 'nvidia-operator-validator'


class ManifestError(GpuOpsError):
    """Settings that cannot become valid manifests; the message says which setting and why."""


def _merge(base, override):
    """Deep merge of dicts; lists and scalars of `override` replace those of `base`."""
    result = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def resolve_policy(policy=None, registry=''):
    """The Operator's defaults overlaid with `policy`; `registry` rewrites every default repository.

    A repository set in `policy` for one component wins over `registry` (a mirror laid out differently).
    """
    policy = policy or {}
    unknown = sorted(set(policy) - set(DEFAULT_POLICY))
    if unknown:
        raise ManifestError('unknown ClusterPolicy section(s) %s; this collection honours %s' % (', '.join(unknown), ', '.join(sorted(DEFAULT_POLICY))))
    resolved = _merge(DEFAULT_POLICY, policy)
    for key in COMPONENTS:
        resolved[key] = _merge(COMMON_DEFAULTS, resolved[key])
        if registry and not (policy.get(key) or {}).get('repository'):
            resolved[key]['repository'] = images.mirrored(resolved[key]['repository'], registry)
        for field in ('repository', 'image', 'version'):
            if not resolved[key].get(field):
                raise ManifestError('%s.%s must not be empty' % (key, field))
    if resolved['daemonsets']['updateStrategy'] not in ('RollingUpdate', 'OnDelete'):
        raise ManifestError('daemonsets.updateStrategy must be RollingUpdate or OnDelete, not %r' % resolved['daemonsets']['updateStrategy'])
    if resolved['mig']['strategy'] not in MIG_STRATEGIES:
        raise ManifestError('mig.strategy must be one of %s, not %r' % (', '.join(MIG_STRATEGIES), resolved['mig']['strategy']))
    return resolved


def image(spec, where='image'):
    return images.reference(spec['repository'], spec['image'], spec['version'], where)


def _meta(name, namespace=None, labels=None):
    meta = {'name': name, 'labels': dict(MANAGED_BY, **(labels or {}))}
    if namespace:
        meta['namespace'] = namespace
    return meta


def _ref(obj):
    """The identity of an object (what state=absent needs)."""
    metadata = {key: obj['metadata'][key] for key in ('name', 'namespace') if key in obj['metadata']}
    return {'apiVersion': obj['apiVersion'], 'kind': obj['kind'], 'metadata': metadata}


# --- the device plugin's config file ------------------------------------------------------------

def device_plugin_config(config, mig_strategy):
    """The device plugin's config file (version v1) from `config`, checked like the plugin would, but before anything is applied."""
    config = copy.deepcopy(config or {})
    unknown = sorted(set(config) - {'version', 'flags', 'sharing'})
    if unknown:
        raise ManifestError('device plugin config: unknown key(s) %s (allowed: version, flags, sharing)' % ', '.join(unknown))
    if config.setdefault('version', 'v1') != 'v1':
        raise ManifestError('device plugin config: version must be v1, not %r' % config['version'])
    flags = config.setdefault('flags', {})
    strategy = flags.setdefault('migStrategy', mig_strategy)
    if strategy not in MIG_STRATEGIES:
        raise ManifestError('device plugin config: flags.migStrategy must be one of %s, not %r' % (', '.join(MIG_STRATEGIES), strategy))
    sharing = config.get('sharing')
    if sharing:
        kinds = sorted(set(sharing))
        if len(kinds) != 1 or kinds[0] not in SHARING_KINDS:
            raise ManifestError('device plugin config: sharing takes exactly one of %s, got %s' % (', '.join(SHARING_KINDS), ', '.join(kinds)))
        _check_sharing(kinds[0], sharing[kinds[0]], strategy)
    return config


def _check_sharing(kind, sharing, strategy):
    where = 'device plugin config: sharing.%s' % kind
    unknown = sorted(set(sharing) - {'renameByDefault', 'failRequestsGreaterThanOne', 'resources'})
    if unknown:
        raise ManifestError('%s: unknown key(s) %s' % (where, ', '.join(unknown)))
    for flag in ('renameByDefault', 'failRequestsGreaterThanOne'):
        if not isinstance(sharing.get(flag, False), bool):
            raise ManifestError('%s.%s must be true or false, not %r' % (where, flag, sharing[flag]))
    resources = sharing.get('resources')
    if not isinstance(resources, list) or not resources:
        raise ManifestError('%s.resources must be a non-empty list of {name, replicas}' % where)
    for index, resource in enumerate(resources):
        name, replicas = (resource or {}).get('name'), (resource or {}).get('replicas')
        if not isinstance(name, str) or not (name == 'nvidia.com/gpu' or name.startswith('nvidia.com/mig-')):
            raise ManifestError('%s.resources[%d].name must be nvidia.com/gpu or nvidia.com/mig-<profile>, not %r' % (where, index, name))
        if name.startswith('nvidia.com/mig-') and strategy != 'mixed':
            raise ManifestError('%s.resources[%d]: %s is only advertised with migStrategy mixed (it is %s)' % (where, index, name, strategy))
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
            raise ManifestError('%s.resources[%d].replicas must be an integer >= 2 (sharing a GPU among one is no sharing), not %r' % (where, index, replicas))


def _yaml_dump(data):
    # the renderer runs on the controller, where PyYAML is always present (ansible-core requires it)
    import yaml  # pylint: disable=import-outside-toplevel
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=True)


def _mig_configs(mig_configs, default):
    configs = _merge(DEFAULT_MIG_CONFIGS, mig_configs)
    if default not in configs:
        raise ManifestError('migManager.config.default %r is not one of the MIG profiles: %s' % (default, ', '.join(sorted(configs))))
    for name, entries in configs.items():
        if not isinstance(entries, list) or not all(isinstance(e, dict) and 'devices' in e and isinstance(e.get('mig-enabled'), bool) for e in entries):
            raise ManifestError('MIG profile %r must be a list of {devices, mig-enabled[, mig-devices]}' % name)
    return {'version': 'v1', 'mig-configs': configs}


# --- the operands --------------------------------------------------------------------------------

def deploy_label(key):
    return 'nvidia.com/gpu.deploy.%s' % COMPONENTS[key]['deploy']


def daemonset(key, policy, namespace):
    """The DaemonSet of one operand, built the same way for all of them."""
    part, spec, common = COMPONENTS[key], policy[key], policy['daemonsets']
    labels = {'app': part['name']}
    mounts = [h['mount'] for h in part['host']]
    volumes = [h['volume'] for h in part['host']]
    if part.get('config_map'):
        mounts.append({'name': 'config', 'mountPath': '/config' if key == 'devicePlugin' else '/mig-parted-config', 'readOnly': True})
        volumes.append({'name': 'config', 'configMap': {'name': part['config_map']}})
    container = {
        'name': part['container'], 'image': image(spec, key), 'imagePullPolicy': spec['imagePullPolicy'],
        'env': part['env'] + spec['env'], 'volumeMounts': mounts, 'securityContext': part['security'],
    }
    for field, value in (('command', part['command']), ('args', spec['args']), ('resources', spec['resources']), ('ports', part.get('ports'))):
        if value:
            container[field] = value
    pod = {
        'serviceAccountName': part['name'], 'priorityClassName': common['priorityClassName'], 'runtimeClassName': 'nvidia',
        'nodeSelector': {deploy_label(key): 'true'}, 'tolerations': common['tolerations'],
        'containers': [container], 'volumes': volumes,
    }
    if part.get('host_pid'):
        pod['hostPID'] = True
    if spec['imagePullSecrets']:
        pod['imagePullSecrets'] = [{'name': name} for name in spec['imagePullSecrets']]
    strategy = {'type': common['updateStrategy']}
    if common['updateStrategy'] == 'RollingUpdate':
        strategy['rollingUpdate'] = {'maxUnavailable': _int_or_percent(common['rollingUpdate']['maxUnavailable'])}
    return {
        'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': _meta(part['name'], namespace, dict(common['labels'], **labels)),
        'spec': {
            'selector': {'matchLabels': labels}, 'updateStrategy': strategy,
            'template': {'metadata': _pod_meta(dict(common['labels'], **labels), common['annotations']), 'spec': pod},
        },
    }


def _pod_meta(labels, annotations):
    meta = {'labels': labels}
    if annotations:
        meta['annotations'] = dict(annotations)
    return meta


def _int_or_percent(value):
    """maxUnavailable is a string in the ClusterPolicy ("1", "25%") but an IntOrString in a DaemonSet."""
    text = str(value)
    if text.isdigit():
        return int(text)
    if text.endswith('%') and text[:-1].isdigit():
        return text
    raise ManifestError('daemonsets.rollingUpdate.maxUnavailable must be a number or a percentage, not %r' % value)


def component_objects(key, policy, namespace, device_plugin_settings=None, mig_configs=None, service_monitor_crd=False):
    """The objects an operand owns, its ServiceMonitor only when the Prometheus Operator's CRD exists."""
    part = COMPONENTS[key]
    objects, workload = [], daemonset(key, policy, namespace)
    text = None
    if key == 'devicePlugin':
        text = _yaml_dump(device_plugin_config(device_plugin_settings, policy['mig']['strategy']))
    if key == 'migManager':
        text = _yaml_dump(_mig_configs(mig_configs, policy[key]['config']['default']))
    if text is not None:
        objects.append(_config_map(part['config_map'], namespace, text))
        # the pods read the file once at start: a new checksum in the template rolls them when it changes
        annotations = workload['spec']['template']['metadata'].setdefault('annotations', {})
        annotations['gpuops.gpu_operator/config-sha256'] = hashlib.sha256(text.encode('utf-8')).hexdigest()
    objects.append(workload)
    if key == 'dcgmExporter':
        objects.append({
            'apiVersion': 'v1', 'kind': 'Service', 'metadata': _meta(part['name'], namespace, {'app': part['name']}),
            'spec': {'type': 'ClusterIP', 'selector': {'app': part['name']},
                     'ports': [{'name': 'gpu-metrics', 'port': METRICS_PORT, 'targetPort': METRICS_PORT, 'protocol': 'TCP'}]},
        })
        monitor = policy[key]['serviceMonitor']
        if service_monitor_crd and monitor['enabled']:
            objects.append(service_monitor(part['name'], namespace, monitor))
    return objects


def _config_map(name, namespace, text):
    key = DEVICE_PLUGIN_CONFIG_KEY if name == DEVICE_PLUGIN_CONFIG_MAP else 'config.yaml'
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': _meta(name, namespace), 'data': {key: text}}


def service_monitor(name, namespace, monitor):
    endpoint = {'port': 'gpu-metrics', 'path': '/metrics', 'interval': monitor['interval'], 'honorLabels': bool(monitor['honorLabels'])}
    if monitor['relabelings']:
        endpoint['relabelings'] = monitor['relabelings']
    return {
        'apiVersion': 'monitoring.coreos.com/v1', 'kind': 'ServiceMonitor',
        'metadata': _meta(name, namespace, dict(monitor['additionalLabels'], app=name)),
        'spec': {'selector': {'matchLabels': {'app': name}}, 'namespaceSelector': {'matchNames': [namespace]}, 'endpoints': [endpoint]},
    }


def operands(policy=None, namespace='gpu-operator', registry='', device_plugin_settings=None, mig_configs=None, service_monitor_crd=False):
    """{'resolved': the full policy, 'present': objects to apply, 'absent': identities of disabled operands' objects}.

    Everything is rendered (and so checked) before anything is applied.
    """
    resolved = resolve_policy(policy, registry)
    present, absent = [], []
    for key in COMPONENTS:
        objects = component_objects(key, resolved, namespace, device_plugin_settings, mig_configs, service_monitor_crd)
        if resolved[key]['enabled']:
            present.extend(objects)
        else:
            absent.extend(_ref(obj) for obj in objects)
    if not service_monitor_crd or not resolved['dcgmExporter']['serviceMonitor']['enabled']:
        # without the CRD there is nothing to delete, and the kind cannot even be looked up
        if service_monitor_crd:
            absent.append(_ref(service_monitor(COMPONENTS['dcgmExporter']['name'], namespace, resolved['dcgmExporter']['serviceMonitor'])))
    return {'resolved': resolved, 'present': present, 'absent': absent}


# --- prerequisites -------------------------------------------------------------------------------

def namespace_object(namespace):
    # The operands mount host paths and run privileged: Pod Security Admission must allow that here.
    psa = {'pod-security.kubernetes.io/%s' % mode: 'privileged' for mode in ('enforce', 'audit', 'warn')}
    return {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': _meta(namespace, labels=psa)}


def runtime_classes():
    return [{'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass', 'metadata': _meta(name), 'handler': name} for name in RUNTIME_CLASSES]


def rbac(namespace):
    """A ServiceAccount per operand (and the validator), each bound to a ClusterRole with only what that operand calls."""
    objects = []
    for part in list(COMPONENTS.values()) + [{'name': VALIDATOR_ACCOUNT, 'rules': []}]:
        name = part['name']
        objects.append({'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': _meta(name, namespace)})
        if not part['rules']:
            continue
        objects.append({'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole', 'metadata': _meta(name), 'rules': part['rules']})
        objects.append({
            'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding', 'metadata': _meta(name),
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': name},
            'subjects': [{'kind': 'ServiceAccount', 'name': name, 'namespace': namespace}],
        })
    return objects


def _component_schema(extra=None):
    string_list = {'type': 'array', 'items': {'type': 'string'}}
    quantities = {'type': 'object', 'additionalProperties': {'x-kubernetes-int-or-string': True,
                                                             'anyOf': [{'type': 'integer'}, {'type': 'string'}]}}
    properties = {
        'enabled': {'type': 'boolean'}, 'repository': {'type': 'string'}, 'image': {'type': 'string'}, 'version': {'type': 'string'},
        'imagePullPolicy': {'type': 'string'}, 'imagePullSecrets': string_list, 'args': string_list,
        'env': {'type': 'array', 'items': {'type': 'object', 'required': ['name'], 'x-kubernetes-preserve-unknown-fields': True,
                                           'properties': {'name': {'type': 'string'}, 'value': {'type': 'string'}}}},
        'resources': {'type': 'object', 'properties': {'limits': quantities, 'requests': quantities}},
    }
    properties.update(extra or {})
    return {'type': 'object', 'properties': properties}


def cluster_policy_crd():
    """nvidia.com/v1 ClusterPolicy: the sections this collection honours have a schema, the Operator's others are kept as given."""
    config_ref = {'type': 'object', 'properties': {'name': {'type': 'string'}, 'default': {'type': 'string'}}}
    toleration = {'type': 'object', 'properties': {k: {'type': 'string'} for k in ('key', 'operator', 'value', 'effect')}}
    toleration['properties']['tolerationSeconds'] = {'type': 'integer', 'format': 'int64'}
    spec = {
        'type': 'object', 'x-kubernetes-preserve-unknown-fields': True,
        'properties': {
            'daemonsets': {'type': 'object', 'properties': {
                'labels': {'type': 'object', 'additionalProperties': {'type': 'string'}},
                'annotations': {'type': 'object', 'additionalProperties': {'type': 'string'}},
                'priorityClassName': {'type': 'string'}, 'tolerations': {'type': 'array', 'items': toleration},
                'updateStrategy': {'type': 'string', 'enum': ['RollingUpdate', 'OnDelete']},
                'rollingUpdate': {'type': 'object', 'properties': {'maxUnavailable': {'type': 'string'}}}}},
            'mig': {'type': 'object', 'properties': {'strategy': {'type': 'string', 'enum': list(MIG_STRATEGIES)}}},
            'devicePlugin': _component_schema({'config': config_ref}),
            'dcgmExporter': _component_schema({'serviceMonitor': {'type': 'object', 'properties': {
                'enabled': {'type': 'boolean'}, 'interval': {'type': 'string'}, 'honorLabels': {'type': 'boolean'},
                'additionalLabels': {'type': 'object', 'additionalProperties': {'type': 'string'}},
                'relabelings': {'type': 'array', 'items': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}}),
            'gfd': _component_schema(),
            'migManager': _component_schema({'config': config_ref}),
        },
    }
    condition = {'type': 'object', 'required': ['type', 'status', 'reason', 'message', 'lastTransitionTime'], 'properties': {
        'type': {'type': 'string'}, 'status': {'type': 'string', 'enum': ['True', 'False', 'Unknown']}, 'reason': {'type': 'string'},
        'message': {'type': 'string'}, 'lastTransitionTime': {'type': 'string', 'format': 'date-time'},
        'observedGeneration': {'type': 'integer', 'format': 'int64'}}}
    status = {'type': 'object', 'properties': {'state': {'type': 'string', 'enum': ['ignored', 'ready', 'notReady']},
                                               'namespace': {'type': 'string'}, 'conditions': {'type': 'array', 'items': condition}}}
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition', 'metadata': _meta('clusterpolicies.nvidia.com'),
        'spec': {
            'group': 'nvidia.com', 'scope': 'Cluster',
            'names': {'kind': 'ClusterPolicy', 'listKind': 'ClusterPolicyList', 'plural': 'clusterpolicies', 'singular': 'clusterpolicy'},
            'versions': [{
                'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                'additionalPrinterColumns': [{'name': 'Status', 'type': 'string', 'jsonPath': '.status.state'},
                                             {'name': 'Age', 'type': 'date', 'jsonPath': '.metadata.creationTimestamp'}],
                'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {'spec': spec, 'status': status}}},
            }],
        },
    }


def prerequisites(namespace='gpu-operator', with_crd=True):
    objects = [namespace_object(namespace)] + runtime_classes() + rbac(namespace)
    if with_crd:
        objects.append(cluster_policy_crd())
    return objects


def cluster_policy(resolved):
    """The ClusterPolicy CR: the honoured sections as resolved, config files referenced by ConfigMap name as the Operator does.

    The sections NVIDIA's CRD requires but that the node-side roles do instead are disabled
    (driver, toolkit: installed on the host, as the Operator's driver.enabled=false means).
    """
    spec = copy.deepcopy(resolved)
    spec['devicePlugin']['config'] = {'name': DEVICE_PLUGIN_CONFIG_MAP, 'default': DEVICE_PLUGIN_CONFIG_KEY}
    spec['migManager']['config'] = {'name': MIG_CONFIG_MAP, 'default': resolved['migManager']['config']['default']}
    for section in ('driver', 'toolkit', 'dcgm', 'nodeStatusExporter'):
        spec[section] = {'enabled': False}
    spec['operator'] = {'defaultRuntime': 'containerd'}
    return {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': _meta(POLICY_NAME), 'spec': spec}
