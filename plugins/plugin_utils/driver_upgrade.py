# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The rolling driver upgrade's decisions (role gpu_driver_upgrade), pure: the ClusterPolicy's driver.upgradePolicy
checked, the rollout plan from it, a Node's upgrade state, and the Pods a drain has left.

The vocabulary is the GPU Operator's: its upgrade controller's state label and skip labels on the Node, its
driver.upgradePolicy fields and defaults, its drain-skip Pod label.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import math
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.k8s_nodes import nvidia

STATE_LABEL = 'nvidia.com/gpu-driver-upgrade-state'
SKIP_LABEL = 'nvidia.com/gpu-driver-upgrade.skip'
# A Pod labelled nvidia.com/gpu-driver-upgrade-drain.skip=true stays on the node during the drain.
DRAIN_SKIP_SELECTOR = 'nvidia.com/gpu-driver-upgrade-drain.skip!=true'
# Written before cordoning a node that was unschedulable already, so that the upgrade leaves it cordoned.
INITIAL_STATE_ANNOTATION = 'nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable'
# The states in which the node's unschedulable flag is still the admin's, not the upgrade's cordon.
STATES_BEFORE_CORDON = ('', 'upgrade-done', 'upgrade-required')
# The defaults of the ClusterPolicy's driver.upgradePolicy (k8s-operator-libs api/upgrade/v1alpha1/upgrade_spec.go,
# kubebuilder defaults; waitForCompletion.podSelector and drain.podSelector have none).
POLICY_DEFAULTS = {
    'autoUpgrade': False,
    'maxParallelUpgrades': 1,
    'maxUnavailable': '25%',
    'waitForCompletion': {'podSelector': '', 'timeoutSeconds': 0},
    'podDeletion': {'force': False, 'timeoutSeconds': 300, 'deleteEmptyDir': False},
    'drain': {'enable': False, 'force': False, 'podSelector': '', 'timeoutSeconds': 300, 'deleteEmptyDir': False},
}
SECTIONS = ('waitForCompletion', 'podDeletion', 'drain')
# The Operator's states between upgrade-required and upgrade-done: a Node in one of them is an upgrade in progress
# (upgrade-failed too: the node stays cordoned until someone fixes it).
IN_PROGRESS = ('cordon-required', 'wait-for-jobs-required', 'pod-deletion-required', 'drain-required',
               'pod-restart-required', 'validation-required', 'uncordon-required', 'upgrade-failed')
USAGE = ('%s takes autoUpgrade, maxParallelUpgrades (0 = no limit), maxUnavailable (a number or a percentage), '
         'waitForCompletion.{podSelector, timeoutSeconds}, podDeletion.{force, timeoutSeconds, deleteEmptyDir} and '
         'drain.{enable, force, podSelector, timeoutSeconds, deleteEmptyDir}, as the ClusterPolicy\'s driver.upgradePolicy')
# The Helm chart's names for the ClusterPolicy's (deployments/gpu-operator/templates/clusterpolicy.yaml renders
# driver.upgradePolicy.gpuPodDeletion as podDeletion).
CHART_NAMES = {'gpuPodDeletion': 'podDeletion'}
COUNT = re.compile(r'^[0-9]+$')
PERCENT = re.compile(r'^([0-9]+)%$')
BOOLS = {'true': True, 'yes': True, 'on': True, '1': True, 'false': False, 'no': False, 'off': False, '0': False}


class UpgradePolicyError(GpuOpsError):
    """A driver.upgradePolicy the upgrade cannot follow; the message says what the policy takes."""


def _refuse(where, problem):
    raise UpgradePolicyError('%s. %s.' % (USAGE % where, problem))


def _count(value, where, field):
    """A whole number >= 0, given as a number or as digits (-e key=value gives strings)."""
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and COUNT.match(value.strip()))) or int(value) < 0:
        _refuse(where, '%s must be a whole number of 0 or more, not %r' % (field, value))
    return int(value)


def _bool(value, where, field):
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int)) and str(value).strip().lower() in BOOLS:
        return BOOLS[str(value).strip().lower()]
    _refuse(where, '%s must be true or false, not %r' % (field, value))


