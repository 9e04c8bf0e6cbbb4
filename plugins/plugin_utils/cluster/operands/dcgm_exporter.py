# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The DCGM exporter (dcgmExporter): assets/state-dcgm-exporter, TransformDCGMExporter and its Service and ServiceMonitor
edits in GPU Operator v26.7.0.

GPU metrics for Prometheus on port 9400, behind a Service, and a ServiceMonitor when the Prometheus Operator's CRD
exists (as the Operator decides it); custom metrics from dcgmExporter.config, Pod labels and UIDs in the metrics with
a ClusterRole that reads Pods; the standalone DCGM's hostengine (dcgm.py) when dcgm.enabled, else its own or the host's.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import ref
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import dcgm
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import (
    field_env, host_path, mount, set_env, toolkit_validation, value_env)

METRICS_PORT = 9400
METRICS_FILE = 'dcgm-metrics.csv'
METRICS_PATH = '/etc/dcgm-exporter/' + METRICS_FILE
HPC_JOB_MAPPING = '/var/lib/dcgm-exporter/job-mapping'
READ_PODS = 'nvidia-dcgm-exporter-read-pods'
READ_PODS_RULES = ({'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch']},)
POD_ENV = ('DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS', 'DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID')
# The hostengine the exporter reads instead of embedding one: the standalone DCGM's Service (dcgm.enabled), or the user's.
REMOTE_HOSTENGINE = 'DCGM_REMOTE_HOSTENGINE_INFO'
NAME = skeleton.CRD_STRING


def reads_pods(resolved):
    """Whether the exporter reads Pods from the API (pod labels or UIDs in its metrics): it then needs its ClusterRole."""
    spec = resolved['dcgmExporter']
    env = dict((item['name'], item.get('value', '')) for item in spec['env'])
    return bool(spec['enablePodLabels'] or spec['enablePodUID'] or any(env.get(name, '').lower() == 'true' for name in POD_ENV))


