# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The sandbox device plugin (sandboxDevicePlugin): assets/state-sandbox-device-plugin and TransformSandboxDevicePlugin of GPU
Operator v26.7.0.

NVIDIA's KubeVirt GPU device plugin: on vm-passthrough and vm-vgpu nodes it advertises the GPUs bound to vfio-pci (and the
vGPU devices) for KubeVirt's VMs; deployed with sandboxWorkloads.enabled in mode kubevirt. Its validation init containers
wait for the node's workload-type file and, by workload, for vfio-pci-ready or vgpu-devices-ready (the sandbox
validator's); as the Operator lays it out, it names no runtime class.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import VALIDATIONS, field_env, host_path, mount, value_env


def workload_validation(component, workload, ready, waiting, skipped=None):
    """The init container that passes on a node of another workload (saying `skipped`, by default the component, is not
    needed) and waits for <ready> on one of `workload`."""
    script = ('until [ -f {v}/workload-type ]; do echo waiting for workload type status file; sleep 5; done; '
              'if [ "$(cat {v}/workload-type)" != "{w}" ]; then echo {c} not needed, skipping validation; exit 0; fi; '
              'until [ -f {v}/{r} ]; do echo {wait}; sleep 5; done;').format(v=VALIDATIONS, w=workload, c=skipped or component, r=ready, wait=waiting)
    return {'name': component + '-validation', 'command': ['sh', '-c'], 'args': [script], 'env': [value_env('NVIDIA_VISIBLE_DEVICES', 'void')],
            'securityContext': {'privileged': True}, 'volumeMounts': [mount('run-nvidia-validations', VALIDATIONS, propagation='HostToContainer')]}


class SandboxDevicePlugin(skeleton.SandboxOperand):
    """The Operator's state-sandbox-device-plugin (its OpenShift SCC rule left out)."""
    mode = contract.KUBEVIRT
    skipped = 'vfio-pci'  # the vfio-pci init container's word for a node of another workload
    rules = (({'apiGroups': [''], 'resources': ['pods'], 'verbs': ['create', 'get', 'list', 'watch', 'delete']},
              {'apiGroups': ['nfd.k8s-sigs.io'], 'resources': ['nodefeatures'], 'verbs': ['create', 'get', 'list', 'watch', 'update']}),
             ({'apiGroups': [''], 'resources': ['nodes', 'pods'], 'verbs': ['get']},))

    def layout(self):
        plugin = {'name': 'nvidia-sandbox-device-plugin-ctr', 'imagePullPolicy': 'IfNotPresent',
                  'env': [field_env('NODE_NAME', 'spec.nodeName'), field_env('POD_NAMESPACE', 'metadata.namespace')],
                  'securityContext': {'privileged': True},
                  'volumeMounts': [mount('device-plugin', '/var/lib/kubelet/device-plugins'), mount('vfio', '/dev/vfio'), mount('cdi-root', '/var/run/cdi')]}
        return {'initContainers': [workload_validation('vfio-pci', contract.VM_PASSTHROUGH, 'vfio-pci-ready', 'waiting for vfio-pci driver ...',
                                                       self.skipped),
                                   workload_validation('vgpu-devices', contract.VM_VGPU, 'vgpu-devices-ready', 'waiting for vGPU devices...')],
                'containers': [plugin], 'volumes': self.volumes() + [host_path('vfio', '/dev/vfio')]}

    def volumes(self):
        return [host_path('device-plugin', '/var/lib/kubelet/device-plugins'), host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate'),
                host_path('cdi-root', '/var/run/cdi', 'DirectoryOrCreate')]

    def objects(self, resolved, context):
        spec = resolved[self.section]
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.validation_containers(pod, resolved['validator'])
        skeleton.image_settings(pod, main, spec, self.section)
        skeleton.main_args(main, spec)
        main['env'] = policy.merge_env(main['env'], spec['env'])
        skeleton.host_network(pod, spec['hostNetwork'])
        return self.accounts(context.namespace) + [self.daemonset_object(pod, resolved, context.namespace, runtime_class=False)]


OPERAND = SandboxDevicePlugin('sandboxDevicePlugin', 'nvidia-sandbox-device-plugin-daemonset', contract.SANDBOX_DEVICE_PLUGIN_COMPONENT,
                              image=('nvcr.io/nvidia', 'kubevirt-gpu-device-plugin', 'v1.6.0'), account='nvidia-sandbox-device-plugin')
