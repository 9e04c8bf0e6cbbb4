# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Waiting for the validation Pods of several nodes: each node's own time limit, the rounds, the evidence read once."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import validation_api

NAMES = ['driver-validation', 'toolkit-validation', 'cuda-validation', 'plugin-validation']


def validator_pod(node, ready, created='2026-01-01T00:00:00Z', deleting=False, name=None):
    done = {'terminated': {'exitCode': 0}}
    statuses = [{'name': n, 'state': done} for n in NAMES[:3]]
    statuses.append({'name': NAMES[3], 'state': done if ready else {'waiting': {'reason': 'CrashLoopBackOff'}},
                     'lastState': {} if ready else {'terminated': {'exitCode': 1, 'reason': 'Error'}}, 'restartCount': 0 if ready else 2})
    meta = {'name': name or 'nvidia-operator-validator-' + node, 'namespace': 'gpu-operator', 'labels': {'app': 'nvidia-operator-validator'},
            'creationTimestamp': created}
    if deleting:
        meta['deletionTimestamp'] = created
    return {'metadata': meta, 'spec': {'nodeName': node, 'initContainers': [{'name': n} for n in NAMES]},
            'status': {'phase': 'Running' if ready else 'Pending',
                       'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}], 'initContainerStatuses': statuses}}


class Cluster(object):
    """What the API shows at each moment: `rounds` is the list of Pod lists seen by the successive polls."""

    def __init__(self, rounds):
        self.rounds, self.now, self.listed, self.logs = rounds, 0.0, [], []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    def list(self, _api, what, _method, *args, **kwargs):
        self.listed.append(what)
        if what == 'Pod':
            return self.rounds[min(len(self.listed_pods()) - 1, len(self.rounds) - 1)]
        if what == 'Node':
            return [{'metadata': {'name': 'gpu-2', 'labels': {}}, 'status': {'capacity': {}}}]
        return [{'type': 'Warning', 'reason': 'BackOff', 'message': 'restarting', 'involvedObject': {'kind': 'Pod', 'name': 'nvidia-operator-validator-gpu-2'}}]

    def listed_pods(self):
        return [what for what in self.listed if what == 'Pod']

    def read_log(self, _api, _namespace, pod, container, _lines):
        self.logs.append((pod, container))
        return 'GPU resources are not discovered by the node\n', None


class Methods(object):
    """Stands for CoreV1Api: the methods are only handed to _list, which the tests replace."""
    list_namespaced_pod = list_namespaced_event = list_node = None


def wait(monkeypatch, cluster, nodes, timeout=10, poll=2):
    monkeypatch.setattr(validation_api, '_list', cluster.list)
    monkeypatch.setattr(validation_api, 'read_log', cluster.read_log)
    monkeypatch.setattr(validation_api, '_core', lambda api: Methods())
    return validation_api.wait(None, 'gpu-operator', nodes, 'validator', timeout, poll, clock=cluster.clock, sleep=cluster.sleep)


def test_nodes_that_pass_end_the_wait_early(monkeypatch):
    cluster = Cluster([[validator_pod('gpu-1', False)], [validator_pod('gpu-1', True)]])
    results, progress, elapsed = wait(monkeypatch, cluster, ['gpu-1'])
    assert results['gpu-1']['state'] == 'passed' and elapsed == 2.0
    assert [line.split(': ', 1)[1] for line in progress] == ['0 passed, 0 failed, 1 waiting (gpu-1)', '1 passed, 0 failed, 0 waiting']
    assert cluster.listed == ['Pod', 'Pod'], 'no events, Nodes nor logs read when every node passed'


def test_a_failing_node_gets_its_time_and_its_evidence_once(monkeypatch):
    pods = [validator_pod('gpu-1', True), validator_pod('gpu-2', False)]
    cluster = Cluster([pods])
    results, _progress, elapsed = wait(monkeypatch, cluster, ['gpu-1', 'gpu-2'], timeout=10, poll=2)
    assert elapsed == 10.0, 'the last look is when its time runs out'
    assert results['gpu-1']['state'] == 'passed'
    failed = results['gpu-2']
    assert (failed['state'], failed['component'], failed['summary']) == (
        'failed', 'plugin', 'plugin validation failed: plugin-validation exited 1 (Error) (after 10s)')
    assert 'log: GPU resources are not discovered by the node' in failed['evidence']
    assert 'event Warning BackOff: restarting' in failed['evidence']
    assert 'Node advertises no nvidia.com/gpu or nvidia.com/mig-* resource' in failed['evidence']
    assert cluster.logs == [('nvidia-operator-validator-gpu-2', 'plugin-validation')]
    assert cluster.listed.count('Event') == 1 and cluster.listed.count('Node') == 1


def test_the_pod_being_replaced_is_not_the_nodes(monkeypatch):
    old = validator_pod('gpu-1', True, created='2026-01-01T00:00:00Z', deleting=True, name='nvidia-operator-validator-old')
    new = validator_pod('gpu-1', False, created='2026-01-01T00:00:05Z', name='nvidia-operator-validator-new')
    results, _progress, _elapsed = wait(monkeypatch, Cluster([[old, new]]), ['gpu-1'], timeout=0)
    assert results['gpu-1']['state'] == 'failed' and results['gpu-1']['evidence'][0].startswith('Pod gpu-operator/nvidia-operator-validator-new ')


def test_a_node_without_its_pod(monkeypatch):
    results, _progress, _elapsed = wait(monkeypatch, Cluster([[]]), ['gpu-9'], timeout=0)
    assert results['gpu-9']['summary'] == 'driver validation did not run: no nvidia-operator-validator Pod on the Node (after 0s)'
    assert results['gpu-9']['evidence'] == ['no Node object: the kubelet has not registered the node']
