# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""GPU feature discovery (gfd): assets/gpu-feature-discovery and TransformGPUDiscoveryPlugin of GPU Operator v26.7.0.

Off by default here (deviation gfd-default): the node labels stage writes its labels from the host, from the same
device plugin config; turned on, its Pods read that config through config-manager as the plugin does.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config, policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import field_env, host_path, mount, toolkit_validation, value_env

FEATURES_D = '/etc/kubernetes/node-feature-discovery/features.d'


class GpuFeatureDiscovery(skeleton.Operand):
    """The Operator's gpu-feature-discovery state."""
    rules = (({'apiGroups': ['nfd.k8s-sigs.io'], 'resources': ['nodefeatures'], 'verbs': ['get', 'list', 'watch', 'create', 'update']},
              {'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get']}), (skeleton.NODES_READ,))

    def layout(self):
        gfd = {'name': 'gpu-feature-discovery', 'command': ['gpu-feature-discovery'], 'securityContext': {'privileged': True},
               'env': [value_env('GFD_SLEEP_INTERVAL', '60s'), value_env('GFD_FAIL_ON_INIT_ERROR', 'true'), field_env('NAMESPACE', 'metadata.namespace'),
                       field_env('NODE_NAME', 'spec.nodeName'), field_env('POD_NAME', 'metadata.name')],
               'volumeMounts': [mount('output-dir', FEATURES_D), mount('host-sys', '/sys', read_only=True)]}
        return {'initContainers': [toolkit_validation('run-nvidia', '/run/nvidia'), plugin_config.config_manager(True)],
                'containers': [gfd, plugin_config.config_manager(False, 'gpu-feature-discovery')],
                'volumes': [host_path('output-dir', FEATURES_D), host_path('host-sys', '/sys'), host_path('run-nvidia', '/run/nvidia', 'Directory')]}

    def objects(self, resolved, context):
        spec = resolved['gfd']
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.validation_containers(pod, resolved['validator'])
        skeleton.image_settings(pod, main, spec, 'gfd')
        skeleton.main_args(main, spec)
        # The user's env comes before the MIG env here, so that MIG_STRATEGY stays mig.strategy (as in the Operator).
        main['env'] = policy.merge_env(main['env'], spec['env'])
        plugin_config.with_config(pod, resolved, spec['resources'])
        skeleton.mig_env(main, resolved['mig']['strategy'])
        skeleton.host_network(pod, spec['hostNetwork'])
        labels = {'app': self.daemonset, 'app.kubernetes.io/part-of': 'nvidia-gpu'}
        return self.accounts(context.namespace) + [self.daemonset_object(
            pod, resolved, context.namespace, labels=labels, checksum=skeleton.checksum(plugin_config.config_maps(resolved, context.namespace)))]


# Off by default: deviation gfd-default.
OPERAND = GpuFeatureDiscovery('gfd', 'gpu-feature-discovery', 'gpu-feature-discovery', image=('nvcr.io/nvidia', 'k8s-device-plugin', 'v0.20.0'),
                              account='nvidia-gpu-feature-discovery', enabled=False)
