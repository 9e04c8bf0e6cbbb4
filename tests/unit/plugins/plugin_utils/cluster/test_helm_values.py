# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The chart's values as the ClusterPolicy its template renders (helm_values.py), held against facts of the chart.

SOURCE: NVIDIA/gpu-operator v26.7.0 (commit 10ee5b3638b89e11e949412aafa5ba99279c3721),
deployments/gpu-operator/templates/clusterpolicy.yaml (what it writes, when, quoted or not), templates/_helpers.tpl
(gpu-operator.operand-labels), templates/plugin_config.yaml, mig_config.yaml, dcgm_exporter_config.yaml (the ConfigMaps of
`create` and `data`), values.yaml (copied unchanged into tests/fixtures/gpu-operator/). The chart is published with version
and appVersion v26.7.0.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import fields, helm_values, policy, registry

OPERATOR = Path(__file__).resolve().parents[5] / 'tests' / 'fixtures' / 'gpu-operator'
VALUES = yaml.safe_load((OPERATOR / 'values.yaml').read_text())
CDI_NODES = [{'host': 'gpu-a', 'cdi_enabled': True}]


def spec_of(values):
    return helm_values.cluster_policy_spec(helm_values.values_of(values))


def test_the_chart_defaults_are_the_chart_values_file():
    assert helm_values.CHART_VALUES == VALUES


def leaves(values, path=()):
    for key, value in values.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, path + (key,))
        else:
            yield path + (key,), value


def another(value):
    """A value of the same kind that differs."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + '-x' if value else 'x'
    if isinstance(value, list):
        return value + [{'name': 'x', 'value': 'y'} if value and isinstance(value[0], dict) else 'x']
    return {'x': 'y'}


def rendered(values):
    return helm_values.cluster_policy_spec(values), helm_values.config_data(values)


def declared(path):
    """The row of fields.CHART_FIELDS or SPEC_EXTRAS that covers a values path."""
    dotted = '.'.join(path)
    rows = dict(fields.CHART_FIELDS, **fields.SPEC_EXTRAS)
    return next((row for row in rows if dotted == row or dotted.startswith(row + '.')), None)


# Values the template writes only with another one set: the value that makes it written.
CONDITIONAL = {('devicePlugin', 'config', 'default'): (('devicePlugin', 'config', 'name'), 'plugin-config')}


def with_leaf(values, path, value):
    values = copy.deepcopy(values)
    target = values
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return values


@pytest.mark.parametrize('path', [path for path, _value in leaves(VALUES)], ids='.'.join)
def test_every_chart_value_is_rendered_or_declared(path):
    """Changing a value of the chart's values.yaml changes the ClusterPolicy (or the ConfigMaps) the mapping renders, or
    the value is a row of fields.CHART_FIELDS / SPEC_EXTRAS (what it is here) - and then it does not change the ClusterPolicy,
    unless it is one of the chart's config fields, which go to the config sections."""
    base = rendered(VALUES)
    value = dict(leaves(VALUES))[path]
    values = VALUES
    if path in CONDITIONAL:
        values = with_leaf(values, *CONDITIONAL[path])
        base = rendered(values)
    changed = rendered(with_leaf(values, path, another(value))) != base
    row = declared(path)
    assert changed or row, '%s is neither rendered nor declared in fields.CHART_FIELDS' % '.'.join(path)
    if row in fields.CHART_FIELDS:
        assert not changed, '%s is declared as no ClusterPolicy field, yet renders one' % '.'.join(path)


