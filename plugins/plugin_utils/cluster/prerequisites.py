# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The cluster side's Kubernetes objects, rendered from ClusterPolicy-style settings.

The settings are resolved once (policy.py: the GPU Operator release tracked, its defaults, the fields
honoured) and every object is rendered from the result: the prerequisites (namespace, RuntimeClasses,
the ClusterPolicy CRD), the operands as the Operator lays them out (operands.py), the ClusterPolicy
itself, and what the node labels need to agree with the device plugin (plugin_config.py). Pure
functions of plain data, so the unit tests validate every manifest without a cluster.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import objects
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config, policy, skeleton as operand_objects

POLICY_NAME = 'cluster-policy'  # the name NVIDIA's Helm chart gives its ClusterPolicy
_meta = objects.meta


# --- the operands --------------------------------------------------------------------------------

def operands(spec=None, namespace='gpu-operator', registry='', service_monitor_crd=False, nodes=None):
    """{'resolved': the full ClusterPolicy spec, 'present': objects to apply, 'absent': identities of objects to remove}.

    `nodes` are the GPU nodes' container toolkit settings (policy.resolve). Everything is rendered (and
    so checked) before anything is applied.
    """
    resolved = policy.resolve(spec, registry, nodes)
    rendered = operand_objects.render(resolved, namespace, nodes, service_monitor_crd)
    return {'resolved': resolved, 'present': rendered['present'], 'absent': rendered['absent']}


def node_label_settings(spec=None, node_config=''):
    """What gpu_node_labels needs so that a node's labels say what its device plugin advertises (plugin_config).

    With GFD Pods running (gfd.enabled) they label from the ConfigMap themselves, which may then be one the settings
    do not hold."""
    resolved = policy.resolve(spec)
    return plugin_config.node_label_settings(resolved, node_config, gfd_labels=not resolved['gfd']['enabled'])


# --- prerequisites -------------------------------------------------------------------------------

