# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    # Where node-side modules (nfd_labels, nvidia_driver) look for the GPU facts; the matching
    # argument spec is DISCOVERY_ARG_SPEC in module_utils/discovery/gpu.py.
    DOCUMENTATION = r'''
options:
  sysfs_root:
    description:
      - Root of the sysfs tree to read PCI devices (C(bus/pci/devices)) and the DMI product name
        (C(class/dmi/id/product_name)) from.
      - Point it at a captured tree to compute labels for another machine.
      - A root without C(bus/pci/devices) (a missing directory) fails the module; GPUs nvidia-smi lists that the PCI
        devices there do not show are reported (a warning, for gpu_node_doctor a finding).
    type: path
    default: /sys
  procfs_root:
    description:
      - Root of the procfs tree to read the kernel release (C(sys/kernel/osrelease)) and the loaded NVIDIA
        kernel module's version (C(driver/nvidia/version)) from.
    type: path
    default: /proc
  nvidia_smi:
    description:
      - Path of the C(nvidia-smi) to run.
      - By default the first executable C(nvidia-smi) in C(/usr/bin), C(/usr/sbin), C(/bin), C(/sbin), C(/opt/bin),
        then in E(PATH).
      - It runs with C(LC_ALL=C) and is stopped after 60 seconds (a wedged GPU can make it hang); a missing, failing or
        stopped C(nvidia-smi), or a path that cannot be run (the report says what is wrong with it), is reported, not fatal
        (C(nvidia_driver) with C(state=validated) fails, as it needs a working driver). Output that is empty or not
        nvidia-smi's fails the module, naming the command.
    type: path
'''
