# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The MPS control daemon: assets/state-mps-control-daemon and TransformMPSControlDaemon of GPU Operator v26.7.0.

It runs with the device plugin (devicePlugin.enabled, its image, account and devicePlugin.mps.root) on the nodes
whose device plugin config shares with MPS: GFD (here gpu_node_labels) labels those nvidia.com/mps.capable=true.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import device_plugin
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import field_env, host_path, mount, toolkit_validation, value_env


class MpsControlDaemon(skeleton.Operand):
    """The Operator's state-mps-control-daemon."""

    def layout(self):
        root = device_plugin.DEFAULT_MPS_ROOT
        daemon = {'name': 'mps-control-daemon-ctr', 'command': ['mps-control-daemon'], 'securityContext': {'privileged': True},
                  'env': [field_env('NODE_NAME', 'spec.nodeName'), value_env('NVIDIA_VISIBLE_DEVICES', 'all'),
                          value_env('NVIDIA_DRIVER_CAPABILITIES', 'compute,utility')],
                  'volumeMounts': [mount('mps-shm', '/dev/shm'), mount('mps-root', '/mps')]}
        # mount-shm puts a tmpfs (half the node's memory) at <MPS root>/shm, shared back to the host for the plugin and workloads.
        mounts = {'name': 'mps-control-daemon-mounts', 'command': ['mps-control-daemon', 'mount-shm'], 'securityContext': {'privileged': True},
                  'volumeMounts': [mount('mps-root', '/mps', propagation='Bidirectional')]}
        return {'hostPID': True,
                'initContainers': [toolkit_validation('run-nvidia', '/run/nvidia'), mounts, plugin_config.config_manager(True)],
                'containers': [daemon, plugin_config.config_manager(False, '/usr/bin/mps-control-daemon')],
                'volumes': [host_path('run-nvidia', '/run/nvidia', 'Directory'), host_path('mps-root', root, 'DirectoryOrCreate'),
                            host_path('mps-shm', root + '/shm')]}

    def objects(self, resolved, context):
        spec = resolved['devicePlugin']
        pod = self.layout()
        daemon = skeleton.container(pod, 'mps-control-daemon-ctr')
        skeleton.validation_containers(pod, resolved['validator'])
        for item in pod['initContainers']:
            if item['name'] == 'mps-control-daemon-mounts':
                item['image'] = skeleton.image(spec, 'devicePlugin')
                item['imagePullPolicy'] = spec['imagePullPolicy']
                if spec['resources']:
                    item['resources'] = copy.deepcopy(spec['resources'])
        skeleton.image_settings(pod, daemon, spec, 'devicePlugin')
        plugin_config.with_config(pod, resolved, spec['resources'])
        skeleton.mig_env(daemon, resolved['mig']['strategy'])
        if spec['mps']['root'] != device_plugin.DEFAULT_MPS_ROOT:
            device_plugin.mps_root(pod, spec['mps']['root'])
        skeleton.host_network(pod, spec['hostNetwork'])
        return [self.daemonset_object(pod, resolved, context.namespace,
                                      selector={contract.deploy_label(self.deploy): 'true', contract.MPS_CAPABLE: 'true'},
                                      checksum=skeleton.checksum(plugin_config.config_maps(resolved, context.namespace)))]


# It runs with the device plugin's settings and switch, on its nodes, as the plugin (the Operator's MPS DaemonSet runs as
# nvidia-device-plugin: deviation unused-mps-account).
OPERAND = MpsControlDaemon('devicePlugin', 'nvidia-device-plugin-mps-control-daemon', device_plugin.OPERAND.deploy, account=device_plugin.OPERAND.account)
