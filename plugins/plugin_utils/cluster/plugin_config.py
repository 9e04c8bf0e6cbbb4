# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The device plugin's config files (devicePlugin.config) and what they mean for a node's labels.

One place reads them for both sides: the operands (the ConfigMap the device plugin, GFD and the MPS
control daemon choose from by the node label nvidia.com/device-plugin.config) and the node labels
(gpu.replicas, gpu.sharing-strategy, the -SHARED product suffix, mps.capable), so that the labels
always say what the plugin advertises. The checks are those k8s-device-plugin v0.20.0 applies at
start (api/config/v1), made before anything is applied. config-manager, the container that puts a node's
file in place for each of those operands, is rendered here too.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import (
    DEVICE_PLUGIN_CONFIG, GPU_RESOURCE, MIG_RESOURCE_PREFIX, MIG_STRATEGIES, SHARING_KINDS, config_sharing, selected_config)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import field_env, mount, set_env, value_env


class PluginConfigError(GpuOpsError):
    """A device plugin config the plugin would refuse; the message names the config and the key."""


def load(value, where):
    """A config given as a mapping or as YAML text (the Helm chart's form) -> the mapping."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        import yaml  # pylint: disable=import-outside-toplevel  # the renderer runs on the controller, where PyYAML is
        try:
            loaded = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise PluginConfigError('%s is not valid YAML: %s' % (where, str(exc).replace('\n', ' ')))
        if isinstance(loaded, dict):
            return loaded
    raise PluginConfigError('%s must be a device plugin config (a mapping, or YAML text of one), not %r' % (where, value))


def check(config, mig_strategy, where):
    """Check one config file as the plugin would; returns it."""
    unknown = sorted(set(config) - {'version', 'flags', 'sharing'})
    if unknown:
        raise PluginConfigError('%s: unknown key(s) %s (allowed: version, flags, sharing)' % (where, ', '.join(unknown)))
    if config.get('version', 'v1') != 'v1':
        raise PluginConfigError('%s: version must be v1, not %r' % (where, config['version']))
    flags = config.get('flags') or {}
    if not isinstance(flags, dict):
        raise PluginConfigError('%s: flags must be a mapping, not %r' % (where, flags))
    if flags.get('migStrategy', mig_strategy) not in MIG_STRATEGIES:
        raise PluginConfigError('%s: flags.migStrategy must be one of %s, not %r' % (where, ', '.join(MIG_STRATEGIES), flags['migStrategy']))
    # The plugin and GFD are started with MIG_STRATEGY (mig.strategy), which wins over the file's flags.migStrategy
    # (k8s-device-plugin v0.20.0 api/config/v1 NewConfig: the flags set by env replace the file's): the file's is
    # accepted (NVIDIA's time-slicing example says none) and the config means what it does under mig.strategy.
    strategy = mig_strategy
    sharing = config.get('sharing')
    if sharing:
        kinds = sorted(sharing) if isinstance(sharing, dict) else []
        if len(kinds) != 1 or kinds[0] not in SHARING_KINDS:
            raise PluginConfigError('%s: sharing takes exactly one of %s, got %s'
                                    % (where, ', '.join(sorted(SHARING_KINDS)), ', '.join(kinds) or repr(sharing)))
        _check_sharing(kinds[0], sharing[kinds[0]], strategy, '%s: sharing.%s' % (where, kinds[0]))
    return config


def _check_sharing(kind, sharing, strategy, where):
    if not isinstance(sharing, dict):
        raise PluginConfigError('%s must be a mapping with resources, not %r' % (where, sharing))
    unknown = sorted(set(sharing) - {'renameByDefault', 'failRequestsGreaterThanOne', 'resources'})
    if unknown:
        raise PluginConfigError('%s: unknown key(s) %s' % (where, ', '.join(unknown)))
    for flag in ('renameByDefault', 'failRequestsGreaterThanOne'):
        if not isinstance(sharing.get(flag, False), bool):
            raise PluginConfigError('%s.%s must be true or false, not %r' % (where, flag, sharing[flag]))
    if kind == 'mps' and strategy == 'mixed':
        raise PluginConfigError('%s: the device plugin refuses MPS with migStrategy mixed' % where)
    resources = sharing.get('resources')
    if not isinstance(resources, list) or not resources:
        raise PluginConfigError('%s.resources must be a non-empty list of {name, replicas}' % where)
    for index, resource in enumerate(resources):
        here = '%s.resources[%d]' % (where, index)
        if not isinstance(resource, dict):
            raise PluginConfigError('%s must be {name, replicas}, not %r' % (here, resource))
        name, replicas = resource.get('name'), resource.get('replicas')
        if not isinstance(name, str) or not (name == GPU_RESOURCE or name.startswith(MIG_RESOURCE_PREFIX)):
            raise PluginConfigError('%s.name must be nvidia.com/gpu or nvidia.com/mig-<profile>, not %r' % (here, name))
        if name.startswith(MIG_RESOURCE_PREFIX) and strategy != 'mixed':
            raise PluginConfigError('%s: %s is only advertised with migStrategy mixed (it is %s)' % (here, name, strategy))
        if kind == 'mps' and name != GPU_RESOURCE:
            raise PluginConfigError('%s: the device plugin shares no MIG device with MPS' % here)
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
            raise PluginConfigError('%s.replicas must be an integer >= 2 (sharing a GPU among one is no sharing), not %r' % (here, replicas))
        # v0.20.0 discards renames and device subsets (DisableResourceNamingInConfig): refuse what would be dropped.
        if 'rename' in resource:
            raise PluginConfigError('%s.rename is ignored by the device plugin (it renames only with renameByDefault, to <name>.shared)' % here)
        if resource.get('devices', 'all') != 'all':
            raise PluginConfigError('%s.devices: the device plugin shares all devices of a resource (it resets a subset to all)' % here)
        unknown = sorted(set(resource) - {'name', 'replicas', 'devices'})
        if unknown:
            raise PluginConfigError('%s: unknown key(s) %s' % (here, ', '.join(unknown)))


def configs(spec, mig_strategy):
    """{config name: mapping} of devicePlugin.config.data, each checked."""
    return dict((name, check(load(value, 'devicePlugin.config.data.%s' % name), mig_strategy, 'devicePlugin.config.data.%s' % name))
                for name, value in (spec.get('data') or {}).items())


def config_map_to_read(resolved):
    """The ConfigMap devicePlugin.config names without its data (NVIDIA's kubectl flow: its user created it), '' when
    there is none to read: the labels and the validation read the configs from it (with_config_map)."""
    config = resolved['spec']['devicePlugin']['config']
    return config['name'] if config['name'] and not config['data'] else ''


def with_config_map(resolved, found=None, namespace='gpu-operator'):
    """The resolution with the data of the user's ConfigMap (`found`: the kubernetes.core.k8s_info result that read
    config_map_to_read) as devicePlugin.config.data, each config checked as the plugin would. `create` stays false:
    the ConfigMap is its user's, never written or removed here. Without one to read, the resolution as it is."""
    name = config_map_to_read(resolved)
    if not name:
        return resolved
    items = (found or {}).get('resources') or []
    if not items:
        raise PluginConfigError('devicePlugin.config.name %r: there is no ConfigMap %s in namespace %s; create it (NVIDIA\'s '
                                'time-slicing steps) or give its content in devicePlugin.config.data' % (name, name, namespace))
    resolved = copy.deepcopy(resolved)
    config = resolved['spec']['devicePlugin']['config']
    config['data'] = dict(items[0].get('data') or {})
    available = configs(config, resolved['spec']['mig']['strategy'])
    if not available:
        raise PluginConfigError('devicePlugin.config.name %r: ConfigMap %s/%s holds no device plugin config' % (name, namespace, name))
    if config['default'] and config['default'] not in available:
        raise PluginConfigError('devicePlugin.config.default %r is not in ConfigMap %s/%s (it has %s)'
                                % (config['default'], namespace, name, ', '.join(sorted(available))))
    return resolved