# (the values, as a values file overrides them; what the template writes: a part of the spec)
FACTS = [
    # Only when set: an empty runtimeClass or priorityClassName is not written (the Operator's defaults then apply).
    ({'operator': {'runtimeClass': ''}, 'daemonsets': {'priorityClassName': ''}}, {'operator': {}}),
    # rollingUpdate.maxUnavailable is always written as a string; the operand labels carry the chart's label.
    ({'daemonsets': {'rollingUpdate': {'maxUnavailable': 2}, 'labels': {'team': 'ml'}}},
     {'daemonsets': {'rollingUpdate': {'maxUnavailable': '2'}, 'labels': {'helm.sh/chart': 'gpu-operator-v26.7.0', 'team': 'ml'}}}),
    # The validator's version defaults to the chart's appVersion; its component sections are written with env: [] when empty.
    ({'validator': {'version': '', 'cuda': {'other': 1}}},
     {'validator': {'version': 'v26.7.0', 'plugin': {'env': []}, 'cuda': {'env': []}}}),
    # versions are quoted: a number stays a string.
    ({'devicePlugin': {'version': 1.5}}, {'devicePlugin': {'version': '1.5'}}),
    # devicePlugin.config is written only with a name, and then with its default (quoted, empty too).
    ({'devicePlugin': {'config': {'name': 'plugins'}}}, {'devicePlugin': {'config': {'name': 'plugins', 'default': ''}}}),
    # dcgmExporter.config only with a name, without create and data.
    ({'dcgmExporter': {'config': {'name': 'metrics', 'create': True, 'data': 'X, gauge, x'}}}, {'dcgmExporter': {'config': {'name': 'metrics'}}}),
    # migManager.config is written whenever set: its default always, quoted.
    ({'migManager': {'config': {'default': ''}}}, {'migManager': {'config': {'default': ''}}}),
    # The driver's upgrade policy: gpuPodDeletion is the CR's podDeletion; unset switches default to false.
    ({'driver': {'upgradePolicy': {'autoUpgrade': None, 'gpuPodDeletion': {'force': True, 'timeoutSeconds': 60}}}},
     {'driver': {'upgradePolicy': {'autoUpgrade': False, 'podDeletion': {'force': True, 'timeoutSeconds': 60, 'deleteEmptyDir': False}}}}),
    # With the NVIDIADriver CRD the driver section is its switch and the upgrade policy only.
    ({'driver': {'nvidiaDriverCRD': {'enabled': True}}},
     {'driver': {'enabled': True, 'useNvidiaDriverCRD': True, 'version': {'$absent': True}, 'upgradePolicy': {'maxParallelUpgrades': 1}}}),
    # cdi.nriPluginEnabled only with cdi.enabled.
    ({'cdi': {'enabled': False, 'nriPluginEnabled': True}}, {'cdi': {'enabled': False, 'nriPluginEnabled': {'$absent': True}}}),
    # ccManager.defaultMode is quoted: "on" stays a string (YAML 1.1 would read on as true).
    ({}, {'ccManager': {'defaultMode': 'on'}, 'psa': {'enabled': False}, 'hostPaths': {'rootFS': '/', 'driverInstallDir': '/run/nvidia/driver'}}),
    # gds and gdrcopy only when set; gdrcopy.enabled defaults to false, its version is always written.
    ({'gds': None, 'gdrcopy': {'enabled': None}}, {'gds': {'$absent': True}, 'gdrcopy': {'enabled': False, 'version': 'v2.6'}}),
    # sandboxDevicePlugin.enabled only when true; kataSandboxDevicePlugin.enabled whenever set, false too.
    ({'sandboxDevicePlugin': {'enabled': False}, 'kataSandboxDevicePlugin': {'enabled': False}},
     {'sandboxDevicePlugin': {'enabled': {'$absent': True}}, 'kataSandboxDevicePlugin': {'enabled': False}}),
    # A string read back as YAML: an unquoted "true" becomes a boolean.
    ({'dcgmExporter': {'hostPID': 'true'}}, {'dcgmExporter': {'hostPID': True}}),
]


def holds(spec, part):
    for key, value in part.items():
        if value == {'$absent': True}:
            assert key not in spec, key
        elif isinstance(value, dict) and value:
            holds(spec[key], value)
        else:
            assert spec[key] == value, (key, spec[key], value)


@pytest.mark.parametrize('values, part', FACTS)
def test_the_template_writes_as_the_chart_does(values, part):
    holds(spec_of(values), part)


def test_values_merge_as_helm_merges_them():
    """Maps merge key by key, a list replaces, a null removes; `helm get values` pasted with its header line works."""
    values = helm_values.values_of({'COMPUTED VALUES': None, 'daemonsets': {'tolerations': [], 'labels': None}, 'gfd': {'enabled': False}})
    assert values['daemonsets']['tolerations'] == [] and 'labels' not in values['daemonsets']
    assert values['gfd'] == dict(VALUES['gfd'], enabled=False) and 'COMPUTED VALUES' not in values
    assert helm_values.values_of(VALUES) == VALUES, '`helm get values -a` output: all of them, as given'


