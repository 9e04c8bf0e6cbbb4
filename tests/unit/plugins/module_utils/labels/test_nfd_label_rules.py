# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The label set of each captured node, table-driven: NFD, GFD and Operator formats, MIG strategies, sharing, deploy."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import os

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.rules import (
    LabelError, compute_labels, kernel_labels, labels_to_apply, local_feature_text, os_release_labels, sanitise)
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import A100_40GB_MIG_LIST, GPUS, SIMULATOR, facts_of, listing_only_runner

PCI_0302 = {'feature.node.kubernetes.io/pci-10de.present': 'true', 'feature.node.kubernetes.io/pci-0302_10de.present': 'true'}
# SOURCE: NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels[container] (client: issue 24 item 4).
DEPLOY = {'nvidia.com/gpu.deploy.' + name: 'true' for name in (
    'driver', 'gpu-feature-discovery', 'container-toolkit', 'device-plugin', 'dcgm', 'dcgm-exporter', 'node-status-exporter',
    'operator-validator', 'client')}
MIG_MANAGER = {'nvidia.com/gpu.deploy.mig-manager': 'true'}


def driver(full, major, minor, rev):
    return {'nvidia.com/cuda.driver.major': major, 'nvidia.com/cuda.driver.minor': minor, 'nvidia.com/cuda.driver.rev': rev,
            'nvidia.com/cuda.driver-version.major': major, 'nvidia.com/cuda.driver-version.minor': minor,
            'nvidia.com/cuda.driver-version.revision': rev, 'nvidia.com/cuda.driver-version.full': full}


def runtime(major, minor):
    return {'nvidia.com/cuda.runtime.major': major, 'nvidia.com/cuda.runtime.minor': minor, 'nvidia.com/cuda.runtime-version.major': major,
            'nvidia.com/cuda.runtime-version.minor': minor, 'nvidia.com/cuda.runtime-version.full': major + '.' + minor}


COMMON = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.machine': 'unknown', 'nvidia.com/mps.capable': 'false',
          'nvidia.com/gpu.mode': 'compute', 'nvidia.com/gpu.sharing-strategy': 'none'}
# H100: no -q -x capture, so no CUDA version; compute capability from --query-gpu.
H100 = dict(PCI_0302, **COMMON, **DEPLOY, **MIG_MANAGER, **driver('590.48.01', '590', '48', '01'), **{
    'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3', 'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '1',
    'nvidia.com/gpu.memory': '81559', 'nvidia.com/gpu.family': 'hopper', 'nvidia.com/gpu.compute.major': '9',
    'nvidia.com/gpu.compute.minor': '0', 'nvidia.com/mig.capable': 'true'})
# T4 and A100: -q -x only, so no compute capability: the family comes from product_architecture.
T4 = dict(PCI_0302, **COMMON, **DEPLOY, **driver('515.105.01', '515', '105', '01'), **runtime('11', '7'), **{
    'nvidia.com/gpu.product': 'Tesla-T4', 'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '1', 'nvidia.com/gpu.memory': '15360',
    'nvidia.com/gpu.family': 'turing', 'nvidia.com/mig.capable': 'false'})
# MIG-enabled GPUs are labelled without sharing (replicas 0), as GFD does.
A100 = dict(PCI_0302, **COMMON, **DEPLOY, **MIG_MANAGER, **driver('535.54.03', '535', '54', '03'), **runtime('12', '2'), **{
    'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB', 'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '0',
    'nvidia.com/gpu.memory': '81920', 'nvidia.com/gpu.family': 'ampere', 'nvidia.com/mig.capable': 'true'})
NO_PROFILES = 'MIG profile names are unknown (nvidia-smi -L did not answer)'


@pytest.mark.parametrize('fixture, strategy, expected, warning', [
    ('h100-sxm5-80gb-x1', 'none', H100, None),
    ('h100-sxm5-80gb-x1', 'mixed', dict(H100, **{'nvidia.com/mig.strategy': 'mixed'}), None),
    ('t4', 'none', T4, None),
    ('a100-sxm4-80gb-mig', 'none', A100, None),
    # The A100 capture has no -L: the MIG device labels cannot be named, the others are set and the gap is warned about.
    ('a100-sxm4-80gb-mig', 'single', dict(A100, **{'nvidia.com/mig.strategy': 'single'}), NO_PROFILES),
    ('a100-sxm4-80gb-mig', 'mixed', dict(A100, **{'nvidia.com/mig.strategy': 'mixed'}), 'MIG profile names of GPU 0 are unknown'),
    ('cpu-only', 'none', {}, None),
    ('cpu-only', 'single', {}, None),
])
def test_fixture_labels(fixture, strategy, expected, warning):
    labels, warnings = compute_labels(facts_of(fixture), strategy)
    assert labels == expected
    if warning:
        assert any(warning in w for w in warnings), warnings
    else:
        assert warnings == []


