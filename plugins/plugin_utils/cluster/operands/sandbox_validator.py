# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The sandbox validator: assets/state-sandbox-validation and TransformSandboxValidator of GPU Operator v26.7.0.

NVIDIA's validator image on vm-passthrough and vm-vgpu nodes (the validator section's settings): one init container per
component (cc-manager, only while ccManager.enabled; vfio-pci; vgpu-manager; vgpu-devices), each told the default workload
(DEFAULT_GPU_WORKLOAD_CONFIG) and given its validator.<component>.env, writing the ready files the sandbox device plugin
waits for. Deployed whenever sandboxWorkloads.enabled, applied with the other operands (the validation stage validates
container nodes).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import validator
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import VALIDATIONS, field_env, host_path, mount, value_env

LABELS = {'app': 'nvidia-sandbox-validator', 'app.kubernetes.io/part-of': 'gpu-operator'}
SELINUX = {'privileged': True, 'seLinuxOptions': {'level': 's0'}}


def _component(component, mounts, security):
    env = [value_env('WITH_WAIT', 'true'), value_env('COMPONENT', component), field_env('NODE_NAME', 'spec.nodeName')]
    return {'name': component + '-validation', 'command': ['sh', '-c'], 'args': ['nvidia-validator'], 'env': env,
            'securityContext': dict(security), 'volumeMounts': mounts}


class SandboxValidator(skeleton.SandboxOperand):
    """The Operator's state-sandbox-validation (its OpenShift SCC rule left out): its own section is the validator's."""
    rules = ((), ({'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get']},))

    def is_enabled(self, resolved):
        return bool(resolved['sandboxWorkloads']['enabled'])

    def layout(self, resolved):
        validations = mount('run-nvidia-validations', VALIDATIONS, propagation='Bidirectional')
        host_root = mount('host-root', '/host', read_only=True, propagation='HostToContainer')
        init = [_component('vfio-pci', [host_root, validations], SELINUX),
                _component('vgpu-manager', [host_root, mount('driver-install-path', '/run/nvidia/driver', propagation='HostToContainer'), validations],
                           SELINUX),
                _component('vgpu-devices', [validations], {'privileged': True})]
        if resolved['ccManager']['enabled']:  # TransformValidatorComponent removes it otherwise
            init.insert(0, _component('cc-manager', [validations], SELINUX))
        main = {'name': 'nvidia-sandbox-validator', 'command': ['sh', '-c'],
                'args': ['echo all validations are successful; while true; do sleep 86400; done'], 'securityContext': {'privileged': True},
                'lifecycle': {'preStop': {'exec': {'command': ['sh', '-c', 'rm -f %s/*' % VALIDATIONS]}}}, 'volumeMounts': [validations]}
        return {'initContainers': init, 'containers': [main],
                'volumes': [host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate'), host_path('driver-install-path', '/run/nvidia/driver'),
                            host_path('host-root', '/')]}

    def objects(self, resolved, context):
        """Its layout; TransformValidatorShared on the main container; per component, the validator image as root, and for
        vfio-pci, vgpu-manager and vgpu-devices DEFAULT_GPU_WORKLOAD_CONFIG then validator.<section>.env."""
        spec = resolved['validator']
        pod = self.layout(resolved)
        skeleton.validation_containers(pod, spec)
        default = contract.workload_config({}, resolved['sandboxWorkloads'])[0]
        for item in pod['initContainers']:
            section = validator.SANDBOX_COMPONENTS.get(item['name'][:-len('-validation')])
            if section:
                item['env'] = policy.merge_env(item['env'], [value_env('DEFAULT_GPU_WORKLOAD_CONFIG', default)] + spec[section]['env'])
        validator.OPERAND.main_container(pod, spec)
        # as the Operator: no runtime class (no setRuntimeClassName in TransformSandboxValidator)
        return self.accounts(context.namespace) + [self.daemonset_object(pod, resolved, context.namespace, labels=dict(LABELS), runtime_class=False)]


OPERAND = SandboxValidator('validator', 'nvidia-sandbox-validator', 'sandbox-validator')
