# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The operands, laid out as the GPU Operator lays them out (policy.OPERATOR_RELEASE).

Each operand starts from the Operator's layout of its DaemonSet (names, selectors, init containers,
env, mounts, host paths, security) and is then changed by the resolved ClusterPolicy in the order the
Operator's transforms change it: validation init containers, image and pull settings, resources and
args, the device plugin config (config-manager), the runtime class, MIG and CDI env, and the user's
env last (merged by name), so that what a setting does here is what it does there. tests/cluster/parity/
compares the result with the Operator's facts; docs/coming-from-gpu-operator.md lists the differences.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import hashlib
import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import config_map, meta, ref
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import images, mig_profiles, policy

VALIDATIONS = contract.VALIDATIONS_DIR
METRICS_PORT = 9400
ENTRYPOINT = '/bin/entrypoint.sh'
CONFIG_FILE = '/config/config.yaml'
MIG_CONFIG_MAP = mig_profiles.MIG_CONFIG_MAP
GPU_CLIENTS_MAP = mig_profiles.GPU_CLIENTS_MAP
METRICS_FILE = 'dcgm-metrics.csv'
METRICS_PATH = '/etc/dcgm-exporter/' + METRICS_FILE
HPC_JOB_MAPPING = '/var/lib/dcgm-exporter/job-mapping'
CHECKSUM = 'gpuops.gpu_operator/config-sha256'
# Names of the DaemonSets and ServiceAccounts of the operands and of the validator (the Operator's, the validator's rendered
# by validation.py), and the deploy label each selects on.
DAEMONSETS = {
    'devicePlugin': 'nvidia-device-plugin-daemonset',
    'mps': 'nvidia-device-plugin-mps-control-daemon',
    'gfd': 'gpu-feature-discovery',
    'dcgmExporter': 'nvidia-dcgm-exporter',
    'migManager': 'nvidia-mig-manager',
    'validator': 'nvidia-operator-validator',
}
ACCOUNTS = {'devicePlugin': 'nvidia-device-plugin', 'gfd': 'nvidia-gpu-feature-discovery', 'dcgmExporter': 'nvidia-dcgm-exporter',
            'migManager': 'nvidia-mig-manager', 'validator': 'nvidia-operator-validator'}
DEPLOY = {'devicePlugin': 'device-plugin', 'gfd': 'gpu-feature-discovery', 'dcgmExporter': 'dcgm-exporter', 'migManager': 'mig-manager',
          'validator': 'operator-validator'}
ENTRYPOINTS = {'devicePlugin': 'nvidia-device-plugin-entrypoint', 'migManager': 'nvidia-mig-manager-entrypoint'}


# What each operand's account may do (the Operator's Roles and ClusterRoles, without OpenShift's SecurityContextConstraints).
_NODES_READ = {'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch']}
RULES = {
    'devicePlugin': ([], [_NODES_READ]),
    'gfd': ([{'apiGroups': ['nfd.k8s-sigs.io'], 'resources': ['nodefeatures'], 'verbs': ['get', 'list', 'watch', 'create', 'update']},
             {'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get']}], [_NODES_READ]),
    # its ClusterRole (reading Pods) only when pod labels or UIDs go into the metrics: dcgm_exporter_reads_pods()
    'dcgmExporter': ([{'apiGroups': [''], 'resources': ['configmaps'], 'verbs': ['get', 'list']}], []),
    'migManager': ([{'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch', 'delete']},
                    {'apiGroups': [''], 'resources': ['configmaps'], 'verbs': ['create', 'get', 'list', 'update', 'patch']}],
                   [{'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch', 'update', 'patch']},
                    {'apiGroups': [''], 'resources': ['pods'], 'verbs': ['list']}]),
    # the validator makes and removes its workload Pods, reads its DaemonSet (their tolerations) and its Node; the Operator's
    # rule on ClusterPolicy finalizers is left out: nothing here sets owner references to a ClusterPolicy
    'validator': ([{'apiGroups': [''], 'resources': ['pods'], 'verbs': ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete']},
                   {'apiGroups': ['apps'], 'resources': ['daemonsets'], 'verbs': ['get', 'list', 'watch']}], [_NODES_READ]),
}
DCGM_EXPORTER_READ_PODS = 'nvidia-dcgm-exporter-read-pods'
RBAC_API = 'rbac.authorization.k8s.io/v1'


# --- building blocks ----------------------------------------------------------------------------

