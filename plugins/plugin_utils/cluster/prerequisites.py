# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The cluster prerequisites: the operator namespace, the RuntimeClasses and the ClusterPolicy CRD.

Rendered, like the operands (registry.py), from the ClusterPolicy resolved once per run (registry.resolution):
the RuntimeClasses name what the GPU nodes register (contract.runtime_names), the CRD's schema of each operand's
section is the operand's. Pure functions of plain data, so the unit tests validate every manifest without a cluster.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import objects
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import registry, skeleton

_meta = objects.meta


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


def prerequisites(namespace='gpu-operator', with_crd=True, resolved=None):
    """Namespace, RuntimeClasses and the ClusterPolicy CRD; `resolved` (registry.resolution) decides the RuntimeClasses. The
    accounts and RBAC come with what runs under them: the operands and the validator (registry.py)."""
    objects_ = [namespace_object(namespace)] + runtime_classes((resolved or registry.resolution())['spec'])
    if with_crd:
        objects_.append(cluster_policy_crd())
    return objects_


def unused_runtime_classes(resolved=None):
    """Identities of our RuntimeClasses the settings do not want (the -cdi and -legacy variants without CDI)."""
    spec = (resolved or registry.resolution())['spec']
    wanted = [obj['metadata']['name'] for obj in runtime_classes(spec)]
    return [{'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass', 'metadata': {'name': name}}
            for name in contract.runtime_names(spec['operator']['runtimeClass'], contract.RUNTIME_VARIANTS) if name not in wanted]


# --- the ClusterPolicy CRD ------------------------------------------------------------

def _component_schema(extra=None):
    string_list = {'type': 'array', 'items': {'type': 'string'}}
    quantities = {'type': 'object', 'additionalProperties': {'x-kubernetes-int-or-string': True,
                                                             'anyOf': [{'type': 'integer'}, {'type': 'string'}]}}
    properties = {
        'enabled': {'type': 'boolean'}, 'repository': {'type': 'string'}, 'image': {'type': 'string', 'pattern': '[a-zA-Z0-9\\-]+'},
        'version': {'type': 'string'}, 'imagePullPolicy': {'type': 'string'}, 'imagePullSecrets': string_list, 'args': string_list,
        'env': skeleton.crd_env(),
        'resources': {'type': 'object', 'properties': {'limits': quantities, 'requests': quantities}},
        'hostNetwork': {'type': 'boolean'},
    }
    properties.update(extra or {})
    return {'type': 'object', 'properties': properties}


def cluster_policy_crd():
    """nvidia.com/v1 ClusterPolicy as the GPU Operator defines it (names, scope, printer columns, required sections, enums and
    defaults): the sections this collection honours have a schema (each operand's, registry.OPERANDS), the Operator's others
    are kept as given."""
    toleration = {'type': 'object', 'properties': dict((k, {'type': 'string'}) for k in ('key', 'operator', 'value', 'effect'))}
    toleration['properties']['tolerationSeconds'] = {'type': 'integer', 'format': 'int64'}
    preserved = {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}
    spec = {
        'type': 'object', 'x-kubernetes-preserve-unknown-fields': True,
        'required': ['daemonsets', 'dcgm', 'dcgmExporter', 'devicePlugin', 'driver', 'gfd', 'nodeStatusExporter', 'operator', 'toolkit'],
        'properties': {
            'operator': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True,
                         'properties': {'runtimeClass': {'type': 'string', 'default': contract.DEFAULT_RUNTIME_NAME}}},
            'daemonsets': {'type': 'object', 'properties': {
                'labels': skeleton.crd_string_map(), 'annotations': skeleton.crd_string_map(),
                'priorityClassName': {'type': 'string'}, 'tolerations': {'type': 'array', 'items': toleration},
                'updateStrategy': {'type': 'string', 'enum': ['RollingUpdate', 'OnDelete'], 'default': 'RollingUpdate'},
                'rollingUpdate': {'type': 'object', 'properties': {'maxUnavailable': {'type': 'string'}}},
                'podSecurityContext': preserved}},
            'mig': {'type': 'object', 'properties': {'strategy': {'type': 'string', 'enum': list(contract.MIG_STRATEGIES)}}},
            'cdi': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True, 'properties': {
                'enabled': {'type': 'boolean', 'default': True}, 'default': {'type': 'boolean', 'default': False}}},
            'psa': {'type': 'object', 'properties': {'enabled': {'type': 'boolean'}}},
            'hostPaths': {'type': 'object', 'properties': {'rootFS': {'type': 'string'}, 'driverInstallDir': {'type': 'string'},
                                                           'kubeletRootDir': {'type': 'string', 'default': '/var/lib/kubelet'}}},
        },
    }
    spec['properties'].update((operand.section, _component_schema(operand.crd)) for operand in registry.OPERANDS if operand.image)
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
