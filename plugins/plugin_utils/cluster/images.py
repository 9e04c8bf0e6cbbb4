# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Image references of everything the collection deploys: one mirror rule, one reference rule.

A mirror (`gpu_operator_registry`) replaces the registry host of a default repository and keeps
its path, without doubling the segments the mirror's own path already ends with:

    nvcr.io/nvidia/k8s + registry.local:5000          -> registry.local:5000/nvidia/k8s
    nvcr.io/nvidia/k8s + registry.local:5000/nvidia   -> registry.local:5000/nvidia/k8s
    nvcr.io/nvidia/k8s + registry.local:5000/mirror   -> registry.local:5000/mirror/nvidia/k8s

A version that is a digest (sha256:<64 hex>) is pinned with '@', as the GPU Operator does.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

DIGEST = re.compile(r'^sha256:[0-9a-f]{64}$')
TAG = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$')


class ImageError(GpuOpsError):
    """An image setting that cannot make a valid reference; the message names the setting."""


def _split(repository):
    """(host or None, [path segments]) of a repository; the first segment is a host when it looks like one."""
    parts = [part for part in repository.strip().strip('/').split('/') if part]
    if parts and ('.' in parts[0] or ':' in parts[0] or parts[0] == 'localhost'):
        return parts[0], parts[1:]
    return None, parts


def mirrored(repository, registry):
    """`repository` as served by the mirror `registry` (host[:port][/path]); unchanged when `registry` is empty."""
    if not registry or not registry.strip():
        return repository
    _host, path = _split(repository)
    mirror_host, mirror_path = _split(registry)
    if mirror_host is None:
        raise ImageError('gpu_operator_registry %r must start with a registry host (registry.local:5000[/path])' % registry)
    overlap = max((n for n in range(min(len(mirror_path), len(path)), 0, -1) if mirror_path[-n:] == path[:n]), default=0)
    return '/'.join([mirror_host] + mirror_path + path[overlap:])


def reference(repository, image, version, where='image'):
    """repository/image:version, or repository/image@sha256:... when `version` is a digest."""
    for field, value in (('repository', repository), ('image', image), ('version', version)):
        if not isinstance(value, str) or not value.strip():
            raise ImageError('%s.%s must be a non-empty string, not %r' % (where, field, value))
    base = '%s/%s' % (repository.strip().rstrip('/'), image.strip())
    if version.startswith('sha256:'):
        if not DIGEST.match(version):
            raise ImageError('%s.version %r is not a sha256 digest (sha256: and 64 lower-case hex digits)' % (where, version))
        return '%s@%s' % (base, version)
    if not TAG.match(version):
        raise ImageError('%s.version %r is not a valid image tag' % (where, version))
    return '%s:%s' % (base, version)
