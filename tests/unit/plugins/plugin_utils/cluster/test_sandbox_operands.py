# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The sandbox workloads' operands (issue 27): which are deployed, as the Operator's state manager decides it, and the
Operator's sample ClusterPolicy with sandboxWorkloads.enabled resolved and rendered.

SOURCE: NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go isStateEnabled (state-sandbox-validation with
sandboxWorkloads.enabled; state-vfio-manager, state-vgpu-device-manager with it and their section's enabled;
state-sandbox-device-plugin also in mode kubevirt; state-kata-device-plugin and state-cc-manager in mode kata;
state-kata-manager never), controllers/object_controls.go TransformValidatorComponent (the sandbox validator's cc-manager
init container only with ccManager.enabled; DEFAULT_GPU_WORKLOAD_CONFIG), config/samples/v1_clusterpolicy.yaml (copied
unchanged into tests/fixtures/gpu-operator/).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import images, policy, registry, validation, vgpu_profiles

SAMPLE_FILE = Path(__file__).resolve().parents[5] / 'tests' / 'fixtures' / 'gpu-operator' / 'v1_clusterpolicy.yaml'

SANDBOX = ['nvidia-vgpu-device-manager', 'nvidia-sandbox-validator', 'nvidia-vfio-manager', 'nvidia-sandbox-device-plugin-daemonset',
           'nvidia-kata-sandbox-device-plugin-daemonset', 'nvidia-cc-manager']


def daemonsets(spec):
    rendered = registry.render(registry.resolution(spec), 'gpu-operator')
    present = [obj['metadata']['name'] for obj in rendered['present'] if obj['kind'] == 'DaemonSet']
    absent = [obj['metadata']['name'] for obj in rendered['absent'] if obj['kind'] == 'DaemonSet']
    return [name for name in present if name in SANDBOX], [name for name in absent if name in SANDBOX], rendered


@pytest.mark.parametrize('spec, deployed', [
    ({}, []),
    ({'sandboxWorkloads': {'enabled': False}, 'vfioManager': {'enabled': True}}, []),
    ({'sandboxWorkloads': {'enabled': False, 'mode': 'kata'}, 'ccManager': {'enabled': True}}, []),
    ({'sandboxWorkloads': {'enabled': True}},
     ['nvidia-vgpu-device-manager', 'nvidia-sandbox-validator', 'nvidia-vfio-manager', 'nvidia-sandbox-device-plugin-daemonset']),
    ({'sandboxWorkloads': {'enabled': True, 'mode': 'kata'}},
     ['nvidia-vgpu-device-manager', 'nvidia-sandbox-validator', 'nvidia-vfio-manager', 'nvidia-kata-sandbox-device-plugin-daemonset',
      'nvidia-cc-manager']),
    ({'sandboxWorkloads': {'enabled': True}, 'vfioManager': {'enabled': False}, 'vgpuDeviceManager': {'enabled': False},
      'sandboxDevicePlugin': {'enabled': False}}, ['nvidia-sandbox-validator']),
])
def test_the_sandbox_operands_deployed(spec, deployed):
    present, absent, rendered = daemonsets(spec)
    assert present == deployed and sorted(absent) == sorted(set(SANDBOX) - set(deployed))
    # What the resolution tells the node side (doctor.yml: does the CC manager run?) is what is rendered.
    resolved = registry.resolution(spec)
    validation = registry.render(resolved, 'gpu-operator', stage='validation')['present']
    assert resolved['daemonsets'] == [obj['metadata']['name'] for obj in validation + rendered['present'] if obj['kind'] == 'DaemonSet']


def test_the_operators_sample_with_sandbox_workloads_resolves_and_renders():
    """The sample as NVIDIA ships it with sandboxWorkloads.enabled: nothing refused; the container operands and the KubeVirt
    sandbox operands rendered; its vgpuManager (enabled, without an image) kept in the CR as given, not deployed
    (deviation: vgpu-manager-on-host); kataManager kept, never deployed, as in the Operator."""
    sample = yaml.safe_load(SAMPLE_FILE.read_text())
    sample['spec']['sandboxWorkloads']['enabled'] = True
    resolved = registry.resolution(sample)
    assert resolved['spec']['sandboxWorkloads'] == {'enabled': True, 'defaultWorkload': 'container', 'mode': 'kubevirt'}
    present, _absent, rendered = daemonsets(sample)
    assert present == ['nvidia-vgpu-device-manager', 'nvidia-sandbox-validator', 'nvidia-vfio-manager', 'nvidia-sandbox-device-plugin-daemonset']
    names = [obj['metadata']['name'] for obj in rendered['present'] if obj['kind'] == 'DaemonSet']
    assert 'nvidia-device-plugin-daemonset' in names and not [name for name in names if 'vgpu-manager' in name or 'kata-manager' in name]
    spec = registry.cluster_policy(resolved)['spec']
    assert spec['vgpuManager'] == sample['spec']['vgpuManager'] and spec['kataManager'] == sample['spec']['kataManager']
    assert spec['sandboxWorkloads']['enabled'] is True and spec['vfioManager']['enabled'] is True
    validator = next(obj for obj in rendered['present'] if obj['kind'] == 'DaemonSet' and obj['metadata']['name'] == 'nvidia-sandbox-validator')
    init = validator['spec']['template']['spec']['initContainers']
    # ccManager is left out of the sample: the chart's default (enabled) keeps the cc-manager init container
    assert [item['name'] for item in init] == ['cc-manager-validation', 'vfio-pci-validation', 'vgpu-manager-validation', 'vgpu-devices-validation']