def test_labels_are_sorted():
    labels = compute_labels(facts_of('t4'))[0]
    assert list(labels) == sorted(labels)


def a100_40gb_facts():
    # The simulator's path stands for an nvidia-smi that exists; the runner answers for it. The PCI view is a CPU node's.
    return gpu_discovery.gather(listing_only_runner(A100_40GB_MIG_LIST), nvidia_smi=SIMULATOR, sysfs_root=os.path.join(GPUS, 'cpu-only', 'sys'),
                                procfs_root=GPUS, os_release_path=GPUS)


@pytest.mark.parametrize('strategy, expected', [
    ('none', {'nvidia.com/gpu.product': 'A100-SXM4-40GB', 'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.replicas': '0'}),
    ('single', {'nvidia.com/mig.strategy': 'single', 'nvidia.com/gpu.product': 'A100-SXM4-40GB-MIG-1c.3g.20gb', 'nvidia.com/gpu.count': '2',
                'nvidia.com/gpu.replicas': '1', 'nvidia.com/gpu.slices.gi': '3', 'nvidia.com/gpu.slices.ci': '1'}),
    ('mixed', {'nvidia.com/mig.strategy': 'mixed', 'nvidia.com/gpu.product': 'A100-SXM4-40GB', 'nvidia.com/gpu.count': '1',
               'nvidia.com/gpu.replicas': '0', 'nvidia.com/mig-1c.3g.20gb.product': 'A100-SXM4-40GB-MIG-1c.3g.20gb',
               'nvidia.com/mig-1c.3g.20gb.count': '2', 'nvidia.com/mig-1c.3g.20gb.replicas': '1',
               'nvidia.com/mig-1c.3g.20gb.sharing-strategy': 'none', 'nvidia.com/mig-1c.3g.20gb.slices.gi': '3',
               'nvidia.com/mig-1c.3g.20gb.slices.ci': '1'}),
])
def test_a100_40gb_mig_listing_under_each_strategy(strategy, expected):
    # Only the published -L: no PCI tree, no memory or engines; the names and counts it gives are labelled.
    labels, warnings = compute_labels(a100_40gb_facts(), strategy)
    assert warnings == []
    assert {key: value for key, value in labels.items() if key.startswith(('nvidia.com/gpu.', 'nvidia.com/mig'))
            and key not in ('nvidia.com/gpu.present', 'nvidia.com/gpu.machine', 'nvidia.com/mig.capable', 'nvidia.com/gpu.sharing-strategy')
            and not key.startswith('nvidia.com/gpu.deploy.')} == expected
    assert 'feature.node.kubernetes.io/pci-10de.present' not in labels and labels['nvidia.com/gpu.present'] == 'true'


def with_profiles(facts, profiles):
    """The A100 capture with -L-style profile names for its four MIG devices (for the strategies' consistency rules)."""
    facts = copy.deepcopy(facts)
    facts['gpus'][0]['mig_profiles'] = profiles
    return facts


def test_single_strategy_on_the_a100_capture_with_named_devices():
    labels, warnings = compute_labels(with_profiles(facts_of('a100-sxm4-80gb-mig'), ['1g.20gb'] * 4), 'single')
    assert warnings == []
    assert {key: labels[key] for key in labels if key.startswith('nvidia.com/gpu.') and not key.startswith('nvidia.com/gpu.deploy')} == {
        'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.machine': 'unknown', 'nvidia.com/gpu.mode': 'compute',
        'nvidia.com/gpu.family': 'ampere', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB-MIG-1g.20gb', 'nvidia.com/gpu.count': '4',
        'nvidia.com/gpu.replicas': '1', 'nvidia.com/gpu.sharing-strategy': 'none', 'nvidia.com/gpu.memory': '19968',
        'nvidia.com/gpu.multiprocessors': '14', 'nvidia.com/gpu.slices.gi': '1', 'nvidia.com/gpu.slices.ci': '1',
        'nvidia.com/gpu.engines.copy': '1', 'nvidia.com/gpu.engines.decoder': '1', 'nvidia.com/gpu.engines.encoder': '0',
        'nvidia.com/gpu.engines.jpeg': '0', 'nvidia.com/gpu.engines.ofa': '0'}


