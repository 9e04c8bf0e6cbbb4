# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Reconciling a Node's labels: ownership, deploy label preservation, gpu.present=false, the merge patch."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.node_api import (
    OWNED_ANNOTATION, checked_owned_labels, damage, merge_patch, missing_node_message, node_metadata, owned_labels, plan_node, plan_nodes,
    reconcile)

FOREIGN = {'kubernetes.io/hostname': 'gpu-1', 'team': 'ml'}
NO_PATCH = 'no patch'
DESIRED = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'Tesla-T4', 'nvidia.com/gpu.deploy.driver': 'true',
           'nvidia.com/gpu.deploy.dcgm': 'true'}


def annotation(owned):
    return json.dumps(owned, sort_keys=True, separators=(',', ':'))


def recorded(owned):
    """The Node's annotations recording `owned` ({key: value}, or a list of keys as an earlier release wrote)."""
    return {OWNED_ANNOTATION: json.dumps(owned)}


def test_fresh_node_gets_everything_and_owns_it():
    plan = reconcile(FOREIGN, {}, DESIRED)
    assert plan['labels'] == dict(FOREIGN, **DESIRED)
    assert plan['added'] == sorted(DESIRED) and plan['owned'] == sorted(DESIRED) and plan['updated'] == plan['removed'] == []
    patch = merge_patch({}, plan, '42')
    assert patch == {'metadata': {'resourceVersion': '42', 'labels': DESIRED, 'annotations': {OWNED_ANNOTATION: annotation(DESIRED)}}}


def test_second_run_changes_nothing():
    plan = reconcile(dict(FOREIGN, **DESIRED), DESIRED, DESIRED)
    assert plan['added'] == plan['updated'] == plan['removed'] == []
    assert merge_patch(recorded(DESIRED), plan, '43') is None


def test_an_earlier_releases_list_of_keys_is_rewritten_with_the_values():
    plan = reconcile(dict(FOREIGN, **DESIRED), dict.fromkeys(DESIRED), DESIRED)
    assert plan['added'] == plan['updated'] == plan['removed'] == []
    assert merge_patch(recorded(list(DESIRED)), plan, '44') == {'metadata': {'resourceVersion': '44', 'annotations': {OWNED_ANNOTATION: annotation(DESIRED)}}}


def test_stale_owned_label_is_removed_foreign_ones_stay():
    current = dict(FOREIGN, **DESIRED, **{'nvidia.com/mig.strategy': 'single', 'nvidia.com/gpu.count': '9'})
    owned = dict(DESIRED, **{'nvidia.com/mig.strategy': 'single'})
    # gpu.count is under our prefix but was not set by us: it is left alone unless desired.
    plan = reconcile(current, owned, DESIRED)
    assert plan['removed'] == ['nvidia.com/mig.strategy'] and plan['labels']['nvidia.com/gpu.count'] == '9'
    assert merge_patch(recorded(owned), plan, '1') == {'metadata': {
        'resourceVersion': '1', 'labels': {'nvidia.com/mig.strategy': None}, 'annotations': {OWNED_ANNOTATION: annotation(DESIRED)}}}


# (value on the Node, what the annotation says we set it to: None = not ours, '?' = an earlier release's list of keys)
@pytest.mark.parametrize('value, ours', [('pre-installed', None), ('paused-for-driver-upgrade', 'true'), ('false', None), ('false', 'true'),
                                         ('false', '?'), ('pre-installed', '?')])
def test_existing_deploy_value_someone_else_set_is_kept(value, ours):
    current = dict(FOREIGN, **{'nvidia.com/gpu.deploy.driver': value})
    owned = {} if ours is None else {'nvidia.com/gpu.deploy.driver': None if ours == '?' else ours}
    plan = reconcile(current, owned, DESIRED)
    assert plan['labels']['nvidia.com/gpu.deploy.driver'] == value
    # Theirs from now on: state=absent leaves it.
    assert 'nvidia.com/gpu.deploy.driver' not in plan['owned'] + plan['updated'] + plan['removed']


@pytest.mark.parametrize('value', ['pre-installed', 'false', 'true'])
def test_a_deploy_value_we_set_follows_what_is_desired(value):
    # The driver was pre-installed, and is now ours to install: the label we set goes to true and stays ours.
    current = dict(FOREIGN, **{'nvidia.com/gpu.deploy.driver': value})
    plan = reconcile(current, {'nvidia.com/gpu.deploy.driver': value}, DESIRED)
    assert plan['labels']['nvidia.com/gpu.deploy.driver'] == 'true' and 'nvidia.com/gpu.deploy.driver' in plan['owned']
    assert plan['updated'] == ([] if value == 'true' else ['nvidia.com/gpu.deploy.driver'])


