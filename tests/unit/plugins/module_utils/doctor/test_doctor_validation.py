# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's finding for a node whose GPU validation failed, read from the validation stage's ConfigMap, and the findings
of the validation Pods folded into it (one failure, one finding)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import doctor_cluster_checks as cluster_checks
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import doctor_report

FAILED = {'node': 'gpu-2', 'state': 'failed', 'component': 'plugin', 'summary': 'plugin validation failed: plugin-validation exited 1 (Error)',
          'evidence': ['Pod gpu-operator/nvidia-operator-validator-x phase Pending', 'log: GPU resources are not discovered by the node']}


@pytest.mark.parametrize('result, expected', [
    (None, []),
    ({'node': 'gpu-1', 'state': 'passed', 'component': None, 'summary': 'every component passed', 'evidence': []}, []),
    ({'node': 'gpu-1', 'state': 'skipped', 'component': None, 'summary': 'not validated', 'evidence': []}, []),
    (FAILED, [('gpu-validation-failed', 'error', 'GPU validation failed: plugin validation failed: plugin-validation exited 1 (Error)')]),
])
def test_validation_findings(result, expected):
    assert [(f['check'], f['severity'], f['summary']) for f in cluster_checks.validation_findings(result)] == expected


@pytest.mark.parametrize('component, words', [
    ('driver', 'the driver does not work on <node>'), ('toolkit', "the node's NVIDIA runtime"), ('cuda', 'vectorAdd failed on the node'),
    ('plugin', 'the device plugin config'), (None, 'register the node with the cluster'),
])
def test_each_component_has_its_fix(component, words):
    found = cluster_checks.validation_findings(dict(FAILED, component=component))[0]
    assert words in found['fix'] and found['fix'].endswith('then validate again: ansible-playbook -i <inventory> gpuops.gpu_operator.site --tags validation')
    assert found['evidence'] == FAILED['evidence']


def results_config_map(data):
    return {'metadata': {'name': 'gpu-validation-results', 'namespace': 'gpu-operator'}, 'data': data}


def test_report_places_the_finding_on_its_node_or_the_cluster():
    data = {'gpu-2': json.dumps(FAILED), 'gpu-9': json.dumps(dict(FAILED, node='gpu-9', component='cuda', summary='cuda validation failed')),
            'gpu-1': json.dumps({'node': 'gpu-1', 'state': 'passed', 'summary': 'ok', 'evidence': []}), 'gpu-bad': 'not json'}
    nodes = {'host-1': dict(node_name='gpu-1', result={'findings': [], 'facts': {}}),
             'host-2': dict(node_name='gpu-2', result={'findings': [], 'facts': {}})}
    report = doctor_report.build(nodes, {'namespace': 'gpu-operator', 'config_maps': [results_config_map(data)]}, inventory='inv.yml')
    assert report['nodes']['host-1']['findings'] == []
    [found] = report['nodes']['host-2']['findings']
    assert found['check'] == 'gpu-validation-failed' and found['evidence'] == FAILED['evidence']
    assert 'ansible-playbook -i inv.yml gpuops.gpu_operator.site --tags validation' in found['fix']
    # Nodes outside the inventory are the cluster's, named in the summary.
    assert sorted(f['summary'] for f in report['cluster']['findings']) == [
        'Node gpu-9: GPU validation failed: cuda validation failed',
        'Node gpu-bad: GPU validation failed: its result in ConfigMap gpu-validation-results is not JSON']
    assert report['summary']['nodes_with_errors'] == ['host-2']


def not_ready_pod(name, app, node):
    return {'metadata': {'name': name, 'namespace': 'gpu-operator', 'labels': {'app': app}}, 'spec': {'nodeName': node},
            'status': {'phase': 'Pending', 'initContainerStatuses': [
                {'name': 'plugin-validation', 'state': {'waiting': {'reason': 'CrashLoopBackOff'}}}]}}


def test_validation_pods_are_not_a_second_finding_of_a_failed_node():
    """A node whose validation failed has one finding, gpu-validation-failed, with what its validation Pods show now; a
    validation Pod of a node without a failed result, and any other operand Pod, keep their operand-pod-not-ready."""
    pods = [not_ready_pod('nvidia-operator-validator-x', 'nvidia-operator-validator', 'gpu-2'),
            not_ready_pod('nvidia-device-plugin-validator-y', 'nvidia-device-plugin-validator', 'gpu-2'),
            not_ready_pod('nvidia-device-plugin-daemonset-z', 'nvidia-device-plugin-daemonset', 'gpu-2'),
            not_ready_pod('nvidia-operator-validator-w', 'nvidia-operator-validator', 'gpu-1'),
            not_ready_pod('nvidia-cuda-validator-v', 'nvidia-cuda-validator', 'gpu-9')]
    data = {'gpu-2': json.dumps(FAILED), 'gpu-1': json.dumps({'node': 'gpu-1', 'state': 'passed', 'summary': 'ok', 'evidence': []}),
            'gpu-9': json.dumps(dict(FAILED, node='gpu-9', component='cuda', summary='cuda validation failed'))}
    nodes = {'host-1': dict(node_name='gpu-1', result={'findings': [], 'facts': {}}),
             'host-2': dict(node_name='gpu-2', result={'findings': [], 'facts': {}})}
    report = doctor_report.build(nodes, {'namespace': 'gpu-operator', 'pods': pods, 'config_maps': [results_config_map(data)]})
    found = [(f['check'], f['summary']) for f in report['nodes']['host-2']['findings']]
    assert sorted(found) == [
        ('gpu-validation-failed', 'GPU validation failed: ' + FAILED['summary']),
        ('operand-pod-not-ready', 'Pod gpu-operator/nvidia-device-plugin-daemonset-z is not ready (CrashLoopBackOff)')]
    evidence = next(f['evidence'] for f in report['nodes']['host-2']['findings'] if f['check'] == 'gpu-validation-failed')
    assert evidence[:2] == FAILED['evidence']
    assert 'now: Pod gpu-operator/nvidia-operator-validator-x is not ready (CrashLoopBackOff)' in evidence
    assert 'now: Pod gpu-operator/nvidia-device-plugin-validator-y is not ready (CrashLoopBackOff)' in evidence
    assert [(f['check'], f['summary']) for f in report['nodes']['host-1']['findings']] == [
        ('operand-pod-not-ready', 'Pod gpu-operator/nvidia-operator-validator-w is not ready (CrashLoopBackOff)')], 'it passed before: the Pod is news'
    assert [(f['check'], f['summary']) for f in report['cluster']['findings']] == [
        ('gpu-validation-failed', 'Node gpu-9: GPU validation failed: cuda validation failed')]
    assert report['summary']['errors'] == 4
