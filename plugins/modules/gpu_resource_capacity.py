#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_resource_capacity
short_description: Wait until a Node advertises its GPU resource with the expected count
description:
  - The first check of the plugin validation (role gpuops.gpu_operator.gpu_cluster_validator runs it for every GPU node
    and every resource the node should advertise, before any Pod requests it) - waits until the Node's
    C(status.capacity) and C(status.allocatable) list O(resource_name) with the expected count (GPUs x replicas),
    polling until O(timeout).
  - Runs on any host that reaches the Kubernetes API. With O(node_checks=true), run on the GPU node itself, it also
    checks what the kubelet shows there - its registration socket C(kubelet.sock) and the plugin's socket
    (C(nvidia-<name>.sock), where C(<name>) is O(resource_name) after the C(/), as NVIDIA's k8s-device-plugin names
    it) in O(socket_dir), and, when the grpcio library is importable, that the kubelet's PodResources v1
    C(GetAllocatableResources) on O(pod_resources_socket) lists as many device IDs of O(resource_name) (without grpcio
    that check is skipped and RV(pod_resources) says so; neither protobuf nor grpcio is required).
  - Fails with a message naming each missing piece (capacity, socket) and each count mismatch, for example
    time-slicing configured but the capacity not multiplied.
  - Never changes anything.
  - Was called C(gpuops.gpu_operator.k8s_device_plugin), which still redirects here; that name checked the sockets by
    default, this one with O(node_checks=true).
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
options:
  node_name:
    description: Name of the Node object of this node.
    type: str
    required: true
  resource_name:
    description:
      - The extended resource the plugin advertises, for example C(nvidia.com/gpu), C(nvidia.com/gpu.shared)
        (time-slicing or MPS with renameByDefault) or a MIG resource C(nvidia.com/mig-1g.10gb) (mixed strategy).
    type: str
    default: nvidia.com/gpu
  expected_count:
    description:
      - How many devices O(resource_name) must show. Overrides O(gpu_count) and O(replicas).
      - When unset, O(gpu_count) x O(replicas), each taken from the option or else from the Node's labels
        C(<resource>.count) and C(<resource>.replicas) (set by M(gpuops.gpu_operator.nfd_labels); for a
        C(.shared) resource the labels of the plain name). Without option or label, replicas is 1 and a missing
        GPU count is an error.
    type: int
  gpu_count:
    description: Physical GPUs (or MIG devices) behind O(resource_name); the C(<resource>.count) label when unset.
    type: int
  replicas:
    description: Replicas per device under time-slicing or MPS; the C(<resource>.replicas) label, else 1, when unset.
    type: int
  node_checks:
    description:
      - Also check the kubelet's and the plugin's sockets in O(socket_dir) and the PodResources API on
        O(pod_resources_socket). Only the GPU node itself shows them; run the module there.
    type: bool
    default: false
  timeout:
    description: Seconds to wait for the plugin to register; C(0) checks once.
    type: int
    default: 120
  poll_interval:
    description: Seconds between two checks.
    type: float
    default: 2
  socket_dir:
    description: The kubelet's device plugin directory (with O(node_checks=true)).
    type: path
    default: /var/lib/kubelet/device-plugins
  pod_resources_socket:
    description: The kubelet's PodResources API socket (with O(node_checks=true)).
    type: path
    default: /var/lib/kubelet/pod-resources/kubelet.sock
extends_documentation_fragment:
  - gpuops.gpu_operator.k8s_auth
requirements:
  - kubernetes (the Python client)
  - grpcio (optional) for the PodResources check with O(node_checks=true)
notes:
  - Supports check mode (it only reads).
  - A module cannot print while it runs; each change seen while waiting is returned in RV(progress) (shown with C(-v))
    and logged to the node's journal.
'''

EXAMPLES = r'''
- name: Wait until the Node advertises its GPUs (count from the nfd_labels labels)
  gpuops.gpu_operator.gpu_resource_capacity:
    node_name: gpu-1
    timeout: 300

- name: On the node itself, also the kubelet's sockets and PodResources
  gpuops.gpu_operator.gpu_resource_capacity:
    node_name: "{{ ansible_facts.nodename }}"
    node_checks: true

- name: Four time-sliced replicas of one GPU
  gpuops.gpu_operator.gpu_resource_capacity:
    node_name: gpu-1
    gpu_count: 1
    replicas: 4

- name: A MIG resource under the mixed strategy
  gpuops.gpu_operator.gpu_resource_capacity:
    node_name: gpu-2
    resource_name: nvidia.com/mig-1g.10gb
    expected_count: 7
'''

RETURN = r'''
registered:
  description: Whether every check passed.
  returned: always
  type: bool
sockets:
  description: Each socket checked and whether a unix socket is there; empty without O(node_checks).
  returned: always
  type: dict
  sample: {/var/lib/kubelet/device-plugins/kubelet.sock: true, /var/lib/kubelet/device-plugins/nvidia-gpu.sock: true}
capacity:
  description: C(status.capacity) of O(resource_name) on the Node; null when not listed.
  returned: always
  type: int
  sample: 4
allocatable:
  description: C(status.allocatable) of O(resource_name) on the Node; null when not listed.
  returned: always
  type: int
  sample: 4