INVALID = {'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB-MIG-INVALID', 'nvidia.com/gpu.count': '0', 'nvidia.com/gpu.replicas': '0',
           'nvidia.com/gpu.memory': '0'}


def test_single_strategy_invalid_layouts():
    a100 = facts_of('a100-sxm4-80gb-mig')
    two_profiles = with_profiles(a100, ['1g.20gb', '1g.20gb', '2g.20gb', '1g.20gb'])
    empty = copy.deepcopy(a100)
    empty['gpus'][0]['mig_devices'] = []
    mixed_modes = copy.deepcopy(a100)
    mixed_modes['gpus'].append(dict(facts_of('t4')['gpus'][0], index=1))
    for facts, reason in ((two_profiles, 'more than one MIG profile'), (empty, 'has no MIG devices'), (mixed_modes, 'enabled and disabled')):
        labels, warnings = compute_labels(facts, 'single')
        assert {key: labels[key] for key in INVALID} == INVALID
        assert any(reason in warning for warning in warnings), warnings


def test_mixed_strategy_groups_profiles():
    labels = compute_labels(with_profiles(facts_of('a100-sxm4-80gb-mig'), ['1g.20gb', '1g.20gb', '1g.20gb', '2g.20gb+me']), 'mixed')[0]
    assert labels['nvidia.com/mig-1g.20gb.count'] == '3' and labels['nvidia.com/mig-2g.20gb.me.count'] == '1'
    assert labels['nvidia.com/mig-2g.20gb.me.product'] == 'NVIDIA-A100-SXM4-80GB-MIG-2g.20gb.me'
    assert labels['nvidia.com/gpu.product'] == 'NVIDIA-A100-SXM4-80GB' and labels['nvidia.com/gpu.replicas'] == '0'


@pytest.mark.parametrize('sharing, product, replicas, strategy, mps', [
    ({'strategy': 'time-slicing', 'replicas': 4}, 'NVIDIA-H100-80GB-HBM3-SHARED', '4', 'time-slicing', 'false'),
    ({'strategy': 'time-slicing', 'replicas': 4, 'rename_by_default': True}, 'NVIDIA-H100-80GB-HBM3', '4', 'time-slicing', 'false'),
    ({'strategy': 'time-slicing', 'replicas': 1}, 'NVIDIA-H100-80GB-HBM3', '1', 'none', 'false'),
    ({'strategy': 'mps', 'replicas': 2}, 'NVIDIA-H100-80GB-HBM3-SHARED', '2', 'mps', 'true'),
    ({'strategy': 'none', 'replicas': 8}, 'NVIDIA-H100-80GB-HBM3', '1', 'none', 'false'),
])
def test_sharing(sharing, product, replicas, strategy, mps):
    labels = compute_labels(facts_of('h100-sxm5-80gb-x1'), sharing=sharing)[0]
    assert (labels['nvidia.com/gpu.product'], labels['nvidia.com/gpu.replicas'], labels['nvidia.com/gpu.sharing-strategy'],
            labels['nvidia.com/mps.capable']) == (product, replicas, strategy, mps)


def test_mps_is_refused_with_mig_enabled():
    with pytest.raises(LabelError, match='mps is not supported on GPUs with MIG enabled'):
        compute_labels(facts_of('a100-sxm4-80gb-mig'), sharing={'strategy': 'mps', 'replicas': 2})


@pytest.mark.parametrize('name, expected', [
    ('NVIDIA GeForce RTX 3090 (Ti)', 'NVIDIA-GeForce-RTX-3090-Ti'),
    ('NVIDIA A100-PCIE-40GB/MIG', 'NVIDIA-A100-PCIE-40GBMIG'),
    ('  Tesla   T4  ', 'Tesla-T4'),
    ('Quadro RTX 6000 [passthrough] v2.0_x', 'Quadro-RTX-6000-passthrough-v2.0_x'),
])
def test_sanitise(name, expected):
    assert sanitise(name) == expected


