# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""vm-passthrough on the host: what the node shows (IOMMU, the NVIDIA GPU functions and their drivers) and the plan
that binds them to vfio-pci, as the Operator's vfio-manager does, or gives them back to the drivers recorded.

Readers take the sysfs and procfs roots so tests point them at a copy of a captured tree; plan() is pure.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible.module_utils.common.text.converters import to_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery

VFIO_DRIVER = 'vfio-pci'
RECORD_FILE = '/var/lib/gpuops/vfio_manager.json'
# udev sets the override as the function appears, before 80-drivers.rules loads a driver for it.
UDEV_RULES = '/etc/udev/rules.d/60-gpuops-vfio-pci.rules'
MODULES_LOAD = '/etc/modules-load.d/gpuops-vfio-pci.conf'
# Kernel parameters that turn the IOMMU on or into pass-through mode (Documentation/admin-guide/kernel-parameters).
IOMMU_PARAMETERS = ('intel_iommu', 'amd_iommu', 'iommu')
# What the kernel shows in driver_override when none is set.
NO_OVERRIDE = '(null)'
BRIDGE_CLASS = '0x06'
RECORD_KEYS = ('functions', 'files')


class VfioError(GpuOpsError):
    """The node cannot hand its GPUs to virtual machines; the message says why and what to do."""


def kernel_iommu_parameters(cmdline):
    """The IOMMU parameters of a kernel command line, as {name: value} (value '' for a bare flag)."""
    found = {}
    for word in (cmdline or '').split():
        if word == '--':
            break  # what follows is init's, not the kernel's
        name, _sep, value = word.partition('=')
        if name in IOMMU_PARAMETERS:
            found[name] = value
    return found


def iommu_groups(sysfs_root):
    """The IOMMU group names under <sysfs_root>/kernel/iommu_groups; [] when the IOMMU is off."""
    try:
        return sorted(os.listdir(os.path.join(sysfs_root, 'kernel', 'iommu_groups')), key=lambda name: (len(name), name))
    except OSError:
        return []


def _group_of(device_dir):
    try:
        return os.path.basename(os.readlink(os.path.join(device_dir, 'iommu_group')))
    except OSError:
        return None


def _devices(sysfs_root):
    base = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    devices = gpu_discovery.pci_devices(sysfs_root)
    for dev in devices:
        dev['iommu_group'] = _group_of(os.path.join(base, dev['address']))
        override = gpu_discovery.read_text(os.path.join(base, dev['address'], 'driver_override'))
        dev['driver_override'] = None if override in (None, NO_OVERRIDE, '') else override
    return devices


def _endpoint(dev):
    return not dev['pci_class'].startswith(BRIDGE_CLASS)


def functions(sysfs_root):
    """The NVIDIA GPU functions and their companions (the other NVIDIA endpoint functions of the same slot or IOMMU
    group: a GPU's audio, USB or serial function), each with its driver, driver_override and IOMMU group, by address.

    vfio hands a group to a VM only when every endpoint in it is bound to vfio-pci or to no driver, so the companions go
    with their GPU; bridges stay with the host (pcieport may keep them), and so do other vendors' functions (strangers()).
    """
    devices = _devices(sysfs_root)
    gpus = gpu_discovery.nvidia_display_devices(devices)
    slots = set(dev['address'].rsplit('.', 1)[0] for dev in gpus)
    groups = set(dev['iommu_group'] for dev in gpus if dev['iommu_group'] is not None)
    return [dict(dev, role='gpu' if dev in gpus else 'companion') for dev in devices
            if dev in gpus or (dev['vendor'] == gpu_discovery.NVIDIA_VENDOR and _endpoint(dev)
                               and (dev['address'].rsplit('.', 1)[0] in slots or dev['iommu_group'] in groups))]


def strangers(sysfs_root, found):
    """Other vendors' endpoint functions in the IOMMU groups of `found`: vfio gives those groups to no VM while one of
    them is on a host driver, and they are not this module's to take (a NIC there would cut the node off)."""
    groups = set(dev['iommu_group'] for dev in found if dev['iommu_group'] is not None)
    return [dev for dev in _devices(sysfs_root)
            if dev['iommu_group'] in groups and dev['vendor'] != gpu_discovery.NVIDIA_VENDOR and _endpoint(dev)]


def stranger_warning(dev):
    return ('IOMMU group %s of the GPUs also holds %s (vendor %s, class %s, driver %s), which this module leaves to the host: '
            'no VM can be given that group until it is on vfio-pci or unbound (or the GPU sits in a slot with a group of its own)'
            % (dev['iommu_group'], dev['address'], dev['vendor'], dev['pci_class'], dev['driver'] or 'none'))


