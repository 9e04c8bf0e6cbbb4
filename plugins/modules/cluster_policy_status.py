#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: cluster_policy_status
short_description: Write the status of the nvidia.com/v1 ClusterPolicy as the GPU Operator writes it
description:
  - Sets C(status.state), C(status.namespace) and the conditions C(Ready) and C(Error) of a ClusterPolicy through its
    status subresource, which kubernetes.core.k8s cannot write, in the shape the GPU Operator (v26.7.0) gives them, so
    that monitoring written for the Operator reads them the same way.
  - C(ready) sets C(Ready=True) with O(reason) and the message, and C(Error=False) with reason C(Ready) and no message.
    C(notReady) sets C(Ready=False) with reason C(Error) and no message, and C(Error=True) with O(reason) and the message.
  - As the Operator's conditions do, a condition keeps its C(lastTransitionTime) while its status stays the same, so
    reporting the same outcome again reports no change.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
options:
  name:
    description: Name of the ClusterPolicy.
    type: str
    default: cluster-policy
  state:
    description: The state to record.
    type: str
    required: true
    choices: [ready, notReady]
  reason:
    description:
      - The Operator's reason. C(Reconciled), C(NoGPUNodes) (no node labelled C(nvidia.com/gpu.present=true)) and
        C(NFDLabelsMissing) (no node has a C(feature.node.kubernetes.io/) label) go with C(ready);
        C(OperandNotReady) (an operand, such as the validation, is not ready) and C(ReconcileFailed) (a stage failed to
        apply) go with C(notReady).
    type: str
    default: Reconciled
    choices: [NFDLabelsMissing, NoGPUNodes, OperandNotReady, ReconcileFailed, Reconciled]
  detail:
    description:
      - Message of the condition that carries O(reason). Defaults to the Operator's message for that reason, for example
        C(No GPU node found, watching for new nodes to join the cluster.) for C(NoGPUNodes).
    type: str
    default: ''
  namespace:
    description: Namespace of the operands, recorded in C(status.namespace).
    type: str
    default: gpu-operator
requirements:
  - kubernetes (the Python client)
extends_documentation_fragment:
  - gpuops.gpu_operator.k8s_auth
notes:
  - Supports check mode.
'''

EXAMPLES = r'''
- name: Record that every GPU node passed validation
  gpuops.gpu_operator.cluster_policy_status:
    state: ready

- name: Record that validation failed on a node
  gpuops.gpu_operator.cluster_policy_status:
    state: notReady
    reason: OperandNotReady
    detail: "ClusterPolicy is not ready; states not ready: [state-operator-validation]; gpu-2: plugin validation failed: ..."
'''

RETURN = r'''
status:
  description: The status now recorded.
  returned: success
  type: dict
  sample:
    state: ready
    namespace: gpu-operator
    conditions:
      - {type: Ready, status: 'True', reason: Reconciled, message: ClusterPolicy is ready as all resources have been successfully reconciled}
      - {type: Error, status: 'False', reason: Ready, message: ''}
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.policy_status import REASONS, policy_status

GROUP = 'nvidia.com'
VERSION = 'v1'
PLURAL = 'clusterpolicies'


def main():
    argument_spec = dict(
        name=dict(type='str', default='cluster-policy'),
        state=dict(type='str', required=True, choices=['ready', 'notReady']),
        reason=dict(type='str', default='Reconciled', choices=sorted(REASONS)),
        detail=dict(type='str', default=''),
        namespace=dict(type='str', default='gpu-operator'),
    )
    argument_spec.update(k8s_client.AUTH_ARG_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    api = k8s_client.connect(module)
    from kubernetes.client import CustomObjectsApi  # pylint: disable=import-outside-toplevel  # present: connect() checked
    custom = CustomObjectsApi(api.client)
    policy = k8s_client.ObjectRef('ClusterPolicy', params['name'], PLURAL, GROUP)

    def attempt():
        try:
            current = api.read('get', policy, custom.get_cluster_custom_object, GROUP, VERSION, PLURAL, params['name'])
        except k8s_client.ApiError as exc:
            # --check on a cluster without it: the operands' play only previewed the ClusterPolicy (or its CRD), so
            # the status is shown as this run would write it on the ClusterPolicy it creates.
            if not (module.check_mode and exc.status == k8s_client.NOT_FOUND):
                raise
            module.warn('ClusterPolicy %s does not exist yet (check mode: this run would create it); the status is the one '
                        'the run would write' % params['name'])
            return policy_status(None, params['state'], params['reason'], params['detail'], params['namespace']), lambda: None
        resource_version = (current.get('metadata') or {}).get('resourceVersion')
        if not isinstance(resource_version, str) or not resource_version:
            raise k8s_client.ApiError('cannot get %s: the API\'s answer has no metadata.resourceVersion, which the status write '
                                      'must carry: %r' % (policy, str(current)[:200]))
        status = policy_status(current.get('status'), params['state'], params['reason'], params['detail'], params['namespace'])
        if status == current.get('status'):
            return status, None
        # Guarded by the resourceVersion read: a status written meanwhile is read again, not overwritten.
        body = {'metadata': {'resourceVersion': resource_version}, 'status': status}
        return status, lambda: api.call('patch', policy._replace(subresource='status'), custom.patch_cluster_custom_object_status,
                                        GROUP, VERSION, PLURAL, params['name'], body)

    try:
        status, changed = api.read_modify_write(attempt, module.check_mode)
    except GpuOpsError as exc:
        fail_from_exception(module, exc)
    module.exit_json(changed=changed, status=status)


if __name__ == '__main__':
    main()