def test_the_default_workload_reaches_the_sandbox_validator():
    _present, _absent, rendered = daemonsets({'sandboxWorkloads': {'enabled': True, 'defaultWorkload': 'vm-vgpu'}, 'ccManager': {'enabled': False}})
    validator = next(obj for obj in rendered['present'] if obj['kind'] == 'DaemonSet' and obj['metadata']['name'] == 'nvidia-sandbox-validator')
    init = validator['spec']['template']['spec']['initContainers']
    assert [item['name'] for item in init] == ['vfio-pci-validation', 'vgpu-manager-validation', 'vgpu-devices-validation']
    assert all({'name': 'DEFAULT_GPU_WORKLOAD_CONFIG', 'value': 'vm-vgpu'} in item['env'] for item in init)


def test_the_vgpu_manager_is_the_hosts():
    """vgpuManager is not deployed here (deviation: vgpu-manager-on-host): whatever it says, no vGPU manager DaemonSet, its
    image is not required, and its section is kept in the CR as given; the vGPU device manager waits for the host's
    (host-vgpu-manager-ready) or a container's."""
    given = {'sandboxWorkloads': {'enabled': True}, 'vgpuManager': {'enabled': True, 'repository': 'registry.local/nvidia', 'version': '580.65'}}
    present, _absent, rendered = daemonsets(given)
    assert not [obj for obj in rendered['present'] if 'vgpu-manager' in obj['metadata']['name'] and 'device' not in obj['metadata']['name']]
    resolved = registry.resolution(given)
    assert resolved['kept']['vgpuManager'] == given['vgpuManager'] and 'vgpuManager' not in resolved['spec']
    manager = next(obj for obj in rendered['present'] if obj['kind'] == 'DaemonSet' and obj['metadata']['name'] == 'nvidia-vgpu-device-manager')
    wait = manager['spec']['template']['spec']['initContainers'][0]['args'][0]
    assert 'host-vgpu-manager-ready' in wait and 'nvidia-vgpu-device-manager' in present


@pytest.mark.parametrize('given, message', [
    ({'sandboxWorkloads': {'defaultWorkload': 'vm'}}, 'sandboxWorkloads: defaultWorkload must be one of container, vm-passthrough, vm-vgpu'),
    ({'sandboxWorkloads': {'mode': 'firecracker'}}, 'mode one of kubevirt, kata'),
    ({'sandboxWorkloads': {'enabled': True}, 'vfioManager': {'driverManager': {'version': ''}}}, 'vfioManager.driverManager.version must be'),
    ({'vgpuDeviceManager': {'config': {'name': 'default-vgpu-devices-config'}}}, 'is the name of the default ConfigMap'),
])
def test_bad_sandbox_settings_are_refused_by_name(given, message):
    with pytest.raises((policy.PolicyError, images.ImageError)) as caught:
        registry.resolution(given)
    assert message in str(caught.value)


def test_the_driver_manager_image_follows_the_mirror():
    resolved = registry.resolution({'sandboxWorkloads': {'enabled': True}}, 'registry.local:5000/nvidia')['spec']
    assert resolved['vfioManager']['driverManager']['repository'] == 'registry.local:5000/nvidia/cloud-native'
    given = registry.resolution({'vfioManager': {'driverManager': {'repository': 'mine.local/x'}}}, 'registry.local:5000/nvidia')['spec']
    assert given['vfioManager']['driverManager']['repository'] == 'mine.local/x'


def test_the_default_vgpu_configs_are_the_operators():
    """default-vgpu-devices-config as the Operator ships it (tests/fixtures/gpu-operator/vgpu-device-manager-configmap.yaml,
    NVIDIA's file unchanged): the same configs in the same order, rendered into the ConfigMap the vGPU device manager reads."""
    shipped = yaml.safe_load((SAMPLE_FILE.parent / 'vgpu-device-manager-configmap.yaml').read_text())
    expected = yaml.safe_load(shipped['data']['config.yaml'])
    assert vgpu_profiles.default_config() == expected and list(vgpu_profiles.default_config()['vgpu-configs']) == list(expected['vgpu-configs'])
    _present, _absent, rendered = daemonsets({'sandboxWorkloads': {'enabled': True}})
    made = next(obj for obj in rendered['present'] if obj['kind'] == 'ConfigMap' and obj['metadata']['name'] == shipped['metadata']['name'])
    assert yaml.safe_load(made['data']['config.yaml']) == expected


def test_a_vm_node_is_left_to_the_sandbox_validator():
    """The validation stage validates what the Operator's validator would: not a node whose workload is VMs (it has the
    sandbox-validator deploy label, not operator-validator's); a container node still is."""
    vm = {'metadata': {'name': 'vm-1', 'labels': {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.workload.config': 'vm-passthrough',
                                                  'nvidia.com/gpu.deploy.sandbox-validator': 'true'}}}
    box = {'metadata': {'name': 'gpu-1', 'labels': {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.deploy.operator-validator': 'true',
                                                    'nvidia.com/gpu.count': '1'}}}
    found = dict((item['node'], item['skip']) for item in validation.targets([vm, box]))
    assert found == {'gpu-1': '', 'vm-1': 'the Node runs VMs (workload vm-passthrough): the sandbox validator validates it'}
