# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ClusterPolicy status against the GPU Operator's: states, conditions, reasons and messages.

SOURCE: NVIDIA/gpu-operator release v26.7.0 (tag commit 10ee5b3638b89e11e949412aafa5ba99279c3721; read at
a22dbf671f2e26f9a1e342f8eea28e196235e110, whose controllers/clusterpolicy_controller.go, internal/conditions/ and
api/nvidia/v1/ are identical to the tag): ClusterPolicyReconciler.Reconcile (the order of its outcomes),
internal/conditions/clusterpolicy.go (SetConditionsReady / SetConditionsError: which condition carries the reason
and the message), internal/conditions/consts.go (the reasons), api/nvidia/v1/clusterpolicy_types.go (the states).
The rows below are those facts as data; the Operator's messages are quoted because monitoring may match them.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import policy_status as ps

# (Operator outcome, state, Ready (status, reason, message), Error (status, reason, message))
OPERATOR_OUTCOMES = [
    ('a state step returned an error', 'notReady',
     ('False', 'Error', ''), ('True', 'ReconcileFailed', 'Failed to reconcile state-driver: <err>')),
    ('states not ready', 'notReady',
     ('False', 'Error', ''), ('True', 'OperandNotReady', 'ClusterPolicy is not ready; states not ready: [state-operator-validation]')),
    ('no node has an NFD label', 'ready',
     ('True', 'NFDLabelsMissing', 'No NFD labels found'), ('False', 'Ready', '')),
    ('no node labelled nvidia.com/gpu.present=true', 'ready',
     ('True', 'NoGPUNodes', 'No GPU node found, watching for new nodes to join the cluster.'), ('False', 'Ready', '')),
    ('all ready, GPU nodes present', 'ready',
     ('True', 'Reconciled', 'ClusterPolicy is ready as all resources have been successfully reconciled'), ('False', 'Ready', '')),
]
# CRD status.state enum (the Operator never persists 'ignored' at this release; 'disabled' is not in the enum).
OPERATOR_STATES = ('ignored', 'ready', 'notReady')

NFD_GPU_NODE = {'metadata': {'name': 'gpu-1', 'labels': {'feature.node.kubernetes.io/pci-10de.present': 'true', 'nvidia.com/gpu.present': 'true'}}}
NFD_CPU_NODE = {'metadata': {'name': 'cpu-1', 'labels': {'feature.node.kubernetes.io/cpu-model.vendor_id': 'Intel'}}}
BARE_NODE = {'metadata': {'name': 'bare', 'labels': {'kubernetes.io/os': 'linux'}}}
PASSED = {'node': 'gpu-1', 'state': 'passed', 'component': None, 'summary': 'every component passed'}
FAILED = {'node': 'gpu-2', 'state': 'failed', 'component': 'plugin', 'summary': 'plugin validation failed: Node gpu-2 has no status.capacity[nvidia.com/gpu]'}


def split(status):
    return {c['type']: (c['status'], c['reason'], c['message']) for c in status['conditions']}


@pytest.mark.parametrize('case, state, ready, error', OPERATOR_OUTCOMES, ids=[row[0] for row in OPERATOR_OUTCOMES])
def test_conditions_as_the_operator_writes_them(case, state, ready, error):
    reason = (ready if state == 'ready' else error)[1]
    message = (ready if state == 'ready' else error)[2]
    status = ps.policy_status(None, state, reason, message, 'gpu-operator', now='2026-01-01T00:00:00Z')
    assert status['state'] == state and state in OPERATOR_STATES and status['namespace'] == 'gpu-operator'
    assert split(status) == {'Ready': ready, 'Error': error}, case
    assert [c['type'] for c in status['conditions']] == ['Ready', 'Error']
    assert all('observedGeneration' not in c for c in status['conditions']), 'the Operator sets none'


@pytest.mark.parametrize('case, state, ready, error', [row for row in OPERATOR_OUTCOMES if row[1] == 'ready'], ids=lambda v: str(v)[:30])
def test_ready_reasons_default_to_the_operators_messages(case, state, ready, error):
    assert split(ps.policy_status(None, state, ready[1], '', 'gpu-operator'))['Ready'] == ready, case


