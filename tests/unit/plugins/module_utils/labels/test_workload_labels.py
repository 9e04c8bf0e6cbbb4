# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node's workload (sandboxWorkloads, nvidia.com/gpu.workload.config) decides its nvidia.com/gpu.deploy.* labels.

SOURCE: NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go: gpuStateLabels (the state labels of container,
vm-passthrough and vm-vgpu nodes), getWorkloadConfig (container without sandboxWorkloads.enabled; the Node's label, else
the default workload, also for a label of another value), getEffectiveStateLabels (mode kata: the Kata device plugin
instead of KubeVirt's on vm-passthrough nodes), addGPUStateLabels (mig-manager only on MIG-capable container nodes);
api/nvidia/v1/clusterpolicy_types.go SandboxWorkloadsSpec (defaultWorkload container, mode kubevirt by default).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.node_api import reconcile
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.rules import deploy_labels, workload_labels

D = 'nvidia.com/gpu.deploy.'
CONTAINER = {D + key: 'true' for key in ('driver', 'gpu-feature-discovery', 'container-toolkit', 'device-plugin', 'dcgm', 'dcgm-exporter',
                                         'node-status-exporter', 'operator-validator', 'client')}
PASSTHROUGH = {D + key: 'true' for key in ('sandbox-device-plugin', 'sandbox-validator', 'vfio-manager', 'kata-manager', 'cc-manager', 'client')}
VGPU = {D + key: 'true' for key in ('sandbox-device-plugin', 'vgpu-manager', 'vgpu-device-manager', 'sandbox-validator', 'cc-manager', 'client')}
KATA_PASSTHROUGH = dict((key.replace('sandbox-device-plugin', 'kata-sandbox-device-plugin'), value) for key, value in PASSTHROUGH.items())
ON = {'enabled': True, 'defaultWorkload': 'container', 'mode': 'kubevirt'}
LABEL = contract.WORKLOAD_CONFIG


@pytest.mark.parametrize('workload, mode, mig_capable, expected', [
    ('container', 'kubevirt', False, CONTAINER),
    ('container', 'kata', True, dict(CONTAINER, **{D + 'mig-manager': 'true'})),
    ('vm-passthrough', 'kubevirt', True, PASSTHROUGH),  # no mig-manager on a VM node, MIG-capable or not
    ('vm-passthrough', 'kata', False, KATA_PASSTHROUGH),
    ('vm-vgpu', 'kata', False, VGPU),  # the mode changes only vm-passthrough's device plugin
])
def test_the_state_labels_of_each_workload(workload, mode, mig_capable, expected):
    assert deploy_labels(mig_capable, {}, workload, mode) == expected


@pytest.mark.parametrize('node, sandbox, expected', [
    ({LABEL: 'vm-passthrough'}, None, ('container', None)),  # sandbox workloads off: the label is not read
    ({LABEL: 'vm-passthrough'}, {'enabled': False, 'defaultWorkload': 'vm-vgpu'}, ('container', None)),
    ({LABEL: 'vm-passthrough'}, ON, ('vm-passthrough', None)),
    ({LABEL: 'vm-vgpu'}, dict(ON, defaultWorkload='vm-passthrough'), ('vm-vgpu', None)),
    ({}, dict(ON, defaultWorkload='vm-passthrough'), ('vm-passthrough', None)),
    ({}, ON, ('container', None)),
])
def test_the_workload_of_a_node(node, sandbox, expected):
    assert contract.workload_config(node, sandbox) == expected


def test_a_label_of_another_value_gives_the_default_workload_and_says_why():
    workload, warning = contract.workload_config({LABEL: 'vm'}, dict(ON, defaultWorkload='vm-vgpu'))
    assert workload == 'vm-vgpu' and 'nvidia.com/gpu.workload.config=vm' in warning and 'default workload vm-vgpu' in warning


def test_a_vm_node_gets_its_workloads_labels_instead_and_keeps_the_others():
    computed = dict(CONTAINER, **{'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'Tesla-T4', D + 'mig-manager': 'true',
                                  D + 'driver': 'pre-installed', D + 'dcgm': 'false'})
    labels, warning = workload_labels(computed, {LABEL: 'vm-passthrough'}, ON)
    # the driver and dcgm overrides are the container workload's: a VM node has no such operand
    assert labels == dict(PASSTHROUGH, **{'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'Tesla-T4'}) and warning is None
    assert workload_labels(computed, {LABEL: 'container'}, ON) == (computed, None)
    assert workload_labels({'nvidia.com/gpu.present': 'false'}, {LABEL: 'vm-vgpu'}, ON) == ({'nvidia.com/gpu.present': 'false'}, None)


def test_an_override_of_the_workloads_own_component_stays():
    labels, _warning = workload_labels(dict(CONTAINER, **{D + 'vfio-manager': 'false'}), {LABEL: 'vm-passthrough'}, ON)
    assert labels == dict(PASSTHROUGH, **{D + 'vfio-manager': 'false'})


def test_a_node_relabelled_for_vms_loses_our_container_labels_and_gets_the_sandbox_ones():
    desired = dict(CONTAINER, **{'nvidia.com/gpu.present': 'true'})
    first = reconcile({'kubernetes.io/hostname': 'gpu-1'}, {}, desired, sandbox=ON)
    assert first['workload'] == 'container' and set(CONTAINER) <= set(first['labels'])
    # the admin labels the Node for VM passthrough; the next run swaps the state labels
    node = dict(first['labels'], **{LABEL: 'vm-passthrough', D + 'dcgm': 'paused-for-driver-upgrade'})
    owned = first['owned_values']
    plan = reconcile(node, owned, desired, sandbox=ON)
    assert plan['workload'] == 'vm-passthrough'
    assert set(PASSTHROUGH) <= set(plan['added'] + [D + 'client'])
    assert set(CONTAINER) - {D + 'client', D + 'dcgm'} <= set(plan['removed'])
    assert plan['labels'][D + 'dcgm'] == 'paused-for-driver-upgrade'  # changed by someone else: theirs, kept
    assert plan['labels'][LABEL] == 'vm-passthrough' and LABEL not in plan['owned']
    # what the run wants on the Node (nfd_labels' RV labels, the doctor's expectation): the workload's state labels only
    assert sorted(key for key in plan['desired'] if contract.is_state_label(key)) == sorted(PASSTHROUGH)
    assert {key: plan['desired'][key] for key in plan['desired'] if not contract.is_state_label(key)} == {
        key: value for key, value in desired.items() if not contract.is_state_label(key)}
    # and back: sandbox workloads off makes it a container node again
    back = reconcile(plan['labels'], plan['owned_values'], desired, sandbox=dict(ON, enabled=False))
    assert back['workload'] == 'container' and set(PASSTHROUGH) - {D + 'client'} <= set(back['removed'])
    assert set(CONTAINER) - {D + 'dcgm'} <= set(back['labels'])


def test_operands_false_still_takes_every_state_label_off_a_vm_node():
    node = {LABEL: 'vm-vgpu', contract.OPERANDS: 'false'}
    plan = reconcile(node, {}, dict(CONTAINER, **{'nvidia.com/gpu.present': 'true'}), sandbox=ON)
    assert not [key for key in plan['labels'] if contract.is_state_label(key)]