def host_path(name, path, kind=None):
    source = {'path': path}
    if kind:
        source['type'] = kind
    return {'name': name, 'hostPath': source}


def mount(name, path, read_only=False, propagation=None, sub_path=None):
    spec = {'name': name, 'mountPath': path}
    if read_only:
        spec['readOnly'] = True
    if propagation:
        spec['mountPropagation'] = propagation
    if sub_path:
        spec['subPath'] = sub_path
    return spec


def value_env(name, value):
    return {'name': name, 'value': value}


def field_env(name, path):
    return {'name': name, 'valueFrom': {'fieldRef': {'fieldPath': path}}}


def set_env(container, name, value):
    container['env'] = policy.merge_env(container.get('env', []), [value_env(name, value)])


def deploy_label(key):
    return contract.deploy_label(DEPLOY[key])


def toolkit_validation(volume, path):
    """The init container that holds an operand back until the container toolkit stage wrote toolkit-ready."""
    return {'name': 'toolkit-validation', 'command': ['sh', '-c'],
            'args': ['until [ -f %s/toolkit-ready ]; do echo "waiting for %s/toolkit-ready (container toolkit stage)"; sleep 5; done'
                     % (VALIDATIONS, VALIDATIONS)],
            'securityContext': {'privileged': True}, 'volumeMounts': [mount(volume, path, propagation='HostToContainer')]}


def config_manager(init, process=''):
    """config-manager picks the node's device plugin config by its label; as a sidecar it signals the process on a change."""
    container = {'name': 'config-manager-init' if init else 'config-manager', 'command': ['config-manager'], 'env': [
        value_env('ONESHOT', 'true' if init else 'false'), value_env('KUBECONFIG', ''), field_env('NODE_NAME', 'spec.nodeName'),
        value_env('NODE_LABEL', contract.DEVICE_PLUGIN_CONFIG), value_env('CONFIG_FILE_SRCDIR', '/available-configs'),
        value_env('CONFIG_FILE_DST', CONFIG_FILE), value_env('DEFAULT_CONFIG', ''), value_env('SEND_SIGNAL', 'false' if init else 'true'),
        value_env('SIGNAL', '' if init else '1'), value_env('PROCESS_TO_SIGNAL', process)]}
    if not init:
        container['securityContext'] = {'privileged': True}
    return container


def entrypoint_script(program, exports=''):
    """An operand's start: wait for the driver stage's driver-ready, export what it says, then run `program`."""
    return '\n'.join([
        '#!/bin/sh',
        '# Written by gpuops.gpu_operator: start %s once the driver stage has validated the driver.' % program,
        'until [ -f %s/driver-ready ]; do' % VALIDATIONS,
        '  echo "waiting for %s/driver-ready (driver stage)"' % VALIDATIONS,
        '  sleep 5',
        'done',
        '# driver-ready says where the driver is (NVIDIA_DRIVER_ROOT, DRIVER_ROOT_CTR_PATH, ...) and IS_HOST_DRIVER.',
        'set -a',
        '. %s/driver-ready' % VALIDATIONS,
        exports,
        'set +a',
        'exec %s "$@"' % program,
        ''])


DEVICE_PLUGIN_EXPORTS = '\n'.join([
    '# GPUDirect modules loaded on the host turn their devices on, unless the env says otherwise.',
    "if lsmod | grep -q '^gdrdrv '; then GDRCOPY_ENABLED=${GDRCOPY_ENABLED:-true}; fi",
    "if lsmod | grep -q '^nvidia_fs '; then GDS_ENABLED=${GDS_ENABLED:-true}; MOFED_ENABLED=${MOFED_ENABLED:-true}; fi"])
# With a host driver, host services (nvsm, dcgm, ...) may hold the GPUs: mig-manager stops those of GPU_CLIENTS_FILE around a change.
MIG_MANAGER_EXPORTS = 'WITH_SHUTDOWN_HOST_GPU_CLIENTS=${IS_HOST_DRIVER:-false}'


def _entrypoint_args(args):
    """The entrypoint script runs the operand; user args reach the operand's program, not the shell."""
    return [ENTRYPOINT] if not args else ['exec %s "$@"' % ENTRYPOINT, 'entrypoint.sh'] + policy.merge_args([], args)


def _entrypoint_volume(key):
    return {'name': ENTRYPOINTS[key], 'configMap': {'name': ENTRYPOINTS[key], 'defaultMode': 448}}


