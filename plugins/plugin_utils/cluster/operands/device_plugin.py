# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The device plugin (devicePlugin): assets/state-device-plugin and TransformDevicePlugin of GPU Operator v26.7.0.

It advertises the node's GPUs to the kubelet; config-manager puts the node's devicePlugin.config file in place
(plugin_config.py), and an entrypoint of this collection's waits for the driver stage's driver-ready first.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import config_map
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config, policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import (
    ENTRYPOINT, VALIDATIONS, host_path, mount, set_env, toolkit_validation, value_env)

DEFAULT_MPS_ROOT = '/run/nvidia/mps'
ENTRYPOINT_MAP = 'nvidia-device-plugin-entrypoint'
EXPORTS = '\n'.join([
    '# GPUDirect modules loaded on the host turn their devices on, unless the env says otherwise.',
    "if lsmod | grep -q '^gdrdrv '; then GDRCOPY_ENABLED=${GDRCOPY_ENABLED:-true}; fi",
    "if lsmod | grep -q '^nvidia_fs '; then GDS_ENABLED=${GDS_ENABLED:-true}; MOFED_ENABLED=${MOFED_ENABLED:-true}; fi"])
NAME = skeleton.CRD_STRING


def mps_root(pod, root):
    """The MPS root's host paths (the MPS control daemon's and the plugin's) at devicePlugin.mps.root."""
    for volume in pod['volumes']:
        if volume['name'] == 'mps-root':
            volume['hostPath']['path'] = root
        elif volume['name'] == 'mps-shm':
            volume['hostPath']['path'] = root + '/shm'


def check_plugin_configs(config, resolved):
    available = plugin_config.configs(config, resolved['mig']['strategy'])
    if config['default'] and config['default'] not in available:
        raise policy.PolicyError('devicePlugin.config.default %r is not one of devicePlugin.config.data (%s)'
                                 % (config['default'], ', '.join(sorted(available))))


class DevicePlugin(skeleton.Operand):
    """The Operator's state-device-plugin."""
    settings = {'config': {'name': 'str', 'default': 'str', 'create': 'bool', 'data': 'dict'}, 'mps': {'root': 'str'}}
    defaults = {'config': {'name': '', 'default': '', 'create': None, 'data': {}}, 'mps': {'root': DEFAULT_MPS_ROOT}}
    crd = {'config': {'type': 'object', 'properties': {'name': NAME, 'default': NAME}},
           'mps': {'type': 'object', 'properties': {'root': {'type': 'string', 'default': DEFAULT_MPS_ROOT}}}}
    rules = ((), (skeleton.NODES_READ,))

    def check(self, resolved):
        root = resolved['devicePlugin']['mps']['root']
        if not root.startswith('/') or root.rstrip('/') != root or '//' in root:
            raise policy.PolicyError('devicePlugin.mps.root must be an absolute path without a trailing slash, not %r' % root)
        policy.check_config('devicePlugin.config', resolved['devicePlugin']['config'], lambda config: check_plugin_configs(config, resolved))

    def in_cluster_policy(self, section):
        return policy.config_in_cluster_policy(section, keep_unnamed=False)

    def layout(self):
        plugin = {'name': 'nvidia-device-plugin', 'command': ['/bin/sh', '-c'], 'args': [ENTRYPOINT], 'securityContext': {'privileged': True},
                  'env': [value_env('PASS_DEVICE_SPECS', 'true'), value_env('FAIL_ON_INIT_ERROR', 'true'), value_env('DEVICE_LIST_STRATEGY', 'envvar'),
                          value_env('DEVICE_ID_STRATEGY', 'uuid'), value_env('NVIDIA_VISIBLE_DEVICES', 'all'),
                          value_env('NVIDIA_DRIVER_CAPABILITIES', 'all'), value_env('MPS_ROOT', DEFAULT_MPS_ROOT)],
                  'volumeMounts': [mount(ENTRYPOINT_MAP, ENTRYPOINT, read_only=True, sub_path='entrypoint.sh'),
                                   mount('device-plugin', '/var/lib/kubelet/device-plugins'),
                                   mount('run-nvidia-validations', VALIDATIONS),
                                   mount('driver-install-dir', '/driver-root', propagation='HostToContainer'),
                                   mount('host-root', '/host', read_only=True, propagation='HostToContainer'),
                                   mount('cdi-root', '/var/run/cdi'),
                                   # the plugin checks the MPS daemons' health through their pipes and shared memory
                                   mount('mps-shm', '/dev/shm'), mount('mps-root', '/mps')]}
        return {'initContainers': [toolkit_validation('run-nvidia-validations', VALIDATIONS), plugin_config.config_manager(True)],
                'containers': [plugin, plugin_config.config_manager(False, 'nvidia-device-plugin')],
                'volumes': [skeleton.entrypoint_volume(ENTRYPOINT_MAP), host_path('device-plugin', '/var/lib/kubelet/device-plugins'),
                            host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate'),
                            host_path('driver-install-dir', '/run/nvidia/driver', 'DirectoryOrCreate'), host_path('host-root', '/'),
                            host_path('cdi-root', '/var/run/cdi', 'DirectoryOrCreate'),
                            host_path('mps-root', DEFAULT_MPS_ROOT, 'DirectoryOrCreate'), host_path('mps-shm', DEFAULT_MPS_ROOT + '/shm')]}

    def objects(self, resolved, context):
        """The plugin with its entrypoint and the config ConfigMap (the MPS control daemon is mps_control_daemon.py)."""
        spec = resolved['devicePlugin']
        entrypoint = config_map(ENTRYPOINT_MAP, context.namespace, {'entrypoint.sh': skeleton.entrypoint_script('nvidia-device-plugin', EXPORTS)},
                                {'app': self.daemonset})
        configs = plugin_config.config_maps(resolved, context.namespace)
        pod = self.layout()
        main = skeleton.container(pod, 'nvidia-device-plugin')
        skeleton.validation_containers(pod, resolved['validator'])
        skeleton.image_settings(pod, main, spec, 'devicePlugin')
        skeleton.main_args(main, spec)
        plugin_config.with_config(pod, resolved, spec['resources'])
        skeleton.mig_env(main, resolved['mig']['strategy'])
        if resolved['cdi']['enabled']:
            for name, value in (('CDI_ENABLED', 'true'), ('DEVICE_LIST_STRATEGY', 'cdi-annotations,cdi-cri'), ('CDI_ANNOTATION_PREFIX', 'cdi.k8s.io/'),
                                ('NVIDIA_CDI_HOOK_PATH', context.cdi_hook_path)):
                set_env(main, name, value)
        if spec['mps']['root'] != DEFAULT_MPS_ROOT:
            mps_root(pod, spec['mps']['root'])
            set_env(main, 'MPS_ROOT', spec['mps']['root'])
        main['env'] = policy.merge_env(main['env'], spec['env'])
        skeleton.host_network(pod, spec['hostNetwork'])
        return self.accounts(context.namespace) + [entrypoint] + configs + [
            self.daemonset_object(pod, resolved, context.namespace, checksum=skeleton.checksum([entrypoint] + configs))]


OPERAND = DevicePlugin('devicePlugin', 'nvidia-device-plugin-daemonset', 'device-plugin', image=('nvcr.io/nvidia', 'k8s-device-plugin', 'v0.20.0'),
                       account='nvidia-device-plugin')
