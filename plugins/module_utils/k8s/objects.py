# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What every object the cluster side renders has: the managed-by label, and how an object is named for removal."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Every object carries it: uninstall and the doctor find ours by it.
MANAGED_BY = {'app.kubernetes.io/managed-by': 'gpuops.gpu_operator'}


def meta(name, namespace=None, labels=None, annotations=None):
    metadata = {'name': name, 'labels': dict(MANAGED_BY, **(labels or {}))}
    if namespace:
        metadata['namespace'] = namespace
    if annotations:
        metadata['annotations'] = dict(annotations)
    return metadata


def ref(obj):
    """The identity of an object (what state=absent needs)."""
    metadata = dict((key, obj['metadata'][key]) for key in ('name', 'namespace') if key in obj['metadata'])
    return {'apiVersion': obj['apiVersion'], 'kind': obj['kind'], 'metadata': metadata}


def config_map(name, namespace, data, labels=None):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': meta(name, namespace, labels), 'data': data}


def _is_custom(api_version):
    """Whether the kind comes from a CustomResourceDefinition: Kubernetes' own API groups have no dot or end in .k8s.io."""
    group = api_version.rpartition('/')[0]
    return '.' in group and not group.endswith('.k8s.io')


def check_mode_preview(objects, found=None, check_mode=True):
    """The objects to hand to kubernetes.core.k8s, and in check mode those it cannot preview, to show as they would be created.

    In check mode the API dry-runs each object, which it can do only in a namespace that exists and for a kind it
    serves: a first preview of a fresh cluster has neither the operator namespace nor the ClusterPolicy CRD (404).
    found: the kubernetes.core.k8s_info results (registered) that read the Namespaces and the CustomResourceDefinitions
    of the custom kinds among `objects`; what they did not find does not exist.
    Returns dict(apply=[objects], would_create=[dict(name, missing, summary, object)]).
    """
    if not check_mode:
        return dict(apply=list(objects or []), would_create=[])
    resources = [item for result in found or [] for item in result.get('resources') or []]
    namespaces = set(item['metadata']['name'] for item in resources if item.get('kind') == 'Namespace')
    kinds = set((item['spec']['group'], item['spec']['names']['kind']) for item in resources if item.get('kind') == 'CustomResourceDefinition')
    apply, would_create = [], []
    for obj in objects or []:
        namespace = obj['metadata'].get('namespace')
        missing = []
        if namespace and namespace not in namespaces:
            missing.append('namespace %s' % namespace)
        if _is_custom(obj['apiVersion']) and (obj['apiVersion'].rpartition('/')[0], obj['kind']) not in kinds:
            missing.append('the CustomResourceDefinition of %s' % obj['kind'])
        if not missing:
            apply.append(obj)
            continue
        name = '%s %s%s' % (obj['kind'], namespace + '/' if namespace else '', obj['metadata']['name'])
        would_create.append(dict(name=name, missing=missing, object=obj,
                                 summary='%s would be created (not dry-run by the API: %s %s not exist yet)' % (
                                     name, ' and '.join(missing), 'do' if len(missing) > 1 else 'does')))
    return dict(apply=apply, would_create=would_create)
