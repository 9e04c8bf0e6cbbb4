# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Pod steps of the driver upgrade on a node (module_utils/k8s/upgrade_pods.py), by table.

SOURCE (facts, not code): NVIDIA/gpu-operator v26.7.0 cmd/gpu-operator/main.go gpuPodSpecFilter (Running or Pending Pods;
a container's limits or requests naming a resource that starts with nvidia.com/gpu or nvidia.com/mig-); NVIDIA/k8s-operator-libs
at 11e747a512d4e47ebd23d52bb91c910cebb5da37 pkg/upgrade/pod_manager.go (SchedulePodEviction: kubectl's drain helper with
IgnoreAllDaemonSets, Force = podDeletion.force, DeleteEmptyDirData = podDeletion.deleteEmptyDir; when it can delete fewer
GPU Pods than there are, it deletes none and the node goes to drain or fails; ScheduleCheckOnPodCompletion: a Pod
Running or Pending keeps the node waiting). kubectl's drain filters (k8s.io/kubectl pkg/drain/filters.go) in their order:
DaemonSet, mirror Pod, emptyDir, no controller.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import upgrade_pods


def pod(name, phase='Running', limits=None, requests=None, owner='ReplicaSet', empty_dir=False, mirror=False, init_gpu=False):
    metadata = {'name': name, 'namespace': 'ml', 'uid': name + '-uid'}
    if owner:
        metadata['ownerReferences'] = [{'kind': owner, 'name': 'x', 'controller': True}]
    if mirror:
        metadata['annotations'] = {'kubernetes.io/config.mirror': 'x'}
    spec = {'containers': [{'name': 'c', 'resources': {'limits': limits or {}, 'requests': requests or {}}}]}
    if init_gpu:
        spec['initContainers'] = [{'name': 'i', 'resources': {'limits': {'nvidia.com/gpu': '1'}}}]
    if empty_dir:
        spec['volumes'] = [{'name': 'scratch', 'emptyDir': {}}]
    return {'metadata': metadata, 'spec': spec, 'status': {'phase': phase}}


GPU = {'nvidia.com/gpu': '1'}


@pytest.mark.parametrize('item, expected', [
    (pod('a', limits=GPU), True),
    (pod('a', requests={'nvidia.com/gpu.shared': '1'}), True),
    (pod('a', limits={'nvidia.com/mig-1g.10gb': '1'}), True),
    (pod('a', phase='Pending', limits=GPU), True),
    (pod('a', phase='Succeeded', limits=GPU), False),
    (pod('a', phase='Failed', limits=GPU), False),
    (pod('a', limits={'cpu': '1', 'amd.com/gpu': '1'}), False),
    (pod('a', init_gpu=True), False),  # the Operator reads the containers only
    ({'metadata': {'name': 'a'}}, False),
])
def test_uses_gpu(item, expected):
    assert upgrade_pods.uses_gpu(item) is expected


@pytest.mark.parametrize('pods, force, empty_dir, delete, problems', [
    ([pod('a', limits=GPU), pod('b'), pod('c', limits=GPU, phase='Succeeded')], False, False, ['ml/a'], []),
    ([pod('a', limits=GPU, owner=None)], False, False, [], ['ml/a has no controller (podDeletion.force)']),
    ([pod('a', limits=GPU, owner=None)], True, False, ['ml/a'], []),
    ([pod('a', limits=GPU, empty_dir=True)], False, False, [], ['ml/a has an emptyDir volume (podDeletion.deleteEmptyDir)']),
    ([pod('a', limits=GPU, empty_dir=True, owner=None)], False, True, [], ['ml/a has no controller (podDeletion.force)']),
    ([pod('a', limits=GPU, empty_dir=True, owner=None)], False, False, [], ['ml/a has an emptyDir volume (podDeletion.deleteEmptyDir)']),
    ([pod('a', limits=GPU, owner='DaemonSet')], True, True, [], ['ml/a is a DaemonSet Pod (not deleted)']),
    ([pod('a', limits=GPU, mirror=True, owner='Node')], True, True, [], ["ml/a is a static Pod (the kubelet's own)"]),
    # One the helper cannot delete: none is deleted (the node drains or fails).
    ([pod('a', limits=GPU), pod('b', limits=GPU, owner=None)], False, False, [], ['ml/b has no controller (podDeletion.force)']),
    ([], False, False, [], []),
])
def test_deletion(pods, force, empty_dir, delete, problems):
    found = upgrade_pods.deletion(pods, force, empty_dir)
    assert [upgrade_pods.name_of(item) for item in found['delete']] == delete
    assert found['problems'] == problems
    assert found['gpu'] == [upgrade_pods.name_of(item) for item in pods if upgrade_pods.uses_gpu(item)]


def test_running_jobs():
    assert upgrade_pods.running([pod('a'), pod('b', phase='Pending'), pod('c', phase='Succeeded'), pod('d', phase='Failed')]) == ['ml/a', 'ml/b']


class FakeApi(object):
    """node_pods answered from a script of Pod lists, a clock that moves by each sleep."""

    def __init__(self, rounds):
        self.rounds, self.now, self.lists = list(rounds), 0.0, 0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.mark.parametrize('rounds, timeout, expected', [
    ([[pod('job')], [pod('job')], [pod('job', phase='Succeeded')]], 0, {'running': [], 'timed_out': False, 'waited': 4.0}),
    ([[pod('job')]] * 10, 5, {'running': ['ml/job'], 'timed_out': True, 'waited': 6.0}),
    ([[]], 5, {'running': [], 'timed_out': False, 'waited': 0.0}),
])
def test_wait_for_completion(monkeypatch, rounds, timeout, expected):
    fake = FakeApi(rounds)

    def node_pods(api, node, selector=''):
        assert (node, selector) == ('gpu-1', 'app=train')
        return fake.rounds.pop(0)
    monkeypatch.setattr(upgrade_pods, 'node_pods', node_pods)
    assert upgrade_pods.wait_for_completion(None, 'gpu-1', 'app=train', timeout, 2, clock=fake.clock, sleep=fake.sleep) == expected