def _binding(kind, name, role_kind, account, namespace):
    binding = {'apiVersion': RBAC_API, 'kind': kind, 'metadata': meta(name, namespace if kind == 'RoleBinding' else None),
               'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': role_kind, 'name': name},
               'subjects': [{'kind': 'ServiceAccount', 'name': account, 'namespace': namespace}]}
    return binding


def accounts(key, namespace, reads_pods=False):
    """The operand's ServiceAccount, and its Role and ClusterRole with their bindings where it has rules."""
    name = ACCOUNTS[key]
    rules, cluster_rules = RULES[key]
    found = [{'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': meta(name, namespace)}]
    if rules:
        found += [{'apiVersion': RBAC_API, 'kind': 'Role', 'metadata': meta(name, namespace), 'rules': copy.deepcopy(rules)},
                  _binding('RoleBinding', name, 'Role', name, namespace)]
    cluster_name = name
    if key == 'dcgmExporter' and reads_pods:
        cluster_name, cluster_rules = DCGM_EXPORTER_READ_PODS, [{'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch']}]
    if cluster_rules:
        found += [{'apiVersion': RBAC_API, 'kind': 'ClusterRole', 'metadata': meta(cluster_name), 'rules': copy.deepcopy(cluster_rules)},
                  _binding('ClusterRoleBinding', cluster_name, 'ClusterRole', name, namespace)]
    return found


# --- the Operator's layouts ---------------------------------------------------------------------

def _device_plugin_layout():
    plugin = {'name': 'nvidia-device-plugin', 'command': ['/bin/sh', '-c'], 'args': [ENTRYPOINT], 'securityContext': {'privileged': True},
              'env': [value_env('PASS_DEVICE_SPECS', 'true'), value_env('FAIL_ON_INIT_ERROR', 'true'), value_env('DEVICE_LIST_STRATEGY', 'envvar'),
                      value_env('DEVICE_ID_STRATEGY', 'uuid'), value_env('NVIDIA_VISIBLE_DEVICES', 'all'),
                      value_env('NVIDIA_DRIVER_CAPABILITIES', 'all'), value_env('MPS_ROOT', policy.DEFAULT_MPS_ROOT)],
              'volumeMounts': [mount(ENTRYPOINTS['devicePlugin'], ENTRYPOINT, read_only=True, sub_path='entrypoint.sh'),
                               mount('device-plugin', '/var/lib/kubelet/device-plugins'),
                               mount('run-nvidia-validations', VALIDATIONS),
                               mount('driver-install-dir', '/driver-root', propagation='HostToContainer'),
                               mount('host-root', '/host', read_only=True, propagation='HostToContainer'),
                               mount('cdi-root', '/var/run/cdi'),
                               # the plugin checks the MPS daemons' health through their pipes and shared memory
                               mount('mps-shm', '/dev/shm'), mount('mps-root', '/mps')]}
    return {'initContainers': [toolkit_validation('run-nvidia-validations', VALIDATIONS), config_manager(True)],
            'containers': [plugin, config_manager(False, 'nvidia-device-plugin')],
            'volumes': [_entrypoint_volume('devicePlugin'), host_path('device-plugin', '/var/lib/kubelet/device-plugins'),
                        host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate'),
                        host_path('driver-install-dir', '/run/nvidia/driver', 'DirectoryOrCreate'), host_path('host-root', '/'),
                        host_path('cdi-root', '/var/run/cdi', 'DirectoryOrCreate'),
                        host_path('mps-root', policy.DEFAULT_MPS_ROOT, 'DirectoryOrCreate'), host_path('mps-shm', policy.DEFAULT_MPS_ROOT + '/shm')]}


def _mps_layout():
    daemon = {'name': 'mps-control-daemon-ctr', 'command': ['mps-control-daemon'], 'securityContext': {'privileged': True},
              'env': [field_env('NODE_NAME', 'spec.nodeName'), value_env('NVIDIA_VISIBLE_DEVICES', 'all'),
                      value_env('NVIDIA_DRIVER_CAPABILITIES', 'compute,utility')],
              'volumeMounts': [mount('mps-shm', '/dev/shm'), mount('mps-root', '/mps')]}
    # mount-shm puts a tmpfs (half the node's memory) at <MPS root>/shm, shared back to the host for the plugin and workloads.
    mounts = {'name': 'mps-control-daemon-mounts', 'command': ['mps-control-daemon', 'mount-shm'], 'securityContext': {'privileged': True},
              'volumeMounts': [mount('mps-root', '/mps', propagation='Bidirectional')]}
    return {'hostPID': True,
            'initContainers': [toolkit_validation('run-nvidia', '/run/nvidia'), mounts, config_manager(True)],
            'containers': [daemon, config_manager(False, '/usr/bin/mps-control-daemon')],
            'volumes': [host_path('run-nvidia', '/run/nvidia', 'Directory'), host_path('mps-root', policy.DEFAULT_MPS_ROOT, 'DirectoryOrCreate'),
                        host_path('mps-shm', policy.DEFAULT_MPS_ROOT + '/shm')]}


