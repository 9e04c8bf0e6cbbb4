# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Whether NVIDIA's device plugin registered a resource with the kubelet: the pure checks.

`expected()` derives the device count to expect, `observe_sockets()` and `node_resources()`
gather what the node and its Node object show, and `problems()` names everything that is not
as expected; the module polls these until no problem is left.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import stat

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import GPU_RESOURCE, resource_label, unshared
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

DEFAULT_RESOURCE = GPU_RESOURCE
DEFAULT_SOCKET_DIR = '/var/lib/kubelet/device-plugins'
KUBELET_SOCKET = 'kubelet.sock'
_RESOURCE_NAME = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')


class CheckError(GpuOpsError):
    """An option or a label value makes the check impossible; the message names it."""


def socket_name(resource_name):
    """The socket the plugin serves for `resource_name`.

    NVIDIA's k8s-device-plugin names it "nvidia-" + the part after the "/" + ".sock"
    (NewNvidiaDevicePlugin: pluginapi.DevicePluginPath + "nvidia-" + name + ".sock").
    """
    if not _RESOURCE_NAME.match(resource_name or ''):
        raise CheckError('resource_name must be an extended resource name like nvidia.com/gpu or nvidia.com/mig-1g.10gb, got %r' % resource_name)
    return 'nvidia-%s.sock' % resource_name.split('/', 1)[1]


def _label_int(labels, key, node_name):
    value = labels.get(key)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise CheckError('Node %s label %s=%r is not an integer' % (node_name, key, value)) from None
    if number < 0:
        raise CheckError('Node %s label %s=%r is negative' % (node_name, key, value))
    return number


def expected(resource_name, labels, node_name, expected_count=None, gpu_count=None, replicas=None):
    """{count, gpu_count, replicas, source}: how many devices the resource should show.

    expected_count wins. Otherwise count = GPUs x replicas, each taken from the option or else
    from the Node's <resource>.count / <resource>.replicas labels (set by nfd_labels, as GPU feature
    discovery names them); without either, replicas is 1 (no sharing) and the GPU count is an error.
    """
    if expected_count is not None:
        if expected_count < 1:
            raise CheckError('expected_count must be 1 or more, got %d' % expected_count)
        return {'count': expected_count, 'gpu_count': gpu_count, 'replicas': replicas, 'source': 'expected_count'}
    base = unshared(resource_name)
    sources = []
    if gpu_count is None:
        gpu_count = _label_int(labels, resource_label(base, 'count'), node_name)
        if gpu_count is None:
            raise CheckError('cannot tell how many %s devices to expect: Node %s has no label %s (nfd_labels sets it); '
                             'give expected_count or gpu_count' % (resource_name, node_name, resource_label(base, 'count')))
        sources.append('label %s' % resource_label(base, 'count'))
    else:
        sources.append('option gpu_count')
    if replicas is None:
        replicas = _label_int(labels, resource_label(base, 'replicas'), node_name)
        sources.append('label %s' % resource_label(base, 'replicas') if replicas is not None else 'no sharing')
        replicas = 1 if replicas is None else replicas
    else:
        sources.append('option replicas')
    if gpu_count < 1 or replicas < 1:
        raise CheckError('%s devices to expect: %d GPU(s) x %d replica(s) (%s) is none; give expected_count when the labels do not '
                         'describe this resource (MIG-enabled GPUs show replicas 0 on the full-GPU resource)'
                         % (resource_name, gpu_count, replicas, ', '.join(sources)))
    return {'count': gpu_count * replicas, 'gpu_count': gpu_count, 'replicas': replicas, 'source': ', '.join(sources)}


def observe_sockets(socket_dir, resource_name):
    """{path: True when a unix socket is there} for the kubelet's registration socket and the plugin's."""
    found = {}
    for name in (KUBELET_SOCKET, socket_name(resource_name)):
        path = os.path.join(socket_dir, name)
        try:
            found[path] = stat.S_ISSOCK(os.stat(path).st_mode)
        except OSError:
            found[path] = False
    return found


def node_resources(node, resource_name):
    """(capacity, allocatable, labels) of a Node as decoded JSON; a quantity is None where the Node does not list it."""
    status = node.get('status') or {}
    return ((status.get('capacity') or {}).get(resource_name), (status.get('allocatable') or {}).get(resource_name),
            (node.get('metadata') or {}).get('labels') or {})


def quantity(value):
    """An extended resource's quantity as an int (the API allows whole numbers only); None when absent."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise CheckError('quantity %r is not a whole number' % (value,)) from None


def socket_problems(sockets, resource_name):
    found = []
    for path, present in sockets.items():
        if not present:
            who = 'the kubelet' if os.path.basename(path) == KUBELET_SOCKET else 'the device plugin for %s' % resource_name
            found.append('socket missing: %s (served by %s)' % (path, who))
    return found


def problems(node_name, resource_name, sockets, capacity, allocatable, want, devices=None):
    """Everything that shows the plugin has not (fully) registered; [] when it has.

    `devices` is the list of device IDs from PodResources, None when that check was skipped.
    """
    found = socket_problems(sockets, resource_name)
    count = want['count']
    if capacity is None:
        found.append('capacity missing: Node %s has no status.capacity[%s]' % (node_name, resource_name))
    elif capacity != count:
        hint = ''
        if want.get('replicas') and want['replicas'] > 1 and capacity == want.get('gpu_count'):
            hint = ': sharing with %d replicas is expected but capacity is not multiplied (is the device plugin config applied?)' % want['replicas']
        found.append('count mismatch: Node %s capacity %s is %d, expected %d (%s)%s' % (node_name, resource_name, capacity, count, want['source'], hint))
    if allocatable is None:
        if capacity is not None:
            found.append('allocatable missing: Node %s has no status.allocatable[%s]' % (node_name, resource_name))
    elif allocatable != count:
        found.append('count mismatch: Node %s allocatable %s is %d, expected %d (unhealthy devices are not allocatable)'
                     % (node_name, resource_name, allocatable, count))
    if devices is not None and len(devices) != count:
        found.append('count mismatch: the kubelet PodResources API lists %d allocatable %s device(s), expected %d'
                     % (len(devices), resource_name, count))
    return found
