# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor on a vm-passthrough node: its vfio checks read from the h100-x1 capture as it is (no IOMMU, the GPU on
nvidia, no vfio-pci: the capture's own command line and modules), and from copies built by test_vfio_manager.build_node
(it lists what it adds to the capture and why), before and after the GPU is bound."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import checks
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import node as doctor_node
from tests.unit.plugins.modules.test_vfio_manager import CAPTURE, GPU, build_node


def found(facts):
    return [(item['check'], item['severity']) for item in checks.vfio_findings(facts)]


def test_captured_node_as_it_is(tmp_path):
    """The capture's sysfs has no driver link: the evidence says so; its /proc/modules has nvidia and no vfio_pci."""
    proc = tmp_path / 'proc'
    proc.mkdir()
    (proc / 'cmdline').write_text(open(os.path.join(CAPTURE, 'host', 'proc-cmdline')).read())
    (proc / 'modules').write_text(open(os.path.join(CAPTURE, 'proc', 'modules')).read())
    facts = doctor_node.gather_vfio(os.path.join(CAPTURE, 'sys'), str(proc))
    assert found(facts) == [('iommu-off', 'error'), ('vfio-pci-missing', 'error'), ('gpu-not-on-vfio', 'error')]
    by_check = dict((item['check'], item) for item in checks.vfio_findings(facts))
    assert by_check['iommu-off']['evidence'][1] == 'IOMMU kernel parameters: none'
    assert by_check['gpu-not-on-vfio']['evidence'] == ['%s (gpu): no driver' % GPU]


def test_built_node_before_and_after_binding(tmp_path):
    args = build_node(tmp_path)
    facts = doctor_node.gather_vfio(args['sysfs_root'], args['procfs_root'])
    assert found(facts) == [('gpu-not-on-vfio', 'error')]
    assert checks.vfio_findings(facts)[0]['evidence'] == ['%s (gpu): bound to nvidia' % GPU]
    link = os.path.join(args['sysfs_root'], 'bus', 'pci', 'devices', GPU, 'driver')
    os.unlink(link)
    os.symlink('../../drivers/vfio-pci', link)
    assert found(doctor_node.gather_vfio(args['sysfs_root'], args['procfs_root'])) == []


def test_cpu_node():
    facts = doctor_node.gather_vfio(os.path.join(CAPTURE, '..', 'cpu-only', 'sys'), os.path.join(CAPTURE, 'proc'))
    assert found(facts) == [('no-gpu', 'info')]


def test_cc_manager_needs_a_host_that_runs_confidential_vms(tmp_path):
    """With the CC manager on the node (Kata mode), KVM's SEV-SNP or TDX parameter must read Y. The capture keeps no
    /sys/module/kvm_* (only what discovery reads): the test writes the parameter files, with the values the kernel shows
    for a bool parameter (Y, N)."""
    args = build_node(tmp_path)
    link = os.path.join(args['sysfs_root'], 'bus', 'pci', 'devices', GPU, 'driver')
    os.unlink(link)
    os.symlink('../../drivers/vfio-pci', link)
    assert doctor_node.gather_vfio(args['sysfs_root'], args['procfs_root'])['tee'] is None, 'not looked at without the CC manager'
    facts = doctor_node.gather_vfio(args['sysfs_root'], args['procfs_root'], confidential_computing=True)
    assert facts['tee'] == {'kvm_amd.sev_snp': None, 'kvm_intel.tdx': None}
    [off] = checks.vfio_findings(facts)
    assert (off['check'], off['severity']) == ('cc-tee-off', 'error')
    parameters = tmp_path / 'sys' / 'module' / 'kvm_intel' / 'parameters'
    parameters.mkdir(parents=True)
    (parameters / 'tdx').write_text('N\n')
    facts = doctor_node.gather_vfio(args['sysfs_root'], args['procfs_root'], confidential_computing=True)
    assert checks.vfio_findings(facts)[0]['evidence'] == [
        'AMD SEV-SNP: /sys/module/kvm_amd/parameters/sev_snp is absent (kvm_amd not loaded)', 'Intel TDX: /sys/module/kvm_intel/parameters/tdx reads N']
    (parameters / 'tdx').write_text('Y\n')
    assert found(doctor_node.gather_vfio(args['sysfs_root'], args['procfs_root'], confidential_computing=True)) == []