def _gfd_layout():
    gfd = {'name': 'gpu-feature-discovery', 'command': ['gpu-feature-discovery'], 'securityContext': {'privileged': True},
           'env': [value_env('GFD_SLEEP_INTERVAL', '60s'), value_env('GFD_FAIL_ON_INIT_ERROR', 'true'), field_env('NAMESPACE', 'metadata.namespace'),
                   field_env('NODE_NAME', 'spec.nodeName'), field_env('POD_NAME', 'metadata.name')],
           'volumeMounts': [mount('output-dir', '/etc/kubernetes/node-feature-discovery/features.d'), mount('host-sys', '/sys', read_only=True)]}
    return {'initContainers': [toolkit_validation('run-nvidia', '/run/nvidia'), config_manager(True)],
            'containers': [gfd, config_manager(False, 'gpu-feature-discovery')],
            'volumes': [host_path('output-dir', '/etc/kubernetes/node-feature-discovery/features.d'), host_path('host-sys', '/sys'),
                        host_path('run-nvidia', '/run/nvidia', 'Directory')]}


def _dcgm_exporter_layout():
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


def _mig_manager_layout():
    manager = {'name': 'nvidia-mig-manager', 'command': ['/bin/sh', '-c'], 'args': [ENTRYPOINT], 'securityContext': {'privileged': True},
               'env': [field_env('NODE_NAME', 'spec.nodeName'), field_env('POD_NAME', 'metadata.name'), field_env('POD_NAMESPACE', 'metadata.namespace'),
                       value_env('GPU_CLIENTS_FILE', '/gpu-clients/clients.yaml'), field_env('DEFAULT_GPU_CLIENTS_NAMESPACE', 'metadata.namespace')],
               'volumeMounts': [mount(ENTRYPOINTS['migManager'], ENTRYPOINT, read_only=True, sub_path='entrypoint.sh'),
                                mount('run-nvidia-validations', VALIDATIONS), mount('host-sys', '/sys'),
                                mount('host-root', '/host', propagation='HostToContainer'), mount('gpu-clients', '/gpu-clients'),
                                mount('mig-parted-config', '/mig-parted-config'),
                                mount('driver-install-dir', '/driver-root', propagation='HostToContainer'), mount('cdi-root', '/var/run/cdi')]}
    return {'hostPID': True, 'hostIPC': True,
            'initContainers': [toolkit_validation('run-nvidia-validations', VALIDATIONS)], 'containers': [manager],
            'volumes': [_entrypoint_volume('migManager'), host_path('host-sys', '/sys', 'Directory'),
                        host_path('run-nvidia-validations', VALIDATIONS, 'DirectoryOrCreate'),
                        host_path('driver-install-dir', '/run/nvidia/driver', 'DirectoryOrCreate'), host_path('host-root', '/'),
                        {'name': 'gpu-clients', 'configMap': {'name': GPU_CLIENTS_MAP}},
                        {'name': 'mig-parted-config', 'configMap': {'name': MIG_CONFIG_MAP}},
                        host_path('cdi-root', '/var/run/cdi', 'DirectoryOrCreate')]}


# --- the Operator's transforms ------------------------------------------------------------------

def image(spec, where):
    return images.reference(spec['repository'], spec['image'], spec['version'], where)


def _container(pod, name):
    return next(container for container in pod['containers'] if container['name'] == name)


def _add_pull_secrets(pod, names):
    secrets = pod.setdefault('imagePullSecrets', [])
    for name in names:
        if {'name': name} not in secrets:
            secrets.append({'name': name})


def validation_containers(pod, validator):
    """The validation init containers run the validator image as root, with its pull settings and resources."""
    for container in pod['initContainers']:
        if 'validation' in container['name']:
            container['image'] = image(validator, 'validator')
            container['imagePullPolicy'] = validator['imagePullPolicy']
            if validator['resources']:
                container['resources'] = copy.deepcopy(validator['resources'])
            container['securityContext']['runAsUser'] = 0
    _add_pull_secrets(pod, validator['imagePullSecrets'])


