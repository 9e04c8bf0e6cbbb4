# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The MIG manager (migManager): assets/state-mig-manager and TransformMIGManager of GPU Operator v26.7.0.

It applies the MIG layout a node's nvidia.com/mig.config label names, from the Operator's MIG profiles
(mig_profiles.py) unless migManager.config names a ConfigMap, stopping the host's GPU clients around a change.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import config_map, ref
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import mig_profiles, policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import (
    ENTRYPOINT, VALIDATIONS, field_env, host_path, mount, set_env, toolkit_validation, value_env)

ENTRYPOINT_MAP = 'nvidia-mig-manager-entrypoint'
# With a host driver, host services (nvsm, dcgm, ...) may hold the GPUs: mig-manager stops those of GPU_CLIENTS_FILE around a change.
EXPORTS = 'WITH_SHUTDOWN_HOST_GPU_CLIENTS=${IS_HOST_DRIVER:-false}'
DEFAULTS = ('all-disabled', '')  # the values the ClusterPolicy CRD allows for migManager.config.default
NAME = skeleton.CRD_STRING


class MigManager(skeleton.Operand):
    """The Operator's state-mig-manager."""
    settings = {'config': {'name': 'str', 'default': 'str', 'create': 'bool', 'data': 'dict'}, 'gpuClientsConfig': {'name': 'str'}}
    defaults = {'config': {'name': '', 'default': 'all-disabled', 'create': None, 'data': {}}, 'gpuClientsConfig': {'name': ''}}
    crd = {'config': {'type': 'object', 'properties': {'name': NAME, 'default': {'type': 'string', 'enum': list(DEFAULTS), 'default': DEFAULTS[0]}}},
           'gpuClientsConfig': {'type': 'object', 'properties': {'name': NAME}}}
    rules = (({'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch', 'delete']},
              {'apiGroups': [''], 'resources': ['configmaps'], 'verbs': ['create', 'get', 'list', 'update', 'patch']}),
             ({'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch', 'update', 'patch']},
              {'apiGroups': [''], 'resources': ['pods'], 'verbs': ['list']}))

    def check(self, resolved):
        spec = resolved['migManager']
        if spec['config']['default'] not in DEFAULTS:
            raise policy.PolicyError("migManager.config.default must be all-disabled or '' (the ClusterPolicy CRD's values), not %r"
                                     % spec['config']['default'])
        for section, default in (('config', mig_profiles.MIG_CONFIG_MAP), ('gpuClientsConfig', mig_profiles.GPU_CLIENTS_MAP)):
            if spec[section]['name'] == default:
                raise policy.PolicyError('migManager.%s.name %s is the name of the default ConfigMap: leave the name empty for it' % (section, default))
        policy.check_config('migManager.config', spec['config'],
                            lambda config: mig_profiles.check_config(config['data'], 'migManager.config.data', config['default']))

    def in_cluster_policy(self, section):
        section = policy.config_in_cluster_policy(section, keep_unnamed=True)
        if not section['gpuClientsConfig']['name']:
            del section['gpuClientsConfig']
        return section

    def layout(self):
        manager = {'name': 'nvidia-mig-manager', 'command': ['/bin/sh', '-c'], 'args': [ENTRYPOINT], 'securityContext': {'privileged': True},
                   'env': [field_env('NODE_NAME', 'spec.nodeName'), field_env('POD_NAME', 'metadata.name'), field_env('POD_NAMESPACE', 'metadata.namespace'),
                           value_env('GPU_CLIENTS_FILE', '/gpu-clients/clients.yaml'), field_env('DEFAULT_GPU_CLIENTS_NAMESPACE', 'metadata.namespace')],
                   'volumeMounts': [mount(ENTRYPOINT_MAP, ENTRYPOINT, read_only=True, sub_path='entrypoint.sh'),
                                    mount('run-nvidia-validations', VALIDATIONS), mount('host-sys', '/sys'),
                                    mount('host-root', '/host', propagation='HostToContainer'), mount('gpu-clients', '/gpu-clients'),
                                    mount('mig-parted-config', '/mig-parted-config'),
                                    mount('driver-install-dir', '/driver-root', propagation='HostToContainer'), mount('cdi-root', '/var/run/cdi')]}
        return {'hostPID': True, 'hostIPC': True,
                'initContainers': [toolkit_validation('run-nvidia-validations', VALIDATIONS)], 'containers': [manager],
                'volumes': [skeleton.entrypoint_volume(ENTRYPOINT_MAP), host_path('host-sys', '/sys', 'Directory'),
                            host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate'),
                            host_path('driver-install-dir', '/run/nvidia/driver', 'DirectoryOrCreate'), host_path('host-root', '/'),
                            {'name': 'gpu-clients', 'configMap': {'name': mig_profiles.GPU_CLIENTS_MAP}},
                            {'name': 'mig-parted-config', 'configMap': {'name': mig_profiles.MIG_CONFIG_MAP}},
                            host_path('cdi-root', '/var/run/cdi', 'DirectoryOrCreate')]}

    def config_maps(self, resolved, namespace):
        """(ConfigMaps to create, names of our default ones not wanted now)."""
        spec = resolved['migManager']
        created, unwanted = [], []
        if not spec['config']['name']:
            created.append(config_map(mig_profiles.MIG_CONFIG_MAP, namespace, {'config.yaml': skeleton.to_yaml(mig_profiles.default_config())}))
        else:
            unwanted.append(mig_profiles.MIG_CONFIG_MAP)
            if spec['config']['create']:
                value = spec['config']['data']['config.yaml']
                created.append(skeleton.data_config_map('migManager.config', spec['config']['name'], namespace,
                                                        {'config.yaml': value if isinstance(value, str) else skeleton.to_yaml(value)}))
        if not spec['gpuClientsConfig']['name']:
            created.append(config_map(mig_profiles.GPU_CLIENTS_MAP, namespace, {'clients.yaml': skeleton.to_yaml(mig_profiles.GPU_CLIENTS)}))
        else:
            unwanted.append(mig_profiles.GPU_CLIENTS_MAP)
        return created, unwanted

    def objects(self, resolved, context):
        """The MIG manager with its entrypoint, its MIG profiles and the host GPU clients it stops (the Operator's defaults unless named)."""
        spec = resolved['migManager']
        entrypoint = config_map(ENTRYPOINT_MAP, context.namespace, {'entrypoint.sh': skeleton.entrypoint_script('nvidia-mig-manager', EXPORTS)},
                                {'app': self.daemonset})
        configs = self.config_maps(resolved, context.namespace)[0]
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.validation_containers(pod, resolved['validator'])
        skeleton.image_settings(pod, main, spec, 'migManager')
        skeleton.main_args(main, spec)
        for volume in pod['volumes']:
            if volume['name'] == 'mig-parted-config':
                volume['configMap']['name'] = spec['config']['name'] or mig_profiles.MIG_CONFIG_MAP
                if not spec['config']['name']:
                    # mig-manager tells its fallback (the default profiles) from a config of the user's by the file name
                    volume['configMap']['items'] = [{'key': 'config.yaml', 'path': 'config-default.yaml'}]
            elif volume['name'] == 'gpu-clients':
                volume['configMap']['name'] = spec['gpuClientsConfig']['name'] or mig_profiles.GPU_CLIENTS_MAP
        if spec['config']['name']:
            set_env(main, 'CONFIG_FILE', '/mig-parted-config/config.yaml')
        else:
            set_env(main, 'DEFAULT_CONFIG_FILE', '/mig-parted-config/config-default.yaml')
        if resolved['cdi']['enabled']:
            set_env(main, 'CDI_ENABLED', 'true')
            set_env(main, 'NVIDIA_CDI_HOOK_PATH', context.cdi_hook_path)
        main['env'] = policy.merge_env(main['env'], spec['env'])
        skeleton.host_network(pod, spec['hostNetwork'])
        return self.accounts(context.namespace) + [entrypoint] + configs + [
            self.daemonset_object(pod, resolved, context.namespace, checksum=skeleton.checksum([entrypoint] + configs))]

    def unwanted(self, resolved, context):
        """Our default ConfigMaps while the settings name ConfigMaps of the user's instead."""
        if not self.is_enabled(resolved):
            return []
        return [ref(config_map(name, context.namespace, {})) for name in self.config_maps(resolved, context.namespace)[1]]


OPERAND = MigManager('migManager', 'nvidia-mig-manager', contract.MIG_MANAGER_COMPONENT,
                     image=('nvcr.io/nvidia/cloud-native', 'k8s-mig-manager', 'v0.15.0'))