class DcgmExporter(skeleton.Operand):
    """The Operator's state-dcgm-exporter."""
    settings = {'annotations': 'strmap', 'hostPID': 'bool', 'config': {'name': 'str', 'create': 'bool', 'data': 'str'},
                'hpcJobMapping': {'enabled': 'bool', 'directory': 'str'}, 'enablePodLabels': 'bool', 'enablePodUID': 'bool',
                'podLabelAllowlistRegex': 'strlist', 'service': {'type': 'str', 'internalTrafficPolicy': 'str'},
                'serviceMonitor': {'enabled': 'bool', 'interval': 'str', 'scrapeTimeout': 'str', 'honorLabels': 'bool',
                                   'additionalLabels': 'strmap', 'relabelings': 'dictlist'}}
    defaults = {'annotations': {}, 'hostPID': False, 'config': {'name': '', 'create': None, 'data': ''},
                'hpcJobMapping': {'enabled': False, 'directory': ''}, 'enablePodLabels': False, 'enablePodUID': False,
                'podLabelAllowlistRegex': [], 'service': {'type': '', 'internalTrafficPolicy': 'Cluster'},
                # created when the Prometheus Operator's CRD exists, as the Operator does
                'serviceMonitor': {'enabled': True, 'interval': '15s', 'scrapeTimeout': '10s', 'honorLabels': False,
                                   'additionalLabels': {}, 'relabelings': []}}
    crd = {'annotations': skeleton.crd_string_map(), 'hostPID': {'type': 'boolean'}, 'enablePodLabels': {'type': 'boolean'},
           'enablePodUID': {'type': 'boolean'}, 'podLabelAllowlistRegex': {'type': 'array', 'items': {'type': 'string'}},
           'config': {'type': 'object', 'properties': {'name': NAME}},
           'hpcJobMapping': {'type': 'object', 'properties': {'enabled': {'type': 'boolean'}, 'directory': NAME}},
           'service': {'type': 'object', 'properties': {'type': NAME, 'internalTrafficPolicy': NAME}},
           'serviceMonitor': {'type': 'object', 'properties': {
               'enabled': {'type': 'boolean'}, 'interval': NAME, 'scrapeTimeout': NAME, 'honorLabels': {'type': 'boolean'},
               'additionalLabels': skeleton.crd_string_map(),
               'relabelings': {'type': 'array', 'items': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}}
    # its ClusterRole (reading Pods) only when pod labels or UIDs go into the metrics: reads_pods()
    rules = (({'apiGroups': [''], 'resources': ['configmaps'], 'verbs': ['get', 'list']},), ())

    def check(self, resolved):
        policy.check_config('dcgmExporter.config', resolved['dcgmExporter']['config'], lambda config: None)

    def in_cluster_policy(self, section):
        section = policy.config_in_cluster_policy(section, keep_unnamed=False)
        if not section['service']['type']:
            del section['service']['type']
        return section

    def layout(self):
        health = {'httpGet': {'port': METRICS_PORT, 'path': '/health'}, 'initialDelaySeconds': 45}
        exporter = {'name': 'nvidia-dcgm-exporter', 'securityContext': {'privileged': True},
                    'env': [value_env('DCGM_EXPORTER_LISTEN', ':%d' % METRICS_PORT), value_env('DCGM_EXPORTER_KUBERNETES', 'true'),
                            value_env('DCGM_EXPORTER_COLLECTORS', '/etc/dcgm-exporter/dcp-metrics-included.csv'), field_env('NODE_NAME', 'spec.nodeName')],
                    'ports': [{'name': 'metrics', 'containerPort': METRICS_PORT}],
                    'livenessProbe': dict(health, periodSeconds=5), 'readinessProbe': dict(health),
                    'volumeMounts': [mount('pod-gpu-resources', '/var/lib/kubelet/pod-resources', read_only=True)]}
        return {'automountServiceAccountToken': False,
                'initContainers': [toolkit_validation('run-nvidia', '/run/nvidia')], 'containers': [exporter],
                'volumes': [host_path('pod-gpu-resources', '/var/lib/kubelet/pod-resources'), host_path('run-nvidia', '/run/nvidia')]}

    def service_monitor(self, resolved, namespace):
        return skeleton.service_monitor(self.daemonset, namespace, 'gpu-metrics', monitor=resolved['dcgmExporter']['serviceMonitor'])

    def read_pods_accounts(self, namespace):
        return [obj for obj in self.accounts(namespace, READ_PODS_RULES, READ_PODS) if obj['metadata']['name'] == READ_PODS]

    def objects(self, resolved, context):
        spec = resolved['dcgmExporter']
        namespace = context.namespace
        pod = self.layout()
        main = pod['containers'][0]
        skeleton.validation_containers(pod, resolved['validator'])
        skeleton.image_settings(pod, main, spec, 'dcgmExporter')
        skeleton.main_args(main, spec)
        skeleton.host_network(pod, spec['hostNetwork'])
        if spec['hostPID']:
            pod['hostPID'] = True
        mapping = spec['hpcJobMapping']
        if mapping['enabled']:
            directory = mapping['directory'] or HPC_JOB_MAPPING
            set_env(main, 'DCGM_HPC_JOB_MAPPING_DIR', directory)
            main['volumeMounts'].append(mount('hpc-job-mapping', directory, read_only=True))
            pod['volumes'].append(host_path('hpc-job-mapping', directory, 'DirectoryOrCreate'))
        if spec['enablePodLabels']:
            set_env(main, 'DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS', 'true')
        if spec['enablePodUID']:
            set_env(main, 'DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID', 'true')
        if spec['podLabelAllowlistRegex']:
            set_env(main, 'DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX', ','.join(spec['podLabelAllowlistRegex']))
        kubelet = resolved['hostPaths']['kubeletRootDir']
        if kubelet not in ('', policy.HOST_PATHS['kubeletRootDir']):
            next(volume for volume in pod['volumes'] if volume['name'] == 'pod-gpu-resources')['hostPath']['path'] = kubelet.rstrip('/') + '/pod-resources'
        env = dict((item['name'], item.get('value', '')) for item in spec['env'])
        if reads_pods(resolved) or env.get('DCGM_EXPORTER_CONFIGMAP_DATA', 'none') not in ('', 'none'):
            pod['automountServiceAccountToken'] = True
        configs = []
        config = spec['config']
        if config['name']:
            main['volumeMounts'].append(mount('metrics-config', METRICS_PATH, read_only=True, sub_path=METRICS_FILE))
            pod['volumes'].append({'name': 'metrics-config', 'configMap': {'name': config['name'], 'items': [{'key': METRICS_FILE, 'path': METRICS_FILE}]}})
            set_env(main, 'DCGM_EXPORTER_COLLECTORS', METRICS_PATH)
            if config['create']:
                configs.append(skeleton.data_config_map('dcgmExporter.config', config['name'], namespace, {METRICS_FILE: config['data']}))
        if resolved['dcgm']['enabled']:
            set_env(main, REMOTE_HOSTENGINE, dcgm.OPERAND.endpoint())
        main['env'] = policy.merge_env(main['env'], spec['env'])
        if not resolved['dcgm']['enabled'] and env.get(REMOTE_HOSTENGINE, '').startswith('localhost'):
            # The hostengine runs on the host itself (DGX OS): only the node's network reaches it (deviation dcgm-on-host:
            # the Operator reads this env before it merges the user's, so there only an env of its own asset would do it).
            skeleton.host_network(pod, True)
        workload = self.daemonset_object(pod, resolved, namespace, annotations=spec['annotations'], checksum=skeleton.checksum(configs))
        service = skeleton.metrics_service(self.daemonset, namespace, 'gpu-metrics', METRICS_PORT)
        for field in ('type', 'internalTrafficPolicy'):
            if spec['service'][field]:
                service['spec'][field] = spec['service'][field]
        accounts = self.accounts(namespace) + (self.read_pods_accounts(namespace) if reads_pods(resolved) else [])
        objects = accounts + configs + [workload, service]
        if context.service_monitor_crd and spec['serviceMonitor']['enabled']:
            objects.append(self.service_monitor(resolved, namespace))
        return objects

    def unwanted(self, resolved, context):
        """The ClusterRole reading Pods while the metrics carry no Pod labels or UIDs, and a ServiceMonitor turned off (without
        its CRD there is nothing to delete, and the kind cannot even be looked up)."""
        enabled = self.is_enabled(resolved)
        found = [] if enabled and reads_pods(resolved) else [ref(obj) for obj in self.read_pods_accounts(context.namespace)]
        if context.service_monitor_crd and not (enabled and resolved['dcgmExporter']['serviceMonitor']['enabled']):
            found.append(ref(self.service_monitor(resolved, context.namespace)))
        return found


OPERAND = DcgmExporter('dcgmExporter', 'nvidia-dcgm-exporter', 'dcgm-exporter',
                       image=('nvcr.io/nvidia/k8s', 'dcgm-exporter', '4.6.0-4.8.3-distroless'))