def _image_settings(pod, main, spec, key):
    """Image and pull policy of the main container, pull secrets, resources on every container, args of the main one."""
    main['image'] = image(spec, key)
    main['imagePullPolicy'] = spec['imagePullPolicy']
    _add_pull_secrets(pod, spec['imagePullSecrets'])
    if spec['resources']:
        for container in pod['containers']:
            container['resources'] = copy.deepcopy(spec['resources'])


def _main_args(main, spec):
    if main.get('args') == [ENTRYPOINT]:
        main['args'] = _entrypoint_args(spec['args'])
    elif spec['args']:
        main['args'] = policy.merge_args(main.get('args', []), spec['args'])


def _plugin_config(pod, resolved, resources):
    """devicePlugin.config: config-manager picks the node's file from the ConfigMap; without a name both go."""
    config = resolved['devicePlugin']['config']
    if not config['name']:
        pod['initContainers'] = [c for c in pod['initContainers'] if c['name'] != 'config-manager-init']
        pod['containers'] = [c for c in pod['containers'] if c['name'] != 'config-manager']
        return
    shared = [mount('config', '/config'), mount(config['name'], '/available-configs')]
    for container in pod['containers']:
        if container['name'] in ('nvidia-device-plugin', 'gpu-feature-discovery', 'mps-control-daemon-ctr'):
            set_env(container, 'CONFIG_FILE', CONFIG_FILE)
            container['volumeMounts'] = container['volumeMounts'] + copy.deepcopy(shared)
    if not pod.get('hostPID'):
        pod['shareProcessNamespace'] = True  # the sidecar signals the process it serves
    pod['volumes'] += [{'name': config['name'], 'configMap': {'name': config['name']}}, {'name': 'config', 'emptyDir': {}}]
    spec = resolved['devicePlugin']
    for container in pod['initContainers'] + pod['containers']:
        if container['name'] in ('config-manager-init', 'config-manager'):
            container['image'] = image(spec, 'devicePlugin')
            container['imagePullPolicy'] = spec['imagePullPolicy']
            if container['name'] == 'config-manager-init' and resources:
                container['resources'] = copy.deepcopy(resources)
            set_env(container, 'DEFAULT_CONFIG', config['default'])
            set_env(container, 'FALLBACK_STRATEGIES', 'empty')
            container['volumeMounts'] = container.get('volumeMounts', []) + copy.deepcopy(shared)


def _mig_env(container, strategy):
    set_env(container, 'MIG_STRATEGY', strategy)
    if strategy != 'none':
        set_env(container, 'NVIDIA_MIG_MONITOR_DEVICES', 'all')


def _host_network(pod, enabled):
    if enabled:
        pod['hostNetwork'] = True
        pod['dnsPolicy'] = 'ClusterFirstWithHostNet'


def _mps_root(pod, root):
    for volume in pod['volumes']:
        if volume['name'] == 'mps-root':
            volume['hostPath']['path'] = root
        elif volume['name'] == 'mps-shm':
            volume['hostPath']['path'] = root + '/shm'


def daemonset(key, name, labels, pod, resolved, namespace, selector=None, checksum=None):
    """The DaemonSet around a pod spec, with daemonsets.* (priority, tolerations, update strategy, labels, annotations)."""
    common = resolved['daemonsets']
    pod = dict(pod, serviceAccountName=ACCOUNTS['devicePlugin' if key == 'mps' else key], nodeSelector=selector or {deploy_label(key): 'true'},
               tolerations=copy.deepcopy(common['tolerations']), priorityClassName=common['priorityClassName'],
               runtimeClassName=resolved['operator']['runtimeClass'])
    if common['podSecurityContext']:
        pod['securityContext'] = copy.deepcopy(common['podSecurityContext'])
    if not pod.get('imagePullSecrets'):
        pod.pop('imagePullSecrets', None)
    template_labels = dict((k, v) for k, v in common['labels'].items() if k not in ('app', 'app.kubernetes.io/part-of'))
    template_labels.update(labels)
    annotations = dict(common['annotations'])
    if key == 'dcgmExporter':
        annotations.update(resolved['dcgmExporter']['annotations'])
    if checksum:
        # the pods read their config files at start: a new checksum rolls them when one changes
        annotations[CHECKSUM] = checksum
    template = {'metadata': {'labels': template_labels}, 'spec': pod}
    if annotations:
        template['metadata']['annotations'] = annotations
    strategy = {'type': common['updateStrategy']}
    if common['updateStrategy'] == 'RollingUpdate':
        strategy['rollingUpdate'] = {'maxUnavailable': policy.max_unavailable(common['rollingUpdate']['maxUnavailable'])}
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet',
            'metadata': meta(name, namespace, dict(common['labels'], **labels), common['annotations']),
            'spec': {'selector': {'matchLabels': dict(labels)}, 'updateStrategy': strategy, 'template': template}}