@pytest.mark.parametrize('nodes, validation, stopped, expected', [
    # The Operator's order: a failed step wins over operands not ready, which win over the ready reasons.
    ([NFD_GPU_NODE], [FAILED], [{'node': 'gpu-3', 'stage': 'nvidia_driver', 'failure': 'nvidia_driver stage failed in task x: boom'}],
     ('notReady', 'ReconcileFailed', 'Failed to reconcile state-driver: gpu-3: nvidia_driver stage failed in task x: boom; '
                                     'gpu-2: plugin validation failed: Node gpu-2 has no status.capacity[nvidia.com/gpu]')),
    ([NFD_GPU_NODE], None, [{'node': 'gpu-3', 'stage': 'container_toolkit', 'failure': 'no runtime'}],
     ('notReady', 'ReconcileFailed', 'Failed to reconcile state-container-toolkit: gpu-3: no runtime')),
    ([NFD_GPU_NODE], None, [{'node': 'gpu-3', 'stage': 'gpu_node_labels', 'failure': 'bad label'}],
     ('notReady', 'ReconcileFailed', 'Failed to reconcile gpu_node_labels: gpu-3: bad label')),
    ([NFD_GPU_NODE], [PASSED, FAILED], None,
     ('notReady', 'OperandNotReady', 'ClusterPolicy is not ready; states not ready: [state-operator-validation]; '
                                     'gpu-2: plugin validation failed: Node gpu-2 has no status.capacity[nvidia.com/gpu]')),
    ([BARE_NODE], [], None, ('ready', 'NFDLabelsMissing', 'No NFD labels found')),
    ([NFD_CPU_NODE], [], None, ('ready', 'NoGPUNodes', 'No GPU node found, watching for new nodes to join the cluster.')),
    ([NFD_GPU_NODE, NFD_CPU_NODE], [PASSED], None,
     ('ready', 'Reconciled', 'ClusterPolicy is ready as all resources have been successfully reconciled')),
    ([NFD_GPU_NODE], [PASSED, dict(PASSED, node='gpu-4', state='skipped')], None,
     ('ready', 'Reconciled', 'ClusterPolicy is ready as all resources have been successfully reconciled')),
    # Validation did not run and no node stopped: nothing to record.
    ([NFD_GPU_NODE], None, None, None),
], ids=['stopped node wins', 'toolkit stage', 'stage without an Operator state', 'one node failed', 'no NFD label', 'no GPU node',
        'all passed', 'opted-out node', 'nothing ran'])
def test_outcome_in_the_operators_order(nodes, validation, stopped, expected):
    found = ps.outcome(nodes, validation, stopped)
    assert (found and (found['state'], found['reason'], found['message'])) == expected
    if found:
        ps.policy_status(None, found['state'], found['reason'], found['message'], 'gpu-operator')  # a valid pair


def test_transition_times_follow_the_status_only():
    first = ps.policy_status(None, 'notReady', 'OperandNotReady', 'gpu-2 failed', 'gpu-operator', now='2026-01-01T00:00:00Z')
    again = ps.policy_status(first, 'notReady', 'OperandNotReady', 'gpu-2 failed', 'gpu-operator', now='2026-01-02T00:00:00Z')
    assert again == first
    # Another reason with the same status keeps the time, as meta.SetStatusCondition does.
    other = ps.policy_status(first, 'notReady', 'ReconcileFailed', 'apply failed', 'gpu-operator', now='2026-01-03T00:00:00Z')
    assert [c['lastTransitionTime'] for c in other['conditions']] == ['2026-01-01T00:00:00Z'] * 2
    ready = ps.policy_status(other, 'ready', 'Reconciled', '', 'gpu-operator', now='2026-01-04T00:00:00Z')
    assert [c['lastTransitionTime'] for c in ready['conditions']] == ['2026-01-04T00:00:00Z'] * 2


@pytest.mark.parametrize('state, reason, message', [
    ('notReady', 'NoGPUNodes', 'state notReady does not go with reason NoGPUNodes (the GPU Operator records ready with it)'),
    ('ready', 'OperandNotReady', 'state ready does not go with reason OperandNotReady'),
    ('ready', 'Broken', "reason must be one of NFDLabelsMissing, NoGPUNodes, OperandNotReady, ReconcileFailed, Reconciled, not 'Broken'"),
])
def test_pairs_the_operator_never_writes_are_refused(state, reason, message):
    with pytest.raises(ps.PolicyStatusError, match=message.replace('(', r'\(').replace(')', r'\)')):
        ps.policy_status(None, state, reason, '', 'gpu-operator')
