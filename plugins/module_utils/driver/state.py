# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a node says about its NVIDIA kernel driver: pure parsers and the node files the nvidia_driver module writes.

Everything here is a function of text or bytes (or of a file under a root the caller passes), so the
tests run it on the captured fixtures.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

# PCI class and subclass of the GPUs the Operator deploys to (NFD's pci-0300_10de / pci-0302_10de).
GPU_MODES = {'0x0300': 'graphics', '0x0302': 'compute'}
# Loaded in this order by load_modules and unloaded in the reverse order.
NVIDIA_MODULES = ('nvidia', 'nvidia_uvm', 'nvidia_modeset')
# nvidia_drm is unloaded too when present: it holds nvidia_modeset.
UNLOAD_ORDER = ('nvidia_drm', 'nvidia_modeset', 'nvidia_uvm', 'nvidia')
# The in-kernel drivers that claim NVIDIA GPUs before the NVIDIA module can (nova_core: Linux 6.15+).
NOUVEAU_MODULES = ('nouveau', 'nova_core')
SECURE_BOOT_VAR = os.path.join('firmware', 'efi', 'efivars', 'SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c')
VERSION = re.compile(r'^\d+(?:\.\d+){0,2}$')
MISMATCH = 'Driver/library version mismatch'
# Turing (device ids from 0x1e00) is the oldest generation the open kernel module supports; Blackwell (from 0x2900)
# is supported by the open module only.
OPEN_MIN_DEVICE = 0x1e00
OPEN_ONLY_MIN_DEVICE = 0x2900
# From this branch on NVIDIA installs the open kernel module by default on GPUs that support it.
OPEN_DEFAULT_BRANCH = 560
DRIVER_READY = 'driver-ready'
# Where DKMS (3.x) and Ubuntu's shim-signed keep the machine owner key that signs modules for Secure Boot.
DKMS_SIGNING_KEYS = ('/var/lib/dkms/mok.pub', '/var/lib/shim-signed/mok/MOK.der')


class DriverError(GpuOpsError):
    """A state the module cannot act on (bad input, no working driver for state=validated, Secure Boot)."""


def parse_nvrm(text):
    """{version, branch, kernel_module_type} from the NVRM line of /proc/driver/nvidia/version, or None.

    The open module says "NVIDIA UNIX Open Kernel Module for x86_64  580.159.04", the proprietary one
    "NVIDIA UNIX x86_64 Kernel Module  535.54.03".
    """
    match = gpu_discovery.NVRM_LINE.search(text or '')
    if not match:
        return None
    line = match.group(0)
    version = match.group(1)
    return dict(version=version, branch=version.split('.')[0],
                kernel_module_type='open' if 'Open Kernel Module' in line else 'proprietary')


def proc_driver(procfs_root):
    """parse_nvrm() of <procfs_root>/driver/nvidia/version (None: no NVIDIA module loaded)."""
    return parse_nvrm(gpu_discovery.read_text(os.path.join(procfs_root, 'driver', 'nvidia', 'version')))


def parse_proc_modules(text):
    """{module name: use count} from /proc/modules ("name size refcount deps state address")."""
    modules = {}
    for line in (text or '').splitlines():
        fields = line.split()
        if len(fields) >= 3:
            modules[fields[0]] = int(fields[2]) if fields[2].isdigit() else 0
    return modules


def loaded_modules(procfs_root):
    """parse_proc_modules() of <procfs_root>/modules; {} when it cannot be read."""
    return parse_proc_modules(gpu_discovery.read_text(os.path.join(procfs_root, 'modules')))


def secure_boot_state(data):
    """enabled | disabled | unknown from the bytes of the SecureBoot EFI variable (efivarfs: 4 attribute bytes, then the value)."""
    if not data or len(data) < 5:
        return 'unknown'
    return {1: 'enabled', 0: 'disabled'}.get(bytearray(data)[-1], 'unknown')


def secure_boot(sysfs_root):
    """secure_boot_state() of the node's EFI variable; unknown without EFI variables (legacy boot, containers, VMs)."""
    try:
        with open(os.path.join(sysfs_root, SECURE_BOOT_VAR), 'rb') as handle:
            return secure_boot_state(handle.read())
    except OSError:
        return 'unknown'


def gpus(devices):
    """The GPUs among the PCI `devices`, as the module returns them."""
    result = []
    for dev in gpu_discovery.nvidia_display_devices(devices):
        class_id = dev['pci_class'][:6]
        if class_id in GPU_MODES:
            result.append(dict(pci_address=dev['address'], vendor_id=dev['vendor'], device_id=dev['device'], class_id=class_id,
                               mode=GPU_MODES[class_id]))
    return result


def _device_number(gpu):
    try:
        return int(gpu['device_id'], 16)
    except ValueError:
        return None