def _checksum(config_maps):
    text = json.dumps([obj['data'] for obj in config_maps], sort_keys=True)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _yaml(data):
    import yaml  # pylint: disable=import-outside-toplevel  # the renderer runs on the controller, where PyYAML is
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


# --- the operands -------------------------------------------------------------------------------

def _plugin_config_maps(resolved, namespace):
    config = resolved['devicePlugin']['config']
    if not config['create']:
        return []
    data = dict((name, value if isinstance(value, str) else _yaml(value)) for name, value in config['data'].items())
    return [config_map(config['name'], namespace, data)]


def device_plugin(resolved, namespace, nodes):
    """The device plugin, its entrypoint and config ConfigMaps, and the MPS control daemon (same switch, as in the Operator)."""
    spec = resolved['devicePlugin']
    entrypoint = config_map(ENTRYPOINTS['devicePlugin'], namespace, {'entrypoint.sh': entrypoint_script('nvidia-device-plugin', DEVICE_PLUGIN_EXPORTS)},
                            {'app': DAEMONSETS['devicePlugin']})
    configs = _plugin_config_maps(resolved, namespace)
    pod = _device_plugin_layout()
    main = _container(pod, 'nvidia-device-plugin')
    validation_containers(pod, resolved['validator'])
    _image_settings(pod, main, spec, 'devicePlugin')
    _main_args(main, spec)
    _plugin_config(pod, resolved, spec['resources'])
    _mig_env(main, resolved['mig']['strategy'])
    if resolved['cdi']['enabled']:
        for name, value in (('CDI_ENABLED', 'true'), ('DEVICE_LIST_STRATEGY', 'cdi-annotations,cdi-cri'), ('CDI_ANNOTATION_PREFIX', 'cdi.k8s.io/'),
                            ('NVIDIA_CDI_HOOK_PATH', policy.cdi_hook_path(nodes))):
            set_env(main, name, value)
    if spec['mps']['root'] != policy.DEFAULT_MPS_ROOT:
        _mps_root(pod, spec['mps']['root'])
        set_env(main, 'MPS_ROOT', spec['mps']['root'])
    main['env'] = policy.merge_env(main['env'], spec['env'])
    _host_network(pod, spec['hostNetwork'])
    plugin = daemonset('devicePlugin', DAEMONSETS['devicePlugin'], {'app': DAEMONSETS['devicePlugin']}, pod, resolved, namespace,
                       checksum=_checksum([entrypoint] + configs))

    # The MPS daemons run where GFD (here gpu_node_labels) labelled the node mps.capable: its config shares with MPS.
    pod = _mps_layout()
    daemon = _container(pod, 'mps-control-daemon-ctr')
    validation_containers(pod, resolved['validator'])
    for container in pod['initContainers']:
        if container['name'] == 'mps-control-daemon-mounts':
            container['image'] = image(spec, 'devicePlugin')
            container['imagePullPolicy'] = spec['imagePullPolicy']
            if spec['resources']:
                container['resources'] = copy.deepcopy(spec['resources'])
    _image_settings(pod, daemon, spec, 'devicePlugin')
    _plugin_config(pod, resolved, spec['resources'])
    _mig_env(daemon, resolved['mig']['strategy'])
    if spec['mps']['root'] != policy.DEFAULT_MPS_ROOT:
        _mps_root(pod, spec['mps']['root'])
    _host_network(pod, spec['hostNetwork'])
    mps = daemonset('mps', DAEMONSETS['mps'], {'app': DAEMONSETS['mps']}, pod, resolved, namespace,
                    selector={deploy_label('devicePlugin'): 'true', contract.MPS_CAPABLE: 'true'}, checksum=_checksum(configs) if configs else None)
    return accounts('devicePlugin', namespace) + [entrypoint] + configs + [plugin, mps]


