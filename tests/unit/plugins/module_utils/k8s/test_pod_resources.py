# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Decoding AllocatableResourcesResponse from hand-assembled protobuf bytes (field numbers of the public api.proto)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import pod_resources

# ContainerDevices{resource_name: "nvidia.com/gpu" (1), device_ids: "GPU-a", "GPU-b" (2), topology: {nodes: [{ID: 1}]} (3)}
GPU_DEVICES = (b'\x0a\x0envidia.com/gpu' + b'\x12\x05GPU-a' + b'\x12\x05GPU-b' + b'\x1a\x04' + b'\x0a\x02\x08\x01')
# ContainerDevices{resource_name: "nvidia.com/mig-1g.10gb", device_ids: "MIG-x"}, no topology
MIG_DEVICES = b'\x0a\x16nvidia.com/mig-1g.10gb' + b'\x12\x05MIG-x'
# cpu_ids (2) packed [0, 1]; memory (3) ContainerMemory{memory_type: "memory" (1), size (2): 300}; a future varint field 9
OTHER_FIELDS = b'\x12\x02\x00\x01' + b'\x1a\x0b\x0a\x06memory\x10\xac\x02' + b'\x48\x05'


def length_prefixed(data):
    assert len(data) < 128  # one-byte varint length
    return bytes([len(data)]) + data


# The last entry lists its device ID before its resource name: field order must not matter.
RESPONSE = (b'\x0a' + length_prefixed(GPU_DEVICES) + OTHER_FIELDS + b'\x0a' + length_prefixed(MIG_DEVICES)
            + b'\x0a' + length_prefixed(b'\x12\x05GPU-c\x0a\x0envidia.com/gpu'))


def test_decode_allocatable_response():
    assert pod_resources.decode_allocatable_response(RESPONSE) == [
        {'resource_name': 'nvidia.com/gpu', 'device_ids': ['GPU-a', 'GPU-b'], 'numa_nodes': [1]},
        {'resource_name': 'nvidia.com/mig-1g.10gb', 'device_ids': ['MIG-x'], 'numa_nodes': []},
        {'resource_name': 'nvidia.com/gpu', 'device_ids': ['GPU-c'], 'numa_nodes': []},
    ]


def test_device_ids_gathers_every_entry_of_the_resource():
    entries = pod_resources.decode_allocatable_response(RESPONSE)
    assert pod_resources.device_ids(entries, 'nvidia.com/gpu') == ['GPU-a', 'GPU-b', 'GPU-c']
    assert pod_resources.device_ids(entries, 'nvidia.com/mig-1g.10gb') == ['MIG-x']
    assert not pod_resources.device_ids(entries, 'nvidia.com/gpu.shared')


def test_empty_response_and_negative_numa_id():
    assert not pod_resources.decode_allocatable_response(b'')
    # NUMANode.ID = -1 as int64: ten varint bytes of two's complement
    topology = b'\x0a\x0b\x08' + b'\xff' * 9 + b'\x01'
    devices = b'\x0a\x01x' + b'\x1a' + length_prefixed(topology)
    assert pod_resources.decode_container_devices(devices)['numa_nodes'] == [-1]


def test_fixed_width_fields_are_skipped():
    # fixed64 (wire type 1) field 5 and fixed32 (wire type 5) field 6 around the resource name
    data = b'\x29' + b'\x00' * 8 + b'\x0a\x01r' + b'\x35' + b'\x00' * 4
    assert pod_resources.decode_container_devices(data) == {'resource_name': 'r', 'device_ids': [], 'numa_nodes': []}


@pytest.mark.parametrize('data, message', [
    (b'\x0a\x05abc', r'field 1: 5 bytes announced, 3 present'),
    (b'\x0a', 'truncated varint at byte 1'),
    (b'\x08\xff', 'truncated varint'),
    (b'\x08' + b'\xff' * 10 + b'\x01', 'varint longer than 10 bytes'),
    (b'\x0b', 'field 1 has unsupported wire type 3'),
    (b'\x02\x00', 'field number 0'),
    (b'\x29\x00\x00', 'field 5: truncated fixed-size value'),
])
def test_malformed_messages_fail_clearly(data, message):
    with pytest.raises(pod_resources.PodResourcesError, match=message):
        pod_resources.decode_allocatable_response(data)


def test_device_id_must_be_utf8():
    with pytest.raises(pod_resources.PodResourcesError, match='device_id is not UTF-8'):
        pod_resources.decode_container_devices(b'\x12\x01\xff')


def test_missing_socket_is_named(tmp_path):
    if not pod_resources.HAS_GRPC:
        pytest.fail('grpcio is a test requirement (see tests/cluster/test_gpu_resource_capacity.py)')
    with pytest.raises(pod_resources.PodResourcesError, match='socket missing: .*/kubelet.sock'):
        pod_resources.get_allocatable(str(tmp_path / 'kubelet.sock'), timeout=1)
    (tmp_path / 'file').write_text('')
    with pytest.raises(pod_resources.PodResourcesError, match='is not a socket'):
        pod_resources.get_allocatable(str(tmp_path / 'file'), timeout=1)