def node_label_settings(resolved, node_config=''):
    """What gpu_node_labels needs to label a node as the plugin (and GFD) see it, from the run's ClusterPolicy
    (registry.resolution) and the node's device plugin config (its nvidia.com/device-plugin.config, '' for the default).

    {mig_strategy, sharing, mig_config (the nvidia.com/mig.config value for a MIG-capable node without one),
    labels (nvidia.com/device-plugin.config when the node picks a config), nfd_enabled, gfd_labels, sandbox_workloads (the
    ClusterPolicy's sandboxWorkloads: with it enabled, the Node's nvidia.com/gpu.workload.config picks its deploy labels)}. nfd_enabled: the chart's
    nfd.enabled, NFD runs in the cluster (this collection's, or one it found). gfd_labels: whether the node labels stage
    writes GFD's labels. It does unless GFD's Pods publish them, which takes gfd.enabled and NFD (GFD v0.20 publishes
    through NFD); they then read the ConfigMap themselves, which may then be one the settings do not hold.
    """
    spec = resolved['spec']
    nfd_enabled = resolved['nfd']['enabled']
    gfd_labels = not (spec['gfd']['enabled'] and nfd_enabled)
    config = spec['devicePlugin']['config']
    strategy = spec['mig']['strategy']
    available = configs(config, strategy)
    name = selected_config(config, node_config)
    if node_config and not config.get('name'):
        raise PluginConfigError('the node asks for device plugin config %r but devicePlugin.config.name names no ConfigMap' % node_config)
    if name and config.get('name') and not available and gfd_labels:
        raise PluginConfigError('devicePlugin.config.name %r has no data: the ConfigMap was not read (role gpu_operator_policy reads '
                                'it on the API host) and gpu_node_labels writes the labels GFD would' % config['name'])
    if name and available and name not in available:
        raise PluginConfigError('no device plugin config %r in devicePlugin.config.data (it has %s)' % (name, ', '.join(sorted(available))))
    manager = spec['migManager']
    return {
        'mig_strategy': strategy,
        'sharing': config_sharing(available.get(name) if name else None),
        'mig_config': manager['config']['default'] if manager['enabled'] else '',
        'labels': {DEVICE_PLUGIN_CONFIG: node_config} if node_config else {},
        'nfd_enabled': nfd_enabled,
        'gfd_labels': gfd_labels,
        'sandbox_workloads': dict(spec['sandboxWorkloads']),
    }