def gpu_feature_discovery(resolved, namespace, _nodes):
    spec = resolved['gfd']
    pod = _gfd_layout()
    main = pod['containers'][0]
    validation_containers(pod, resolved['validator'])
    _image_settings(pod, main, spec, 'gfd')
    _main_args(main, spec)
    # The user's env comes before the MIG env here, so that MIG_STRATEGY stays mig.strategy (as in the Operator).
    main['env'] = policy.merge_env(main['env'], spec['env'])
    _plugin_config(pod, resolved, spec['resources'])
    _mig_env(main, resolved['mig']['strategy'])
    _host_network(pod, spec['hostNetwork'])
    labels = {'app': DAEMONSETS['gfd'], 'app.kubernetes.io/part-of': 'nvidia-gpu'}
    configs = _plugin_config_maps(resolved, namespace)
    checksum = _checksum(configs) if configs else None
    return accounts('gfd', namespace) + [daemonset('gfd', DAEMONSETS['gfd'], labels, pod, resolved, namespace, checksum=checksum)]


def dcgm_exporter_reads_pods(resolved):
    """Whether the exporter reads Pods from the API (pod labels or UIDs in its metrics): it then needs its ClusterRole."""
    spec = resolved['dcgmExporter']
    env = dict((item['name'], item.get('value', '')) for item in spec['env'])
    return bool(spec['enablePodLabels'] or spec['enablePodUID'] or any(
        env.get(name, '').lower() == 'true' for name in ('DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS', 'DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID')))


def dcgm_exporter(resolved, namespace, service_monitor_crd):
    spec = resolved['dcgmExporter']
    name = DAEMONSETS['dcgmExporter']
    pod = _dcgm_exporter_layout()
    main = pod['containers'][0]
    validation_containers(pod, resolved['validator'])
    _image_settings(pod, main, spec, 'dcgmExporter')
    _main_args(main, spec)
    _host_network(pod, spec['hostNetwork'])
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
    env = dict((item['name'], item.get('value', '')) for item in spec['env'])
    if dcgm_exporter_reads_pods(resolved) or env.get('DCGM_EXPORTER_CONFIGMAP_DATA', 'none') not in ('', 'none'):
        pod['automountServiceAccountToken'] = True
    configs = []
    config = spec['config']
    if config['name']:
        main['volumeMounts'].append(mount('metrics-config', METRICS_PATH, read_only=True, sub_path=METRICS_FILE))
        pod['volumes'].append({'name': 'metrics-config', 'configMap': {'name': config['name'], 'items': [{'key': METRICS_FILE, 'path': METRICS_FILE}]}})
        set_env(main, 'DCGM_EXPORTER_COLLECTORS', METRICS_PATH)
        if config['create']:
            configs.append(config_map(config['name'], namespace, {METRICS_FILE: config['data']}))
    main['env'] = policy.merge_env(main['env'], spec['env'])
    workload = daemonset('dcgmExporter', name, {'app': name}, pod, resolved, namespace, checksum=_checksum(configs) if configs else None)
    service = {'apiVersion': 'v1', 'kind': 'Service',
               'metadata': meta(name, namespace, {'app': name}, {'prometheus.io/scrape': 'true'}),
               'spec': {'selector': {'app': name}, 'ports': [{'name': 'gpu-metrics', 'port': METRICS_PORT, 'targetPort': METRICS_PORT, 'protocol': 'TCP'}]}}
    for field in ('type', 'internalTrafficPolicy'):
        if spec['service'][field]:
            service['spec'][field] = spec['service'][field]
    objects = accounts('dcgmExporter', namespace, dcgm_exporter_reads_pods(resolved)) + configs + [workload, service]
    if service_monitor_crd and spec['serviceMonitor']['enabled']:
        objects.append(service_monitor(name, namespace, spec['serviceMonitor']))
    return objects


def service_monitor(name, namespace, monitor):
    endpoint = {'port': 'gpu-metrics', 'path': '/metrics'}
    for field in ('interval', 'scrapeTimeout'):
        if monitor[field]:
            endpoint[field] = monitor[field]
    endpoint['honorLabels'] = bool(monitor['honorLabels'])
    if monitor['relabelings']:
        endpoint['relabelings'] = copy.deepcopy(monitor['relabelings'])
    return {'apiVersion': 'monitoring.coreos.com/v1', 'kind': 'ServiceMonitor',
            'metadata': meta(name, namespace, dict({'app': name}, **monitor['additionalLabels'])),
            'spec': {'endpoints': [endpoint], 'jobLabel': 'app', 'namespaceSelector': {'matchNames': [namespace]},
                     'selector': {'matchLabels': {'app': name}}}}


