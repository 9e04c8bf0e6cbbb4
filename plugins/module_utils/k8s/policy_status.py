# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ClusterPolicy status as the GPU Operator writes it: state, namespace and the conditions Ready and Error.

The Operator (NVIDIA/gpu-operator v26.7.0, controllers/clusterpolicy_controller.go and
internal/conditions/clusterpolicy.go) decides in this order: a state that failed to reconcile
(ReconcileFailed, notReady), states not ready (OperandNotReady, notReady), no node with an NFD label
(NFDLabelsMissing, ready), no GPU node (NoGPUNodes, ready), else Reconciled (ready). `outcome()` takes
the same decisions from what a run of this collection saw; `policy_status()` writes them in the
Operator's shape, so that monitoring written for the Operator reads ours the same way.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import PRESENT as GPU_PRESENT
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

# Each reason and the state it goes with (internal/conditions/consts.go; the controller's outcomes).
REASONS = {'Reconciled': 'ready', 'NFDLabelsMissing': 'ready', 'NoGPUNodes': 'ready',
           'ReconcileFailed': 'notReady', 'OperandNotReady': 'notReady'}
# The messages the Operator writes with the ready reasons, and the start of its OperandNotReady message.
MESSAGES = {
    'Reconciled': 'ClusterPolicy is ready as all resources have been successfully reconciled',
    'NFDLabelsMissing': 'No NFD labels found',
    'NoGPUNodes': 'No GPU node found, watching for new nodes to join the cluster.',
    'OperandNotReady': 'ClusterPolicy is not ready',
    'ReconcileFailed': 'Failed to reconcile',
}
VALIDATION_STATE = 'state-operator-validation'
# The Operator's state that each node stage of site.yml does on the host instead.
STAGE_STATES = {'nvidia_driver': 'state-driver', 'container_toolkit': 'state-container-toolkit'}
NFD_PREFIX = 'feature.node.kubernetes.io/'


class PolicyStatusError(GpuOpsError):
    """A state and reason that do not go together; the message names both."""


def conditions(state, reason, message):
    """Ready and Error as SetConditionsReady / SetConditionsError write them (no observedGeneration)."""
    if state == 'ready':
        return [{'type': 'Ready', 'status': 'True', 'reason': reason, 'message': message},
                {'type': 'Error', 'status': 'False', 'reason': 'Ready', 'message': ''}]
    return [{'type': 'Ready', 'status': 'False', 'reason': 'Error', 'message': ''},
            {'type': 'Error', 'status': 'True', 'reason': reason, 'message': message}]


def policy_status(current, state, reason, message, namespace, now=None):
    """The ClusterPolicy status for `state` with `reason`; the message defaults to the Operator's for that reason.

    As meta.SetStatusCondition does, a condition keeps its lastTransitionTime while its status stays
    the same, so reporting the same outcome twice changes nothing.
    """
    if reason not in REASONS:
        raise PolicyStatusError('reason must be one of %s, not %r' % (', '.join(sorted(REASONS)), reason))
    if REASONS[reason] != state:
        raise PolicyStatusError('state %s does not go with reason %s (the GPU Operator records %s with it)' % (state, reason, REASONS[reason]))
    now = now or datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    # Only conditions of the Operator's shape say since when they hold; anything else in the status is replaced.
    found = current.get('conditions') if isinstance(current, dict) else None
    previous = dict((c['type'], c) for c in found if isinstance(c, dict) and isinstance(c.get('type'), str)) if isinstance(found, list) else {}
    written = []
    for condition in conditions(state, reason, message or MESSAGES[reason]):
        old = previous.get(condition['type']) or {}
        condition['lastTransitionTime'] = old.get('lastTransitionTime', now) if old.get('status') == condition['status'] else now
        written.append(condition)
    return {'state': state, 'namespace': namespace, 'conditions': written}


def outcome(nodes, validation=None, stopped=None):
    """{state, reason, message} of the ClusterPolicy, decided in the Operator's order.

    nodes: the Node objects. validation: the per-node results of the validation stage
    ({node, state: passed | failed | skipped, component, summary}: the summary names the component), None when
    it did not run.
    stopped: the nodes whose stage failed ({node, stage, failure}): the Operator's "failed to
    reconcile" of that stage's state. None when there is nothing to record: validation did not
    run and no node stopped (the status says what validation saw, and nothing else).
    """
    stopped = stopped or []
    failed = [result for result in validation or [] if result.get('state') == 'failed']
    details = ['%s: %s' % (r['node'], r.get('summary') or 'validation failed') for r in failed]
    if stopped:
        parts = ['%s %s: %s: %s' % (MESSAGES['ReconcileFailed'], STAGE_STATES.get(s.get('stage'), s.get('stage') or 'setup'), s['node'], s.get('failure') or '')
                 for s in stopped]
        return {'state': 'notReady', 'reason': 'ReconcileFailed', 'message': '; '.join(parts + details)}
    if validation is None:
        return None
    if failed:
        head = '%s; states not ready: [%s]' % (MESSAGES['OperandNotReady'], VALIDATION_STATE)
        return {'state': 'notReady', 'reason': 'OperandNotReady', 'message': '; '.join([head] + details)}
    labels = [(node.get('metadata') or {}).get('labels') or {} for node in nodes or []]
    if not any(key.startswith(NFD_PREFIX) for node_labels in labels for key in node_labels):
        reason = 'NFDLabelsMissing'
    elif not validation and not any(node_labels.get(GPU_PRESENT) == 'true' for node_labels in labels):
        reason = 'NoGPUNodes'
    else:
        reason = 'Reconciled'
    return {'state': 'ready', 'reason': reason, 'message': MESSAGES[reason]}