@pytest.mark.parametrize('found, ours, expected', [
    (None, None, 'all-disabled'),               # a MIG-capable node without one gets migManager.config.default
    ('all-balanced', None, 'all-balanced'),     # the admin's choice (kubectl label) is kept, as the Operator keeps it
    ('all-1g.10gb', 'all-disabled', 'all-1g.10gb'),  # changed since we set it: theirs
    ('all-disabled', 'all-disabled', 'all-disabled'),
])
def test_mig_config_is_a_default_that_yields(found, ours, expected):
    current = dict(FOREIGN, **({'nvidia.com/mig.config': found} if found else {}))
    plan = reconcile(current, {'nvidia.com/mig.config': ours} if ours else {}, dict(DESIRED, **{'nvidia.com/mig.config': 'all-disabled'}))
    assert plan['labels']['nvidia.com/mig.config'] == expected
    assert ('nvidia.com/mig.config' in plan['owned']) is (expected == 'all-disabled')


def test_explicit_deploy_value_is_forced():
    plan = reconcile({'nvidia.com/gpu.deploy.driver': 'true'}, {}, dict(DESIRED, **{'nvidia.com/gpu.deploy.driver': 'pre-installed'}))
    assert plan['labels']['nvidia.com/gpu.deploy.driver'] == 'pre-installed' and plan['updated'] == ['nvidia.com/gpu.deploy.driver']
    assert plan['owned_values']['nvidia.com/gpu.deploy.driver'] == 'pre-installed'


def test_node_without_gpu_anymore_gets_present_false_and_no_deploy_labels():
    current = dict(FOREIGN, **DESIRED, **{'nvidia.com/gpu.deploy.operator-validator': 'true'})
    plan = reconcile(current, DESIRED, {'feature.node.kubernetes.io/kernel-version.major': '6'})
    assert plan['labels'] == dict(FOREIGN, **{'nvidia.com/gpu.present': 'false', 'feature.node.kubernetes.io/kernel-version.major': '6'})
    assert 'nvidia.com/gpu.present' in plan['owned'] and plan['updated'] == ['nvidia.com/gpu.present']


