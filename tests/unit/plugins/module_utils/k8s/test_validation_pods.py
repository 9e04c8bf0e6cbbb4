# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The reading of a node's validation Pods into its result (the validator's, its vectorAdd Pod, the Pods requesting a GPU
resource), as module gpu_validation_results does it on the API host. SOURCE: as tests/unit/plugins/plugin_utils/cluster/test_validation.py."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import validation_pods as v
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.validation import plugin_pod_name


# --- reading a node's Pods -----------------------------------------------------------------------

def validator_pod(*inits, ready=False, phase='Pending'):
    """A validator Pod whose init containers have the given (name, state, lastState, restartCount) statuses."""
    names = ['driver-validation', 'toolkit-validation', 'cuda-validation', 'plugin-validation']
    statuses = [{'name': name, 'state': state, 'lastState': last or {}, 'restartCount': restarts} for name, state, last, restarts in inits]
    return {'metadata': {'name': 'nvidia-operator-validator-abcde', 'namespace': 'gpu-operator'},
            'spec': {'nodeName': 'gpu-1', 'initContainers': [{'name': name} for name in names]},
            'status': {'phase': phase, 'initContainerStatuses': statuses,
                       'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}]}}


DONE = {'terminated': {'exitCode': 0, 'reason': 'Completed'}}
CRASHED = {'terminated': {'exitCode': 1, 'reason': 'Error'}}
BACKOFF = {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 10s restarting failed container'}}


@pytest.mark.parametrize('pod, expected', [
    (None, ('pending', 'driver', 'driver validation did not run: no nvidia-operator-validator Pod on the Node')),
    (validator_pod(*[(n, DONE, None, 0) for n in ('driver-validation', 'toolkit-validation', 'cuda-validation', 'plugin-validation')],
                   ready=True, phase='Running'),
     ('passed', None, 'driver, toolkit, cuda, plugin validation passed')),
    (validator_pod(('driver-validation', {'waiting': {'reason': 'ImagePullBackOff', 'message': 'Back-off pulling image'}}, None, 0)),
     ('pending', 'driver', 'driver validation did not run: the Pod did not start (ImagePullBackOff: Back-off pulling image)')),
    (validator_pod(('driver-validation', {'running': {}}, None, 0)),
     ('pending', 'driver', 'driver validation did not finish: driver-validation is still running')),
    (validator_pod(('driver-validation', DONE, None, 0), ('toolkit-validation', BACKOFF, CRASHED, 3)),
     ('pending', 'toolkit', 'toolkit validation failed: toolkit-validation exited 1 (Error)')),
    (validator_pod(('driver-validation', DONE, None, 0), ('toolkit-validation', DONE, None, 0), ('cuda-validation', CRASHED, None, 0)),
     ('pending', 'cuda', 'cuda validation failed: cuda-validation exited 1 (Error)')),
    (validator_pod(*[(n, DONE, None, 0) for n in ('driver-validation', 'toolkit-validation', 'cuda-validation')]),
     ('pending', 'plugin', 'plugin validation did not run: plugin-validation did not start (not started)')),
    (validator_pod(*[(n, DONE, None, 0) for n in ('driver-validation', 'toolkit-validation', 'cuda-validation', 'plugin-validation')]),
     ('pending', None, 'every validation passed but the nvidia-operator-validator container is not ready')),
], ids=['no Pod', 'Ready', 'image not pulled', 'driver waits', 'toolkit crash loop', 'cuda exited', 'plugin not started', 'main not ready'])
def test_validator_state(pod, expected):
    found = v.validator_state(pod)
    assert (found['state'], found['component'], found['summary']) == expected


def plugin_pod(node_name, resource, phase):
    return {'metadata': {'name': plugin_pod_name(node_name, resource), 'annotations': {v.RESOURCE_ANNOTATION: resource}},
            'status': {'phase': phase}}


@pytest.mark.parametrize('phases, expected', [
    ([], ('pending', 'plugin validation did not run: no nvidia-device-plugin-validator Pod on the Node')),
    (['Succeeded', 'Succeeded'], ('passed', 'a Pod requesting nvidia.com/mig-1g.20gb, nvidia.com/mig-3g.40gb ran vectorAdd')),
    (['Succeeded', 'Failed'], ('failed', 'plugin validation failed: the Pod requesting nvidia.com/mig-3g.40gb failed on the Node')),
    (['Succeeded', 'Pending'], ('pending', 'plugin validation did not finish: the Pod requesting nvidia.com/mig-3g.40gb is Pending')),
])
def test_plugin_state(phases, expected):
    pods = [plugin_pod('gpu-1', resource, phase) for resource, phase in zip(['nvidia.com/mig-1g.20gb', 'nvidia.com/mig-3g.40gb'], phases)]
    found = v.plugin_state(pods)
    assert (found['state'], found['summary']) == expected


def test_pod_and_node_evidence():
    pod = validator_pod(('driver-validation', DONE, None, 0), ('toolkit-validation', BACKOFF, CRASHED, 3))
    events = [{'type': 'Warning', 'reason': 'BackOff', 'message': 'Back-off restarting failed container',
               'involvedObject': {'kind': 'Pod', 'name': 'nvidia-operator-validator-abcde'}},
              {'type': 'Normal', 'reason': 'Pulled', 'involvedObject': {'kind': 'Pod', 'name': 'another'}}]
    log = 'line 1\n\nline 2\nline 3\n'
    assert v.pod_evidence(pod, events, log, log_lines=2, containers=['toolkit-validation']) == [
        'Pod gpu-operator/nvidia-operator-validator-abcde phase Pending',
        'container toolkit-validation waiting: CrashLoopBackOff: back-off 10s restarting failed container',
        'container toolkit-validation restarted 3 time(s), last exit 1 (Error)',
        'event Warning BackOff: Back-off restarting failed container', 'log: line 2', 'log: line 3']
    gpu_node = {'metadata': {'name': 'gpu-1', 'labels': {v.DEPLOY_LABEL: 'true'}},
                'spec': {'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}]},
                'status': {'capacity': {'cpu': '8', 'nvidia.com/gpu': '4'}, 'allocatable': {'nvidia.com/gpu': '3'}}}
    assert v.node_evidence(gpu_node) == ['Node label nvidia.com/gpu.deploy.operator-validator=true',
                                         'Node advertises nvidia.com/gpu capacity 4 allocatable 3', 'Node taint nvidia.com/gpu:NoSchedule']
    assert v.node_evidence({'metadata': {'name': 'x'}}) == ['Node has no label nvidia.com/gpu.deploy.operator-validator',
                                                            'Node advertises no nvidia.com/gpu or nvidia.com/mig-* resource']
