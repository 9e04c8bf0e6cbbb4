# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The VFIO manager (vfioManager): assets/state-vfio-manager and TransformVFIOManager of GPU Operator v26.7.0.

On vm-passthrough nodes: k8s-driver-manager takes the GPUs from the NVIDIA driver (uninstall_driver), then `vfio-manage bind
--all` binds every NVIDIA GPU to vfio-pci, undone (unbind --all) when its Pod stops. Deployed with sandboxWorkloads.enabled.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import host_path, mount, value_env

# the manager's own resources in the Operator's assets, which vfioManager.resources replaces
RESOURCES = {'limits': {'memory': '200Mi'}, 'requests': {'cpu': '100m', 'memory': '200Mi'}}
# what the Operator's ClusterRole of a node-side manager that evicts Pods has (vfio-manager, vgpu-manager), without OpenShift's
MANAGER_CLUSTER_RULES = ({'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'patch', 'watch']},
                         {'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch']},
                         {'apiGroups': [''], 'resources': ['pods/eviction'], 'verbs': ['create']})


class VfioManager(skeleton.SandboxOperand):
    """The Operator's state-vfio-manager (its OpenShift SCC and clusterversions rules left out)."""
    settings = {'driverManager': skeleton.DRIVER_MANAGER_FIELDS}
    defaults = {'driverManager': skeleton.DRIVER_MANAGER_DEFAULTS}
    crd = {'driverManager': skeleton.DRIVER_MANAGER_CRD}
    images = ('driverManager',)
    rules = ((), MANAGER_CLUSTER_RULES)

    def layout(self):
        manager = {'name': 'nvidia-vfio-manager', 'imagePullPolicy': 'IfNotPresent', 'command': ['/bin/sh', '-c'],
                   'args': ['vfio-manage bind --all && while true; do sleep 86400; done'], 'env': [value_env('HOST_ROOT', '/host')],
                   'resources': copy.deepcopy(RESOURCES),
                   'volumeMounts': [mount('host-sys', '/sys'), mount('host-lib-modules', '/lib/modules', read_only=True), mount('host-root', '/host')],
                   'securityContext': {'privileged': True, 'seLinuxOptions': {'level': 's0'}},
                   'lifecycle': {'preStop': {'exec': {'command': ['/bin/sh', '-c', 'vfio-manage unbind --all']}}}}
        return {'initContainers': [skeleton.driver_manager_container()], 'containers': [manager], 'terminationGracePeriodSeconds': 30,
                'volumes': [host_path('host-sys', '/sys', 'Directory'), host_path('host-lib-modules', '/lib/modules', 'Directory'),
                            host_path('run-nvidia', '/run/nvidia', 'DirectoryOrCreate'), host_path('host-root', '/')]}

    def objects(self, resolved, context):
        spec = resolved[self.section]
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.driver_manager(pod, spec['driverManager'], spec['resources'], self.section)
        skeleton.image_settings(pod, main, spec, self.section)
        if spec['args']:  # replaced, as the Operator does: the bind --all loop is the manager's whole program
            main['args'] = list(spec['args'])
        main['env'] = policy.merge_env(main['env'], spec['env'])
        skeleton.host_network(pod, spec['hostNetwork'])
        # its Pods carry `name`, its DaemonSet `app` (the Operator's assets)
        daemonset = self.daemonset_object(pod, resolved, context.namespace, labels={'name': self.daemonset}, runtime_class=False)
        daemonset['metadata']['labels']['app'] = self.daemonset
        return self.accounts(context.namespace) + [daemonset]


OPERAND = VfioManager('vfioManager', 'nvidia-vfio-manager', 'vfio-manager', image=('nvcr.io/nvidia/cloud-native', 'k8s-driver-manager', 'v0.12.0'))
