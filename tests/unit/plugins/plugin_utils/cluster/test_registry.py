# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The registry: the tables derived from the operands are whole and agree with the contract the node side writes."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
from pathlib import Path

import yaml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import host_sections, policy, prerequisites, registry, skeleton

REPO = Path(__file__).resolve().parents[5]
FIXTURES = REPO / 'tests' / 'fixtures' / 'gpu-operator'
OWNERS = [operand for operand in registry.OPERANDS if operand.image]


def test_each_operand_selects_on_a_deploy_label_the_nodes_get():
    """nvidia.com/gpu.deploy.<component> of every operand is one the node labels stage writes (contract.STATE_COMPONENTS: the
    container workload's, the MIG manager's, the VM workloads')."""
    for operand in registry.OPERANDS:
        assert operand.deploy in contract.STATE_COMPONENTS, operand.daemonset


def test_names_are_unique_and_each_section_has_one_owner():
    assert len({operand.daemonset for operand in registry.OPERANDS}) == len(registry.OPERANDS)
    assert len({operand.section for operand in OWNERS}) == len(OWNERS)
    assert {operand.section for operand in registry.OPERANDS} == {operand.section for operand in OWNERS}, 'a section without its owner'
    assert {operand.stage for operand in registry.OPERANDS} == {'operands', 'validation'}


def test_schema_defaults_and_crd_cover_every_section():
    sections = {operand.section for operand in OWNERS}
    assert set(policy.schema(registry.OPERANDS)) == set(policy.COMMON_SCHEMA) | set(host_sections.SCHEMA) | sections
    assert set(policy.defaults(registry.OPERANDS)) == set(policy.COMMON_SCHEMA) | set(host_sections.SCHEMA) | sections
    assert dict((section, set(fields)) for section, fields in host_sections.defaults().items()) == dict(
        (section, set(fields)) for section, fields in host_sections.SCHEMA.items()), 'every field the node roles honour has its default'
    crd = prerequisites.cluster_policy_crd()['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']
    assert sections <= set(crd['properties']) and set(crd['required']) <= set(crd['properties']) | set(policy.NOT_DEPLOYED)
    for operand in OWNERS:
        # every field its schema honours has its defaults, and the CRD describes every field of its own
        assert set(operand.section_defaults()) == set(operand.schema()), operand.section
        assert set(operand.crd) <= set(operand.settings), operand.section
        assert set(operand.fields) <= set(skeleton.OPERAND_FIELDS)


def test_the_cluster_policy_holds_every_section():
    spec = registry.cluster_policy(registry.resolution())['spec']
    assert set(spec) == set(policy.COMMON_SCHEMA) | {operand.section for operand in OWNERS} | set(policy.NOT_DEPLOYED)
    assert all(spec[section] == {'enabled': False} for section in policy.NOT_DEPLOYED)


# What each section's IsEnabled() answers when `enabled` is left out. SOURCE: NVIDIA/gpu-operator v26.7.0,
# api/nvidia/v1/clusterpolicy_types.go (the IsEnabled method of each section's spec type).
OPERATOR_ENABLED_WHEN_LEFT_OUT = {
    'driver': True, 'toolkit': True, 'devicePlugin': True, 'dcgm': True, 'dcgmExporter': True, 'gfd': True, 'migManager': True,
    'nodeStatusExporter': False, 'gds': False, 'gdrcopy': False, 'psa': False, 'sandboxWorkloads': False, 'vgpuDeviceManager': False,
    'vfioManager': False, 'sandboxDevicePlugin': False, 'kataSandboxDevicePlugin': False, 'ccManager': False,
}


def test_a_section_left_out_is_on_or_off_as_in_the_chart():
    """deviation: section-defaults: a left-out `enabled` takes the chart's values.yaml (the input unchanged), except where a
    deviation of its own says otherwise (gfd-default; cdi-default: None follows the nodes); the Operator's code answers
    otherwise for exactly the sections the docs name."""
    chart = yaml.safe_load((FIXTURES / 'values.yaml').read_text())
    ours = dict((section, fields['enabled']) for section, fields in policy.defaults(registry.OPERANDS).items() if 'enabled' in fields)
    own_deviations = {'gfd': False, 'cdi': None}
    assert ours == dict(((section, chart[section]['enabled']) for section in ours), **own_deviations)
    differ = sorted(section for section, enabled in OPERATOR_ENABLED_WHEN_LEFT_OUT.items()
                    if section not in own_deviations and enabled != ours[section])
    assert differ == ['ccManager', 'dcgm', 'kataSandboxDevicePlugin', 'sandboxDevicePlugin', 'vfioManager', 'vgpuDeviceManager']
    named = re.search(r'deviation: section-defaults\*\* - (.*?)\n- \*\*', (REPO / 'docs' / 'coming-from-gpu-operator.md').read_text(), re.S)
    assert set(differ) <= set(re.findall(r'`(\w+)`', named.group(1))), named.group(1)