def resolve_kernel_module_type(requested, gpu_list, branch, loaded):
    """open | proprietary for kernel_module_type `requested` (auto | open | proprietary).

    auto keeps the type of a loaded module; else open when every GPU supports it and either needs it
    (Blackwell) or the branch is one where NVIDIA defaults to it, proprietary otherwise.
    """
    if requested != 'auto':
        return requested
    if loaded:
        return loaded['kernel_module_type']
    numbers = [_device_number(gpu) for gpu in gpu_list]
    if not numbers or any(number is None or number < OPEN_MIN_DEVICE for number in numbers):
        return 'proprietary'
    if any(number >= OPEN_ONLY_MIN_DEVICE for number in numbers):
        return 'open'
    return 'open' if branch and int(branch) >= OPEN_DEFAULT_BRANCH else 'proprietary'


def check_version(version):
    """'' (distro default), a branch ('550') or a full version ('550.163.01'); raises DriverError otherwise."""
    if version and not VERSION.match(version):
        raise DriverError('version %r is neither a driver branch (550) nor a full driver version (550.163.01)' % version)
    return version or ''


def branch_of(version):
    return version.split('.')[0] if version else None


def version_matches(have, wanted):
    """Whether driver version `have` is the requested `wanted` ('' = any, a branch, or a full version)."""
    return not wanted or have == wanted or (have or '').startswith(wanted + '.')


def smi_failure(errors, loaded):
    """(kind, message) for nvidia-smi's failure: kind is mismatch, no-driver (no module loaded) or failed; `loaded` is proc_driver()."""
    text = ' '.join(errors)
    if MISMATCH in text:
        module = 'kernel module %s' % loaded['version'] if loaded else 'kernel module'
        return 'mismatch', (
            'nvidia-smi: %s: the loaded %s and the installed user-space libraries differ (usually a driver upgrade '
            'without a reboot). Fix: reboot the node, or, when no process uses the GPU, unload the modules '
            '(modprobe -r nvidia_drm nvidia_modeset nvidia_uvm nvidia) and load them again (modprobe nvidia nvidia_uvm). '
            'nvidia-smi said: %s' % (MISMATCH, module, text))
    if not loaded:
        return 'no-driver', 'no NVIDIA driver is loaded (nvidia-smi: %s)' % text
    return 'failed', 'the NVIDIA kernel module %s is loaded but nvidia-smi fails: %s' % (loaded['version'], text)


RECORD_FILE = '/var/lib/gpuops/nvidia_driver.json'


def driver_source(present, record):
    """Where a node's driver comes from: package (nvidia_driver installed it), pre-installed, or none."""
    if record.get('packages'):
        return 'package'
    return 'pre-installed' if present else 'none'


def deploy_driver_label(gpu_count, source):
    """The value of nvidia.com/gpu.deploy.driver for a node."""
    if not gpu_count or source == 'none':
        return 'false'
    return 'pre-installed' if source == 'pre-installed' else 'true'


def driver_ready_text():
    """The validation file the Operator's validator writes for a driver installed on the host.

    Keys and order from createStatusFile() in NVIDIA/gpu-operator cmd/nvidia-validator/main.go, the host-driver values
    from getDriverInfo(isHostDriver=true) in cmd/nvidia-validator/driver.go (host root "/", mounted at /host in the
    operands' containers): https://github.com/NVIDIA/gpu-operator/blob/main/cmd/nvidia-validator/driver.go
    """
    return ('IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\n'
            'NVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n')


def blacklist_text():
    return ('# Written by gpuops.gpu_operator.nvidia_driver: the NVIDIA driver needs the GPU, not the in-kernel drivers.\n'
            + ''.join('blacklist %s\n' % name for name in NOUVEAU_MODULES)
            + 'options nouveau modeset=0\n')


# The record's keys and what each holds (Executor writes all of them).
RECORD_KEYS = (('manager', 'a package manager name or null', lambda value: value is None or isinstance(value, str)),
               ('packages', 'a list of package names', lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value)),
               ('installed', 'a list of package names', lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value)),
               ('held', 'a list of package names', lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value)),
               ('files', 'an object of file paths and their former text (or null)', lambda value: isinstance(value, dict) and all(
                   isinstance(key, str) and (item is None or isinstance(item, str)) for key, item in value.items())))


def parse_record(text, path):
    """The undo record the module keeps on the node; {} when there is none. A record of another shape raises DriverError."""
    if text is None:
        return {}
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise DriverError('%s is not the JSON record nvidia_driver writes (%s); fix or remove it' % (path, exc))
    if not isinstance(record, dict):
        raise DriverError('%s is not the JSON record nvidia_driver writes; fix or remove it' % path)
    for key, holds, valid in RECORD_KEYS:
        if key not in record or not valid(record[key]):
            raise DriverError('%s is not the record nvidia_driver writes: %s must be %s; fix or remove it (removing it forgets what '
                              'the module installed)' % (path, key, holds))
    return record


def load_record(path):
    """parse_record() of the record file at `path` ({} when absent); files.FileError when unreadable."""
    return parse_record(to_text(files.read_bytes(path), nonstring='passthru'), path)