def test_machine_label_is_the_sanitised_dmi_product_name():
    facts = dict(facts_of('t4'), dmi_product_name='PowerEdge R750xa (GPU)  ')
    assert compute_labels(facts)[0]['nvidia.com/gpu.machine'] == 'PowerEdge-R750xa-GPU'


@pytest.mark.parametrize('release, expected', [
    # Kernel releases as they appear in published NFD label sets.
    ('5.15.0-157-generic', {'full': '5.15.0-157-generic', 'major': '5', 'minor': '15', 'revision': '0'}),
    ('5.14.0-687.42.1_2.1.el9_8_ciq.x86_64', {'full': '5.14.0-687.42.1_2.1.el9_8_ciq.x86_64', 'major': '5', 'minor': '14', 'revision': '0'}),
    ('6.12.5-linuxkit', {'full': '6.12.5-linuxkit', 'major': '6', 'minor': '12', 'revision': '5'}),
    ('6.1', {'full': '6.1', 'major': '6', 'minor': '1'}),
    ('6.1.0+deb12 #1 SMP', {'full': '6.1.0_deb12__1_SMP'}),
])
def test_kernel_labels(release, expected):
    assert kernel_labels(release) == {'feature.node.kubernetes.io/kernel-version.' + key: value for key, value in expected.items()}


@pytest.mark.parametrize('release, expected', [
    ({'ID': 'ubuntu', 'VERSION_ID': '22.04'}, {'ID': 'ubuntu', 'VERSION_ID': '22.04', 'VERSION_ID.major': '22', 'VERSION_ID.minor': '04'}),
    ({'ID': 'rhel', 'VERSION_ID': '10.1'}, {'ID': 'rhel', 'VERSION_ID': '10.1', 'VERSION_ID.major': '10', 'VERSION_ID.minor': '1'}),
    ({'ID': 'debian', 'VERSION_ID': '12'}, {'ID': 'debian', 'VERSION_ID': '12', 'VERSION_ID.major': '12'}),
    ({'ID': 'debian'}, {'ID': 'debian'}),  # sid has no VERSION_ID
])
def test_os_release_labels(release, expected):
    assert os_release_labels(release) == {'feature.node.kubernetes.io/system-os_release.' + key: value for key, value in expected.items()}


def test_host_kernel_and_os_labels_are_included():
    facts = facts_of('t4', os_release_path='/etc/os-release')
    facts['kernel_release'] = gpu_discovery.kernel_release('/proc')
    labels = compute_labels(facts)[0]
    assert labels['feature.node.kubernetes.io/kernel-version.major'] == gpu_discovery.kernel_release('/proc').split('.')[0]
    assert labels['feature.node.kubernetes.io/system-os_release.ID'] == gpu_discovery.os_release('/etc/os-release')['ID']


def test_invalid_computed_value_is_left_out_with_a_warning():
    facts = dict(facts_of('cpu-only'), os_release={'ID': 'my distro!', 'VERSION_ID': '2024.1'})
    labels, warnings = compute_labels(facts)
    assert 'feature.node.kubernetes.io/system-os_release.ID' not in labels
    assert labels['feature.node.kubernetes.io/system-os_release.VERSION_ID.major'] == '2024'
    assert warnings == ["feature.node.kubernetes.io/system-os_release.ID='my distro!' is not a valid label value; left out"]


def test_deploy_overrides_and_mig_manager():
    labels = compute_labels(facts_of('t4'), deploy={'driver': 'pre-installed', 'dcgm': 'false'})[0]
    assert labels['nvidia.com/gpu.deploy.driver'] == 'pre-installed' and labels['nvidia.com/gpu.deploy.dcgm'] == 'false'
    assert 'nvidia.com/gpu.deploy.mig-manager' not in labels
    assert compute_labels(facts_of('cpu-only'), deploy={'driver': 'pre-installed'})[0] == {}


