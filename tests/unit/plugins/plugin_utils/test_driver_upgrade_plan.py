# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The rolling driver upgrade's rollout plan, Node state and drain leftovers (plugin_utils/driver_upgrade.py).

SOURCE (facts, not code): NVIDIA/k8s-operator-libs at 11e747a512d4e47ebd23d52bb91c910cebb5da37 (2026-04-30), the
library behind the GPU Operator's ClusterPolicy driver.upgradePolicy: api/upgrade/v1alpha1/upgrade_spec.go
(DriverUpgradePolicySpec: autoUpgrade default false; maxParallelUpgrades default 1, 0 = no limit; maxUnavailable
default "25%", a number or a percentage of the nodes rounded up; waitForCompletion.timeoutSeconds default 0;
podDeletion.force and .deleteEmptyDir default false, .timeoutSeconds 300; drain.enable, .force and .deleteEmptyDir
default false, drain.timeoutSeconds default 300); NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/templates/
clusterpolicy.yaml (the chart's gpuPodDeletion is rendered as podDeletion);
pkg/upgrade/upgrade_inplace.go (intstr.GetScaledValueFromIntOrPercent(maxUnavailable, totalNodes, true));
pkg/upgrade/common_manager.go (SkipNodeUpgrade: the skip label equals "true"; the node-initial-state annotation);
pkg/upgrade/consts.go (label, annotation and drain-skip selector names). A deliberate difference (docs/upgrade.md):
digits given as a string ("2", as -e key=value gives them) count as a number.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import driver_upgrade as du

DRAIN = {'enable': False, 'force': False, 'podSelector': '', 'timeoutSeconds': 300, 'deleteEmptyDir': False}
WAIT = {'podSelector': '', 'timeoutSeconds': 0}
DELETION = {'force': False, 'timeoutSeconds': 300, 'deleteEmptyDir': False}
DEFAULTS = {'autoUpgrade': False, 'maxParallelUpgrades': 1, 'maxUnavailable': '25%', 'waitForCompletion': WAIT, 'podDeletion': DELETION,
            'drain': DRAIN}


@pytest.mark.parametrize('settings, nodes, batch_size, batches, max_unavailable', [
    # The defaults: one node at a time (maxParallelUpgrades 1), 25% of 3 nodes rounds up to 1.
    ({}, 3, 1, [1, 1, 1], 1),
    (None, 3, 1, [1, 1, 1], 1),
    # 25% of 10 is 2.5, rounded up to 3; maxParallelUpgrades 0 is no limit, so maxUnavailable decides.
    ({'maxParallelUpgrades': 0}, 10, 3, [3, 3, 3, 1], 3),
    ({'maxParallelUpgrades': 0, 'maxUnavailable': '50%'}, 3, 2, [2, 1], 2),
    ({'maxParallelUpgrades': 2, 'maxUnavailable': 2}, 3, 2, [2, 1], 2),
    # The smaller limit wins, whichever it is.
    ({'maxParallelUpgrades': 4, 'maxUnavailable': 2}, 8, 2, [2, 2, 2, 2], 2),
    ({'maxParallelUpgrades': 2, 'maxUnavailable': '100%'}, 5, 2, [2, 2, 1], 5),
    # At least one node per batch, even where maxUnavailable allows none.
    ({'maxParallelUpgrades': 0, 'maxUnavailable': 0}, 3, 1, [1, 1, 1], 0),
    ({'maxUnavailable': '0%'}, 3, 1, [1, 1, 1], 0),
    # 1% of 1 node rounds up to a whole node.
    ({'maxParallelUpgrades': 0, 'maxUnavailable': '1%'}, 1, 1, [1], 1),
    ({'maxParallelUpgrades': 0, 'maxUnavailable': '34%'}, 3, 2, [2, 1], 2),
    # Numbers as strings (-e key=value), with spaces the YAML kept.
    ({'maxParallelUpgrades': '3', 'maxUnavailable': ' 75% '}, 4, 3, [3, 1], 3),
    ({'maxParallelUpgrades': 0, 'maxUnavailable': '2'}, 6, 2, [2, 2, 2], 2),
    # No GPU nodes: nothing to roll.
    ({}, 0, 1, [], 0),
])
def test_batches(settings, nodes, batch_size, batches, max_unavailable):
    found = du.plan(settings, nodes)
    assert (found['batch_size'], found['batches'], found['max_unavailable']) == (batch_size, batches, max_unavailable)
    assert sum(found['batches']) == nodes


@pytest.mark.parametrize('settings, policy, selectors', [
    ({}, DEFAULTS, [du.DRAIN_SKIP_SELECTOR]),
    ({'autoUpgrade': 'true', 'drain': {'enable': True, 'timeoutSeconds': '30', 'force': 'yes'}},
     dict(DEFAULTS, autoUpgrade=True, drain=dict(DRAIN, enable=True, timeoutSeconds=30, force=True)), [du.DRAIN_SKIP_SELECTOR]),
    ({'drain': {'enable': False, 'deleteEmptyDir': True, 'podSelector': ' app=batch '}, 'maxUnavailable': 2},
     dict(DEFAULTS, maxUnavailable=2, drain=dict(DRAIN, deleteEmptyDir=True, podSelector='app=batch')), [du.DRAIN_SKIP_SELECTOR, 'app=batch']),
    ({'drain': None, 'podDeletion': None}, DEFAULTS, [du.DRAIN_SKIP_SELECTOR]),
    ({'waitForCompletion': {'podSelector': 'app=training', 'timeoutSeconds': '600'}, 'podDeletion': {'force': True, 'deleteEmptyDir': 'yes'}},
     dict(DEFAULTS, waitForCompletion={'podSelector': 'app=training', 'timeoutSeconds': 600},
          podDeletion=dict(DELETION, force=True, deleteEmptyDir=True)), [du.DRAIN_SKIP_SELECTOR]),
])
def test_policy_in_effect(settings, policy, selectors):
    found = du.plan(settings, 4)
    assert found['policy'] == policy
    assert found['drain_pod_selectors'] == selectors


def test_the_cluster_policys_upgrade_policy_when_none_is_given():
    """gpu_driver_upgrade_policy, when given, wins; else the ClusterPolicy's driver.upgradePolicy (its spec or the object)."""
    spec = {'driver': {'upgradePolicy': {'maxParallelUpgrades': 0, 'maxUnavailable': '50%'}}}
    assert du.plan(None, 4, spec)['batch_size'] == 2
    assert du.plan(None, 4, {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'spec': spec})['batch_size'] == 2
    assert du.plan({}, 4, spec)['batch_size'] == 1
    assert du.plan(None, 4, {})['policy'] == DEFAULTS
    with pytest.raises(du.UpgradePolicyError, match=r'^driver.upgradePolicy takes .*maxUnavailable must be'):
        du.plan(None, 4, {'driver': {'upgradePolicy': {'maxUnavailable': 'half'}}})


def test_defaults_are_not_changed_by_a_plan():
    du.plan({'drain': {'timeoutSeconds': 5}}, 2)
    assert du.POLICY_DEFAULTS['drain']['timeoutSeconds'] == 300


@pytest.mark.parametrize('settings, problem', [
    ({'gpuPodDeletion': {'force': True}}, "gpuPodDeletion is the Helm chart's name; the ClusterPolicy calls it podDeletion"),
    ({'waitForCompletion': {'timeout': 0}, 'maxSurge': 1}, 'Not understood: maxSurge, waitForCompletion.timeout'),
    ({'drain': {'enabled': True}}, 'Not understood: drain.enabled'),
    ({'podDeletion': {'force': 'maybe'}}, "podDeletion.force must be true or false, not 'maybe'"),
    ({'waitForCompletion': {'timeoutSeconds': -5}}, 'waitForCompletion.timeoutSeconds must be a whole number of 0 or more, not -5'),
    ({'waitForCompletion': {'podSelector': 3}}, 'waitForCompletion.podSelector must be a label selector string, not 3'),
    ({'autoUpgrade': 'sometimes'}, "autoUpgrade must be true or false, not 'sometimes'"),
    ({'maxUnavailable': 'half'}, "maxUnavailable must be a whole number of 0 or more, not 'half'"),
    ({'maxUnavailable': '-1'}, "maxUnavailable must be a whole number of 0 or more, not '-1'"),
    ({'maxUnavailable': -1}, 'maxUnavailable must be a whole number of 0 or more, not -1'),
    ({'maxUnavailable': '25.5%'}, "not '25.5%'"),
    ({'maxUnavailable': 1.5}, 'not 1.5'),
    ({'maxParallelUpgrades': True}, 'maxParallelUpgrades must be a whole number of 0 or more, not True'),
    ({'maxParallelUpgrades': '10%'}, "maxParallelUpgrades must be a whole number of 0 or more, not '10%'"),
    ({'drain': {'timeoutSeconds': 'soon'}}, "drain.timeoutSeconds must be a whole number of 0 or more, not 'soon'"),
    ({'drain': {'enable': 'maybe'}}, "drain.enable must be true or false, not 'maybe'"),
    ({'drain': {'force': None}}, 'drain.force must be true or false, not None'),
    ({'drain': {'podSelector': ['app=a']}}, "drain.podSelector must be a label selector string, not ['app=a']"),
    ({'drain': 'yes'}, "drain is a mapping, not 'yes'"),
    ('maxParallelUpgrades: 2', "It is a mapping, not 'maxParallelUpgrades: 2'"),
])
def test_bad_policy_is_refused(settings, problem):
    with pytest.raises(du.UpgradePolicyError) as caught:
        du.plan(settings, 3)
    assert problem in str(caught.value)
    # Every refusal says what the policy takes.
    assert str(caught.value).startswith(du.USAGE % 'gpu_driver_upgrade_policy')


@pytest.mark.parametrize('nodes', [-1, True, '3', None])
def test_bad_node_count_is_refused(nodes):
    with pytest.raises(du.UpgradePolicyError, match='number of GPU nodes'):
        du.plan({}, nodes)


def node(name='n1', labels=None, annotations=None, unschedulable=None):
    found = {'metadata': {'name': name, 'labels': labels, 'annotations': annotations}, 'spec': {}}
    if unschedulable is not None:
        found['spec']['unschedulable'] = unschedulable
    return found


STATE, SKIP, INITIAL = du.STATE_LABEL, du.SKIP_LABEL, du.INITIAL_STATE_ANNOTATION


@pytest.mark.parametrize('obj, state, skip, was_unschedulable', [
    (node(), '', False, False),
    ({'metadata': {'name': 'n1'}}, '', False, False),
    (node(labels={STATE: 'upgrade-done', SKIP: 'true'}), 'upgrade-done', True, False),
    (node(labels={SKIP: 'false'}), '', False, False),
    (node(labels={SKIP: 'True'}), '', False, False),  # the Operator compares with "true"
    # Cordoned by its admin before any upgrade step: it stays cordoned.
    (node(unschedulable=True), '', False, True),
    (node(labels={STATE: 'upgrade-done'}, unschedulable=True), 'upgrade-done', False, True),
    (node(labels={STATE: 'upgrade-required'}, unschedulable=True), 'upgrade-required', False, True),
    # Cordoned in a later state: that is the upgrade's own cordon (an earlier run stopped there).
    (node(labels={STATE: 'cordon-required'}, unschedulable=True), 'cordon-required', False, False),
    (node(labels={STATE: 'upgrade-failed'}, unschedulable=True), 'upgrade-failed', False, False),
    # ... unless the annotation written before cordoning says otherwise.
    (node(labels={STATE: 'upgrade-failed'}, annotations={INITIAL: 'true'}, unschedulable=True), 'upgrade-failed', False, True),
    (node(labels={STATE: 'drain-required'}, annotations={INITIAL: 'false'}, unschedulable=True), 'drain-required', False, False),
    (node(unschedulable=False), '', False, False),
])
def test_node_state(obj, state, skip, was_unschedulable):
    assert du.node_state(obj) == {'name': obj['metadata']['name'], 'state': state, 'skip': skip, 'was_unschedulable': was_unschedulable}


def pod(name, phase='Running', owner=None, annotations=None):
    metadata = {'name': name, 'namespace': 'ns', 'annotations': annotations}
    if owner:
        metadata['ownerReferences'] = [{'kind': owner, 'name': name + '-owner'}]
    return {'metadata': metadata, 'status': {'phase': phase}}


@pytest.mark.parametrize('pods, left', [
    (None, []),
    ([], []),
    ([pod('web', owner='ReplicaSet'), pod('job', phase='Pending', owner='Job'), pod('bare')], ['ns/web', 'ns/job', 'ns/bare']),
    ([pod('plugin', owner='DaemonSet')], []),
    ([pod('done', phase='Succeeded', owner='Job'), pod('crashed', phase='Failed')], []),
    ([pod('static', annotations={'kubernetes.io/config.mirror': 'abc'})], []),
    ([pod('unknown', phase='Unknown')], ['ns/unknown']),
    ([{'metadata': {'name': 'new', 'namespace': 'ns'}}], ['ns/new']),  # no status yet
])
def test_pods_left(pods, left):
    assert du.pods_left(pods) == left


def gpu_node(name, state=None, unschedulable=False, ready='True', gpu=True):
    labels = {'nvidia.com/gpu.present': 'true'} if gpu else {}
    if state:
        labels[du.STATE_LABEL] = state
    return {'metadata': {'name': name, 'labels': labels}, 'spec': {'unschedulable': unschedulable},
            'status': {'conditions': [{'type': 'Ready', 'status': ready}]}}


# SOURCE (facts, not code): NVIDIA/k8s-operator-libs 11e747a512d4e47ebd23d52bb91c910cebb5da37, pkg/upgrade/common_manager.go:
# GetTotalManagedNodes (every state, none included), GetUpgradesInProgress (all but none, upgrade-done and
# upgrade-required: upgrade-failed counts), GetCurrentUnavailableNodes (cordoned or not Ready) plus cordon-required in
# GetUpgradesAvailable, maxParallelUpgrades - in progress, capped by maxUnavailable (rounded up over the total).
# Deliberate differences (docs/upgrade.md): one node may go when nothing else is in progress; a cordoned node waits.
@pytest.mark.parametrize('others, settings, ignored, room, in_progress, unavailable', [
    ([], {}, [], True, [], []),
    ([gpu_node('b', 'drain-required', True)], {}, [], False, ['b'], ['b']),
    ([gpu_node('b', 'upgrade-failed', True)], {'maxParallelUpgrades': 2, 'maxUnavailable': 2}, [], True, ['b'], ['b']),
    ([gpu_node('b', 'upgrade-failed', True)], {'maxParallelUpgrades': 2}, [], False, ['b'], ['b']),  # 25% of 2 = 1
    ([gpu_node('b', 'cordon-required'), gpu_node('c', 'upgrade-required'), gpu_node('d', 'upgrade-done')],
     {'maxParallelUpgrades': 0, 'maxUnavailable': '50%'}, [], True, ['b'], ['b']),
    # A cordoned or NotReady node is unavailable, not in progress: alone it holds nothing back.
    ([gpu_node('b', unschedulable=True), gpu_node('c', ready='False')], {}, [], True, [], ['b', 'c']),
    ([gpu_node('b', 'validation-required'), gpu_node('c', ready='False'), gpu_node('d')],
     {'maxParallelUpgrades': 0, 'maxUnavailable': 2}, [], False, ['b'], ['b', 'c']),
    # This run's nodes of a later batch; Nodes without a GPU.
    ([gpu_node('b', 'drain-required', True)], {}, ['b'], True, [], ['b']),
    ([gpu_node('x', 'drain-required', gpu=False), gpu_node('y', gpu=False)], {}, [], False, ['x'], ['x']),
])
def test_admission(others, settings, ignored, room, in_progress, unavailable):
    found = du.admission([gpu_node('a', 'upgrade-required')] + others, settings, 'a', ignored)
    assert (found['room'], found['in_progress'], found['unavailable']) == (room, in_progress, unavailable)


def test_admission_rank_orders_the_claims_by_name():
    nodes = [gpu_node(name, 'cordon-required') for name in ('c', 'a', 'b')]
    assert [du.admission(nodes, {}, name)['rank'] for name in ('a', 'b', 'c')] == [0, 1, 2]
