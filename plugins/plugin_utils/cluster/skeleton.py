# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The skeleton every operand is built on, as the GPU Operator lays its operands out (policy.OPERATOR_RELEASE).

An operand (one file under operands/, listed in registry.py) is an `Operand`: its ClusterPolicy section (key, image,
settings, defaults, CRD schema), its account and rights, the deploy label its DaemonSet selects on, and `objects()`,
which starts from the Operator's layout of its Pod (names, init containers, env, mounts, host paths, security) and
changes it with the resolved ClusterPolicy in the order the Operator's transforms change it: validation init
containers, image and pull settings, resources and args, the device plugin config (config-manager), the runtime
class, MIG and CDI env, and the user's env last (merged by name), so that what a setting does here is what it does
there. The building blocks below are shared by all of them; tests/cluster/parity/ compares the result with the
Operator's facts, docs/coming-from-gpu-operator.md lists the differences.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import copy
import hashlib
import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import config_map, meta
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import images, policy

VALIDATIONS = contract.VALIDATIONS_DIR
ENTRYPOINT = '/bin/entrypoint.sh'
CHECKSUM = 'gpuops.gpu_operator/config-sha256'
# A ConfigMap made from a config section's data (devicePlugin.config, ...) carries the section's name: a later run removes
# those its settings neither make nor name, and never a ConfigMap without it (its user's).
CONFIG_OF = 'gpuops.io/config-of'
RBAC_API = 'rbac.authorization.k8s.io/v1'
NODES_READ = {'apiGroups': [''], 'resources': ['nodes'], 'verbs': ['get', 'list', 'watch']}
# What rendering needs beyond the resolved ClusterPolicy: the operator namespace, whether the Prometheus Operator's
# ServiceMonitor CRD exists, and where nvidia-cdi-hook is on the GPU nodes (with CDI; policy.cdi_hook_path).
Context = collections.namedtuple('Context', 'namespace service_monitor_crd cdi_hook_path')

# The fields every operand section has (the Operator's component spec) and the fields of an image alone (the validator's).
# Schemas of the ClusterPolicy CRD's field types that the operands' sections share.
CRD_STRING = {'type': 'string'}


def crd_string_map():
    return {'type': 'object', 'additionalProperties': {'type': 'string'}}


def crd_env():
    """The CRD schema of a component's env (the ClusterPolicy's EnvVar list)."""
    return {'type': 'array', 'items': {'type': 'object', 'required': ['name'],
                                       'properties': {'name': {'type': 'string'}, 'value': {'type': 'string'}}}}


IMAGE_FIELDS = {'repository': 'str', 'image': 'str', 'version': 'str', 'imagePullPolicy': 'str', 'imagePullSecrets': 'strlist',
                'resources': 'resources'}
OPERAND_FIELDS = dict(IMAGE_FIELDS, enabled='bool', args='strlist', env='env', hostNetwork='bool')


