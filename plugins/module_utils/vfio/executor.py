# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The vfio_manager module's work: gather, plan, and (outside check mode) act through sysfs and the files it owns."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands, files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.vfio import plan as vfio_plan

ARG_SPEC = dict(
    state=dict(type='str', choices=['present', 'absent'], default='present'),
    sysfs_root=dict(type='path', default='/sys'),
    procfs_root=dict(type='path', default='/proc'),
    record_file=dict(type='path', default=vfio_plan.RECORD_FILE),
    udev_rules_file=dict(type='path', default=vfio_plan.UDEV_RULES),
    modules_load_file=dict(type='path', default=vfio_plan.MODULES_LOAD),
)


def _sysfs_write(path, text):
    """Write one value to a sysfs attribute; the kernel answers a refused bind or unbind on the write itself."""
    try:
        with open(path, 'w') as handle:
            handle.write(text)
    except OSError as exc:
        raise vfio_plan.VfioError('writing %r to %s failed: %s' % (text, path, exc.strerror or exc))


def _pci(sysfs_root, *parts):
    return os.path.join(sysfs_root, 'bus', 'pci', *parts)


def act(module, sysfs_root, action):
    kind = action['action']
    if kind == 'load':
        commands.checked(module, ['modprobe', vfio_plan.VFIO_DRIVER])
        if not os.path.isdir(_pci(sysfs_root, 'drivers', vfio_plan.VFIO_DRIVER)):
            raise vfio_plan.VfioError('modprobe %s ran but %s does not exist: the kernel has no vfio-pci driver' % (
                vfio_plan.VFIO_DRIVER, _pci(sysfs_root, 'drivers', vfio_plan.VFIO_DRIVER)))
    elif kind == 'override':
        # An empty write clears the override (the kernel then shows "(null)").
        _sysfs_write(_pci(sysfs_root, 'devices', action['address'], 'driver_override'), action['value'] or '\n')
    elif kind in ('unbind', 'bind'):
        _sysfs_write(_pci(sysfs_root, 'drivers', action['driver'], kind), action['address'])
    else:
        _sysfs_write(_pci(sysfs_root, 'drivers_probe'), action['address'])


def run(module):
    """(result, diff) of the module; raises GpuOpsError."""
    params = module.params
    sysfs_root = params['sysfs_root']
    paths = {vfio_plan.UDEV_RULES: params['udev_rules_file'], vfio_plan.MODULES_LOAD: params['modules_load_file']}
    record = vfio_plan.load_record(params['record_file'])
    if params['state'] == 'absent' and not record:
        # Nothing was bound here: the node is not read (a node that never was vm-passthrough pays no sysfs walk).
        return dict(changed=False, actions=[], functions=[], iommu={}, files=[], warnings=[]), []
    found = vfio_plan.functions(sysfs_root)
    cmdline = files.read_bytes(os.path.join(params['procfs_root'], 'cmdline'))
    parameters = vfio_plan.kernel_iommu_parameters(to_text(cmdline or b''))
    groups = vfio_plan.iommu_groups(sysfs_root)
    iommu = dict(groups=len(groups), kernel_parameters=parameters)
    if params['state'] == 'present' and any(dev['driver'] != vfio_plan.VFIO_DRIVER for dev in found):
        vfio_plan.check_iommu(groups, parameters)
    current = dict((path, to_text(files.read_bytes(path), nonstring='passthru')) for path in set(paths.values()) | set(record.get('files', {})))
    vfio_loaded = os.path.isdir(_pci(sysfs_root, 'drivers', vfio_plan.VFIO_DRIVER))
    actions, new_record, wanted, warnings = vfio_plan.plan(params['state'], found, record, current, vfio_loaded, paths)
    if params['state'] == 'present':
        warnings += [vfio_plan.stranger_warning(dev) for dev in vfio_plan.strangers(sysfs_root, found)]
    record_text = json.dumps(new_record, indent=2, sort_keys=True) + '\n' if new_record else None
    old_record_text = to_text(files.read_bytes(params['record_file']), nonstring='passthru')
    record_changes = record_text != old_record_text
    changed = bool(actions or wanted or record_changes)
    diff = [files.diff_entry(path, to_bytes(current.get(path), nonstring='passthru'), to_bytes(text, nonstring='passthru'))
            for path, text in sorted(wanted.items())]
    result = dict(changed=changed, actions=actions, functions=found, iommu=iommu, files=sorted(wanted), warnings=warnings)
    if module.check_mode or not changed:
        return result, diff
    # The record first: a run that stops half way still knows which driver each function had.
    if record_text is not None and record_changes:
        files.make_directories(files.missing_directories(params['record_file']))
        files.write_atomic(module, params['record_file'], to_bytes(record_text), mode=0o600)
    for action in actions:
        act(module, sysfs_root, action)
    for path, text in sorted(wanted.items()):
        if text is None:
            files.remove(module, path)
        else:
            files.make_directories(files.missing_directories(path))
            files.write_atomic(module, path, to_bytes(text), mode=0o644)
    if record_text is None and old_record_text is not None:
        files.remove(module, params['record_file'])
    return result, diff
