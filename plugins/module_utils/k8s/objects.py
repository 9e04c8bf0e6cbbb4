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