class Operand(object):
    """One operand: what it is in the ClusterPolicy and the cluster, and the objects it renders.

    A subclass per file under operands/ sets its section's settings, its rights and `objects()`, and the file's `OPERAND`
    names it (section, DaemonSet, deploy label, image, account); registry.OPERANDS lists them and derives the tables (the
    ClusterPolicy schema, defaults and CRD, images, accounts, DaemonSets, deploy labels) from them.
    """

    fields = OPERAND_FIELDS  # the component fields its section has
    settings = {}           # its section's other fields, by type name (policy._TYPES)
    defaults = {}           # and their defaults
    crd = {}                # the CRD schema of those fields
    rules = ((), ())        # its Role's and ClusterRole's rules (the Operator's, without OpenShift's)
    stage = 'operands'      # the role that applies it: gpu_cluster_operands, or 'validation' (gpu_cluster_validator)
    images = ()             # its section's sub-sections with an image of their own (driverManager)

    def __init__(self, section, daemonset, deploy, image=None, account=None, enabled=True):
        """section: its ClusterPolicy key (its settings; `<section>.enabled` switches it); daemonset: its DaemonSet, the app
        label of its Pods; deploy: the nvidia.com/gpu.deploy.<component> its DaemonSet selects on
        (contract.DEPLOY_COMPONENTS); image: (repository, image, version) of the Operator's defaults, None where it runs its
        section owner's image; account: its ServiceAccount, Role and ClusterRole (by default the DaemonSet's name);
        enabled: `<section>.enabled` by default."""
        self.section, self.daemonset, self.deploy, self.image = section, daemonset, deploy, image
        self.account, self.enabled = account or daemonset, enabled

    def section_defaults(self):
        """Its ClusterPolicy section as the Operator's defaults give it."""
        repository, image, version = self.image
        found = {'enabled': self.enabled, 'repository': repository, 'image': image, 'version': version, 'imagePullPolicy': 'IfNotPresent',
                 'imagePullSecrets': [], 'resources': {}, 'args': [], 'env': [], 'hostNetwork': False}
        found = dict((key, value) for key, value in found.items() if key in self.fields)
        found.update(copy.deepcopy(self.defaults))
        return found

    def schema(self):
        return dict(self.fields, **self.settings)

    def is_enabled(self, resolved):
        return resolved[self.section].get('enabled', True)

    def image_required(self, resolved):
        """Whether its images must make references (the vGPU manager's, which has no default, only where it is deployed)."""
        return True

    def check(self, resolved):
        """Refuse (policy.PolicyError) what its settings' types let through but the operand cannot run with."""

    def objects(self, resolved, context):
        """Every object of the operand with these settings, enabled or not (a disabled operand's are removed)."""
        raise NotImplementedError

    def unwanted(self, resolved, context):
        """Identities of objects it rendered with other settings that these do not want (removed while it runs)."""
        return []

    def in_cluster_policy(self, section):
        """Its section as the ClusterPolicy CR holds it (the chart's create/data of config sections stay out)."""
        return section

    def accounts(self, namespace, cluster_rules=None, cluster_name=None):
        """Its ServiceAccount, and its Role and ClusterRole with their bindings where it has rules."""
        rules, default_cluster_rules = self.rules
        cluster_rules = default_cluster_rules if cluster_rules is None else cluster_rules
        cluster_name = cluster_name or self.account
        found = [{'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': meta(self.account, namespace)}]
        if rules:
            found += [{'apiVersion': RBAC_API, 'kind': 'Role', 'metadata': meta(self.account, namespace), 'rules': copy.deepcopy(list(rules))},
                      _binding('RoleBinding', self.account, 'Role', self.account, namespace)]
        if cluster_rules:
            found += [{'apiVersion': RBAC_API, 'kind': 'ClusterRole', 'metadata': meta(cluster_name), 'rules': copy.deepcopy(list(cluster_rules))},
                      _binding('ClusterRoleBinding', cluster_name, 'ClusterRole', self.account, namespace)]
        return found

    def daemonset_object(self, pod, resolved, namespace, labels=None, selector=None, checksum=None, annotations=None, runtime_class=True):
        """Its DaemonSet around `pod`, with daemonsets.* (priority, tolerations, update strategy, labels, annotations), its
        account, the deploy label (or `selector`) and, unless `runtime_class` is false, operator.runtimeClass."""
        common = resolved['daemonsets']
        labels = labels or {'app': self.daemonset}
        host_paths(pod, resolved['hostPaths'])
        pod = dict(pod, serviceAccountName=self.account, nodeSelector=selector or {contract.deploy_label(self.deploy): 'true'},
                   tolerations=copy.deepcopy(common['tolerations']), priorityClassName=common['priorityClassName'])
        if runtime_class:
            pod['runtimeClassName'] = resolved['operator']['runtimeClass']
        if common['podSecurityContext']:
            pod['securityContext'] = copy.deepcopy(common['podSecurityContext'])
        if not pod.get('imagePullSecrets'):
            pod.pop('imagePullSecrets', None)
        template_labels = dict((k, v) for k, v in common['labels'].items() if k not in ('app', 'app.kubernetes.io/part-of'))
        template_labels.update(labels)
        template_annotations = dict(common['annotations'], **(annotations or {}))
        if checksum:
            # the pods read their config files at start: a new checksum rolls them when one changes
            template_annotations[CHECKSUM] = checksum
        template = {'metadata': {'labels': template_labels}, 'spec': pod}
        if template_annotations:
            template['metadata']['annotations'] = template_annotations
        strategy = {'type': common['updateStrategy']}
        if common['updateStrategy'] == 'RollingUpdate':
            strategy['rollingUpdate'] = {'maxUnavailable': policy.max_unavailable(common['rollingUpdate']['maxUnavailable'])}
        return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet',
                'metadata': meta(self.daemonset, namespace, dict(common['labels'], **labels), common['annotations']),
                'spec': {'selector': {'matchLabels': dict(labels)}, 'updateStrategy': strategy, 'template': template}}