def _selector(value, where, field):
    if not isinstance(value, str):
        _refuse(where, '%s must be a label selector string, not %r' % (field, value))
    return value.strip()


def policy(settings, where='gpu_driver_upgrade_policy'):
    """The policy in effect: `settings` (a ClusterPolicy's driver.upgradePolicy) over the defaults, checked and
    normalised; `where` names it in the messages."""
    settings = {} if settings is None else settings
    if not isinstance(settings, dict):
        _refuse(where, 'It is a mapping, not %r' % (settings,))
    chart = sorted(key for key in settings if key in CHART_NAMES)
    if chart:
        _refuse(where, '%s is the Helm chart\'s name; the ClusterPolicy calls it %s' % (chart[0], CHART_NAMES[chart[0]]))
    unknown = sorted(str(key) for key in set(settings) - set(POLICY_DEFAULTS))
    found = copy.deepcopy(POLICY_DEFAULTS)
    for section in SECTIONS:
        given = settings.get(section)
        given = {} if given is None else given
        if not isinstance(given, dict):
            _refuse(where, '%s is a mapping, not %r' % (section, given))
        unknown += sorted('%s.%s' % (section, key) for key in set(given) - set(POLICY_DEFAULTS[section]))
        for key, default in POLICY_DEFAULTS[section].items():
            field = '%s.%s' % (section, key)
            value = given.get(key, default)
            found[section][key] = (_bool(value, where, field) if isinstance(default, bool) else _selector(value, where, field)
                                   if key == 'podSelector' else _count(value, where, field))
    if unknown:
        _refuse(where, 'Not understood: %s' % ', '.join(unknown))
    found['autoUpgrade'] = _bool(settings.get('autoUpgrade', found['autoUpgrade']), where, 'autoUpgrade')
    found['maxParallelUpgrades'] = _count(settings.get('maxParallelUpgrades', found['maxParallelUpgrades']), where, 'maxParallelUpgrades')
    unavailable = settings.get('maxUnavailable', found['maxUnavailable'])
    if isinstance(unavailable, str) and PERCENT.match(unavailable.strip()):
        found['maxUnavailable'] = unavailable.strip()
    else:
        found['maxUnavailable'] = _count(unavailable, where, 'maxUnavailable')
    return found


def of_cluster_policy(cluster_policy):
    """driver.upgradePolicy of a ClusterPolicy given as its spec or as the whole object (None when it has none)."""
    spec = (cluster_policy or {}).get('spec', cluster_policy) if isinstance(cluster_policy, dict) else {}
    return ((spec or {}).get('driver') or {}).get('upgradePolicy')


def max_unavailable(value, nodes):
    """maxUnavailable as a number of nodes: a percentage of the GPU nodes is rounded up, as the Operator counts it."""
    match = PERCENT.match(str(value))
    if match:
        return int(math.ceil(int(match.group(1)) * nodes / 100.0))
    return int(value)


def batch_size(checked, nodes):
    """Nodes upgraded at once: the smaller of maxUnavailable and maxParallelUpgrades (0 = no limit), at least one."""
    limits = [max_unavailable(checked['maxUnavailable'], nodes)]
    if checked['maxParallelUpgrades'] > 0:
        limits.append(checked['maxParallelUpgrades'])
    return max(1, min(limits))


