# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The contract between the node side and the cluster side: runtime names, the sharing and MIG label view, defaults.

Each side is tested against it elsewhere (the runtime modules, nfd_labels, the operands, the doctor); these tests pin
the rules themselves and tie the container_toolkit role's defaults to the ones the cluster side assumes.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.filter.container_toolkit import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import host_sections, registry
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import all_runtime_names, runtime_entries

ROLES = Path(__file__).resolve().parents[5] / 'roles'


@pytest.mark.parametrize('name, cdi, names', [
    ('nvidia', False, ['nvidia']),
    ('nvidia', True, ['nvidia', 'nvidia-cdi', 'nvidia-legacy']),
    ('gpu', False, ['gpu']),
    ('gpu', True, ['gpu', 'gpu-cdi', 'gpu-legacy']),
])
def test_runtime_names_are_those_the_runtime_modules_register(name, cdi, names):
    """The names the *_nvidia_runtime modules register (runtime_entries) are the RuntimeClasses' handlers (runtime_names)."""
    variants = contract.runtime_variants(cdi)
    assert contract.runtime_names(name, variants) == names
    assert [entry[0] for entry in runtime_entries(name, '/usr/bin/nvidia-container-runtime', variants)] == names
    assert [entry[1] for entry in runtime_entries(name, '/usr/bin/nvidia-container-runtime', variants)] == [
        '/usr/bin/nvidia-container-runtime' + ('.' + variant if variant else '') for variant in [''] + variants]
    assert set(names) <= set(all_runtime_names(name))


def test_container_toolkit_defaults_are_the_contracts():
    """The cluster side assumes what the container_toolkit role does when a node does not say otherwise: the role's
    defaults are the ClusterPolicy's (container_toolkit_settings), the contract's for a ClusterPolicy that says nothing."""
    defaults = yaml.safe_load((ROLES / 'container_toolkit' / 'defaults' / 'main.yml').read_text())
    assert {key: defaults['container_toolkit_' + key] for key in contract.TOOLKIT_DEFAULTS} == {
        key: '{{ __container_toolkit_policy.%s }}' % key for key in contract.TOOLKIT_DEFAULTS}
    settings = host_sections.container_toolkit_settings(registry.resolution()['spec'])
    assert {key: settings[key] for key in contract.TOOLKIT_DEFAULTS} == contract.TOOLKIT_DEFAULTS
    assert defaults['container_toolkit_validations_dir'] == contract.VALIDATIONS_DIR


@pytest.mark.parametrize('sharing, mig, labels, shared', [
    ({}, 'none', {'nvidia.com/gpu.replicas': '1', 'nvidia.com/gpu.sharing-strategy': 'none', 'nvidia.com/mps.capable': 'false',
                  'nvidia.com/mig.strategy': None}, False),
    ({'strategy': 'time-slicing', 'replicas': 4}, 'single', {'nvidia.com/gpu.replicas': '4', 'nvidia.com/gpu.sharing-strategy': 'time-slicing',
                                                             'nvidia.com/mps.capable': 'false', 'nvidia.com/mig.strategy': 'single'}, True),
    ({'strategy': 'mps', 'replicas': 2, 'rename_by_default': True}, 'mixed', {
        'nvidia.com/gpu.replicas': '2', 'nvidia.com/gpu.sharing-strategy': 'mps', 'nvidia.com/mps.capable': 'true',
        'nvidia.com/mig.strategy': 'mixed'}, False),
    # one replica shares nothing: no strategy label, no -SHARED
    ({'strategy': 'time-slicing', 'replicas': 1}, 'single', {'nvidia.com/gpu.replicas': '1', 'nvidia.com/gpu.sharing-strategy': 'none',
                                                             'nvidia.com/mps.capable': 'false', 'nvidia.com/mig.strategy': 'single'}, False),
])
def test_sharing_labels(sharing, mig, labels, shared):
    assert contract.sharing_labels(sharing, mig) == (labels, shared)


TIME_SLICING = {'sharing': {'timeSlicing': {'renameByDefault': True, 'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}


@pytest.mark.parametrize('config, sharing, renamed', [
    (None, {'strategy': 'none', 'replicas': 1, 'rename_by_default': False}, set()),
    (TIME_SLICING, {'strategy': 'time-slicing', 'replicas': 4, 'rename_by_default': True}, {'nvidia.com/gpu'}),
    ({'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}}, {'strategy': 'mps', 'replicas': 2, 'rename_by_default': False},
     set()),
    # MIG devices shared under the mixed strategy do not share nvidia.com/gpu
    ({'sharing': {'timeSlicing': {'renameByDefault': True, 'resources': [{'name': 'nvidia.com/mig-1g.10gb', 'replicas': 2}]}}},
     {'strategy': 'none', 'replicas': 1, 'rename_by_default': False}, {'nvidia.com/mig-1g.10gb'}),
])
def test_config_sharing(config, sharing, renamed):
    assert contract.config_sharing(config) == sharing
    assert contract.renamed_resources(config) == renamed


def test_selected_config():
    assert contract.selected_config({'default': 'ts'}, 'mps') == 'mps'
    assert contract.selected_config({'default': 'ts'}, '') == 'ts'
    assert contract.selected_config({}, '') == contract.selected_config(None) == ''


def test_deploy_labels():
    assert contract.deploy_label('device-plugin') == 'nvidia.com/gpu.deploy.device-plugin'
    assert len(set(contract.DEPLOY_COMPONENTS)) == len(contract.DEPLOY_COMPONENTS) and contract.MIG_MANAGER_COMPONENT not in contract.DEPLOY_COMPONENTS


MIG_LABELS = {'nvidia.com/gpu.count': '0', 'nvidia.com/gpu.replicas': '0', 'nvidia.com/mig-1g.20gb.count': '4', 'nvidia.com/mig-1g.20gb.replicas': '1',
              'nvidia.com/mig-3g.40gb.count': '0'}


@pytest.mark.parametrize('labels, strategy, config, expected', [
    ({'nvidia.com/gpu.count': '8', 'nvidia.com/gpu.replicas': '1'}, 'single', None, ['nvidia.com/gpu']),
    ({'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '4'}, 'single', TIME_SLICING, ['nvidia.com/gpu.shared']),
    ({'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '4'}, 'single', {'sharing': {'timeSlicing': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': 4}]}}}, ['nvidia.com/gpu']),
    (MIG_LABELS, 'mixed', None, ['nvidia.com/mig-1g.20gb']),
    (dict(MIG_LABELS, **{'nvidia.com/gpu.count': '2', 'nvidia.com/gpu.replicas': '1'}), 'mixed', TIME_SLICING,
     ['nvidia.com/gpu.shared', 'nvidia.com/mig-1g.20gb']),
    (MIG_LABELS, 'single', None, ['nvidia.com/gpu']),  # nothing described: the capacity check says which label is missing
    ({}, 'single', None, ['nvidia.com/gpu']),
], ids=['full GPUs', 'time-sliced, renamed', 'time-sliced, not renamed', 'MIG mixed', 'mixed with full GPUs, shared', 'MIG labels, single',
        'no labels'])
def test_gpu_resources(labels, strategy, config, expected):
    assert contract.gpu_resources(labels, strategy, config) == expected


@pytest.mark.parametrize('cdi, variants', [(True, ['cdi', 'legacy']), ('true', ['cdi', 'legacy']), (False, []), ('no', [])])
def test_runtime_variants_filter_reads_switches_as_ansible_does(cdi, variants):
    """The container_toolkit role registers its variants through this filter (roles/container_toolkit/vars/main.yml)."""
    assert FilterModule().filters()['runtime_variants'](cdi) == variants