class SandboxOperand(Operand):
    """An operand of sandbox workloads (VMs, vGPU, Kata): the Operator deploys it only with sandboxWorkloads.enabled, one with
    a `mode` only in that sandboxWorkloads.mode, and its section's `enabled` (state_manager.go isStateEnabled); its DaemonSet
    selects the nodes whose workload has its deploy label (contract.WORKLOAD_COMPONENTS)."""
    mode = None

    def is_enabled(self, resolved):
        sandbox = resolved['sandboxWorkloads']
        return bool(sandbox['enabled']) and self.mode in (None, sandbox['mode']) and Operand.is_enabled(self, resolved)


def _binding(kind, name, role_kind, account, namespace):
    return {'apiVersion': RBAC_API, 'kind': kind, 'metadata': meta(name, namespace if kind == 'RoleBinding' else None),
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': role_kind, 'name': name},
            'subjects': [{'kind': 'ServiceAccount', 'name': account, 'namespace': namespace}]}


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


def default_env(container, name, value):
    """`name` set unless the container has it already (from the user's env, which the Operator merges after it)."""
    if not any(item['name'] == name for item in container.get('env', [])):
        set_env(container, name, value)


def host_paths(pod, paths):
    """hostPaths, as the Operator changes every operand's Pod (transformForHostRoot, transformForDriverInstallDir): a Pod
    mounting the host's root (host-root) mounts rootFS there, its containers get HOST_ROOT and host-dev-char is
    <rootFS>/dev/char; a Pod mounting the driver's root (driver-install-dir) mounts driverInstallDir, which its
    driver-validation init container is told (DRIVER_INSTALL_DIR, DRIVER_INSTALL_DIR_CTR_PATH) and mounts at that path."""
    volumes = dict((volume['name'], volume) for volume in pod['volumes'])
    root, driver = paths['rootFS'], paths['driverInstallDir']
    if root not in ('', '/') and 'host-root' in volumes:
        volumes['host-root']['hostPath']['path'] = root
        for item in pod.get('initContainers', []) + pod['containers']:
            default_env(item, 'HOST_ROOT', root)
    if root not in ('', '/') and 'host-dev-char' in volumes:
        volumes['host-dev-char']['hostPath']['path'] = root.rstrip('/') + '/dev/char'
    if driver not in ('', policy.HOST_PATHS['driverInstallDir']) and 'driver-install-dir' in volumes:
        volumes['driver-install-dir']['hostPath']['path'] = driver
        for item in pod.get('initContainers', []):
            if item['name'] == 'driver-validation':
                default_env(item, 'DRIVER_INSTALL_DIR', driver)
                default_env(item, 'DRIVER_INSTALL_DIR_CTR_PATH', driver)
                for spec in item['volumeMounts']:
                    if spec['name'] == 'driver-install-dir':
                        spec['mountPath'] = driver


def toolkit_validation(volume, path):
    """The init container that holds an operand back until the container toolkit stage wrote toolkit-ready."""
    return {'name': 'toolkit-validation', 'command': ['sh', '-c'],
            'args': ['until [ -f %s/toolkit-ready ]; do echo "waiting for %s/toolkit-ready (container toolkit stage)"; sleep 5; done'
                     % (VALIDATIONS, VALIDATIONS)],
            'securityContext': {'privileged': True}, 'volumeMounts': [mount(volume, path, propagation='HostToContainer')]}


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