def _mig_config_maps(resolved, namespace):
    """(ConfigMaps to create, names of our default ones not wanted now)."""
    spec = resolved['migManager']
    created, unwanted = [], []
    if not spec['config']['name']:
        created.append(config_map(MIG_CONFIG_MAP, namespace, {'config.yaml': _yaml(mig_profiles.default_config())}))
    else:
        unwanted.append(MIG_CONFIG_MAP)
        if spec['config']['create']:
            value = spec['config']['data']['config.yaml']
            created.append(config_map(spec['config']['name'], namespace, {'config.yaml': value if isinstance(value, str) else _yaml(value)}))
    if not spec['gpuClientsConfig']['name']:
        created.append(config_map(GPU_CLIENTS_MAP, namespace, {'clients.yaml': _yaml(mig_profiles.GPU_CLIENTS)}))
    else:
        unwanted.append(GPU_CLIENTS_MAP)
    return created, unwanted


def mig_manager(resolved, namespace, nodes):
    """The MIG manager with its entrypoint, its MIG profiles and the host GPU clients it stops (the Operator's defaults unless named)."""
    spec = resolved['migManager']
    name = DAEMONSETS['migManager']
    entrypoint = config_map(ENTRYPOINTS['migManager'], namespace, {'entrypoint.sh': entrypoint_script('nvidia-mig-manager', MIG_MANAGER_EXPORTS)},
                            {'app': name})
    configs, _unwanted = _mig_config_maps(resolved, namespace)
    pod = _mig_manager_layout()
    main = pod['containers'][0]
    validation_containers(pod, resolved['validator'])
    _image_settings(pod, main, spec, 'migManager')
    _main_args(main, spec)
    for volume in pod['volumes']:
        if volume['name'] == 'mig-parted-config':
            volume['configMap']['name'] = spec['config']['name'] or MIG_CONFIG_MAP
            if not spec['config']['name']:
                # mig-manager tells its fallback (the default profiles) from a config of the user's by the file name
                volume['configMap']['items'] = [{'key': 'config.yaml', 'path': 'config-default.yaml'}]
        elif volume['name'] == 'gpu-clients':
            volume['configMap']['name'] = spec['gpuClientsConfig']['name'] or GPU_CLIENTS_MAP
    if spec['config']['name']:
        set_env(main, 'CONFIG_FILE', '/mig-parted-config/config.yaml')
    else:
        set_env(main, 'DEFAULT_CONFIG_FILE', '/mig-parted-config/config-default.yaml')
    if resolved['cdi']['enabled']:
        set_env(main, 'CDI_ENABLED', 'true')
        set_env(main, 'NVIDIA_CDI_HOOK_PATH', policy.cdi_hook_path(nodes))
    main['env'] = policy.merge_env(main['env'], spec['env'])
    _host_network(pod, spec['hostNetwork'])
    return accounts('migManager', namespace) + [entrypoint] + configs + [
        daemonset('migManager', name, {'app': name}, pod, resolved, namespace, checksum=_checksum([entrypoint] + configs))]


def render(resolved, namespace, nodes=None, service_monitor_crd=False):
    """{'present': objects of the enabled operands, 'absent': identities of the objects of disabled ones and of our unused defaults}."""
    present, absent = [], []
    builders = (('devicePlugin', lambda: device_plugin(resolved, namespace, nodes)),
                ('gfd', lambda: gpu_feature_discovery(resolved, namespace, nodes)),
                ('dcgmExporter', lambda: dcgm_exporter(resolved, namespace, service_monitor_crd)),
                ('migManager', lambda: mig_manager(resolved, namespace, nodes)))
    for key, build in builders:
        objects = build()
        if resolved[key]['enabled']:
            present.extend(objects)
        else:
            absent.extend(ref(obj) for obj in objects)
    if resolved['migManager']['enabled']:
        absent.extend(ref(config_map(name, namespace, {})) for name in _mig_config_maps(resolved, namespace)[1])
    if not (resolved['dcgmExporter']['enabled'] and dcgm_exporter_reads_pods(resolved)):
        absent.extend(ref(obj) for obj in accounts('dcgmExporter', namespace, True) if obj['metadata']['name'] == DCGM_EXPORTER_READ_PODS)
    monitor = resolved['dcgmExporter']['serviceMonitor']
    # Without the CRD there is nothing to delete, and the kind cannot even be looked up.
    if service_monitor_crd and (not monitor['enabled'] or not resolved['dcgmExporter']['enabled']):
        candidate = ref(service_monitor(DAEMONSETS['dcgmExporter'], namespace, monitor))
        if candidate not in absent:
            absent.append(candidate)
    return {'present': present, 'absent': absent}