def test_the_charts_config_maps_go_to_the_config_sections():
    """create with data: the ConfigMap, as the chart creates it; data without create, or create without data: nothing, as
    with the chart (which ignores them)."""
    data = {'ts': {'version': 'v1', 'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}}}
    found = helm_values.from_values({'devicePlugin': {'config': {'name': 'plugins', 'default': 'ts', 'create': True, 'data': data}},
                                     'migManager': {'config': {'name': 'mine', 'create': False, 'data': {'config.yaml': 'x'}}}})
    assert found['spec']['devicePlugin']['config'] == {'name': 'plugins', 'default': 'ts', 'create': True, 'data': data}
    assert found['spec']['migManager']['config'] == {'name': 'mine', 'default': 'all-disabled'}


@pytest.mark.parametrize('values, message', [
    ({'clusterPolicy': {'deployCR': False}}, 'clusterPolicy.deployCR is false'),
    ({'gpuCluster': {'deployCR': True}}, 'gpuCluster.deployCR is true'),
    ({'platform': {'openshift': True}}, 'platform.openshift is true'),
    ({'extraObjects': [{'kind': 'ConfigMap'}]}, 'extraObjects is not empty'),
    ({'driver': {'nvidiaDriverCRD': {'enabled': True}}}, 'driver.useNvidiaDriverCRD is True: NVIDIADriver custom resources are not read'),
    ('driver: {}', 'gpu_operator_helm_values must be the mapping of a values file'),
])
def test_values_that_would_be_wrong_to_ignore_are_refused(values, message):
    with pytest.raises(policy.PolicyError) as caught:
        registry.resolution(helm_values=values, nodes=CDI_NODES)
    assert message in str(caught.value)


def test_the_chart_defaults_resolve_whole():
    """The chart's values.yaml as it is: nothing refused, no note, the ClusterPolicy the chart writes (less its
    app.kubernetes.io/managed-by label), NFD's settings handed on."""
    resolved = registry.resolution(helm_values=VALUES, nodes=CDI_NODES)
    assert resolved['notes'] == [] and resolved['chart'] == {'nfd': VALUES['nfd'], 'node-feature-discovery': VALUES['node-feature-discovery']}
    spec = registry.cluster_policy(resolved)['spec']
    assert spec['daemonsets']['labels'] == {'helm.sh/chart': 'gpu-operator-v26.7.0'}
    assert (spec['gfd']['enabled'], spec['cdi']['enabled'], spec['dcgm'], spec['nodeStatusExporter']['enabled']) == (True, True, {
        'enabled': False, 'repository': 'nvcr.io/nvidia/cloud-native', 'image': 'dcgm', 'version': '4.6.0-1-ubuntu24.04',
        'imagePullPolicy': 'IfNotPresent', 'imagePullSecrets': [], 'resources': {}, 'args': [], 'env': [], 'hostNetwork': False}, False)
    assert spec['driver']['enabled'] is False and spec['driver']['version'] == '595.91.07', 'the driver is the host\'s (toolkit-on-host)'
    assert spec['sandboxWorkloads'] == {'enabled': False, 'defaultWorkload': 'container', 'mode': 'kubevirt'}


def test_the_policy_wins_over_the_values_field_by_field():
    """Both given: the values render the ClusterPolicy and gpu_operator_policy is laid over it, as a `kubectl patch` of the
    ClusterPolicy a Helm install made would be; what the policy leaves out stays the values'."""
    resolved = registry.resolution({'gfd': {'enabled': False}, 'devicePlugin': {'env': [{'name': 'A', 'value': 'b'}]}},
                                   helm_values={'gfd': {'env': [{'name': 'X', 'value': 'y'}]}, 'mig': {'strategy': 'mixed'}}, nodes=CDI_NODES)
    spec = resolved['spec']
    assert spec['gfd']['enabled'] is False and spec['gfd']['env'] == [{'name': 'X', 'value': 'y'}]
    assert spec['mig']['strategy'] == 'mixed' and spec['devicePlugin']['env'] == [{'name': 'A', 'value': 'b'}]
