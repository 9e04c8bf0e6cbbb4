# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The confidential computing manager (ccManager): assets/state-cc-manager and TransformCCManager of GPU Operator v26.7.0.

k8s-cc-manager on vm-passthrough and vm-vgpu nodes sets the GPUs' confidential computing mode (ccManager.defaultMode, or
the node's nvidia.com/cc.mode label). The Operator deploys it only with sandboxWorkloads.enabled in mode kata.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands.vfio_manager import RESOURCES
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import host_path, mount, field_env, value_env


class CcManager(skeleton.SandboxOperand):
    """The Operator's state-cc-manager (its OpenShift SCC rule left out)."""
    mode = contract.KATA
    fields = dict(skeleton.OPERAND_FIELDS)
    settings = {'defaultMode': 'str'}
    defaults = {'defaultMode': 'on'}
    crd = {'defaultMode': skeleton.CRD_STRING}
    rules = (({'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch']},),
             ({'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'patch', 'watch']},))

    def layout(self):
        manager = {'name': 'nvidia-cc-manager', 'imagePullPolicy': 'IfNotPresent',
                   'env': [field_env('NODE_NAME', 'spec.nodeName'), value_env('NVIDIA_VISIBLE_DEVICES', 'void')],
                   'resources': copy.deepcopy(RESOURCES),
                   'volumeMounts': [mount('host-sys', '/sys'), mount('run-nvidia', '/run/nvidia')],
                   'securityContext': {'privileged': True, 'seLinuxOptions': {'level': 's0'}},
                   'lifecycle': {'preStop': {'exec': {'command': ['/bin/rm', '-f', '/run/nvidia/validations/.cc-manager-ctr-ready']}}}}
        return {'containers': [manager], 'terminationGracePeriodSeconds': 30,
                'volumes': [host_path('host-sys', '/sys', 'Directory'), host_path('run-nvidia', '/run/nvidia', 'DirectoryOrCreate')]}

    def objects(self, resolved, context):
        spec = resolved[self.section]
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.image_settings(pod, main, spec, self.section)
        if spec['args']:
            main['args'] = list(spec['args'])
        env = [value_env('DEFAULT_CC_MODE', spec['defaultMode'])] if spec['defaultMode'] else []
        main['env'] = policy.merge_env(main['env'], env + spec['env'])
        skeleton.host_network(pod, spec['hostNetwork'])
        daemonset = self.daemonset_object(pod, resolved, context.namespace, labels={'name': self.daemonset}, runtime_class=False)
        daemonset['metadata']['labels']['app'] = self.daemonset
        return self.accounts(context.namespace) + [daemonset]


# On by default in the chart (values.yaml ccManager.enabled), deployed only in mode kata.
OPERAND = CcManager('ccManager', 'nvidia-cc-manager', 'cc-manager', image=('nvcr.io/nvidia/cloud-native', 'k8s-cc-manager', 'v0.4.3'))
