# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""check_mode_preview: in --check, the objects the API cannot dry-run yet (their namespace or CRD is not there)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.filter.cluster_manifests import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import objects

SERVICE_ACCOUNT = {'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': {'name': 'nvidia-device-plugin', 'namespace': 'gpu-operator'}}
DAEMONSET = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'nvidia-dcgm-exporter', 'namespace': 'gpu-operator'}}
CLUSTER_ROLE = {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole', 'metadata': {'name': 'nvidia-operator-validator'}}
POLICY = {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': 'cluster-policy'}}
MONITOR = {'apiVersion': 'monitoring.coreos.com/v1', 'kind': 'ServiceMonitor', 'metadata': {'name': 'nvidia-dcgm-exporter', 'namespace': 'gpu-operator'}}
OBJECTS = [SERVICE_ACCOUNT, DAEMONSET, CLUSTER_ROLE, POLICY]


def read(*resources):
    """A registered kubernetes.core.k8s_info result."""
    return {'changed': False, 'api_found': True, 'resources': list(resources)}


def crd(group, kind):
    return {'kind': 'CustomResourceDefinition', 'metadata': {'name': 'x.' + group}, 'spec': {'group': group, 'names': {'kind': kind}}}


NAMESPACE = read({'kind': 'Namespace', 'metadata': {'name': 'gpu-operator'}})
POLICY_CRD = read(crd('nvidia.com', 'ClusterPolicy'))
NOT_FOUND = read()
SKIPPED = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}


@pytest.mark.parametrize('objs, found, check_mode, applied, would_create', [
    # A fresh cluster: only the cluster-scoped objects of Kubernetes' own kinds can be dry-run.
    (OBJECTS, [NOT_FOUND, NOT_FOUND], True, [CLUSTER_ROLE],
     [('ServiceAccount gpu-operator/nvidia-device-plugin', ['namespace gpu-operator']),
      ('DaemonSet gpu-operator/nvidia-dcgm-exporter', ['namespace gpu-operator']),
      ('ClusterPolicy cluster-policy', ['the CustomResourceDefinition of ClusterPolicy'])]),
    # The namespace exists (made by hand), the CRD does not.
    (OBJECTS, [NAMESPACE, NOT_FOUND], True, [SERVICE_ACCOUNT, DAEMONSET, CLUSTER_ROLE],
     [('ClusterPolicy cluster-policy', ['the CustomResourceDefinition of ClusterPolicy'])]),
    # NVIDIA's CRD installed, the namespace not yet.
    (OBJECTS, [NOT_FOUND, POLICY_CRD], True, [CLUSTER_ROLE, POLICY],
     [('ServiceAccount gpu-operator/nvidia-device-plugin', ['namespace gpu-operator']),
      ('DaemonSet gpu-operator/nvidia-dcgm-exporter', ['namespace gpu-operator'])]),
    (OBJECTS, [NAMESPACE, POLICY_CRD], True, OBJECTS, []),
    # A custom kind in a missing namespace misses both.
    ([MONITOR], [NOT_FOUND], True, [],
     [('ServiceMonitor gpu-operator/nvidia-dcgm-exporter', ['namespace gpu-operator', 'the CustomResourceDefinition of ServiceMonitor'])]),
    # A CRD of another group with the same kind name is not the one.
    ([POLICY], [read(crd('example.com', 'ClusterPolicy'))], True, [],
     [('ClusterPolicy cluster-policy', ['the CustomResourceDefinition of ClusterPolicy'])]),
    # Outside check mode everything is applied, whatever was read (the reads are skipped there).
    (OBJECTS, [SKIPPED, SKIPPED], False, OBJECTS, []),
    (OBJECTS, None, False, OBJECTS, []),
    # Skipped reads in check mode found nothing.
    (OBJECTS[:1], [SKIPPED], True, [], [('ServiceAccount gpu-operator/nvidia-device-plugin', ['namespace gpu-operator'])]),
    ([], [NOT_FOUND], True, [], []),
], ids=['fresh cluster', 'namespace only', 'crd only', 'both exist', 'custom kind in a missing namespace', 'other group',
        'not check mode', 'not check mode, nothing read', 'skipped read', 'no objects'])
def test_check_mode_preview(objs, found, check_mode, applied, would_create):
    result = objects.check_mode_preview(objs, found, check_mode)
    assert result['apply'] == applied
    assert [(item['name'], item['missing']) for item in result['would_create']] == would_create
    assert [item['object'] for item in result['would_create']] == [obj for obj in objs if obj not in applied]


def test_the_summary_line():
    one = objects.check_mode_preview([DAEMONSET], [NOT_FOUND])['would_create'][0]['summary']
    assert one == 'DaemonSet gpu-operator/nvidia-dcgm-exporter would be created (not dry-run by the API: namespace gpu-operator does not exist yet)'
    two = objects.check_mode_preview([MONITOR], [NOT_FOUND])['would_create'][0]['summary']
    assert two == ('ServiceMonitor gpu-operator/nvidia-dcgm-exporter would be created (not dry-run by the API: namespace gpu-operator '
                   'and the CustomResourceDefinition of ServiceMonitor do not exist yet)')


def test_the_filter_takes_what_ansible_hands_over():
    preview = FilterModule().filters()['check_mode_preview']
    result = preview(OBJECTS, found=[NAMESPACE, NOT_FOUND], check_mode=True)
    assert result['apply'] == [SERVICE_ACCOUNT, DAEMONSET, CLUSTER_ROLE]
