# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Node Feature Discovery as the GPU Operator's chart v26.7.0 deploys it, held against the chart's own files.

tests/fixtures/gpu-operator-nfd/ holds the node-feature-discovery subchart's CRDs, values and Chart.yaml and the
gpu-operator chart's NodeFeatureRule template, unchanged (SOURCE.md there); PARENT_VALUES below is what the gpu-operator
chart's values.yaml sets under `node-feature-discovery:`. What a run does about an NFD already in the cluster is `plan`'s
table at the end.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import hashlib
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import MANAGED_BY
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import registry
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import node_feature_discovery as nfd

FIXTURE = Path(__file__).resolve().parents[5] / 'tests' / 'fixtures' / 'gpu-operator-nfd'
BLOBS = {'nfd-api-crds.yaml': '69e306c3b8a58ce9e86f1ea8cfc907484ed69186', 'values.yaml': '12a895d22f79b3c6a3a5f5fbc007509ad494f9a6',
         'Chart.yaml': '5330a00aed9283513a9d6a5c937c6a1842d6dc17', 'nodefeaturerules.yaml': '4584cffc1b7b5f29641e09ccc1b7b05be28656c0'}
# SOURCE: NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/values.yaml, `node-feature-discovery:` (the parent chart's
# values for its subchart), as data.
PARENT_VALUES = {
    'priorityClassName': 'system-node-critical',
    'gc': {'enable': True, 'replicaCount': 1, 'serviceAccount': {'name': 'node-feature-discovery', 'create': False}},
    'worker': {'serviceAccount': {'name': 'node-feature-discovery', 'create': False},
               'tolerations': [{'key': 'node-role.kubernetes.io/control-plane', 'operator': 'Equal', 'value': '', 'effect': 'NoSchedule'},
                               {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
               'config': {'sources': {'pci': {'deviceClassWhitelist': ['02', '0200', '0207', '0300', '0302'], 'deviceLabelFields': ['vendor']}}}},
    'master': {'serviceAccount': {'name': 'node-feature-discovery', 'create': True}, 'config': {'extraLabelNs': ['nvidia.com']}},
}


def merged(base, override):
    result = copy.deepcopy(base)
    for key, value in override.items():
        result[key] = merged(result[key], value) if isinstance(value, dict) and isinstance(result.get(key), dict) else copy.deepcopy(value)
    return result


def values():
    """The subchart's values as the gpu-operator chart installs it."""
    return merged(yaml.safe_load((FIXTURE / 'values.yaml').read_text()), PARENT_VALUES)


def without(data, key):
    if isinstance(data, dict):
        return dict((name, without(value, key)) for name, value in data.items() if name != key)
    if isinstance(data, list):
        return [without(item, key) for item in data]
    return data


def ours_removed(obj):
    """An object as the chart has it: without the label this collection marks what it installed with."""
    obj = copy.deepcopy(obj)
    labels = obj['metadata'].get('labels', {})
    for key in MANAGED_BY:
        labels.pop(key, None)
    if not labels:
        obj['metadata'].pop('labels', None)
    return obj


def by_kind_name(objects):
    return dict(((obj['kind'], obj['metadata']['name']), obj) for obj in objects)


RENDERED = by_kind_name(nfd.objects(nfd.settings({'enabled': True}), 'gpu-operator'))


def pod_of(kind, name):
    return RENDERED[(kind, nfd.FULLNAME + '-' + name)]['spec']['template']['spec']


def test_the_inputs_are_nvidias():
    for name, blob in BLOBS.items():
        data = (FIXTURE / name).read_bytes()
        assert hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest() == blob, name


def test_crds_are_the_charts_without_their_descriptions():
    """Facts carry over, sentences do not: the structural schema, names, scope and versions are the chart's."""
    chart = [without(doc, 'description') for doc in yaml.safe_load_all((FIXTURE / 'nfd-api-crds.yaml').read_text()) if doc]
    assert [ours_removed(crd) for crd in nfd.crds()] == chart
    assert nfd.CRD == chart[0]['metadata']['name']


def test_image_and_names_follow_the_chart():
    chart = yaml.safe_load((FIXTURE / 'Chart.yaml').read_text())
    given = values()
    assert (chart['name'], chart['appVersion']) == (nfd.NAME, nfd.APP_VERSION)
    assert nfd.settings({})['image'] == '%s:%s' % (given['image']['repository'], chart['appVersion']) and given['image']['tag'] is None
    assert nfd.settings({}, 'registry.local:5000/mirror')['image'] == 'registry.local:5000/mirror/nfd/node-feature-discovery:v0.19.0'
    for pod in (pod_of('DaemonSet', 'worker'), pod_of('Deployment', 'master'), pod_of('Deployment', 'gc')):
        assert pod['containers'][0]['imagePullPolicy'] == given['image']['pullPolicy']
        assert pod['priorityClassName'] == given['priorityClassName'] and 'imagePullSecrets' not in pod and not given['imagePullSecrets']
    accounts = {given['master']['serviceAccount']['name'], given['worker']['serviceAccount']['name'], given['gc']['serviceAccount']['name']}
    assert accounts == {nfd.ACCOUNT} and given['master']['serviceAccount']['create'] and not given['worker']['serviceAccount']['create']
    assert [key for key in RENDERED if key[0] == 'ServiceAccount'] == [('ServiceAccount', nfd.ACCOUNT)]


@pytest.mark.parametrize('role, kind', [('worker', 'DaemonSet'), ('master', 'Deployment'), ('gc', 'Deployment')])
def test_each_pod_has_the_values_of_its_component(role, kind):
    given = values()[role]
    pod = pod_of(kind, role)
    container = pod['containers'][0]
    assert container['name'] == role and container['resources'] == given['resources']
    assert pod['dnsPolicy'] == given['dnsPolicy'] and pod['hostNetwork'] is given['hostNetwork'] and pod['securityContext'] == given['podSecurityContext']
    assert container['ports'] == [{'containerPort': given['port'], 'name': 'http'}]
    for probe in ('startupProbe', 'livenessProbe', 'readinessProbe'):
        if probe in given:  # the template writes each setting that is set, with the /healthz check on the http port
            expected = dict({'httpGet': {'path': '/healthz', 'port': 'http'}}, **dict((k, v) for k, v in given[probe].items() if v is not None))
            assert container[probe] == expected, probe
    # gc's securityContext is written in its template, the others' come from their values
    assert container['securityContext'] == given.get('securityContext', nfd.RESTRICTED)
    assert pod.get('tolerations', []) == given['tolerations'] and pod.get('affinity', {}) == given['affinity']
    assert given['nodeSelector'] == {} and 'nodeSelector' not in pod and given['extraArgs'] == given['extraEnvs'] == []


def test_args_configs_and_strategy_follow_the_values():
    given = values()
    worker = RENDERED[('DaemonSet', nfd.FULLNAME + '-worker')]
    assert worker['spec']['updateStrategy'] == given['worker']['updateStrategy']
    assert pod_of('DaemonSet', 'worker')['containers'][0]['args'] == ['-owner-refs=%s' % ','.join(given['worker']['ownerRefs']), '-port=8080']
    master = RENDERED[('Deployment', nfd.FULLNAME + '-master')]
    assert master['spec']['replicas'] == given['master']['replicaCount'] == 1  # one replica: no -enable-leader-election
    assert master['spec']['template']['spec']['containers'][0]['args'] == [
        '-extra-label-ns=%s' % ','.join(given['master']['extraLabelNs'] or given['master']['config']['extraLabelNs']), '-port=8080']
    gc = RENDERED[('Deployment', nfd.FULLNAME + '-gc')]
    assert gc['spec']['replicas'] == given['gc']['replicaCount'] and gc['spec']['template']['spec']['containers'][0]['args'] == [
        '-gc-interval=%s' % given['gc']['interval']]
    for role in ('worker', 'master'):
        conf = RENDERED[('ConfigMap', '%s-%s-conf' % (nfd.FULLNAME, role))]['data']['nfd-%s.conf' % role]
        assert yaml.safe_load(conf) == given[role]['config']
    # the chart's own switches it leaves off are off here too: no topology updater, metrics, network policies, PDBs
    assert not given['topologyUpdater']['enable'] and not given['prometheus']['enable']
    assert not any(given[role]['networkPolicy']['enabled'] for role in ('master', 'worker', 'gc'))
    assert not given['master']['podDisruptionBudget']['enable'] and not given['gc']['podDisruptionBudget']['enable']
    assert sorted(kind for kind, _name in RENDERED) == [
        'ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ConfigMap', 'ConfigMap', 'DaemonSet', 'Deployment',
        'Deployment', 'Role', 'RoleBinding', 'ServiceAccount']


def test_kernel_module_rule_is_the_charts():
    """templates/nodefeaturerules.yaml, rendered with nfd.nodefeaturerules (its only condition)."""
    text = (FIXTURE / 'nodefeaturerules.yaml').read_text()
    body = '\n'.join(line for line in text.splitlines() if not re.match(r'^\s*\{\{.*\}\}\s*$', line))
    assert ours_removed(nfd.kernel_module_rules()) == yaml.safe_load(body)
    assert ('NodeFeatureRule', 'nvidia-kernel-modules') in by_kind_name(nfd.objects(nfd.settings({'enabled': True, 'nodefeaturerules': True}), 'ns'))


@pytest.mark.parametrize('given, message', [
    ({'enabled': 'yes'}, 'gpu_operator_nfd.enabled must be true or false'),
    ({'worker': {}}, 'gpu_operator_nfd.worker is not honoured by this collection (it honours enabled, nodefeaturerules)'),
    (['enabled'], 'gpu_operator_nfd must be a mapping'),
])
def test_bad_settings(given, message):
    with pytest.raises(GpuOpsError, match=re.escape(message)):
        registry.resolution(nfd=given)


OURS = {'metadata': {'name': nfd.CRD, 'labels': dict(MANAGED_BY)}}
THEIRS = {'metadata': {'name': nfd.CRD, 'labels': {}}}
FOREIGN_WORKER = {'metadata': {'name': 'nfd-worker', 'namespace': 'node-feature-discovery'},
                  'spec': {'template': {'spec': {'containers': [{'name': 'nfd-worker', 'command': ['nfd-worker']}]}}}}
OUR_WORKER = {'metadata': {'name': nfd.FULLNAME + '-worker', 'namespace': 'gpu-operator', 'labels': dict(MANAGED_BY)},
              'spec': {'template': {'spec': {'containers': [{'name': 'worker', 'command': ['nfd-worker']}]}}}}
OTHER = {'metadata': {'name': 'kube-proxy', 'namespace': 'kube-system'}, 'spec': {'template': {'spec': {'containers': [{'name': 'kube-proxy'}]}}}}
WORKLOADS = 12  # the account, RBAC, ConfigMaps, worker, master and gc (test_args_configs_and_strategy_follow_the_values)


# enabled, nodefeaturerules, state, NodeFeature CRD found, DaemonSets found -> CRDs applied, objects applied, removed, found
@pytest.mark.parametrize('enabled, rules, state, crd, daemonsets, applied_crds, applied, removed, found', [
    (True, False, 'present', None, [OTHER], 3, WORKLOADS, 0, ''),                      # a fresh cluster
    (True, True, 'present', OURS, [OUR_WORKER], 3, WORKLOADS + 1, 0, ''),              # ours, with the chart's rule
    (True, False, 'present', OURS, [OUR_WORKER], 3, WORKLOADS, 1, ''),                 # the rule turned off goes
    (True, False, 'present', THEIRS, [], 0, WORKLOADS, 1, 'CRDs are used as they are'),  # left by a Helm release
    (True, False, 'present', THEIRS, [FOREIGN_WORKER], 0, 0, 0, 'NFD runs already (DaemonSet node-feature-discovery/nfd-worker'),
    (True, False, 'present', None, [FOREIGN_WORKER], 0, 0, 0, 'NFD runs already'),     # an NFD of old, without the API
    (False, False, 'present', None, None, 0, 0, 0, ''),                                 # the default: nothing asked of the API
    (False, False, 'present', OURS, [OUR_WORKER], 0, 0, WORKLOADS + 1 + 3, ''),         # turned off: ours go, CRDs last
    (False, False, 'present', THEIRS, [OUR_WORKER], 0, 0, WORKLOADS + 1, ''),           # theirs stay
    (False, False, 'present', THEIRS, [FOREIGN_WORKER], 0, 0, 0, ''),                   # an NFD of its own: nothing touched
    (True, True, 'absent', OURS, [OUR_WORKER], 0, 0, WORKLOADS + 1 + 3, ''),            # uninstall
])
def test_plan(enabled, rules, state, crd, daemonsets, applied_crds, applied, removed, found):
    """Issue 24: NFD as the chart installs it, but never a second one where the cluster runs its own, and nothing that is
    not this collection's removed."""
    resolved = registry.resolution(nfd={'enabled': enabled, 'nodefeaturerules': rules})
    planned = registry.nfd(resolved, 'gpu-operator', crd, daemonsets, state)
    assert (len(planned['crds']), len(planned['present']), len(planned['absent'])) == (applied_crds, applied, removed)
    assert found in planned['found'] and bool(found) is bool(planned['found'])
    if removed:
        kinds = [item['kind'] for item in planned['absent']]
        assert kinds.index('NodeFeatureRule') < len(kinds) - (3 if crd is OURS and kinds[-1] == 'CustomResourceDefinition' else 0)
        assert ('CustomResourceDefinition' in kinds) is (crd is OURS and not enabled or state == 'absent')