# SOURCE: NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go updateGPUStateLabels (hasOperandsDisabled:
# nvidia.com/gpu.deploy.operands=false removes every state label, removeAllGPUStateLabels; addGPUStateLabels once it is not).
@pytest.mark.parametrize('where', ['node', 'desired'])
def test_operands_false_takes_every_deploy_label_off_and_back(where):
    """Issue 24 item 1: a Node labelled nvidia.com/gpu.deploy.operands=false keeps no deploy label of ours (the Operator
    removes them all); gpu.present and the other labels stay, and so does the admin's switch itself."""
    switch = {'nvidia.com/gpu.deploy.operands': 'false'}
    current = dict(FOREIGN, **DESIRED, **(switch if where == 'node' else {}))
    plan = reconcile(current, DESIRED, dict(DESIRED, **(switch if where == 'desired' else {})))
    assert plan['labels'] == dict(FOREIGN, **switch, **{'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'Tesla-T4'})
    assert plan['removed'] == ['nvidia.com/gpu.deploy.dcgm', 'nvidia.com/gpu.deploy.driver']
    assert not any(key.startswith('nvidia.com/gpu.deploy.') for key in plan['owned_values'] if key != 'nvidia.com/gpu.deploy.operands')
    # The switch back (anything but false): every deploy label returns.
    after = reconcile(dict(plan['labels'], **{'nvidia.com/gpu.deploy.operands': 'true'}), plan['owned_values'], DESIRED)
    assert after['added'] == ['nvidia.com/gpu.deploy.dcgm', 'nvidia.com/gpu.deploy.driver']


@pytest.mark.parametrize('owned', [DESIRED, list(DESIRED)], ids=['values', 'keys'])
def test_absent_removes_only_ours(owned):
    current = dict(FOREIGN, **DESIRED, **{'nvidia.com/gpu.deploy.dcgm-exporter': 'true'})
    plan = reconcile(current, owned_labels(recorded(owned)), {}, 'absent')
    assert plan['labels'] == dict(FOREIGN, **{'nvidia.com/gpu.deploy.dcgm-exporter': 'true'})
    assert plan['owned'] == [] and plan['removed'] == sorted(DESIRED)
    assert merge_patch(recorded(owned), plan, '7')['metadata']['annotations'] == {OWNED_ANNOTATION: None}


# The annotation marks a Node the module examined (the k8s_nodes plugins read it): present also when the module set
# no label there, as on a node without a GPU whose NFD labels NFD sets; state=absent removes it, also when empty.
# (annotations on the Node, state, the annotation the patch writes)
@pytest.mark.parametrize('annotations, state, written', [
    ({}, 'present', '{}'),
    (recorded({}), 'present', NO_PATCH),
    (recorded({}), 'absent', None),
    ({}, 'absent', NO_PATCH),
    ({'other': 'x'}, 'present', '{}'),
])
def test_the_annotation_marks_every_node_labelled(annotations, state, written):
    plan = reconcile(FOREIGN, owned_labels(annotations), {}, state)
    patch = merge_patch(annotations, plan, '9')
    if written == NO_PATCH:
        assert patch is None
    else:
        assert patch == {'metadata': {'resourceVersion': '9', 'annotations': {OWNED_ANNOTATION: written}}}


def test_absent_and_stale_leave_a_value_someone_changed():
    # Someone turned the DCGM exporter off on this node by editing our label.
    current = dict(FOREIGN, **dict(DESIRED, **{'nvidia.com/gpu.deploy.dcgm': 'false'}))
    for plan in (reconcile(current, DESIRED, {}, 'absent'), reconcile(current, DESIRED, {'nvidia.com/gpu.present': 'true'})):
        assert plan['labels']['nvidia.com/gpu.deploy.dcgm'] == 'false' and 'nvidia.com/gpu.deploy.dcgm' not in plan['owned']


@pytest.mark.parametrize('annotations, expected', [
    (None, {}), ({}, {}), ({OWNED_ANNOTATION: '["a","b"]'}, {'a': None, 'b': None}), ({OWNED_ANNOTATION: 'not json'}, {}),
    ({OWNED_ANNOTATION: '{"a": "1"}'}, {'a': '1'}), ({OWNED_ANNOTATION: '{"a": 1, "b": "x"}'}, {'b': 'x'}),
    ({OWNED_ANNOTATION: '["a", 3]'}, {'a': None}), ({OWNED_ANNOTATION: '"a"'}, {}),
])
def test_owned_labels(annotations, expected):
    assert owned_labels(annotations) == expected


@pytest.mark.parametrize('annotations', [None, {}, {OWNED_ANNOTATION: '{}'}, recorded(DESIRED), {OWNED_ANNOTATION: '["a"]'}])
def test_a_sound_ownership_record_is_no_damage(annotations):
    assert damage(annotations) is None and checked_owned_labels('n', annotations) == owned_labels(annotations)


# ---- many Nodes from one list: plan_nodes() plans each Node from its listed metadata, pure.

def listed(labels, owned=None, version='7'):
    annotations = recorded(owned) if owned is not None else {}
    return node_metadata({'metadata': {'name': 'n', 'labels': labels, 'annotations': annotations, 'resourceVersion': version}})


def test_node_metadata_of_a_bare_node():
    assert node_metadata({'metadata': {'name': 'n'}}) == dict(labels={}, annotations={}, resource_version=None)


def test_plan_nodes_plans_each_node_on_its_own():
    nodes = {'fresh': listed(FOREIGN, version='10'), 'converged': listed(dict(FOREIGN, **DESIRED), DESIRED, '11'),
             'stale': listed(dict(FOREIGN, **DESIRED, **{'nvidia.com/mig.strategy': 'single'}),
                             dict(DESIRED, **{'nvidia.com/mig.strategy': 'single'}), '12')}
    planned = plan_nodes(nodes, [('fresh', DESIRED), ('converged', DESIRED), ('stale', DESIRED), ('gone', DESIRED)])
    assert list(planned) == ['fresh', 'converged', 'stale', 'gone']
    # Each patch is guarded by that Node's own resourceVersion.
    assert planned['fresh']['patch'] == {'metadata': {'resourceVersion': '10', 'labels': DESIRED,
                                                      'annotations': {OWNED_ANNOTATION: annotation(DESIRED)}}}
    assert planned['fresh']['current'] == FOREIGN and planned['fresh']['error'] is None
    assert planned['converged']['patch'] is None and planned['converged']['plan']['added'] == []
    assert planned['stale']['patch']['metadata']['resourceVersion'] == '12'
    assert planned['stale']['plan']['removed'] == ['nvidia.com/mig.strategy']
    # A Node the list does not hold is an error of its own; the others are planned all the same.
    assert planned['gone'] == dict(current=None, plan=None, patch=None, error=missing_node_message('gone'))
    assert 'gone' in planned['gone']['error'] and 'lists no Node' in planned['gone']['error']


def test_plan_nodes_with_state_absent_removes_ours_from_each():
    nodes = {'a': listed(dict(FOREIGN, **DESIRED), DESIRED, '3'), 'b': listed(FOREIGN, version='4')}
    planned = plan_nodes(nodes, [('a', {}), ('b', {})], state='absent')
    assert planned['a']['plan']['removed'] == sorted(DESIRED) and planned['a']['plan']['labels'] == FOREIGN
    assert planned['a']['patch']['metadata']['annotations'] == {OWNED_ANNOTATION: None}
    assert planned['b']['patch'] is None, 'a Node never labelled has nothing to remove'


def test_plan_node_matches_reconcile_and_merge_patch():
    metadata = listed(dict(FOREIGN, **{'nvidia.com/gpu.deploy.driver': 'pre-installed'}), version='5')
    plan, patch = plan_node('a', metadata, DESIRED)
    assert plan == reconcile(metadata['labels'], {}, DESIRED)
    assert patch == merge_patch({}, plan, '5')
