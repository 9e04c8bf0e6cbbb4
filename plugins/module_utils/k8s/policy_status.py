# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ClusterPolicy status: state and the conditions Ready and Error."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.manifests import ManifestError

STATUS_REASONS = ('Reconciled', 'ReconcileFailed', 'OperandNotReady', 'NoGPUNodes')


def policy_status(current, state, reason, message, generation, namespace, now=None):
    """The ClusterPolicy status for `state` (ready | notReady) with conditions Ready and Error.

    A condition keeps its lastTransitionTime while its status and reason stay the same, so
    reporting the same outcome twice changes nothing.
    """
    if state not in ('ready', 'notReady'):
        raise ManifestError('state must be ready or notReady, not %r' % state)
    if reason not in STATUS_REASONS:
        raise ManifestError('reason must be one of %s, not %r' % (', '.join(STATUS_REASONS), reason))
    if (state == 'ready') != (reason == 'Reconciled'):
        raise ManifestError('state %s does not go with reason %s' % (state, reason))
    now = now or datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    previous = {c.get('type'): c for c in (current or {}).get('conditions') or []}
    conditions = []
    for kind, status in (('Ready', state == 'ready'), ('Error', reason == 'ReconcileFailed')):
        condition = {'type': kind, 'status': 'True' if status else 'False', 'reason': reason, 'message': message or reason,
                     'observedGeneration': generation, 'lastTransitionTime': now}
        old = previous.get(kind) or {}
        if old.get('status') == condition['status'] and old.get('reason') == reason:
            condition['lastTransitionTime'] = old.get('lastTransitionTime', now)
        conditions.append(condition)
    return {'state': state, 'namespace': namespace, 'conditions': conditions}
