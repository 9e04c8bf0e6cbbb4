# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The device plugin checks: socket names, the expected count, and every problem they name."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import socket

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import device_plugin as check

GPU = 'nvidia.com/gpu'


@pytest.mark.parametrize('resource, name', [
    ('nvidia.com/gpu', 'nvidia-gpu.sock'),
    ('nvidia.com/gpu.shared', 'nvidia-gpu.shared.sock'),
    ('nvidia.com/mig-1g.10gb', 'nvidia-mig-1g.10gb.sock'),
    ('example.org/mig-3g.40gb', 'nvidia-mig-3g.40gb.sock'),
])
def test_socket_name_follows_the_plugin(resource, name):
    assert check.socket_name(resource) == name


@pytest.mark.parametrize('resource', ['gpu', 'nvidia.com/', '/gpu', 'nvidia.com/gpu/x', 'Nvidia.com/gpu', '', None, 'nvidia.com/-gpu'])
def test_socket_name_rejects_bad_resource_names(resource):
    with pytest.raises(check.CheckError, match='resource_name must be an extended resource name'):
        check.socket_name(resource)


LABELS_H100_X4 = {'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '4'}
LABELS_MIG = {'nvidia.com/gpu.count': '2', 'nvidia.com/gpu.replicas': '0', 'nvidia.com/mig-1g.10gb.count': '7', 'nvidia.com/mig-1g.10gb.replicas': '1'}


@pytest.mark.parametrize('resource, labels, options, want', [
    (GPU, {'nvidia.com/gpu.count': '8', 'nvidia.com/gpu.replicas': '1'}, {}, (8, 8, 1, 'label nvidia.com/gpu.count, label nvidia.com/gpu.replicas')),
    (GPU, LABELS_H100_X4, {}, (4, 1, 4, 'label nvidia.com/gpu.count, label nvidia.com/gpu.replicas')),
    ('nvidia.com/gpu.shared', LABELS_H100_X4, {}, (4, 1, 4, 'label nvidia.com/gpu.count, label nvidia.com/gpu.replicas')),
    (GPU, {'nvidia.com/gpu.count': '2'}, {}, (2, 2, 1, 'label nvidia.com/gpu.count, no sharing')),
    (GPU, LABELS_H100_X4, {'replicas': 2}, (2, 1, 2, 'label nvidia.com/gpu.count, option replicas')),
    (GPU, {}, {'gpu_count': 3, 'replicas': 2}, (6, 3, 2, 'option gpu_count, option replicas')),
    (GPU, {}, {'expected_count': 5}, (5, None, None, 'expected_count')),
    (GPU, LABELS_H100_X4, {'expected_count': 1}, (1, None, None, 'expected_count')),
    ('nvidia.com/mig-1g.10gb', LABELS_MIG, {}, (7, 7, 1, 'label nvidia.com/mig-1g.10gb.count, label nvidia.com/mig-1g.10gb.replicas')),
])
def test_expected_count(resource, labels, options, want):
    got = check.expected(resource, labels, 'n1', **options)
    assert (got['count'], got['gpu_count'], got['replicas'], got['source']) == want


@pytest.mark.parametrize('resource, labels, options, message', [
    (GPU, {}, {}, 'cannot tell how many nvidia.com/gpu devices to expect: Node n1 has no label nvidia.com/gpu.count'),
    (GPU, {'nvidia.com/gpu.count': 'two'}, {}, "Node n1 label nvidia.com/gpu.count='two' is not an integer"),
    (GPU, {'nvidia.com/gpu.count': '-1'}, {}, "Node n1 label nvidia.com/gpu.count='-1' is negative"),
    (GPU, LABELS_MIG, {}, r'nvidia.com/gpu devices to expect: 2 GPU\(s\) x 0 replica\(s\) .* is none'),
    (GPU, {}, {'expected_count': 0}, 'expected_count must be 1 or more, got 0'),
])
def test_expected_count_errors(resource, labels, options, message):
    with pytest.raises(check.CheckError, match=message):
        check.expected(resource, labels, 'n1', **options)


def test_observe_sockets_wants_unix_sockets(tmp_path):
    (tmp_path / 'kubelet.sock').write_text('a regular file is not a socket')
    with socket.socket(socket.AF_UNIX) as plugin:
        plugin.bind(str(tmp_path / 'nvidia-gpu.sock'))
        assert check.observe_sockets(str(tmp_path), GPU) == {str(tmp_path / 'kubelet.sock'): False, str(tmp_path / 'nvidia-gpu.sock'): True}
        assert check.observe_sockets(str(tmp_path), 'nvidia.com/mig-1g.10gb') == {
            str(tmp_path / 'kubelet.sock'): False, str(tmp_path / 'nvidia-mig-1g.10gb.sock'): False}


@pytest.mark.parametrize('node, want', [
    ({'metadata': {'labels': {'a': 'b'}}, 'status': {'capacity': {GPU: '4', 'cpu': '8'}, 'allocatable': {GPU: '3'}}}, ('4', '3', {'a': 'b'})),
    ({'metadata': {}, 'status': {'capacity': {'cpu': '8'}}}, (None, None, {})),
    ({'metadata': {'name': 'n'}}, (None, None, {})),
])
def test_node_resources(node, want):
    assert check.node_resources(node, GPU) == want


@pytest.mark.parametrize('value, want', [('4', 4), ('0', 0), (None, None)])
def test_quantity(value, want):
    assert check.quantity(value) == want


@pytest.mark.parametrize('value', ['1500m', '1Ki', 'x'])
def test_quantity_rejects_fractions_and_suffixes(value):
    with pytest.raises(check.CheckError, match='is not a whole number'):
        check.quantity(value)


SOCKETS_OK = {'/d/kubelet.sock': True, '/d/nvidia-gpu.sock': True}
FOUR = {'count': 4, 'gpu_count': 1, 'replicas': 4, 'source': 'labels'}
TWO = {'count': 2, 'gpu_count': 2, 'replicas': 1, 'source': 'labels'}


@pytest.mark.parametrize('sockets, capacity, allocatable, want, devices, expected', [
    (SOCKETS_OK, 4, 4, FOUR, None, []),
    (SOCKETS_OK, 4, 4, FOUR, ['a::0', 'a::1', 'a::2', 'a::3'], []),
    ({'/d/kubelet.sock': False, '/d/nvidia-gpu.sock': True}, 2, 2, TWO, None,
     ['socket missing: /d/kubelet.sock (served by the kubelet)']),
    ({'/d/kubelet.sock': True, '/d/nvidia-gpu.sock': False}, 2, 2, TWO, None,
     ['socket missing: /d/nvidia-gpu.sock (served by the device plugin for nvidia.com/gpu)']),
    (SOCKETS_OK, None, None, TWO, None, ['capacity missing: Node n1 has no status.capacity[nvidia.com/gpu]']),
    (SOCKETS_OK, 2, None, TWO, None, ['allocatable missing: Node n1 has no status.allocatable[nvidia.com/gpu]']),
    (SOCKETS_OK, 1, 1, FOUR, None, [
        'count mismatch: Node n1 capacity nvidia.com/gpu is 1, expected 4 (labels): sharing with 4 replicas is expected but capacity '
        'is not multiplied (is the device plugin config applied?)',
        'count mismatch: Node n1 allocatable nvidia.com/gpu is 1, expected 4 (unhealthy devices are not allocatable)']),
    (SOCKETS_OK, 3, 3, TWO, None, [
        'count mismatch: Node n1 capacity nvidia.com/gpu is 3, expected 2 (labels)',
        'count mismatch: Node n1 allocatable nvidia.com/gpu is 3, expected 2 (unhealthy devices are not allocatable)']),
    (SOCKETS_OK, 2, 1, TWO, None, ['count mismatch: Node n1 allocatable nvidia.com/gpu is 1, expected 2 (unhealthy devices are not allocatable)']),
    (SOCKETS_OK, 2, 2, TWO, ['GPU-a'], ['count mismatch: the kubelet PodResources API lists 1 allocatable nvidia.com/gpu device(s), expected 2']),
    (SOCKETS_OK, 2, 2, TWO, [], ['count mismatch: the kubelet PodResources API lists 0 allocatable nvidia.com/gpu device(s), expected 2']),
])
def test_problems(sockets, capacity, allocatable, want, devices, expected):
    assert check.problems('n1', GPU, sockets, capacity, allocatable, want, devices) == expected
