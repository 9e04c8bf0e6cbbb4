# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""NVIDIA's validator (validator): assets/state-operator-validation, TransformValidator and TransformValidatorComponent of
GPU Operator v26.7.0.

The DaemonSet nvidia-operator-validator runs one init container per component in the Operator's order (driver,
toolkit, cuda, plugin), each writing its <validations>/<component>-ready file. The gpu_cluster_validator role applies
it (stage 'validation'); its image also runs the other operands' validation init containers.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.validation_pods import DEPLOY_COMPONENT, VALIDATOR
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import VALIDATIONS, field_env, host_path, mount, value_env

LABELS = {'app': VALIDATOR, 'app.kubernetes.io/part-of': 'gpu-operator'}
# The sandbox validator's components (sandbox_validator.py): its init container's component -> the validator section with its env.
SANDBOX_COMPONENTS = {'vfio-pci': 'vfioPCI', 'vgpu-manager': 'vgpuManager', 'vgpu-devices': 'vgpuDevices'}
COMPONENT_SECTIONS = skeleton.VALIDATION_COMPONENTS + tuple(SANDBOX_COMPONENTS.values())


def image_settings(validator):
    """{reference, pull_policy, pull_secrets} of NVIDIA's validator image, from the resolved ClusterPolicy `validator`
    section: the image the operands' validation init containers run too (skeleton.validation_containers)."""
    return {'reference': skeleton.image(validator, 'validator'), 'pull_policy': validator['imagePullPolicy'],
            'pull_secrets': list(validator['imagePullSecrets'])}


def _workload_env(image, runtime_class):
    """What TransformValidatorComponent gives the cuda and plugin init containers to build their workload Pods."""
    env = [value_env('VALIDATOR_IMAGE', image['reference']), value_env('VALIDATOR_IMAGE_PULL_POLICY', image['pull_policy'])]
    if image['pull_secrets']:
        env.append(value_env('VALIDATOR_IMAGE_PULL_SECRETS', ','.join(image['pull_secrets'])))
    if runtime_class:
        env.append(value_env('VALIDATOR_RUNTIME_CLASS', runtime_class))
    return env


def _validations_mount():
    return mount('run-nvidia-validations', VALIDATIONS, propagation='Bidirectional')


def _init_container(component, env, mounts, security):
    return {'name': component + '-validation', 'command': ['sh', '-c'], 'args': ['nvidia-validator'], 'env': env,
            'securityContext': security, 'volumeMounts': mounts}


class Validator(skeleton.Operand):
    """The Operator's state-operator-validation."""
    fields = dict(skeleton.IMAGE_FIELDS, args='strlist', env='env', hostNetwork='bool')
    settings = dict((component, {'env': 'env'}) for component in COMPONENT_SECTIONS)
    defaults = dict((component, {'env': []}) for component in COMPONENT_SECTIONS)
    crd = dict((component, {'type': 'object', 'properties': {'env': skeleton.crd_env()}}) for component in COMPONENT_SECTIONS)
    # the validator makes and removes its workload Pods, reads its DaemonSet (their tolerations) and its Node; the Operator's
    # rule on ClusterPolicy finalizers is left out: nothing here sets owner references to a ClusterPolicy
    rules = (({'apiGroups': [''], 'resources': ['pods'], 'verbs': ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete']},
              {'apiGroups': ['apps'], 'resources': ['daemonsets'], 'verbs': ['get', 'list', 'watch']}), (skeleton.NODES_READ,))
    stage = 'validation'

    def layout(self, resolved, image):
        """The Operator's validator Pod (assets/state-operator-validation), with the component env TransformValidator adds."""
        namespace_env = field_env('OPERATOR_NAMESPACE', 'metadata.namespace')
        node_env = field_env('NODE_NAME', 'spec.nodeName')
        workload = _workload_env(image, resolved['operator']['runtimeClass'])
        init = [
            _init_container('driver', [value_env('WITH_WAIT', 'true'), value_env('COMPONENT', 'driver'), namespace_env],
                            [mount('host-root', '/host', read_only=True, propagation='HostToContainer'),
                             mount('driver-install-dir', '/run/nvidia/driver', propagation='HostToContainer'),
                             _validations_mount(), mount('host-dev-char', '/host-dev-char')],
                            {'privileged': True, 'seLinuxOptions': {'level': 's0'}}),
            _init_container('toolkit', [value_env('NVIDIA_VISIBLE_DEVICES', 'all'), value_env('WITH_WAIT', 'false'), value_env('COMPONENT', 'toolkit')],
                            [_validations_mount()], {'privileged': True}),
            _init_container('cuda', [value_env('WITH_WAIT', 'false'), value_env('COMPONENT', 'cuda'), node_env, namespace_env] + workload,
                            [_validations_mount()], {'privileged': True}),
        ]
        if resolved['devicePlugin']['enabled']:  # the Operator removes the plugin init container when the device plugin is disabled
            # WITH_WORKLOAD=false as the Operator ships it: the Pod requesting the resource is this collection's (validation.plugin_pods).
            init.append(_init_container('plugin', [
                value_env('COMPONENT', 'plugin'), value_env('WITH_WAIT', 'false'), value_env('WITH_WORKLOAD', 'false'),
                value_env('MIG_STRATEGY', resolved['mig']['strategy']), node_env, namespace_env] + workload, [_validations_mount()],
                {'privileged': True}))
        main = {
            'name': VALIDATOR, 'command': ['sh', '-c'], 'args': ['echo all validations are successful; while true; do sleep 86400; done'],
            'securityContext': {'privileged': True},
            # The Operator's: a node whose validator goes away has no stale ready files.
            'lifecycle': {'preStop': {'exec': {'command': ['sh', '-c', 'rm -f %s/*-ready' % VALIDATIONS]}}},
            'volumeMounts': [_validations_mount()],
        }
        return {'initContainers': init, 'containers': [main],
                'volumes': [host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate'), host_path('driver-install-dir', '/run/nvidia/driver'),
                            host_path('host-root', '/'), host_path('host-dev-char', '/dev/char')]}

    def main_container(self, pod, validator):
        """TransformValidatorShared: the validator image on the main container, root, its resources, validator.args (replacing
        the main container's), validator.env (set in it; the component init containers have env of their own)."""
        main = pod['containers'][0]
        main['image'] = skeleton.image(validator, 'validator')
        main['imagePullPolicy'] = validator['imagePullPolicy']
        main['securityContext']['runAsUser'] = 0
        if validator['resources']:
            main['resources'] = copy.deepcopy(validator['resources'])
        if validator['args']:
            main['args'] = list(validator['args'])
        if validator['env']:
            main['env'] = policy.merge_env(main.get('env', []), validator['env'])
        skeleton.host_network(pod, validator['hostNetwork'])

    def objects(self, resolved, context):
        """Its layout, the validator image on every container and each component's env on its init container (as
        TransformValidator sets them), validator.args (replacing the main container's, as there) and validator.env on the
        main container, then what every operand DaemonSet gets (daemonsets.*, the runtime class)."""
        validator = resolved['validator']
        pod = self.layout(resolved, image_settings(validator))
        skeleton.validation_containers(pod, validator)
        self.main_container(pod, validator)
        return self.accounts(context.namespace) + [self.daemonset_object(pod, resolved, context.namespace, labels=dict(LABELS))]


OPERAND = Validator('validator', VALIDATOR, DEPLOY_COMPONENT, image=('nvcr.io/nvidia', 'gpu-operator', policy.OPERATOR_RELEASE))