def namespace_object(namespace):
    # The operands mount host paths and run privileged: Pod Security Admission must allow that here.
    psa = dict(('pod-security.kubernetes.io/%s' % mode, 'privileged') for mode in ('enforce', 'audit', 'warn'))
    return {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': _meta(namespace, labels=psa)}


def runtime_classes(resolved):
    """A RuntimeClass for each name the GPU nodes register the NVIDIA runtime under (contract.runtime_names): the one the
    operands name (operator.runtimeClass), and with CDI its -cdi and -legacy variants; each handler the runtime of its name."""
    names = contract.runtime_names(resolved['operator']['runtimeClass'], contract.runtime_variants(resolved['cdi']['enabled']))
    return [{'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass', 'metadata': _meta(name, labels={'app.kubernetes.io/component': 'gpu-operator'}),
             'handler': name} for name in names]


def prerequisites(namespace='gpu-operator', with_crd=True, spec=None, nodes=None):
    """Namespace, RuntimeClasses and the ClusterPolicy CRD; `spec` and `nodes` decide the RuntimeClasses. The accounts and
    RBAC come with what runs under them: the operands (operands.py) and the validator (validation.py)."""
    objects_ = [namespace_object(namespace)] + runtime_classes(policy.resolve(spec, '', nodes))
    if with_crd:
        objects_.append(cluster_policy_crd())
    return objects_


def unused_runtime_classes(spec=None, nodes=None):
    """Identities of our RuntimeClasses the settings do not want (the -cdi and -legacy variants without CDI)."""
    resolved = policy.resolve(spec, '', nodes)
    wanted = [obj['metadata']['name'] for obj in runtime_classes(resolved)]
    return [{'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass', 'metadata': {'name': name}}
            for name in contract.runtime_names(resolved['operator']['runtimeClass'], contract.RUNTIME_VARIANTS) if name not in wanted]


# --- the ClusterPolicy CRD and object ------------------------------------------------------------

def _strings():
    return {'type': 'object', 'additionalProperties': {'type': 'string'}}


def _component_schema(extra=None):
    string_list = {'type': 'array', 'items': {'type': 'string'}}
    quantities = {'type': 'object', 'additionalProperties': {'x-kubernetes-int-or-string': True,
                                                             'anyOf': [{'type': 'integer'}, {'type': 'string'}]}}
    properties = {
        'enabled': {'type': 'boolean'}, 'repository': {'type': 'string'}, 'image': {'type': 'string', 'pattern': '[a-zA-Z0-9\\-]+'},
        'version': {'type': 'string'}, 'imagePullPolicy': {'type': 'string'}, 'imagePullSecrets': string_list, 'args': string_list,
        'env': {'type': 'array', 'items': {'type': 'object', 'required': ['name'],
                                           'properties': {'name': {'type': 'string'}, 'value': {'type': 'string'}}}},
        'resources': {'type': 'object', 'properties': {'limits': quantities, 'requests': quantities}},
        'hostNetwork': {'type': 'boolean'},
    }
    properties.update(extra or {})
    return {'type': 'object', 'properties': properties}


def cluster_policy_crd():
    """nvidia.com/v1 ClusterPolicy as the GPU Operator defines it (names, scope, printer columns, required sections, enums and
    defaults): the sections this collection honours have a schema, the Operator's others are kept as given."""
    toleration = {'type': 'object', 'properties': dict((k, {'type': 'string'}) for k in ('key', 'operator', 'value', 'effect'))}
    toleration['properties']['tolerationSeconds'] = {'type': 'integer', 'format': 'int64'}
    name = {'type': 'string'}
    preserved = {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}
    spec = {
        'type': 'object', 'x-kubernetes-preserve-unknown-fields': True,
        'required': ['daemonsets', 'dcgm', 'dcgmExporter', 'devicePlugin', 'driver', 'gfd', 'nodeStatusExporter', 'operator', 'toolkit'],
        'properties': {
            'operator': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True,
                         'properties': {'runtimeClass': {'type': 'string', 'default': contract.DEFAULT_RUNTIME_NAME}}},
            'daemonsets': {'type': 'object', 'properties': {
                'labels': _strings(), 'annotations': _strings(),
                'priorityClassName': {'type': 'string'}, 'tolerations': {'type': 'array', 'items': toleration},
                'updateStrategy': {'type': 'string', 'enum': ['RollingUpdate', 'OnDelete'], 'default': 'RollingUpdate'},
                'rollingUpdate': {'type': 'object', 'properties': {'maxUnavailable': {'type': 'string'}}},
                'podSecurityContext': preserved}},
            'mig': {'type': 'object', 'properties': {'strategy': {'type': 'string', 'enum': list(contract.MIG_STRATEGIES)}}},
            'cdi': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True, 'properties': {
                'enabled': {'type': 'boolean', 'default': True}, 'default': {'type': 'boolean', 'default': False}}},
            'validator': _component_schema(),
            'devicePlugin': _component_schema({'config': {'type': 'object', 'properties': {'name': name, 'default': name}},
                                               'mps': {'type': 'object', 'properties': {'root': {'type': 'string', 'default': policy.DEFAULT_MPS_ROOT}}}}),
            'dcgmExporter': _component_schema({
                'annotations': _strings(), 'hostPID': {'type': 'boolean'}, 'enablePodLabels': {'type': 'boolean'},
                'enablePodUID': {'type': 'boolean'}, 'podLabelAllowlistRegex': {'type': 'array', 'items': {'type': 'string'}},
                'config': {'type': 'object', 'properties': {'name': name}},
                'hpcJobMapping': {'type': 'object', 'properties': {'enabled': {'type': 'boolean'}, 'directory': name}},
                'service': {'type': 'object', 'properties': {'type': name, 'internalTrafficPolicy': name}},
                'serviceMonitor': {'type': 'object', 'properties': {
                    'enabled': {'type': 'boolean'}, 'interval': name, 'scrapeTimeout': name, 'honorLabels': {'type': 'boolean'},
                    'additionalLabels': _strings(),
                    'relabelings': {'type': 'array', 'items': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}}),
            'gfd': _component_schema(),
            'migManager': _component_schema({
                'config': {'type': 'object', 'properties': {'name': name, 'default': {'type': 'string', 'enum': ['all-disabled', ''],
                                                                                      'default': 'all-disabled'}}},
                'gpuClientsConfig': {'type': 'object', 'properties': {'name': name}}}),
        },
    }
    condition = {'type': 'object', 'required': ['type', 'status', 'reason', 'message', 'lastTransitionTime'], 'properties': {
        'type': {'type': 'string'}, 'status': {'type': 'string', 'enum': ['True', 'False', 'Unknown']}, 'reason': {'type': 'string'},
        'message': {'type': 'string'}, 'lastTransitionTime': {'type': 'string', 'format': 'date-time'},
        'observedGeneration': {'type': 'integer', 'format': 'int64'}}}
    status = {'type': 'object', 'properties': {'state': {'type': 'string', 'enum': ['ignored', 'ready', 'notReady']},
                                               'namespace': {'type': 'string'}, 'conditions': {'type': 'array', 'items': condition}}}
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition', 'metadata': _meta('clusterpolicies.nvidia.com'),
        'spec': {
            'group': 'nvidia.com', 'scope': 'Cluster',
            'names': {'kind': 'ClusterPolicy', 'listKind': 'ClusterPolicyList', 'plural': 'clusterpolicies', 'singular': 'clusterpolicy'},
            'versions': [{
                'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                'additionalPrinterColumns': [{'name': 'Status', 'type': 'string', 'jsonPath': '.status.state'},
                                             {'name': 'Age', 'type': 'string', 'jsonPath': '.metadata.creationTimestamp'}],
                'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {'spec': spec, 'status': status}}},
            }],
        },
    }


def cluster_policy(resolved):
    """The ClusterPolicy CR: the resolved spec as the Operator's CRD holds it (config files by ConfigMap name, without the
    Helm chart's create/data), and the sections the node-side roles do instead marked disabled (driver, toolkit: installed
    on the host, as the Operator's driver.enabled=false means)."""
    spec = copy.deepcopy(resolved)
    for section in ('devicePlugin', 'dcgmExporter', 'migManager'):
        config = spec[section]['config']
        for field in ('create', 'data'):
            del config[field]
        if not config['name']:
            del config['name']
        # The chart writes devicePlugin.config and dcgmExporter.config only with a ConfigMap name.
        if section != 'migManager' and 'name' not in config:
            del spec[section]['config']
    if not spec['daemonsets']['podSecurityContext']:
        del spec['daemonsets']['podSecurityContext']
    if not spec['dcgmExporter']['service']['type']:
        del spec['dcgmExporter']['service']['type']
    if not spec['migManager']['gpuClientsConfig']['name']:
        del spec['migManager']['gpuClientsConfig']
    for section in ('driver', 'toolkit', 'dcgm', 'nodeStatusExporter'):
        spec[section] = {'enabled': False}
    return {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': _meta(POLICY_NAME), 'spec': spec}