devices:
  description: Device IDs of O(resource_name) from PodResources GetAllocatableResources; empty when not checked.
  returned: always
  type: list
  elements: str
  sample: [GPU-0f5a7b4c-0000-0000-0000-000000000000]
pod_resources:
  description: Whether the PodResources check ran (C(checked)), failed, or why it did not run.
  returned: always
  type: str
  sample: 'skipped: grpcio is not installed'
expected:
  description: The device count expected and where it came from.
  returned: always
  type: dict
  sample: {count: 4, gpu_count: 1, replicas: 4, source: 'label nvidia.com/gpu.count, label nvidia.com/gpu.replicas'}
elapsed:
  description: Seconds spent waiting.
  returned: always
  type: float
progress:
  description: What each check saw, each time it changed, as C(<seconds>s) followed by the problems or C(registered).
  returned: always
  type: list
  elements: str
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import device_plugin as check
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import pod_resources
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.node_api import read_node


def read_node_if_any(api, node_name):
    """The Node as decoded JSON, or None while it does not exist."""
    try:
        return read_node(api, node_name)
    except k8s_client.ApiError as exc:
        if exc.status == k8s_client.NOT_FOUND:
            return None
        raise


def observe(module, api):
    """One look at sockets, Node and PodResources; returns (result fields, problems)."""
    params = module.params
    name, resource = params['node_name'], params['resource_name']
    sockets = check.observe_sockets(params['socket_dir'], resource) if params['node_checks'] else {}
    found = dict(sockets=sockets, capacity=None, allocatable=None, expected=None, devices=[],
                 pod_resources='skipped: grpcio is not installed' if params['node_checks'] else 'skipped: node_checks is false')
    node = read_node_if_any(api, name)
    if node is None:
        # Nothing to compare with yet (the kubelet registers the Node): report the sockets and wait.
        return found, ['Node %s not found' % name] + check.socket_problems(sockets, resource)
    capacity, allocatable, labels = check.node_resources(node, resource)
    capacity, allocatable = check.quantity(capacity), check.quantity(allocatable)
    want = check.expected(resource, labels, name, params['expected_count'], params['gpu_count'], params['replicas'])
    found.update(capacity=capacity, allocatable=allocatable, expected=want)
    problems = []
    devices = None
    if params['node_checks'] and pod_resources.HAS_GRPC:
        try:
            entries = pod_resources.get_allocatable(params['pod_resources_socket'], timeout=max(params['poll_interval'], 5))
            devices = pod_resources.device_ids(entries, resource)
            found.update(devices=devices, pod_resources='checked')
        except pod_resources.PodResourcesError as exc:
            found['pod_resources'] = 'failed: %s' % exc
            problems.append('PodResources: %s' % exc)
    problems.extend(check.problems(name, resource, sockets, capacity, allocatable, want, devices))
    return found, problems


def main():
    argument_spec = dict(
        node_name=dict(type='str', required=True),
        resource_name=dict(type='str', default=check.DEFAULT_RESOURCE),
        expected_count=dict(type='int'),
        gpu_count=dict(type='int'),
        replicas=dict(type='int'),
        node_checks=dict(type='bool', default=False),
        timeout=dict(type='int', default=120),
        poll_interval=dict(type='float', default=2),
        socket_dir=dict(type='path', default=check.DEFAULT_SOCKET_DIR),
        pod_resources_socket=dict(type='path', default=pod_resources.DEFAULT_SOCKET),
    )
    argument_spec.update(k8s_client.AUTH_ARG_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    result = dict(changed=False, registered=False, sockets={}, capacity=None, allocatable=None, devices=[], pod_resources='not run',
                  expected=None, elapsed=0.0, progress=[])
    if params['timeout'] < 0 or params['poll_interval'] <= 0:
        module.fail_json(msg='timeout must be 0 or more and poll_interval more than 0, got %s and %s' % (params['timeout'], params['poll_interval']),
                         **result)
    try:
        check.socket_name(params['resource_name'])
    except GpuOpsError as exc:
        fail_from_exception(module, exc, **result)
    api = k8s_client.connect(module)
    start = time.monotonic()
    last = None
    while True:
        try:
            found, problems = observe(module, api)
        except GpuOpsError as exc:
            result['elapsed'] = round(time.monotonic() - start, 1)
            fail_from_exception(module, exc, **result)
        elapsed = time.monotonic() - start
        result.update(found, elapsed=round(elapsed, 1), registered=not problems)
        seen = '; '.join(problems) or 'registered'
        if seen != last:
            result['progress'].append('%.1fs: %s' % (elapsed, seen))
            module.log('gpu_resource_capacity %s %s: %s' % (params['node_name'], params['resource_name'], seen))
            last = seen
        if not problems:
            module.exit_json(**result)
        if elapsed + params['poll_interval'] > params['timeout']:
            # The timeout, not the measured time, so the message is the same however busy the controller is.
            module.fail_json(msg='%s not registered on Node %s after %ds: %s' % (params['resource_name'], params['node_name'], params['timeout'], seen),
                             **result)
        time.sleep(params['poll_interval'])


if __name__ == '__main__':
    main()