# --- config-manager: the node's config out of the ConfigMap, for the device plugin, GFD and the MPS control daemon -----

CONFIG_FILE = '/config/config.yaml'


def config_manager(init, process=''):
    """config-manager picks the node's device plugin config by its label; as a sidecar it signals the process on a change."""
    item = {'name': 'config-manager-init' if init else 'config-manager', 'command': ['config-manager'], 'env': [
        value_env('ONESHOT', 'true' if init else 'false'), value_env('KUBECONFIG', ''), field_env('NODE_NAME', 'spec.nodeName'),
        value_env('NODE_LABEL', DEVICE_PLUGIN_CONFIG), value_env('CONFIG_FILE_SRCDIR', '/available-configs'),
        value_env('CONFIG_FILE_DST', CONFIG_FILE), value_env('DEFAULT_CONFIG', ''), value_env('SEND_SIGNAL', 'false' if init else 'true'),
        value_env('SIGNAL', '' if init else '1'), value_env('PROCESS_TO_SIGNAL', process)]}
    if not init:
        item['securityContext'] = {'privileged': True}
    return item


def config_maps(resolved, namespace):
    """The ConfigMap of devicePlugin.config.data, when the settings create it."""
    config = resolved['devicePlugin']['config']
    if not config['create']:
        return []
    data = dict((name, value if isinstance(value, str) else skeleton.to_yaml(value)) for name, value in config['data'].items())
    return [skeleton.data_config_map('devicePlugin.config', config['name'], namespace, data)]


def with_config(pod, resolved, resources):
    """devicePlugin.config: config-manager picks the node's file from the ConfigMap; without a name both go."""
    config = resolved['devicePlugin']['config']
    if not config['name']:
        pod['initContainers'] = [c for c in pod['initContainers'] if c['name'] != 'config-manager-init']
        pod['containers'] = [c for c in pod['containers'] if c['name'] != 'config-manager']
        return
    shared = [mount('config', '/config'), mount(config['name'], '/available-configs')]
    for item in pod['containers']:
        if item['name'] in ('nvidia-device-plugin', 'gpu-feature-discovery', 'mps-control-daemon-ctr'):
            set_env(item, 'CONFIG_FILE', CONFIG_FILE)
            item['volumeMounts'] = item['volumeMounts'] + copy.deepcopy(shared)
    if not pod.get('hostPID'):
        pod['shareProcessNamespace'] = True  # the sidecar signals the process it serves
    pod['volumes'] += [{'name': config['name'], 'configMap': {'name': config['name']}}, {'name': 'config', 'emptyDir': {}}]
    spec = resolved['devicePlugin']
    for item in pod['initContainers'] + pod['containers']:
        if item['name'] in ('config-manager-init', 'config-manager'):
            item['image'] = skeleton.image(spec, 'devicePlugin')
            item['imagePullPolicy'] = spec['imagePullPolicy']
            if item['name'] == 'config-manager-init' and resources:
                item['resources'] = copy.deepcopy(resources)
            set_env(item, 'DEFAULT_CONFIG', config['default'])
            set_env(item, 'FALLBACK_STRATEGIES', 'empty')
            item['volumeMounts'] = item.get('volumeMounts', []) + copy.deepcopy(shared)
