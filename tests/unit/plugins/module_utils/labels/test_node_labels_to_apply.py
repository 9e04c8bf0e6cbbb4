# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Which computed labels the gpu_node_labels role applies under ClusterPolicy nfd.enabled / gfd.enabled (rules.labels_to_apply)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.filter.node_labels import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.rules import compute_labels, is_gfd_label, labels_to_apply
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import facts_of


@pytest.mark.parametrize('key, gfd', [
    ('nvidia.com/gpu.product', True),
    ('nvidia.com/gpu.count', True),
    ('nvidia.com/gpu.machine', True),
    ('nvidia.com/gpu.compute.major', True),
    ('nvidia.com/cuda.driver.major', True),
    ('nvidia.com/cuda.runtime-version.full', True),
    ('nvidia.com/mps.capable', True),
    ('nvidia.com/mig.capable', True),
    ('nvidia.com/mig.strategy', True),
    ('nvidia.com/mig-1g.10gb.count', True),  # a mixed-strategy MIG resource
    # The Operator's own labels.
    ('nvidia.com/gpu.present', False),
    ('nvidia.com/gpu.deploy.driver', False),
    ('nvidia.com/gpu.deploy.mig-manager', False),
    ('nvidia.com/mig.config', False),  # the MIG manager's wanted layout, set by the Operator
    # Labels of neither.
    ('nvidia.com/gpu', False),
    ('nvidia.com/gpu.presently', True),  # only the exact gpu.present is the Operator's
    ('nvidia.com/cuda', False),
    ('nvidia.com/vgpu.present', False),
    ('feature.node.kubernetes.io/pci-10de.present', False),
    ('example.com/nvidia.com/gpu.product', False),
])
def test_is_gfd_label(key, gfd):
    assert is_gfd_label(key) is gfd


LABELS = {
    'feature.node.kubernetes.io/pci-10de.present': 'true',
    'feature.node.kubernetes.io/kernel-version.major': '6',
    'nvidia.com/gpu.present': 'true',
    'nvidia.com/gpu.deploy.driver': 'pre-installed',
    'nvidia.com/gpu.product': 'Tesla-T4',
    'nvidia.com/cuda.driver.major': '515',
    'nvidia.com/mig.capable': 'false',
    'nvidia.com/mps.capable': 'false',
    'example.com/rack': 'r1',
}
NFD_KEYS = {'feature.node.kubernetes.io/pci-10de.present', 'feature.node.kubernetes.io/kernel-version.major'}
GFD_KEYS = {'nvidia.com/gpu.product', 'nvidia.com/cuda.driver.major', 'nvidia.com/mig.capable', 'nvidia.com/mps.capable'}


@pytest.mark.parametrize('nfd_enabled, gfd_labels, left_out', [
    (False, True, set()),
    (True, True, NFD_KEYS),
    (False, False, GFD_KEYS),
    (True, False, NFD_KEYS | GFD_KEYS),
])
def test_labels_to_apply(nfd_enabled, gfd_labels, left_out):
    assert labels_to_apply(LABELS, nfd_enabled, gfd_labels) == {key: value for key, value in LABELS.items() if key not in left_out}


def test_defaults_apply_everything():
    assert labels_to_apply(LABELS) == LABELS


def test_captured_mig_node_without_gfd_keeps_only_the_operator_labels():
    """The A100 MIG capture under the mixed strategy: every nvidia.com label but gpu.present and deploy.* is GFD's."""
    labels = compute_labels(facts_of('a100-sxm4-80gb-mig'), 'mixed')[0]
    assert labels['nvidia.com/mig.strategy'] == 'mixed' and 'nvidia.com/gpu.deploy.mig-manager' in labels
    applied = labels_to_apply(labels, nfd_enabled=True, gfd_labels=False)
    assert applied == {key: value for key, value in labels.items() if key == 'nvidia.com/gpu.present' or key.startswith('nvidia.com/gpu.deploy.')}


@pytest.mark.parametrize('nfd_enabled, gfd_labels, left_out', [
    ('false', 'true', set()),
    ('yes', 'no', NFD_KEYS | GFD_KEYS),
    (1, 0, NFD_KEYS | GFD_KEYS),
])
def test_filter_reads_switches_as_ansible_does(nfd_enabled, gfd_labels, left_out):
    apply = FilterModule().filters()['node_labels_to_apply']
    assert apply(LABELS, nfd_enabled=nfd_enabled, gfd_labels=gfd_labels) == {key: value for key, value in LABELS.items() if key not in left_out}