def entrypoint_volume(name):
    return {'name': name, 'configMap': {'name': name, 'defaultMode': 448}}


def image(spec, where):
    return images.reference(spec['repository'], spec['image'], spec['version'], where)


def container(pod, name):
    return next(item for item in pod['containers'] if item['name'] == name)


def add_pull_secrets(pod, names):
    secrets = pod.setdefault('imagePullSecrets', [])
    for name in names:
        if {'name': name} not in secrets:
            secrets.append({'name': name})


# The validator's component sections whose env goes to the validation init containers of that component (<name>-validation),
# in every DaemonSet that has one: the Operator's transformValidationInitContainer (driver, toolkit) and
# TransformValidatorComponent (the validator's own: driver, toolkit, cuda, plugin).
VALIDATION_COMPONENTS = ('driver', 'toolkit', 'cuda', 'plugin')


def validation_containers(pod, validator):
    """The validation init containers run the validator image as root, with its pull settings and resources, and the env
    of their component's validator section (validator.<component>.env) merged last."""
    for item in pod['initContainers']:
        if 'validation' in item['name']:
            item['image'] = image(validator, 'validator')
            item['imagePullPolicy'] = validator['imagePullPolicy']
            if validator['resources']:
                item['resources'] = copy.deepcopy(validator['resources'])
            item['securityContext']['runAsUser'] = 0
            component = item['name'].split('-validation', 1)[0]
            if component in VALIDATION_COMPONENTS and validator[component]['env']:
                item['env'] = policy.merge_env(item.get('env', []), validator[component]['env'])
    add_pull_secrets(pod, validator['imagePullSecrets'])


def image_settings(pod, main, spec, key):
    """Image and pull policy of the main container, pull secrets, resources on every container."""
    main['image'] = image(spec, key)
    main['imagePullPolicy'] = spec['imagePullPolicy']
    add_pull_secrets(pod, spec['imagePullSecrets'])
    if spec['resources']:
        for item in pod['containers']:
            item['resources'] = copy.deepcopy(spec['resources'])


def main_args(main, spec):
    """The component's args: behind the entrypoint script they reach the operand's program, not the shell; else merged by
    flag name into the container's."""
    if main.get('args') == [ENTRYPOINT]:
        if spec['args']:
            main['args'] = ['exec %s "$@"' % ENTRYPOINT, 'entrypoint.sh'] + policy.merge_args([], spec['args'])
    elif spec['args']:
        main['args'] = policy.merge_args(main.get('args', []), spec['args'])


# The k8s-driver-manager init container's section (vfioManager.driverManager, vgpuManager.driverManager) and its defaults
# (deployments/gpu-operator/values.yaml).
DRIVER_MANAGER_FIELDS = {'repository': 'str', 'image': 'str', 'version': 'str', 'imagePullPolicy': 'str', 'imagePullSecrets': 'strlist', 'env': 'env'}
DRIVER_MANAGER_DEFAULTS = {'repository': 'nvcr.io/nvidia/cloud-native', 'image': 'k8s-driver-manager', 'version': 'v0.12.0',
                           'imagePullPolicy': 'IfNotPresent', 'imagePullSecrets': [], 'env': []}
DRIVER_MANAGER_CRD = {'type': 'object', 'properties': {
    'repository': CRD_STRING, 'image': CRD_STRING, 'version': CRD_STRING, 'imagePullPolicy': CRD_STRING,
    'imagePullSecrets': {'type': 'array', 'items': CRD_STRING}, 'env': crd_env()}}