def plan(settings, nodes, cluster_policy=None):
    """The rollout of `nodes` GPU nodes under the policy `settings` (gpu_driver_upgrade_policy), or when that is None under
    the driver.upgradePolicy of `cluster_policy` (gpu_operator_policy, a spec or a whole ClusterPolicy).

    policy: the policy in effect; max_unavailable and batch_size: numbers of nodes; batches: the size of each batch in
    turn; drain_pod_selectors: the label selectors of the Pods the drain evicts.
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 0:
        raise UpgradePolicyError('the number of GPU nodes must be a whole number of 0 or more, not %r' % (nodes,))
    checked = policy(settings) if settings is not None else policy(of_cluster_policy(cluster_policy), 'driver.upgradePolicy')
    size = batch_size(checked, nodes)
    batches = [size] * (nodes // size) + ([nodes % size] if nodes % size else [])
    selectors = [DRAIN_SKIP_SELECTOR] + ([checked['drain']['podSelector']] if checked['drain']['podSelector'] else [])
    return {'policy': checked, 'max_unavailable': max_unavailable(checked['maxUnavailable'], nodes), 'batch_size': size,
            'batches': batches, 'drain_pod_selectors': selectors}


def _unavailable(node):
    """Cordoned or not Ready, as the Operator counts an unavailable node."""
    ready = [item.get('status') for item in (node.get('status') or {}).get('conditions') or [] if item.get('type') == 'Ready']
    return bool((node.get('spec') or {}).get('unschedulable')) or ready[:1] != ['True']


def admission(nodes, settings, name, ignored=()):
    """Whether the Node `name` fits within the policy `settings` next to the cluster's other upgrades.

    `nodes`: every Node of the cluster (k8s_info). The GPU nodes are those labelled NVIDIA or carrying an upgrade
    state; `ignored`: Node names not counted as in progress (this run's nodes waiting for a later batch, which only
    this run moves). A node fits when no other upgrade is in progress (at least one node at a time, as the batches
    have it), else when the others in progress stay under maxParallelUpgrades (0 = no limit) and the unavailable
    GPU nodes (cordoned, not Ready or in progress), this one included, stay within maxUnavailable of the GPU nodes.
    Called after the node has claimed its place (cordon-required), it counts every other claim as taken.

    total, max_unavailable; in_progress and unavailable: the other Nodes' names; room: it fits; rank: how many
    other Nodes in cordon-required sort before it (a claim that steps back waits longer the later it sorts).
    """
    checked = policy(settings)
    gpu = [node for node in nodes or [] if nvidia(node) or ((node.get('metadata') or {}).get('labels') or {}).get(STATE_LABEL)]
    others = [node_state(node) for node in gpu if (node.get('metadata') or {}).get('name') != name]
    in_progress = sorted(item['name'] for item in others if item['state'] in IN_PROGRESS and item['name'] not in ignored)
    unavailable = sorted(set(in_progress) | set(
        (node.get('metadata') or {}).get('name') for node in gpu
        if (node.get('metadata') or {}).get('name') != name and _unavailable(node)))
    limit = max_unavailable(checked['maxUnavailable'], len(gpu))
    parallel = checked['maxParallelUpgrades']
    room = not in_progress or ((parallel == 0 or len(in_progress) < parallel) and len(unavailable) + 1 <= limit)
    rank = len([item for item in others if item['state'] == 'cordon-required' and item['name'] < name])
    return {'total': len(gpu), 'max_unavailable': limit, 'in_progress': in_progress, 'unavailable': unavailable,
            'room': room, 'rank': rank}


def node_state(node):
    """What the upgrade reads from a Node object (as kubernetes.core.k8s_info returns it).

    name; state: its upgrade state label ('' when none); skip: labelled gpu-driver-upgrade.skip=true; was_unschedulable:
    cordoned before the upgrade began, so to stay cordoned after it. Once the upgrade may have cordoned the node, only
    the annotation it wrote before tells.
    """
    metadata = node.get('metadata') or {}
    labels = metadata.get('labels') or {}
    annotations = metadata.get('annotations') or {}
    state = labels.get(STATE_LABEL) or ''
    unschedulable = bool((node.get('spec') or {}).get('unschedulable'))
    return {
        'name': metadata.get('name'),
        'state': state,
        'skip': labels.get(SKIP_LABEL) == 'true',
        'was_unschedulable': annotations.get(INITIAL_STATE_ANNOTATION) == 'true' or (unschedulable and state in STATES_BEFORE_CORDON),
    }


def pods_left(pods):
    """namespace/name of the Pods a drain should have removed and did not: DaemonSet and mirror Pods are not drained,
    finished Pods hold nothing."""
    left = []
    for pod in pods or []:
        metadata = pod.get('metadata') or {}
        if (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed'):
            continue
        if any(owner.get('kind') == 'DaemonSet' for owner in metadata.get('ownerReferences') or []):
            continue
        if 'kubernetes.io/config.mirror' in (metadata.get('annotations') or {}):
            continue
        left.append('%s/%s' % (metadata.get('namespace'), metadata.get('name')))
    return left