def udev_rules_text(addresses):
    """The udev rules that keep `addresses` on vfio-pci across reboots."""
    lines = ['# Written by gpuops.gpu_operator (vfio_manager): these PCI functions go to virtual machines, so vfio-pci',
             '# and no host driver binds them; removed by vfio_manager state=absent.']
    lines += ['ACTION=="add", SUBSYSTEM=="pci", KERNEL=="%s", ATTR{driver_override}="%s"' % (address, VFIO_DRIVER)
              for address in addresses]
    return '\n'.join(lines) + '\n'


def modules_load_text():
    return '# Written by gpuops.gpu_operator (vfio_manager): the driver of the functions given to virtual machines.\n%s\n' % VFIO_DRIVER


def parse_record(text, path):
    """The undo record ({} when there is none); another shape raises VfioError."""
    if text is None:
        return {}
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not (isinstance(record, dict) and isinstance(record.get('functions'), dict) and isinstance(record.get('files'), dict)):
        raise VfioError('%s is not the JSON record vfio_manager writes (keys %s); fix or remove it' % (path, ', '.join(RECORD_KEYS)))
    return record


def load_record(path):
    return parse_record(to_text(files.read_bytes(path), nonstring='passthru'), path)


def check_iommu(groups, parameters):
    """VfioError when the IOMMU is off: vfio-pci cannot take a function that has no IOMMU group."""
    if groups:
        return
    given = ' '.join('%s=%s' % item if item[1] else item[0] for item in sorted(parameters.items())) or 'none'
    raise VfioError('the IOMMU is off: /sys/kernel/iommu_groups is empty (IOMMU kernel parameters: %s), so vfio-pci cannot '
                    'take the GPUs; turn on VT-d / AMD-Vi in the firmware, boot with intel_iommu=on (Intel) or amd_iommu=on '
                    '(AMD) and iommu=pt, and reboot' % given)


def plan(state, found, record, current_files, vfio_loaded, paths):
    """What to do: (actions, record after, {path: text wanted, None to remove}, warnings).

    Each action is a dict with `action` (load, override, unbind, bind, probe) and its `address`, `driver` or `value`.
    present: every function not on vfio-pci gets vfio-pci in driver_override, is unbound from its driver and bound to
    vfio-pci; its driver and override before are recorded (a function keeps its first record). A function that was on
    vfio-pci before this module came is someone else's and is left alone. `paths` maps UDEV_RULES and MODULES_LOAD to
    where they are on this node.
    absent: every recorded function on vfio-pci is unbound, gets its recorded override back and is bound to its recorded
    driver (or probed, when it had none); a recorded file is removed when it still holds what the module wrote.
    """
    actions, warnings = [], []
    if state == 'present':
        functions_record = dict(record.get('functions', {}))
        for dev in found:
            if dev['driver'] == VFIO_DRIVER:
                continue
            functions_record.setdefault(dev['address'], dict(driver=dev['driver'], driver_override=dev['driver_override']))
            actions.append(dict(action='override', address=dev['address'], value=VFIO_DRIVER))
            if dev['driver']:
                actions.append(dict(action='unbind', address=dev['address'], driver=dev['driver']))
            actions.append(dict(action='bind', address=dev['address'], driver=VFIO_DRIVER))
        if actions and not vfio_loaded:
            actions.insert(0, dict(action='load', driver=VFIO_DRIVER))
        wanted = {}
        if functions_record:
            wanted = {paths[UDEV_RULES]: udev_rules_text(sorted(functions_record)), paths[MODULES_LOAD]: modules_load_text()}
        new_record = dict(functions=functions_record, files=dict((path, True) for path in wanted)) if functions_record else {}
        return actions, new_record, dict((path, text) for path, text in wanted.items() if current_files.get(path) != text), warnings
    by_address = dict((dev['address'], dev) for dev in found)
    for address, before in sorted(record.get('functions', {}).items()):
        if by_address.get(address, {}).get('driver') != VFIO_DRIVER:
            continue
        actions.append(dict(action='unbind', address=address, driver=VFIO_DRIVER))
        actions.append(dict(action='override', address=address, value=before['driver_override']))
        actions.append(dict(action='bind', address=address, driver=before['driver']) if before['driver'] else dict(action='probe', address=address))
    wanted = {}
    expected = {paths[UDEV_RULES]: udev_rules_text(sorted(record.get('functions', {}))), paths[MODULES_LOAD]: modules_load_text()}
    for path in record.get('files', {}):
        if current_files.get(path) is None:
            continue
        if current_files[path] == expected.get(path):
            wanted[path] = None
        else:
            warnings.append('%s changed since vfio_manager wrote it; left in place' % path)
    return actions, {}, wanted, warnings
