#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: driver_upgrade_pods
short_description: The Pod steps of the GPU Operator's driver upgrade on one node - wait for jobs, delete the GPU Pods
description:
  - O(step=wait-for-jobs) (the Operator's C(wait-for-jobs-required)) waits while a Pod of the node that O(pod_selector)
    matches is Running or Pending, at most O(timeout) seconds (V(0) for ever), then returns - on a timeout too
    (RV(timed_out)); the Operator then goes on to delete the GPU Pods.
  - O(step=pod-deletion) (C(pod-deletion-required)) deletes the node's Pods that use a GPU - Running or Pending Pods one of
    whose containers requests or limits a resource named C(nvidia.com/gpu...) or C(nvidia.com/mig-...) - through the
    Eviction API, so PodDisruptionBudgets apply, and waits until they are gone, at most O(timeout) seconds (V(0) for
    ever). As the Operator's drain helper, it deletes none of them when one is a DaemonSet or static Pod, has no
    controller (unless O(force)) or an emptyDir volume (unless O(delete_empty_dir)); RV(done) is then false and
    RV(problems) says why, as when a Pod is still there at the end. The role then drains the node (C(drain.enable)) or
    fails it.
  - Runs on any host that reaches the Kubernetes API (role gpuops.gpu_operator.gpu_driver_upgrade runs it on the first
    C(kube_api) host).
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
options:
  node_name:
    description: Name of the Node object.
    type: str
    required: true
  step:
    description: The upgrade step.
    type: str
    required: true
    choices: [wait-for-jobs, pod-deletion]
  pod_selector:
    description: The label selector of the Pods to wait for (O(step=wait-for-jobs)); empty waits for none.
    type: str
    default: ''
  timeout:
    description: Seconds to wait; V(0) waits for ever.
    type: int
    default: 0
  force:
    description: Also delete GPU Pods that no controller manages (O(step=pod-deletion)).
    type: bool
    default: false
  delete_empty_dir:
    description: Also delete GPU Pods with emptyDir volumes, whose data is lost (O(step=pod-deletion)).
    type: bool
    default: false
  poll_interval:
    description: Seconds between two reads.
    type: float
    default: 2
extends_documentation_fragment:
  - gpuops.gpu_operator.k8s_auth
requirements:
  - kubernetes (the Python client)
notes:
  - Supports check mode - it reads the node's Pods once and returns what it would wait for or delete.
'''

EXAMPLES = r'''
- name: Wait for the training jobs, at most an hour
  gpuops.gpu_operator.driver_upgrade_pods:
    node_name: gpu-1
    step: wait-for-jobs
    pod_selector: app=training
    timeout: 3600

- name: Delete the Pods that use a GPU
  gpuops.gpu_operator.driver_upgrade_pods:
    node_name: gpu-1
    step: pod-deletion
    timeout: 300
'''

RETURN = r'''
done:
  description: The step ended as the upgrade goes on - no job left or its time ran out (wait-for-jobs); every GPU Pod gone (pod-deletion).
  returned: always
  type: bool
pods:
  description: The Pods the step looked at - those still at work (wait-for-jobs), the GPU Pods of the node (pod-deletion), as namespace/name.
  returned: always
  type: list
  elements: str
deleted:
  description: The GPU Pods evicted (to be evicted, in check mode).
  returned: always
  type: list
  elements: str
problems:
  description: Why the GPU Pods were not all deleted; empty when they were.
  returned: always
  type: list
  elements: str
timed_out:
  description: The time ran out while Pods were still there.
  returned: always
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import upgrade_pods


def run(module, api):
    params = module.params
    node, timeout, interval = params['node_name'], params['timeout'], params['poll_interval']
    if params['step'] == 'wait-for-jobs':
        if not params['pod_selector']:
            return dict(changed=False, done=True, pods=[], deleted=[], problems=[], timed_out=False)
        if module.check_mode:
            left = upgrade_pods.running(upgrade_pods.node_pods(api, node, params['pod_selector']))
            return dict(changed=False, done=True, pods=left, deleted=[], problems=[], timed_out=False)
        waited = upgrade_pods.wait_for_completion(api, node, params['pod_selector'], timeout, interval)
        return dict(changed=False, done=True, pods=waited['running'], deleted=[], problems=[], timed_out=waited['timed_out'])
    plan = upgrade_pods.deletion(upgrade_pods.node_pods(api, node), params['force'], params['delete_empty_dir'])
    deleted = [upgrade_pods.name_of(pod) for pod in plan['delete']]
    result = dict(changed=bool(deleted), done=not plan['problems'], pods=plan['gpu'], deleted=deleted, problems=plan['problems'],
                  timed_out=False)
    if module.check_mode or not deleted:
        return result
    gone = upgrade_pods.delete_pods(api, plan['delete'], timeout, interval)
    if gone['left']:
        result.update(done=False, timed_out=gone['timed_out'],
                      problems=['%s is still there after %ss (podDeletion.timeoutSeconds)' % (name, timeout) for name in gone['left']])
    return result


def main():
    argument_spec = dict(
        node_name=dict(type='str', required=True),
        step=dict(type='str', required=True, choices=['wait-for-jobs', 'pod-deletion']),
        pod_selector=dict(type='str', default=''),
        timeout=dict(type='int', default=0),
        force=dict(type='bool', default=False),
        delete_empty_dir=dict(type='bool', default=False),
        poll_interval=dict(type='float', default=2),
    )
    argument_spec.update(k8s_client.AUTH_ARG_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    api = k8s_client.connect(module)
    try:
        module.exit_json(**run(module, api))
    except GpuOpsError as exc:
        fail_from_exception(module, exc)


if __name__ == '__main__':
    main()