def test_mig_config_default_only_on_mig_capable_nodes():
    """The Operator labels a MIG-capable node nvidia.com/mig.config=<migManager.config.default>; others get none."""
    assert compute_labels(facts_of('h100-sxm5-80gb-x1'), mig_config='all-disabled')[0]['nvidia.com/mig.config'] == 'all-disabled'
    assert 'nvidia.com/mig.config' not in compute_labels(facts_of('t4'), mig_config='all-disabled')[0]
    assert 'nvidia.com/mig.config' not in compute_labels(facts_of('h100-sxm5-80gb-x1'))[0]


def test_nvidia_smi_failing_on_a_gpu_node_keeps_the_known_labels():
    labels, warnings = compute_labels(facts_of('a100-sxm4-80gb-mig', smi_fixture='cpu-only'), 'single')
    assert labels == dict(PCI_0302, **DEPLOY, **{'nvidia.com/gpu.present': 'true'})
    assert len(warnings) == 1 and 'the PCI bus shows 1 NVIDIA GPU(s) but nvidia-smi gave no GPU data' in warnings[0] and 'rc=9' in warnings[0]


@pytest.mark.parametrize('kwargs, message', [
    ({'mig_strategy': 'dual'}, 'mig_strategy must be one of none, single, mixed'),
    ({'sharing': {'strategy': 'vgpu'}}, 'sharing.strategy must be one of'),
    ({'sharing': {'strategy': 'time-slicing', 'replicas': 0}}, 'sharing.replicas must be 1 or more'),
    ({'deploy': {'driver': 'not allowed'}}, "deploy.driver='not allowed' does not make a valid label"),
    ({'extra_labels': {'bad key!': 'x'}}, 'extra_labels: bad key!: name'),
    ({'extra_labels': {'Example.COM/x': 'y'}}, 'is not a DNS subdomain'),
    ({'extra_labels': {'example.com/x': 'y' * 64}}, 'is not a valid label value'),
])
def test_bad_options(kwargs, message):
    with pytest.raises(LabelError, match=message):
        compute_labels(facts_of('t4'), **kwargs)


def test_extra_labels():
    labels = compute_labels(facts_of('cpu-only'), extra_labels={'example.com/rack': 'r12', 'nvidia.com/gpu.product': 'override'})[0]
    assert labels == {'example.com/rack': 'r12', 'nvidia.com/gpu.product': 'override'}


def test_local_feature_text_has_only_the_gfd_labels():
    labels = compute_labels(facts_of('h100-sxm5-80gb-x1'), mig_config='all-disabled', extra_labels={'nvidia.com/device-plugin.config': 'ts'})[0]
    text = local_feature_text(labels)
    lines = text.splitlines()
    assert lines[0].startswith('#') and 'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3' in lines and 'nvidia.com/mig.capable=true' in lines
    # the Operator and admins change these on the Node: NFD must not set them back
    assert not any(line.startswith(('nvidia.com/gpu.deploy.', 'nvidia.com/gpu.present', 'feature.node', 'nvidia.com/mig.config',
                                    'nvidia.com/device-plugin.config')) for line in lines)
    assert local_feature_text(compute_labels(facts_of('cpu-only'))[0]) is None


def test_the_chart_nodefeaturerule_labels_follow_the_loaded_modules():
    """SOURCE: NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/templates/nodefeaturerules.yaml (rule per loaded module).
    The captured h100-x1 /proc/modules has none of them; the loaded set is that capture's with the GPUDirect modules the test
    adds (only their names are read). Left to NFD where it runs, and out of the features.d file NFD would publish."""
    captured = driver_state.loaded_modules(os.path.join(GPUS, 'h100-x1', 'proc'))
    labels = compute_labels(facts_of('h100-x1'), kernel_modules=captured)[0]
    capable = {'nvidia.com/gdrcopy.capable': 'true', 'nvidia.com/gds.capable': 'true', 'nvidia.com/peermem.capable': 'true'}
    assert not set(capable) & set(labels)
    loaded = dict(captured, nvidia_peermem=0, nvidia_fs=0, gdrdrv=0)
    labels = compute_labels(facts_of('h100-x1'), kernel_modules=loaded)[0]
    assert dict((key, labels[key]) for key in capable) == capable
    assert not set(capable) & set(labels_to_apply(labels, nfd_enabled=True))
    assert set(capable) <= set(labels_to_apply(labels, nfd_enabled=False))
    assert not [line for line in local_feature_text(labels).splitlines() if line.split('=')[0] in capable]
