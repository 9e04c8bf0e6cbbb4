#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: gpudirect
short_description: GPUDirect RDMA, GPUDirect Storage and GDRCopy kernel modules on a node (ClusterPolicy driver.rdma, gds, gdrcopy)
description:
  - Does on the host what the GPU Operator's driver container does for C(driver.rdma.enabled) (C(nvidia_peermem)),
    C(gds.enabled) (C(nvidia_fs)) and C(gdrcopy.enabled) (C(gdrdrv)), and checks them as its validator does.
  - "O(state=present): the packages of each enabled feature are installed from the node's configured repositories (NVIDIA's,
    or a mirror of them) and held like the driver's, the modules listed in O(modules_load_dir)/C(gpuops-gpudirect.conf) so
    that they load at boot, and loaded. Defaults: RDMA none (C(nvidia_peermem) is built with the driver's kernel modules),
    GDS C(nvidia-fs), GDRCopy C(gdrdrv-dkms) (apt) or C(gdrcopy-kmod) (dnf)."
  - "Each enabled feature is then checked: its module loaded (C(/proc/modules) under O(procfs_root)), its device nodes under
    O(dev_root) (C(nvidia-fs0), C(gdrdrv)), and C(nvidia_peermem)'s version the loaded driver's (C(module/*/version) under
    O(sysfs_root)). One that passes gets the Operator validator's status file in O(validations_dir) (C(nvidia-peermem-ready),
    C(nvidia-fs-ready), C(gdrcopy-ready))."
  - "C(nvidia_peermem) needs the RDMA core (C(ib_core)) loaded first. With O(use_host_mofed) (C(driver.rdma.useHostMofed)) the
    host's stack must be there and its absence fails the module; without, the Network Operator's MOFED driver brings it later
    and the module warns and loads nothing for RDMA."
  - O(state=absent) undoes what this module did, as recorded in O(record_file) - unholds and removes the packages it installed,
    unloads the modules it loaded, restores the files it wrote byte for byte - and nothing else.
  - A node without an NVIDIA GPU on the PCI bus is left alone.
  - A feature switched off leaves the boot list (the list this module wrote goes back to what was there when none is left);
    its packages stay installed and held, and its module loaded, until O(state=absent).
version_added: 0.2.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Nothing that changes the node runs; RV(actions) lists what would, RV(checks) the node as it is.
  diff_mode:
    support: full
    details: The files written or removed.
  platform:
    platforms: posix
options:
  state:
    description:
      - V(present) installs, loads and checks the enabled features; V(absent) removes what this module installed.
    type: str
    choices: [present, absent]
    default: present
  rdma:
    description: GPUDirect RDMA, C(nvidia_peermem) (ClusterPolicy C(driver.rdma.enabled)).
    type: bool
    default: false
  use_host_mofed:
    description: The RDMA stack is installed on the host (ClusterPolicy C(driver.rdma.useHostMofed)).
    type: bool
    default: false
  gds:
    description: GPUDirect Storage, C(nvidia_fs) (ClusterPolicy C(gds.enabled)).
    type: bool
    default: false
  gdrcopy:
    description: GDRCopy, C(gdrdrv) (ClusterPolicy C(gdrcopy.enabled)).
    type: bool
    default: false
  packages:
    description:
      - Per feature (keys C(rdma), C(gds), C(gdrcopy)), the packages to install instead of the defaults; an empty list installs
        none (the module is there already, for example built by the driver's DKMS).
    type: dict
    default: {}
  hold:
    description: Hold the installed packages (C(apt-mark hold), C(dnf versionlock)) as the driver's are held.
    type: bool
    default: true
  load_modules:
    description: Load the modules now; without, they load at the next boot (RV(reboot_required)).
    type: bool
    default: true
  modules_load_dir:
    description: The systemd-modules-load directory the boot-time list goes to.
    type: path
    default: /etc/modules-load.d
  validations_dir:
    description: Directory of the validation status files (the Operator's C(/run/nvidia/validations)).
    type: path
    default: /run/nvidia/validations
  record_file:
    description: Where the module records what it installed, loaded and wrote, for O(state=absent). Mode 0600.
    type: path
    default: /var/lib/gpuops/gpudirect.json
  os_release_path:
    description: The os-release file the package manager is chosen from.
    type: path
    default: /etc/os-release
  sysfs_root:
    description: Root of the sysfs tree (PCI devices, C(module/<name>/version)).
    type: path
    default: /sys
  procfs_root:
    description: Root of the procfs tree (C(modules)).
    type: path
    default: /proc
  dev_root:
    description: Where the device nodes are looked for.
    type: path
    default: /dev
notes:
  - The package repositories must be configured and their lists fresh (the nvidia_driver role does that).
seealso:
  - module: gpuops.gpu_operator.nvidia_driver
'''

EXAMPLES = r'''
- name: GPUDirect RDMA with the host's MOFED, and GDRCopy
  gpuops.gpu_operator.gpudirect:
    rdma: true
    use_host_mofed: true
    gdrcopy: true

- name: Remove what the module installed
  gpuops.gpu_operator.gpudirect:
    state: absent
'''

RETURN = r'''
checks:
  description: Each enabled feature on the node after the run (before it in check mode).
  returned: always
  type: list
  elements: dict
  sample: [{"feature": "gdrcopy", "module": "gdrdrv", "loaded": true, "version": "2.5", "devices_missing": [], "problems": []}]
ready:
  description: Whether every enabled feature passed its checks.
  returned: always
  type: bool
  sample: true
labels:
  description: The labels the chart's NodeFeatureRule C(nvidia-kernel-modules) gives the node for its loaded modules.
  returned: always
  type: dict
  sample: {"nvidia.com/gdrcopy.capable": "true"}
packages:
  description: The packages this run installs (state=present) or removes (state=absent).
  returned: always
  type: list
  elements: str
  sample: [gdrdrv-dkms]
actions:
  description: The changes made, or that would be made in check mode.
  returned: always
  type: list
  elements: str
  sample: ["apt-get install -y --no-install-recommends gdrdrv-dkms", "modprobe gdrdrv"]
reboot_required:
  description: Modules could not be loaded now (a container, O(load_modules=false)); they load at the next boot.
  returned: always
  type: bool
  sample: false
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect import executor


def main():
    module = AnsibleModule(argument_spec=executor.ARGUMENT_SPEC, supports_check_mode=True)
    result = dict(changed=False, checks=[], ready=False, labels={}, packages=[], actions=[], reboot_required=False)
    try:
        executor.apply(module, result)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
