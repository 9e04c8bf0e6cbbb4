# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Node Feature Discovery as the GPU Operator's chart v26.7.0 deploys it (`nfd.enabled`): its node-feature-discovery
subchart 0.19.0 (deployments/gpu-operator/charts/node-feature-discovery) with the values the parent chart sets for it
(values.yaml `node-feature-discovery:`), and the parent's NodeFeatureRule (templates/nodefeaturerules.yaml,
`nfd.nodefeaturerules`).

The worker DaemonSet on every node reads the host (and the node labels stage's file under features.d) and publishes
NodeFeature objects; the master Deployment turns them, and GFD's (v0.20 publishes through the NodeFeature API), into
Node labels (nvidia.com/* too: extraLabelNs); the gc Deployment removes the NodeFeatures of Nodes that are gone. Not a
ClusterPolicy operand: the chart installs it beside the Operator, before any operand runs, so role gpu_cluster_base
applies it, after its CRDs. A cluster that runs an NFD of its own gets no second one (`plan`).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import MANAGED_BY, config_map, meta, ref
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import images, policy, skeleton
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import RBAC_API, field_env, host_path, mount

APP_VERSION = 'v0.19.0'  # the subchart's appVersion, its image tag
NAME = 'node-feature-discovery'
# The chart's objects are named after its Helm release (<release>-node-feature-discovery); NVIDIA installs it as gpu-operator.
RELEASE = 'gpu-operator'
FULLNAME = '%s-%s' % (RELEASE, NAME)
# The parent chart has the master create this account and the worker and gc use it.
ACCOUNT = NAME
GROUP = 'nfd.k8s-sigs.io'
API_VERSION = GROUP + '/v1alpha1'
CRD = 'nodefeatures.%s' % GROUP  # the one that tells whether an NFD's API is installed
PORT = 8080
CONF_DIR = '/etc/kubernetes/node-feature-discovery'
FEATURES_D = CONF_DIR + '/features.d/'
CHECKSUM = 'checksum/config'
# The parent chart's settings for the subchart (and the subchart's defaults they leave).
WORKER_CONFIG = {'sources': {'pci': {'deviceClassWhitelist': ['02', '0200', '0207', '0300', '0302'], 'deviceLabelFields': ['vendor']}}}
MASTER_CONFIG = {'extraLabelNs': ['nvidia.com']}
CONTROL_PLANE = {'key': 'node-role.kubernetes.io/control-plane', 'operator': 'Equal', 'value': '', 'effect': 'NoSchedule'}
WORKER_TOLERATIONS = [CONTROL_PLANE, {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
PRIORITY_CLASS = 'system-node-critical'
RESTRICTED = {'allowPrivilegeEscalation': False, 'capabilities': {'drop': ['ALL']}, 'readOnlyRootFilesystem': True, 'runAsNonRoot': True}
# The chart's `nfd` values this collection takes (gpu_operator_nfd) and their defaults here (deviation nfd-default).
SETTINGS = {'enabled': False, 'nodefeaturerules': False}


def settings(given, registry=''):
    """The NFD settings of a run: the chart's `nfd` values `given` ({enabled, nodefeaturerules}) over SETTINGS, and the image
    (the subchart's, through the mirror `registry`)."""
    given = given or {}
    if not isinstance(given, dict):
        raise policy.PolicyError('gpu_operator_nfd must be a mapping (the chart\'s nfd values: enabled, nodefeaturerules), not %r' % (given,))
    for key, value in sorted(given.items()):
        if key not in SETTINGS:
            raise policy.PolicyError('gpu_operator_nfd.%s is not honoured by this collection (it honours %s); see %s'
                                     % (key, ', '.join(sorted(SETTINGS)), policy.DOCS))
        if not isinstance(value, bool):
            raise policy.PolicyError('gpu_operator_nfd.%s must be true or false, not %r' % (key, value))
    found = dict(SETTINGS, **given)
    found['image'] = images.reference(images.mirrored('registry.k8s.io/nfd', registry), NAME, APP_VERSION, 'nfd')
    return found


# --- the CRDs the subchart ships (crds/nfd-api-crds.yaml), without their descriptions --------------------------------------

def _string_map():
    return {'additionalProperties': {'type': 'string'}, 'type': 'object'}


def _matcher():
    ops = ['In', 'NotIn', 'InRegexp', 'Exists', 'DoesNotExist', 'Gt', 'Ge', 'Lt', 'Le', 'GtLt', 'GeLe', 'IsTrue', 'IsFalse']
    return {'properties': {'op': {'enum': ops, 'type': 'string'}, 'type': {'type': 'string'},
                           'value': {'items': {'type': 'string'}, 'type': 'array'}}, 'required': ['op'], 'type': 'object'}


def _match_features():
    return {'items': {'properties': {'feature': {'type': 'string'}, 'matchExpressions': {'additionalProperties': _matcher(), 'type': 'object'},
                                     'matchName': _matcher()}, 'required': ['feature'], 'type': 'object'}, 'type': 'array'}


def _rule(**extra):
    properties = {'matchAny': {'items': {'properties': {'matchFeatures': _match_features()}, 'required': ['matchFeatures'], 'type': 'object'},
                               'type': 'array'},
                  'matchFeatures': _match_features(), 'name': {'type': 'string'}, 'vars': _string_map(), 'varsTemplate': {'type': 'string'}}
    properties.update(extra)
    return {'properties': properties, 'required': ['name'], 'type': 'object'}


def _crd(kind, plural, scope, spec, short=None, status=None):
    names = {'kind': kind, 'listKind': kind + 'List', 'plural': plural, 'singular': kind.lower()}
    if short:
        names['shortNames'] = [short]
    properties = {'apiVersion': {'type': 'string'}, 'kind': {'type': 'string'}, 'metadata': {'type': 'object'}, 'spec': spec}
    version = {'name': 'v1alpha1', 'served': True, 'storage': True,
               'schema': {'openAPIV3Schema': {'properties': properties, 'required': ['spec'], 'type': 'object'}}}
    if status:
        properties['status'] = status
        version['subresources'] = {'status': {}}
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': meta('%s.%s' % (plural, GROUP), annotations={'controller-gen.kubebuilder.io/version': 'v0.16.3'}),
            'spec': {'group': GROUP, 'names': names, 'scope': scope, 'versions': [version]}}


def crds():
    """NodeFeature, NodeFeatureGroup and NodeFeatureRule as the subchart's crds/nfd-api-crds.yaml defines them."""
    def elements(values):
        return {'additionalProperties': {'properties': {'elements': values}, 'required': ['elements'], 'type': 'object'}, 'type': 'object'}
    features = {'properties': {
        'attributes': elements(_string_map()), 'flags': elements({'additionalProperties': {'type': 'object'}, 'type': 'object'}),
        'instances': elements({'items': {'properties': {'attributes': _string_map()}, 'required': ['attributes'], 'type': 'object'}, 'type': 'array'})},
        'type': 'object'}
    taint = {'properties': {'effect': {'type': 'string'}, 'key': {'type': 'string'}, 'timeAdded': {'format': 'date-time', 'type': 'string'},
                            'value': {'type': 'string'}}, 'required': ['effect', 'key'], 'type': 'object'}
    nodes = {'items': {'properties': {'name': {'type': 'string'}}, 'required': ['name'], 'type': 'object'}, 'type': 'array',
             'x-kubernetes-list-map-keys': ['name'], 'x-kubernetes-list-type': 'map'}
    return [
        _crd('NodeFeature', 'nodefeatures', 'Namespaced', {'properties': {'features': features, 'labels': _string_map()}, 'type': 'object'}),
        _crd('NodeFeatureGroup', 'nodefeaturegroups', 'Namespaced',
             {'properties': {'featureGroupRules': {'items': _rule(), 'type': 'array'}}, 'required': ['featureGroupRules'], 'type': 'object'},
             short='nfg', status={'properties': {'nodes': nodes}, 'type': 'object'}),
        _crd('NodeFeatureRule', 'nodefeaturerules', 'Cluster', short='nfr', spec={'properties': {'rules': {'items': _rule(
            annotations=_string_map(), extendedResources=_string_map(), labels=_string_map(), labelsTemplate={'type': 'string'},
            taints={'items': taint, 'type': 'array'}), 'type': 'array'}}, 'required': ['rules'], 'type': 'object'}),
    ]


# --- the chart's objects ---------------------------------------------------------------------------------------------------

def _labels(role=None):
    """The chart's selector labels (and role); its common labels add the version (helm.sh/chart and Helm's managed-by are
    not claimed: deviation nfd-chart)."""
    labels = {'app.kubernetes.io/name': NAME, 'app.kubernetes.io/instance': RELEASE}
    if role:
        labels['role'] = role
    return labels


def _meta(name, namespace=None, role=None):
    return meta(name, namespace, dict(_labels(), **{'app.kubernetes.io/version': APP_VERSION}, **({'role': role} if role else {})))


def _probe(**settings):
    return dict({'httpGet': {'path': '/healthz', 'port': 'http'}}, **settings)


def _container(name, nfd, command, args, env, resources, security=True, **extra):
    item = {'name': name, 'image': nfd['image'], 'imagePullPolicy': 'IfNotPresent', 'command': [command], 'args': args,
            'env': [field_env('NODE_NAME', 'spec.nodeName')] + env, 'resources': resources,
            'ports': [{'containerPort': PORT, 'name': 'http'}]}
    if security:
        item['securityContext'] = copy.deepcopy(RESTRICTED)
    item.update(extra)
    return item


def _pod(account, containers, volumes=None, **extra):
    pod = {'dnsPolicy': 'ClusterFirstWithHostNet', 'priorityClassName': PRIORITY_CLASS, 'serviceAccountName': account, 'securityContext': {},
           'hostNetwork': False, 'containers': containers}
    if volumes:
        pod['volumes'] = volumes
    pod.update(extra)
    return pod


def _template(role, pod, annotations=None):
    metadata = {'labels': _labels(role)}
    if annotations:
        metadata['annotations'] = annotations
    return {'metadata': metadata, 'spec': pod}


def _rbac(kind, name, rules, namespace=None):
    return {'apiVersion': RBAC_API, 'kind': kind, 'metadata': _meta(name, namespace), 'rules': rules}


def _binding(kind, name, role_kind, namespace):
    """The binding of the role `name` to the chart's account in `namespace` (a RoleBinding lives there too)."""
    return {'apiVersion': RBAC_API, 'kind': kind, 'metadata': _meta(name, namespace if kind == 'RoleBinding' else None),
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': role_kind, 'name': name},
            'subjects': [{'kind': 'ServiceAccount', 'name': ACCOUNT, 'namespace': namespace}]}


def _rules():
    """(master's ClusterRole, gc's ClusterRole, worker's Role) as the subchart's templates give them."""
    def rule(groups, resources, verbs, names=None):
        found = {'apiGroups': groups, 'resources': resources, 'verbs': verbs}
        if names:
            found['resourceNames'] = names
        return found
    master = [rule([''], ['namespaces'], ['watch', 'list']), rule([''], ['nodes', 'nodes/status'], ['get', 'patch', 'update', 'list']),
              rule([GROUP], ['nodefeatures', 'nodefeaturerules', 'nodefeaturegroups'], ['get', 'list', 'watch']),
              rule([GROUP], ['nodefeaturegroups/status'], ['patch', 'update']), rule(['coordination.k8s.io'], ['leases'], ['create']),
              rule(['coordination.k8s.io'], ['leases'], ['get', 'update'], ['nfd-master.nfd.kubernetes.io'])]
    gc = [rule([''], ['nodes'], ['list', 'watch']), rule(['topology.node.k8s.io'], ['noderesourcetopologies'], ['delete', 'list']),
          rule([GROUP], ['nodefeatures'], ['delete', 'list'])]
    worker = [rule([GROUP], ['nodefeatures'], ['create', 'get', 'update', 'delete']), rule([''], ['pods'], ['get'])]
    return master, gc, worker


def accounts(namespace):
    """The account the master creates and the worker and gc use, and the rights of each (the worker's own ClusterRole only
    comes with its owner reference to the Node, which the chart's -owner-refs=pod,ds leaves out)."""
    master_rules, gc_rules, worker_rules = _rules()
    return [{'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': _meta(ACCOUNT, namespace)},
            _rbac('ClusterRole', FULLNAME, master_rules), _binding('ClusterRoleBinding', FULLNAME, 'ClusterRole', namespace),
            _rbac('ClusterRole', FULLNAME + '-gc', gc_rules), _binding('ClusterRoleBinding', FULLNAME + '-gc', 'ClusterRole', namespace),
            _rbac('Role', FULLNAME + '-worker', worker_rules, namespace), _binding('RoleBinding', FULLNAME + '-worker', 'Role', namespace)]


def worker(nfd, namespace, conf):
    ro = dict(read_only=True)
    mounts = [mount('host-boot', '/host-boot', **ro), mount('host-os-release', '/host-etc/os-release', **ro), mount('host-sys', '/host-sys', **ro),
              mount('host-usr-lib', '/host-usr/lib', **ro), mount('host-lib', '/host-lib', **ro), mount('host-proc-swaps', '/host-proc/swaps', **ro),
              mount('features-d', FEATURES_D, **ro), mount('nfd-worker-conf', CONF_DIR, **ro)]
    volumes = [host_path('host-boot', '/boot'), host_path('host-os-release', '/etc/os-release'), host_path('host-sys', '/sys'),
               host_path('host-usr-lib', '/usr/lib'), host_path('host-lib', '/lib'), host_path('host-proc-swaps', '/proc/swaps'),
               host_path('features-d', FEATURES_D),
               {'name': 'nfd-worker-conf', 'configMap': {'name': conf['metadata']['name'], 'items': [{'key': 'nfd-worker.conf', 'path': 'nfd-worker.conf'}]}}]
    container = _container('worker', nfd, 'nfd-worker', ['-owner-refs=pod,ds', '-port=%d' % PORT],
                           [field_env('POD_NAME', 'metadata.name'), field_env('POD_UID', 'metadata.uid')],
                           {'limits': {'memory': '512Mi'}, 'requests': {'cpu': '5m', 'memory': '64Mi'}},
                           livenessProbe=_probe(initialDelaySeconds=10), readinessProbe=_probe(initialDelaySeconds=5, failureThreshold=10),
                           volumeMounts=mounts)
    pod = _pod(ACCOUNT, [container], volumes, tolerations=copy.deepcopy(WORKER_TOLERATIONS))
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': _meta(FULLNAME + '-worker', namespace, 'worker'),
            'spec': {'updateStrategy': {'rollingUpdate': {'maxUnavailable': '10%'}}, 'selector': {'matchLabels': _labels('worker')},
                     'template': _template('worker', pod, {CHECKSUM: skeleton.checksum([conf])})}}


def master(nfd, namespace, conf):
    container = _container('master', nfd, 'nfd-master', ['-extra-label-ns=%s' % ','.join(MASTER_CONFIG['extraLabelNs']), '-port=%d' % PORT], [],
                           {'limits': {'memory': '4Gi'}, 'requests': {'cpu': '100m', 'memory': '128Mi'}},
                           startupProbe=_probe(failureThreshold=30), livenessProbe=_probe(), readinessProbe=_probe(failureThreshold=10),
                           volumeMounts=[mount('nfd-master-conf', CONF_DIR, read_only=True)])
    affinity = {'nodeAffinity': {'preferredDuringSchedulingIgnoredDuringExecution': [{'weight': 1, 'preference': {'matchExpressions': [
        {'key': CONTROL_PLANE['key'], 'operator': 'In', 'values': ['']}]}}]}}
    pod = _pod(ACCOUNT, [container], [{'name': 'nfd-master-conf', 'configMap': {
        'name': conf['metadata']['name'], 'items': [{'key': 'nfd-master.conf', 'path': 'nfd-master.conf'}]}}],
        enableServiceLinks=False, affinity=affinity, tolerations=[dict(CONTROL_PLANE)])
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': _meta(FULLNAME + '-master', namespace, 'master'),
            'spec': {'replicas': 1, 'selector': {'matchLabels': _labels('master')},
                     'template': _template('master', pod, {CHECKSUM: skeleton.checksum([conf])})}}


def gc(nfd, namespace):
    container = _container('gc', nfd, 'nfd-gc', ['-gc-interval=1h'], [], {'limits': {'memory': '1Gi'}, 'requests': {'cpu': '10m', 'memory': '128Mi'}},
                           livenessProbe=_probe(initialDelaySeconds=10), readinessProbe=_probe(initialDelaySeconds=5))
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': _meta(FULLNAME + '-gc', namespace, 'gc'),
            'spec': {'replicas': 1, 'selector': {'matchLabels': _labels('gc')}, 'template': _template('gc', _pod(ACCOUNT, [container]))}}


def kernel_module_rules():
    """The gpu-operator chart's NodeFeatureRule (nfd.nodefeaturerules): a label per GPUDirect kernel module loaded."""
    rules = [{'name': 'kernel-module-%s' % module, 'labels': {label: 'true'},
              'matchFeatures': [{'feature': 'kernel.loadedmodule', 'matchExpressions': {module: {'op': 'Exists'}}}]}
             for module, label in (('gdrdrv', 'nvidia.com/gdrcopy.capable'), ('nvidia_fs', 'nvidia.com/gds.capable'),
                                   ('nvidia_peermem', 'nvidia.com/peermem.capable'))]
    return {'apiVersion': API_VERSION, 'kind': 'NodeFeatureRule', 'metadata': meta('nvidia-kernel-modules'), 'spec': {'rules': rules}}


def objects(nfd, namespace):
    """Every object the chart installs with these settings but its CRDs, in its order of kinds (the rule last: it needs them)."""
    worker_conf = config_map(FULLNAME + '-worker-conf', namespace, {'nfd-worker.conf': skeleton.to_yaml(WORKER_CONFIG).rstrip('\n')},
                             dict(_labels(), **{'app.kubernetes.io/version': APP_VERSION}))
    master_conf = config_map(FULLNAME + '-master-conf', namespace, {'nfd-master.conf': skeleton.to_yaml(MASTER_CONFIG).rstrip('\n')},
                             dict(_labels(), **{'app.kubernetes.io/version': APP_VERSION}))
    found = accounts(namespace) + [worker_conf, master_conf, worker(nfd, namespace, worker_conf), master(nfd, namespace, master_conf), gc(nfd, namespace)]
    if nfd['nodefeaturerules']:
        found.append(kernel_module_rules())
    return found


# --- what a run does -------------------------------------------------------------------------------------------------------

def ours(obj):
    labels = ((obj or {}).get('metadata') or {}).get('labels') or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items())


def foreign_worker(daemonsets):
    """'<namespace>/<name>' of a DaemonSet that runs nfd-worker and is not this collection's, '' when there is none."""
    for item in daemonsets or []:
        containers = ((((item.get('spec') or {}).get('template') or {}).get('spec') or {}).get('containers')) or []
        runs = any('nfd-worker' in (container.get('command') or []) + (container.get('args') or []) for container in containers)
        if runs and not ours(item):
            return '%s/%s' % (item['metadata'].get('namespace', ''), item['metadata']['name'])
    return ''


def plan(nfd, namespace, crd=None, daemonsets=None, state='present'):
    """What role gpu_cluster_base does about NFD: {crds: to apply first (and wait for), present: to apply then, absent: to remove,
    found: what it found of an NFD not its own ('' none)}.

    nfd: settings(); crd: the NodeFeature CRD as the API holds it (None: none); daemonsets: the cluster's DaemonSets (needed
    with nfd.enabled or the CRD). An NFD worker not this collection's means NFD runs already: nothing is installed (the chart's
    users set nfd.enabled=false then) nor removed. CRDs not this collection's (left by a Helm release: Helm never removes its
    CRDs) are used as they are, never replaced nor removed. Disabled (or state absent), this collection's NFD objects go, its
    CRDs too; without the NodeFeature CRD none of them was installed (they are installed with or after it), so nothing is asked
    of the API.
    """
    rendered = objects(nfd, namespace)
    theirs = crd is not None and not ours(crd)
    found = {'crds': [], 'present': [], 'absent': [], 'found': ''}
    worker_found = foreign_worker(daemonsets)
    if worker_found:
        if state == 'present' and nfd['enabled']:
            found['found'] = ('NFD runs already (DaemonSet %s, not installed by gpuops.gpu_operator): no second one is installed; GFD '
                              'and the node labels stage use it' % worker_found)
        return found
    if state == 'present' and nfd['enabled']:
        if theirs:
            found['found'] = ('CustomResourceDefinition %s is installed and not managed by gpuops.gpu_operator (a Helm release leaves its '
                              'CRDs behind): the NFD CRDs are used as they are' % CRD)
        else:
            found['crds'] = crds()
        found['present'] = rendered
        if not nfd['nodefeaturerules'] and crd is not None:
            found['absent'] = [ref(kernel_module_rules())]
        return found
    if crd is not None:
        removable = [obj for obj in rendered if obj['kind'] != 'NodeFeatureRule'] + [kernel_module_rules()] + ([] if theirs else crds())
        found['absent'] = [ref(obj) for obj in removable]
    return found
