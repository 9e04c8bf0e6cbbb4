#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: vfio_manager
short_description: Bind a node's NVIDIA GPUs to vfio-pci for virtual machines (the GPU Operator's vfio-manager, on the host)
description:
  - Does on the host what the GPU Operator's vfio-manager does on a node whose workload config
    (C(nvidia.com/gpu.workload.config)) is V(vm-passthrough) - every NVIDIA GPU function (PCI class 0x0300 or 0x0302)
    gets V(vfio-pci) in its C(driver_override), is unbound from its driver and bound to V(vfio-pci) through sysfs.
  - Unlike vfio-manager, which binds only the GPU function, the other NVIDIA endpoint functions of the GPU's slot or IOMMU
    group (its audio, USB or serial function) go with it - vfio gives a VM an IOMMU group only when every endpoint in it
    is bound to V(vfio-pci) or to no driver. Bridges stay with the host, and so does another vendor's function in the
    group (a NIC there would cut the node off); the module warns that the group cannot be given to a VM then.
  - The IOMMU is checked first - with no group under C(kernel/iommu_groups) the module fails, naming the IOMMU kernel
    parameters it found on the kernel command line (C(intel_iommu), C(amd_iommu), C(iommu)) and the fix.
  - The binding is kept across reboots by a udev rule (O(udev_rules_file)) that sets each function's C(driver_override)
    as it appears, and by loading V(vfio-pci) at boot (O(modules_load_file)).
  - Each function's driver and C(driver_override) before are recorded in O(record_file). O(state=absent) unbinds the
    recorded functions from V(vfio-pci), writes their override back, binds them to their recorded driver (or lets the
    kernel probe them when they had none) and removes the files it wrote when they still hold what it wrote. A function
    that was on V(vfio-pci) before the module came is not touched.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Nothing is written to sysfs or to the files; RV(actions) are the writes the real run would do.
  diff_mode:
    support: full
    details: Shows O(udev_rules_file) and O(modules_load_file) before and after.
  platform:
    platforms: posix
options:
  state:
    description:
      - V(present) binds the GPU functions to V(vfio-pci); V(absent) gives the recorded functions back to their drivers.
    type: str
    choices: [present, absent]
    default: present
  sysfs_root:
    description:
      - Root of the sysfs tree - the PCI functions (C(bus/pci/devices)), their drivers (C(bus/pci/drivers)) and the IOMMU
        groups (C(kernel/iommu_groups)) are read and written there. Tests point it at a copy of a captured tree.
    type: path
    default: /sys
  procfs_root:
    description: Root of the procfs tree the kernel command line (C(cmdline)) is read from.
    type: path
    default: /proc
  record_file:
    description: Where the module records each function's driver and override before, and the files it wrote. Mode 0600.
    type: path
    default: /var/lib/gpuops/vfio_manager.json
  udev_rules_file:
    description: The udev rules file that sets C(driver_override) to V(vfio-pci) for the bound functions at boot.
    type: path
    default: /etc/udev/rules.d/60-gpuops-vfio-pci.rules
  modules_load_file:
    description: The systemd C(modules-load.d) file that loads V(vfio-pci) at boot.
    type: path
    default: /etc/modules-load.d/gpuops-vfio-pci.conf
notes:
  - Run it as root, with nothing using the GPUs - the kernel refuses to unbind a GPU that a process holds (the write fails
    and the module names it).
  - V(vfio-pci) is loaded with C(modprobe) when C(bus/pci/drivers/vfio-pci) does not exist.
seealso:
  - name: The kernel's VFIO documentation
    description: IOMMU groups and why every endpoint of a group goes to vfio.
    link: https://docs.kernel.org/driver-api/vfio.html
'''

EXAMPLES = r'''
- name: Give the node's GPUs to virtual machines
  gpuops.gpu_operator.vfio_manager:
    state: present

- name: Give them back to their drivers
  gpuops.gpu_operator.vfio_manager:
    state: absent
'''

RETURN = r'''
actions:
  description:
    - The sysfs writes done (in check mode - that would be done), in order. C(action) is C(load) (modprobe vfio-pci),
      C(override) (C(value) written to the function's C(driver_override); null clears it), C(unbind) or C(bind) (the
      function C(address) written to the C(driver)'s C(unbind) or C(bind)) or C(probe) (written to C(drivers_probe)).
  returned: always
  type: list
  elements: dict
  sample:
    - {action: override, address: '0000:00:06.0', value: vfio-pci}
    - {action: unbind, address: '0000:00:06.0', driver: nvidia}
    - {action: bind, address: '0000:00:06.0', driver: vfio-pci}
functions:
  description: The GPU functions (C(role) gpu) and their companions (C(role) companion) as found before acting.
  returned: always
  type: list
  elements: dict
  sample:
    - {address: '0000:00:06.0', vendor: '0x10de', device: '0x2330', pci_class: '0x030200', driver: nvidia,
       driver_override: null, iommu_group: '14', role: gpu, virtual_function: false}
iommu:
  description: C(groups), the number of IOMMU groups, and C(kernel_parameters), the IOMMU parameters of the kernel command line.
  returned: always
  type: dict
  sample: {groups: 42, kernel_parameters: {intel_iommu: 'on', iommu: pt}}
files:
  description: The files written or removed (in check mode - that would be).
  returned: always
  type: list
  elements: str
  sample: [/etc/modules-load.d/gpuops-vfio-pci.conf, /etc/udev/rules.d/60-gpuops-vfio-pci.rules]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.vfio import executor


def main():
    module = AnsibleModule(argument_spec=executor.ARG_SPEC, supports_check_mode=True)
    try:
        result, diff = executor.run(module)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, actions=[], functions=[], iommu={}, files=[])
    for warning in result.pop('warnings'):
        module.warn(warning)
    if module._diff:
        result['diff'] = diff
    module.exit_json(**result)


if __name__ == '__main__':
    main()
