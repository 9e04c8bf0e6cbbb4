# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Reconciling a Node's labels: ownership, deploy label preservation, gpu.present=false, the merge patch."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.nfd_node_labels import OWNED_ANNOTATION, merge_patch, owned_keys, reconcile

FOREIGN = {'kubernetes.io/hostname': 'gpu-1', 'team': 'ml'}
DESIRED = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'Tesla-T4', 'nvidia.com/gpu.deploy.driver': 'true',
           'nvidia.com/gpu.deploy.dcgm': 'true'}


def test_fresh_node_gets_everything_and_owns_it():
    plan = reconcile(FOREIGN, [], DESIRED)
    assert plan['labels'] == dict(FOREIGN, **DESIRED)
    assert plan['added'] == sorted(DESIRED) and plan['owned'] == sorted(DESIRED) and plan['updated'] == plan['removed'] == []
    patch = merge_patch([], plan, '42')
    assert patch == {'metadata': {'resourceVersion': '42', 'labels': DESIRED,
                                  'annotations': {OWNED_ANNOTATION: json.dumps(sorted(DESIRED), separators=(',', ':'))}}}


def test_second_run_changes_nothing():
    plan = reconcile(dict(FOREIGN, **DESIRED), sorted(DESIRED), DESIRED)
    assert plan['added'] == plan['updated'] == plan['removed'] == []
    assert merge_patch(sorted(DESIRED), plan, '43') is None


def test_stale_owned_label_is_removed_foreign_ones_stay():
    current = dict(FOREIGN, **DESIRED, **{'nvidia.com/mig.strategy': 'single', 'nvidia.com/gpu.count': '9'})
    # gpu.count is under our prefix but was not set by us: it is left alone unless desired.
    plan = reconcile(current, sorted(DESIRED) + ['nvidia.com/mig.strategy'], DESIRED)
    assert plan['removed'] == ['nvidia.com/mig.strategy'] and plan['labels']['nvidia.com/gpu.count'] == '9'
    assert merge_patch(sorted(DESIRED) + ['nvidia.com/mig.strategy'], plan, '1') == {'metadata': {
        'resourceVersion': '1', 'labels': {'nvidia.com/mig.strategy': None},
        'annotations': {OWNED_ANNOTATION: json.dumps(sorted(DESIRED), separators=(',', ':'))}}}


@pytest.mark.parametrize('value, was_ours', [('pre-installed', False), ('paused-for-driver-upgrade', True), ('false', False), ('true', True)])
def test_existing_deploy_value_is_kept(value, was_ours):
    current = dict(FOREIGN, **{'nvidia.com/gpu.deploy.driver': value})
    owned = ['nvidia.com/gpu.deploy.driver'] if was_ours else []
    plan = reconcile(current, owned, DESIRED)
    assert plan['labels']['nvidia.com/gpu.deploy.driver'] == value
    # A value someone else set is theirs from now on (state=absent leaves it); our own 'true' stays ours.
    assert ('nvidia.com/gpu.deploy.driver' in plan['owned']) is (value == 'true' and was_ours)
    assert 'nvidia.com/gpu.deploy.driver' not in plan['updated'] + plan['removed']


def test_explicit_deploy_value_is_forced():
    plan = reconcile({'nvidia.com/gpu.deploy.driver': 'true'}, [], dict(DESIRED, **{'nvidia.com/gpu.deploy.driver': 'pre-installed'}))
    assert plan['labels']['nvidia.com/gpu.deploy.driver'] == 'pre-installed' and plan['updated'] == ['nvidia.com/gpu.deploy.driver']


def test_node_without_gpu_anymore_gets_present_false_and_no_deploy_labels():
    current = dict(FOREIGN, **DESIRED, **{'nvidia.com/gpu.deploy.operator-validator': 'true'})
    plan = reconcile(current, sorted(DESIRED), {'feature.node.kubernetes.io/kernel-version.major': '6'})
    assert plan['labels'] == dict(FOREIGN, **{'nvidia.com/gpu.present': 'false', 'feature.node.kubernetes.io/kernel-version.major': '6'})
    assert 'nvidia.com/gpu.present' in plan['owned'] and plan['updated'] == ['nvidia.com/gpu.present']


def test_absent_removes_only_ours():
    current = dict(FOREIGN, **DESIRED, **{'nvidia.com/gpu.deploy.dcgm-exporter': 'true'})
    plan = reconcile(current, sorted(DESIRED), {}, 'absent')
    assert plan['labels'] == dict(FOREIGN, **{'nvidia.com/gpu.deploy.dcgm-exporter': 'true'})
    assert plan['owned'] == [] and plan['removed'] == sorted(DESIRED)
    assert merge_patch(sorted(DESIRED), plan, '7')['metadata']['annotations'] == {OWNED_ANNOTATION: None}


@pytest.mark.parametrize('annotations, expected', [
    (None, []), ({}, []), ({OWNED_ANNOTATION: '["a","b"]'}, ['a', 'b']), ({OWNED_ANNOTATION: 'not json'}, []),
    ({OWNED_ANNOTATION: '{"a": 1}'}, []), ({OWNED_ANNOTATION: '["a", 3]'}, ['a']),
])
def test_owned_keys(annotations, expected):
    assert owned_keys(annotations) == expected
