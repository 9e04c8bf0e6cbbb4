#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_validation_results
short_description: Wait for the GPU validation Pods of each node and report per node what passed and what failed
description:
  - Watches the validation Pods of every node in O(nodes) together, polling every O(poll_interval) seconds, until each
    node passed or its O(timeout) ran out, and returns one result per node.
  - With O(pods=validator), the Pod of the C(nvidia-operator-validator) DaemonSet on each node, which is Ready only when
    its init containers C(driver-validation), C(toolkit-validation), C(cuda-validation) and C(plugin-validation) passed,
    in that order, as the GPU Operator's validator runs them. A node that did not pass names the first component that
    did not, and whether it failed (exited non-zero), is still running or did not run.
  - With O(pods=plugin), the C(nvidia-device-plugin-validator) Pods on each node (one per GPU resource, made by the role
    gpuops.gpu_operator.gpu_cluster_validator); a node passes when every one of them Succeeded.
  - For each node that did not pass, the evidence is the Pod's phase, its containers that wait, ended or restarted, its
    conditions and events, the log tail of the container that did not pass (and of the cuda component's
    C(nvidia-cuda-validator) Pod), and the Node's deploy label, GPU resources and taints.
  - Never changes anything.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
options:
  namespace:
    description: Namespace of the validator.
    type: str
    default: gpu-operator
  nodes:
    description: Names of the Nodes to report on.
    type: list
    elements: str
    required: true
  pods:
    description: Which Pods to watch, the validator DaemonSet's or the plugin validation Pods.
    type: str
    choices: [validator, plugin]
    default: validator
  timeout:
    description:
      - Seconds each node gets to pass. The nodes are watched together, so the wait lasts at most this long however many
        nodes there are. C(0) looks once.
    type: int
    default: 600
  poll_interval:
    description: Seconds between two looks at the Pods.
    type: float
    default: 5
  log_lines:
    description: Lines of each log kept in the evidence.
    type: int
    default: 10
extends_documentation_fragment:
  - gpuops.gpu_operator.k8s_auth
requirements:
  - kubernetes (the Python client)
notes:
  - Supports check mode (it only reads).
  - Each change seen while waiting is returned in RV(progress).
'''

EXAMPLES = r'''
- name: Wait for the validator on three nodes
  gpuops.gpu_operator.gpu_validation_results:
    namespace: gpu-operator
    nodes: [gpu-1, gpu-2, gpu-3]
    timeout: 600
  register: validated

- name: Name the nodes that failed
  ansible.builtin.debug:
    msg: "{{ validated.nodes | dict2items | selectattr('value.state', 'eq', 'failed') | map(attribute='key') }}"
'''

RETURN = r'''
nodes:
  description: One result per node of O(nodes), by Node name.
  returned: always
  type: dict
  sample:
    gpu-2:
      node: gpu-2
      state: failed
      component: plugin
      summary: "plugin validation failed: plugin-validation exited 1 (Error) (after 600s)"
      evidence:
        - Pod gpu-operator/nvidia-operator-validator-x7k2p phase Pending
        - "container plugin-validation waiting: CrashLoopBackOff"
        - "log: GPU resources are not discovered by the node"
        - Node advertises no nvidia.com/gpu or nvidia.com/mig-* resource
  contains:
    state:
      description: C(passed) or C(failed).
      type: str
    component:
      description: The component that did not pass (C(driver), C(toolkit), C(cuda), C(plugin)); null when it passed.
      type: str
    summary:
      description: One line saying what happened.
      type: str
    evidence:
      description: What shows why (empty when it passed).
      type: list
      elements: str
elapsed:
  description: Seconds spent.
  returned: always
  type: float
progress:
  description: Each change seen while waiting, as C(<seconds>s) and the count of nodes passed, failed and waiting.
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import validation_api
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception


def main():
    argument_spec = dict(
        namespace=dict(type='str', default='gpu-operator'),
        nodes=dict(type='list', elements='str', required=True),
        pods=dict(type='str', default='validator', choices=list(validation_api.KINDS)),
        timeout=dict(type='int', default=600),
        poll_interval=dict(type='float', default=5),
        log_lines=dict(type='int', default=10),
    )
    argument_spec.update(k8s_client.AUTH_ARG_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    result = dict(changed=False, nodes={}, elapsed=0.0, progress=[])
    if params['timeout'] < 0 or params['poll_interval'] <= 0 or params['log_lines'] < 0:
        module.fail_json(msg='timeout and log_lines must be 0 or more and poll_interval more than 0, got %s, %s and %s'
                         % (params['timeout'], params['log_lines'], params['poll_interval']), **result)
    api = k8s_client.connect(module)
    try:
        results, progress, elapsed = validation_api.wait(api, params['namespace'], params['nodes'], params['pods'], params['timeout'],
                                                         params['poll_interval'], params['log_lines'])
    except GpuOpsError as exc:
        fail_from_exception(module, exc, **result)
    module.exit_json(changed=False, nodes=results, elapsed=elapsed, progress=progress)


if __name__ == '__main__':
    main()
