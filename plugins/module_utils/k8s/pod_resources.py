# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The kubelet's PodResources v1 GetAllocatableResources call, without a protobuf dependency.

Nodes need only grpcio for this (it is optional: without it the call is skipped). The few
messages involved are decoded here from the protobuf wire format, after the field numbers of
kubernetes/kubelet pkg/apis/podresources/v1/api.proto:

    AllocatableResourcesRequest {}
    AllocatableResourcesResponse { repeated ContainerDevices devices = 1; repeated int64 cpu_ids = 2;
                                   repeated ContainerMemory memory = 3; }
    ContainerDevices { string resource_name = 1; repeated string device_ids = 2; TopologyInfo topology = 3; }
    TopologyInfo { repeated NUMANode nodes = 1; }
    NUMANode { int64 ID = 1; }

Fields not listed (cpu_ids, memory, later additions) are skipped, as protobuf readers do.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import stat

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

try:
    import grpc
    HAS_GRPC = True
except ImportError:
    HAS_GRPC = False

DEFAULT_SOCKET = '/var/lib/kubelet/pod-resources/kubelet.sock'
METHOD = '/v1.PodResourcesLister/GetAllocatableResources'

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
_FIXED_SIZES = {FIXED64: 8, FIXED32: 4}


class PodResourcesError(GpuOpsError):
    """The call failed or its answer could not be read; the message says which."""


def _varint(data, position):
    """(value, next position) of the base-128 varint at `position`."""
    value = shift = 0
    while True:
        if position >= len(data):
            raise PodResourcesError('truncated varint at byte %d' % position)
        byte = data[position]
        position += 1
        value |= (byte & 0x7f) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
        if shift > 63:
            raise PodResourcesError('varint longer than 10 bytes at byte %d' % position)


def fields(data):
    """Yield (field number, wire type, value) of a message: int for varints, bytes otherwise."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise PodResourcesError('field number 0 at byte %d' % position)
        if wire_type == VARINT:
            value, position = _varint(data, position)
        elif wire_type == LENGTH_DELIMITED:
            size, position = _varint(data, position)
            value, position = data[position:position + size], position + size
            if len(value) != size:
                raise PodResourcesError('field %d: %d bytes announced, %d present' % (number, size, len(value)))
        elif wire_type in _FIXED_SIZES:
            size = _FIXED_SIZES[wire_type]
            value, position = data[position:position + size], position + size
            if len(value) != size:
                raise PodResourcesError('field %d: truncated fixed-size value' % number)
        else:  # 3 and 4 are the deprecated groups, 6 and 7 do not exist: none can occur in these messages
            raise PodResourcesError('field %d has unsupported wire type %d' % (number, wire_type))
        yield number, wire_type, value


def _text(value, what):
    try:
        return value.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise PodResourcesError('%s is not UTF-8: %s' % (what, exc)) from exc


def _numa_nodes(topology):
    nodes = []
    for number, wire_type, value in fields(topology):
        if number == 1 and wire_type == LENGTH_DELIMITED:
            node_id = next((v for n, t, v in fields(value) if n == 1 and t == VARINT), 0)
            # int64 is sent as its two's complement in 64 bits.
            nodes.append(node_id - (1 << 64) if node_id >= 1 << 63 else node_id)
    return nodes


def decode_container_devices(data):
    """{resource_name, device_ids, numa_nodes} of one ContainerDevices message."""
    devices = {'resource_name': '', 'device_ids': [], 'numa_nodes': []}
    for number, wire_type, value in fields(data):
        if wire_type != LENGTH_DELIMITED:
            continue
        if number == 1:
            devices['resource_name'] = _text(value, 'resource_name')
        elif number == 2:
            devices['device_ids'].append(_text(value, 'device_id'))
        elif number == 3:
            devices['numa_nodes'].extend(_numa_nodes(value))
    return devices


def decode_allocatable_response(data):
    """The ContainerDevices entries of an AllocatableResourcesResponse."""
    return [decode_container_devices(value) for number, wire_type, value in fields(bytes(data)) if number == 1 and wire_type == LENGTH_DELIMITED]


def device_ids(entries, resource_name):
    """The device IDs the kubelet can allocate for `resource_name` (entries may repeat a resource)."""
    return [device for entry in entries if entry['resource_name'] == resource_name for device in entry['device_ids']]


def _empty_request(_request):
    # AllocatableResourcesRequest has no fields: its encoding is zero bytes.
    return b''


def get_allocatable(socket_path, timeout):
    """Call GetAllocatableResources on the kubelet's unix socket; the decoded ContainerDevices entries."""
    if not HAS_GRPC:
        raise PodResourcesError('grpcio is not installed')
    try:
        mode = os.stat(socket_path).st_mode
    except OSError as exc:
        raise PodResourcesError('socket missing: %s (%s)' % (socket_path, exc.strerror)) from exc
    if not stat.S_ISSOCK(mode):
        raise PodResourcesError('%s is not a socket' % socket_path)
    with grpc.insecure_channel('unix://' + os.path.abspath(socket_path)) as channel:
        call = channel.unary_unary(METHOD, request_serializer=_empty_request, response_deserializer=bytes)
        try:
            answer = call(None, timeout=timeout)
        except grpc.RpcError as exc:
            raise PodResourcesError('GetAllocatableResources on %s failed: %s %s' % (socket_path, exc.code().name, exc.details())) from exc
    return decode_allocatable_response(answer)
