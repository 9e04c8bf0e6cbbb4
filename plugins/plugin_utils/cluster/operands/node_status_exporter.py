# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node status exporter (nodeStatusExporter): assets/state-node-status-exporter and TransformNodeStatusExporter of
GPU Operator v26.7.0.

NVIDIA's validator image in its `metrics` component: each GPU node's validation state (driver, toolkit, cuda,
device plugin) for Prometheus on port 8000, behind a Service, and a ServiceMonitor when the Prometheus Operator's
CRD exists. Off by default, as in the chart. As the Operator lays it out, it has no validation init containers and
names no runtime class (its container sees no GPU: NVIDIA_VISIBLE_DEVICES=void).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import field_env, host_path, mount, value_env

METRICS_PORT = 8000
PORT_NAME = 'node-status'


class NodeStatusExporter(skeleton.Operand):
    """The Operator's state-node-status-exporter."""
    rules = (({'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list']},
              {'apiGroups': ['apps'], 'resources': ['daemonsets'], 'verbs': ['get', 'list', 'watch']}), (skeleton.NODES_READ,))

    def layout(self):
        exporter = {'name': 'nvidia-node-status-exporter', 'command': ['nvidia-validator'], 'securityContext': {'privileged': True},
                    'env': [value_env('NVIDIA_VISIBLE_DEVICES', 'void'), value_env('COMPONENT', 'metrics'), value_env('METRICS_PORT', str(METRICS_PORT)),
                            field_env('NODE_NAME', 'spec.nodeName'), field_env('OPERATOR_NAMESPACE', 'metadata.namespace')],
                    'ports': [{'name': PORT_NAME, 'containerPort': METRICS_PORT}],
                    'volumeMounts': [mount('run-nvidia', '/run/nvidia', propagation='HostToContainer'),
                                     mount('host-root', '/host', read_only=True, propagation='HostToContainer')]}
        return {'containers': [exporter], 'volumes': [host_path('run-nvidia', '/run/nvidia', 'Directory'), host_path('host-root', '/')]}

    def service_monitor(self, namespace):
        return skeleton.service_monitor(self.daemonset, namespace, PORT_NAME, job_label=PORT_NAME)

    def objects(self, resolved, context):
        spec = resolved['nodeStatusExporter']
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.image_settings(pod, main, spec, 'nodeStatusExporter')
        skeleton.main_args(main, spec)
        main['env'] = policy.merge_env(main['env'], spec['env'])
        main['securityContext']['runAsUser'] = 0  # as the validator's (transformValidatorSecurityContext)
        skeleton.host_network(pod, spec['hostNetwork'])
        objects = self.accounts(context.namespace) + [
            skeleton.metrics_service(self.daemonset, context.namespace, PORT_NAME, METRICS_PORT),
            self.daemonset_object(pod, resolved, context.namespace, runtime_class=False)]
        if context.service_monitor_crd:
            objects.append(self.service_monitor(context.namespace))
        return objects


# Off by default, as in the chart (values.yaml nodeStatusExporter.enabled).
OPERAND = NodeStatusExporter('nodeStatusExporter', 'nvidia-node-status-exporter', 'node-status-exporter',
                             image=('nvcr.io/nvidia', 'gpu-operator', policy.OPERATOR_RELEASE), enabled=False)
