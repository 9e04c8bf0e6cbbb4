# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The standalone DCGM hostengine (dcgm): assets/state-dcgm and TransformDCGM of GPU Operator v26.7.0.

nv-hostengine in a Pod of its own on each GPU node, on port 5555 behind a node-local Service; the DCGM exporter then
reads it (DCGM_REMOTE_HOSTENGINE_INFO, dcgm_exporter.py) instead of embedding its own. Off by default, as in the chart.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import meta
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import host_path, toolkit_validation

PORT = 5555


class Dcgm(skeleton.Operand):
    """The Operator's state-dcgm."""

    def endpoint(self):
        """Where the exporter reaches the hostengine: this Service, on the exporter's own node (internalTrafficPolicy Local)."""
        return '%s:%d' % (self.daemonset, PORT)

    def layout(self):
        probe = {'tcpSocket': {'port': PORT}, 'initialDelaySeconds': 15}
        hostengine = {'name': 'nvidia-dcgm-ctr', 'securityContext': {'privileged': True}, 'ports': [{'name': 'dcgm', 'containerPort': PORT}],
                      'livenessProbe': dict(probe), 'readinessProbe': dict(probe)}
        return {'initContainers': [toolkit_validation('run-nvidia', '/run/nvidia')], 'containers': [hostengine],
                'volumes': [host_path('run-nvidia', '/run/nvidia', 'Directory')]}

    def service(self, namespace):
        return {'apiVersion': 'v1', 'kind': 'Service', 'metadata': meta(self.daemonset, namespace, {'app': self.daemonset}),
                'spec': {'type': 'ClusterIP', 'internalTrafficPolicy': 'Local', 'selector': {'app': self.daemonset},
                         'ports': [{'name': 'dcgm', 'port': PORT, 'protocol': 'TCP'}]}}

    def objects(self, resolved, context):
        spec = resolved['dcgm']
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.validation_containers(pod, resolved['validator'])
        skeleton.image_settings(pod, main, spec, 'dcgm')
        skeleton.main_args(main, spec)
        if spec['env']:
            main['env'] = policy.merge_env([], spec['env'])
        skeleton.host_network(pod, spec['hostNetwork'])
        return self.accounts(context.namespace) + [self.daemonset_object(pod, resolved, context.namespace), self.service(context.namespace)]


# Off by default, as in the chart (values.yaml dcgm.enabled: the exporter embeds its hostengine).
OPERAND = Dcgm('dcgm', 'nvidia-dcgm', 'dcgm', image=('nvcr.io/nvidia/cloud-native', 'dcgm', '4.6.0-1-ubuntu24.04'), enabled=False)
