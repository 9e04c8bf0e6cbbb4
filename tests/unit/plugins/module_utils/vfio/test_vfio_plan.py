# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pure parts of vm-passthrough: the kernel's IOMMU parameters and which functions go to vfio-pci, on captured trees."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.vfio import plan as vfio_plan

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'fixtures', 'gpus')


@pytest.mark.parametrize('cmdline, parameters', [
    # The h100-x1 capture's own command line (host/proc-cmdline): no IOMMU parameter, init's words after "--".
    (open(os.path.join(FIXTURES, 'h100-x1', 'host', 'proc-cmdline')).read(), {}),
    ('BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt quiet', {'intel_iommu': 'on', 'iommu': 'pt'}),
    ('root=/dev/sda1 amd_iommu=on', {'amd_iommu': 'on'}),
    ('root=/dev/sda1 -- intel_iommu=on', {}),
    ('root=/dev/sda1 iommu.passthrough=1 noiommu', {}),
    ('', {}),
])
def test_kernel_iommu_parameters(cmdline, parameters):
    assert vfio_plan.kernel_iommu_parameters(cmdline) == parameters


# SOURCE: NVIDIA/gpu-operator, assets/state-vfio-manager/0400_configmap.yaml, v24.3.0 (vfio-manage.sh): bind --all takes
# every function of vendor 0x10de whose class is 0x030200 or 0x030000, writes vfio-pci to its driver_override, unbinds it
# from its driver and writes it to drivers/vfio-pci/bind; unbind writes it to its driver's unbind and clears the override.
# v26.7.0, assets/state-vfio-manager/0500_daemonset.yaml: `vfio-manage bind --all`, preStop `vfio-manage unbind --all`.
@pytest.mark.parametrize('fixture, addresses', [
    ('h100-x1', ['0000:00:06.0']),
    ('h200-x1', ['0000:00:06.0']),
    ('t4', ['0000:00:1e.0']),
    # Ten real functions of a VirtualBox guest, a non-NVIDIA VGA controller and an audio function among them: none is
    # an NVIDIA GPU's, so none goes to vfio-pci.
    ('cpu-only', []),
])
def test_functions_of_captured_trees(fixture, addresses):
    found = vfio_plan.functions(os.path.join(FIXTURES, fixture, 'sys'))
    assert [dev['address'] for dev in found] == addresses
    assert all(dev['role'] == 'gpu' and dev['driver_override'] is None and dev['iommu_group'] is None for dev in found)


def test_iommu_off_names_the_parameters_found():
    with pytest.raises(vfio_plan.VfioError, match=r'IOMMU kernel parameters: iommu=pt\)'):
        vfio_plan.check_iommu([], {'iommu': 'pt'})
    vfio_plan.check_iommu(['0'], {})
