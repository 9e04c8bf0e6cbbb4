# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The vGPU device manager (vgpuDeviceManager): assets/state-vgpu-device-manager and TransformVGPUDeviceManager of GPU Operator
v26.7.0.

On vm-vgpu nodes, once the vGPU manager (the host's, or the Operator's container) is ready, it creates the vGPU devices of
the config the node's nvidia.com/vgpu.config label names (else vgpuDeviceManager.config.default) from the ConfigMap
vgpuDeviceManager.config.name, or the Operator's default-vgpu-devices-config (vgpu_profiles.py), which is always applied.
Deployed with sandboxWorkloads.enabled.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import config_map
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton, vgpu_profiles
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import VALIDATIONS, field_env, host_path, mount, set_env, value_env


class VgpuDeviceManager(skeleton.SandboxOperand):
    """The Operator's state-vgpu-device-manager (its OpenShift SCC and clusterversions rules left out)."""
    settings = {'config': {'name': 'str', 'default': 'str'}}
    defaults = {'config': {'name': '', 'default': vgpu_profiles.DEFAULT_CONFIG}}
    crd = {'config': {'type': 'object', 'properties': {
        'name': skeleton.CRD_STRING, 'default': dict(skeleton.CRD_STRING, default=vgpu_profiles.DEFAULT_CONFIG)}}}
    rules = (({'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch']},),
             ({'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch', 'update']},))

    def check(self, resolved):
        if resolved[self.section]['config']['name'] == vgpu_profiles.VGPU_CONFIG_MAP:
            raise policy.PolicyError('vgpuDeviceManager.config.name %s is the name of the default ConfigMap: leave the name empty for it'
                                     % vgpu_profiles.VGPU_CONFIG_MAP)

    def layout(self):
        wait = ('until [ -f {v}/vgpu-manager-ready ] || [ -f {v}/host-vgpu-manager-ready ]; do echo waiting for NVIDIA vGPU Manager to be setup; '
                'sleep 5; done').format(v=VALIDATIONS)
        validation = {'name': 'vgpu-manager-validation', 'command': ['sh', '-c'], 'args': [wait], 'securityContext': {'privileged': True},
                      'volumeMounts': [mount('run-nvidia-validations', VALIDATIONS, propagation='Bidirectional')]}
        manager = {'name': 'nvidia-vgpu-device-manager', 'imagePullPolicy': 'IfNotPresent',
                   'env': [field_env('NAMESPACE', 'metadata.namespace'), field_env('NODE_NAME', 'spec.nodeName'),
                           value_env('CONFIG_FILE', '/vgpu-config/config.yaml')],
                   'securityContext': {'privileged': True},
                   'volumeMounts': [mount('vgpu-config', '/vgpu-config'), mount('host-sys', '/sys'), mount('host-root', '/host', propagation='HostToContainer'),
                                    mount('driver-install-dir', '/driver-root', propagation='HostToContainer')]}
        return {'initContainers': [validation], 'containers': [manager],
                'volumes': [{'name': 'vgpu-config', 'configMap': {'name': vgpu_profiles.VGPU_CONFIG_MAP}}, host_path('host-sys', '/sys', 'Directory'),
                            host_path('host-root', '/'), host_path('driver-install-dir', '/run/nvidia/driver', 'DirectoryOrCreate'),
                            host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate')]}

    def objects(self, resolved, context):
        spec = resolved[self.section]
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.validation_containers(pod, resolved['validator'])
        skeleton.image_settings(pod, main, spec, self.section)
        if spec['args']:
            main['args'] = list(spec['args'])
        main['env'] = policy.merge_env(main['env'], spec['env'])
        pod['volumes'][0]['configMap']['name'] = spec['config']['name'] or vgpu_profiles.VGPU_CONFIG_MAP
        set_env(main, 'DEFAULT_VGPU_CONFIG', spec['config']['default'] or vgpu_profiles.DEFAULT_CONFIG)
        skeleton.host_network(pod, spec['hostNetwork'])
        default = config_map(vgpu_profiles.VGPU_CONFIG_MAP, context.namespace, {'config.yaml': skeleton.to_yaml(vgpu_profiles.default_config())})
        return self.accounts(context.namespace) + [default, self.daemonset_object(pod, resolved, context.namespace, runtime_class=False)]


# On by default in the chart (values.yaml vgpuDeviceManager.enabled).
OPERAND = VgpuDeviceManager('vgpuDeviceManager', 'nvidia-vgpu-device-manager', 'vgpu-device-manager',
                            image=('nvcr.io/nvidia/cloud-native', 'vgpu-device-manager', 'v0.5.0'))