def driver_manager_container(volumes=('run-nvidia', 'host-root', 'host-sys')):
    """The Operator's k8s-driver-manager init container that takes the GPUs from the NVIDIA driver before a VM operand binds
    them (uninstall_driver; no eviction or drain: the node's workload is VMs)."""
    mounts = {'run-nvidia': mount('run-nvidia', '/run/nvidia', propagation='Bidirectional'),
              'host-root': mount('host-root', '/host', read_only=True, propagation='HostToContainer'), 'host-sys': mount('host-sys', '/sys')}
    return {'name': 'k8s-driver-manager', 'imagePullPolicy': 'IfNotPresent', 'command': ['driver-manager'], 'args': ['uninstall_driver'],
            'env': [field_env('NODE_NAME', 'spec.nodeName'), value_env('NVIDIA_VISIBLE_DEVICES', 'void'), value_env('ENABLE_GPU_POD_EVICTION', 'false'),
                    value_env('ENABLE_AUTO_DRAIN', 'false'), field_env('OPERATOR_NAMESPACE', 'metadata.namespace')],
            'securityContext': {'privileged': True}, 'volumeMounts': [mounts[name] for name in volumes]}


def driver_manager(pod, manager, resources, where):
    """transformDriverManagerInitContainer: its image, pull policy, the operand's resources, its env and pull secrets."""
    item = next(entry for entry in pod['initContainers'] if entry['name'] == 'k8s-driver-manager')
    item['image'] = image(manager, where + '.driverManager')
    item['imagePullPolicy'] = manager['imagePullPolicy']
    if resources:
        item['resources'] = copy.deepcopy(resources)
    if manager['env']:
        item['env'] = policy.merge_env(item['env'], manager['env'])
    add_pull_secrets(pod, manager['imagePullSecrets'])


def mig_env(item, strategy):
    set_env(item, 'MIG_STRATEGY', strategy)
    if strategy != 'none':
        set_env(item, 'NVIDIA_MIG_MONITOR_DEVICES', 'all')


def host_network(pod, enabled):
    if enabled:
        pod['hostNetwork'] = True
        pod['dnsPolicy'] = 'ClusterFirstWithHostNet'


def data_config_map(section, name, namespace, data):
    """The ConfigMap `name` made from the data of the config section `section` (labelled CONFIG_OF)."""
    return config_map(name, namespace, data, {CONFIG_OF: section})


def checksum(config_maps):
    """A digest of the ConfigMaps' data, for the Pod template (None without any)."""
    if not config_maps:
        return None
    text = json.dumps([obj['data'] for obj in config_maps], sort_keys=True)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def to_yaml(data):
    import yaml  # pylint: disable=import-outside-toplevel  # the renderer runs on the controller, where PyYAML is
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


def service_monitor(name, namespace, port, job_label='app', monitor=None):
    """The Prometheus Operator's ServiceMonitor of a Service's metrics `port`; `monitor`: the settings of one that has them
    (dcgmExporter.serviceMonitor)."""
    monitor = monitor or {}
    endpoint = {'port': port, 'path': '/metrics'}
    for field in ('interval', 'scrapeTimeout'):
        if monitor.get(field):
            endpoint[field] = monitor[field]
    if 'honorLabels' in monitor:
        endpoint['honorLabels'] = bool(monitor['honorLabels'])
    if monitor.get('relabelings'):
        endpoint['relabelings'] = copy.deepcopy(monitor['relabelings'])
    return {'apiVersion': 'monitoring.coreos.com/v1', 'kind': 'ServiceMonitor',
            'metadata': meta(name, namespace, dict({'app': name}, **monitor.get('additionalLabels', {}))),
            'spec': {'endpoints': [endpoint], 'jobLabel': job_label, 'namespaceSelector': {'matchNames': [namespace]},
                     'selector': {'matchLabels': {'app': name}}}}


def metrics_service(name, namespace, port_name, port):
    """The Service in front of an operand's metrics port, annotated for Prometheus' scraping (the Operator's)."""
    return {'apiVersion': 'v1', 'kind': 'Service', 'metadata': meta(name, namespace, {'app': name}, {'prometheus.io/scrape': 'true'}),
            'spec': {'selector': {'app': name}, 'ports': [{'name': port_name, 'port': port, 'targetPort': port, 'protocol': 'TCP'}]}}
