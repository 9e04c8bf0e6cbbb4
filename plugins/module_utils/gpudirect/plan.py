# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""GPUDirect on the host (ClusterPolicy driver.rdma, gds, gdrcopy): the features, their checks and the planner (pure).

A step is a dict with `kind` as in the nvidia_driver planner (driver/plan.py): run (argv; `soft`, `hold`, `unhold`,
`remove`, `load`), install (argv, packages), write (path, data, record), remove (path), record (path), rmdir (path: removed
when empty).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import plan as driver_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.plan import COMMANDS

# Each feature: the kernel module (its /proc/modules name; modprobe takes it too), the packages that bring it from
# NVIDIA's repositories (or a mirror of them), its device nodes and the status file the Operator's validator writes.
# SOURCE: NVIDIA/gpu-operator v26.7.0 cmd/nvidia-validator/main.go (nvidiaFsStatusFile "nvidia-fs-ready",
# gdrCopyStatusFile "gdrcopy-ready", nvidiaPeermemStatusFile "nvidia-peermem-ready"; the checks: lsmod | grep nvidia_fs,
# ^gdrdrv, ^nvidia_peermem) and deployments/gpu-operator/templates/nodefeaturerules.yaml (the labels).
# nvidia-peermem is built with the driver's kernel modules (no package of its own); nvidia-fs is the CUDA repository's
# nvidia-fs package (NVIDIA GPUDirect Storage installation guide); gdrdrv is gdrdrv-dkms (deb) / gdrcopy-kmod (rpm)
# (NVIDIA/gdrcopy packages/, the CUDA redist gdrcopy directory). The device nodes: /dev/nvidia-fs0.. (nvidia-fs), /dev/gdrdrv
# (NVIDIA/gdrcopy insmod.sh makes it from gdrdrv's major in /proc/devices). nvidia_peermem exports the driver's version
# (NVIDIA/open-gpu-kernel-modules kernel-open/nvidia-peermem/nvidia-peermem.c: MODULE_VERSION(NV_VERSION_STRING)), so
# /sys/module/nvidia_peermem/version differs from /sys/module/nvidia/version only when it was built for another driver.
FEATURES = (
    dict(name='rdma', field='driver.rdma.enabled', module='nvidia_peermem', packages=dict(apt=[], dnf=[]), devices=(),
         ready='nvidia-peermem-ready', label='nvidia.com/peermem.capable', driver_version=True),
    dict(name='gds', field='gds.enabled', module='nvidia_fs', packages=dict(apt=['nvidia-fs'], dnf=['nvidia-fs']),
         devices=('nvidia-fs0',), ready='nvidia-fs-ready', label='nvidia.com/gds.capable', driver_version=False),
    dict(name='gdrcopy', field='gdrcopy.enabled', module='gdrdrv', packages=dict(apt=['gdrdrv-dkms'], dnf=['gdrcopy-kmod']),
         devices=('gdrdrv',), ready='gdrcopy-ready', label='nvidia.com/gdrcopy.capable', driver_version=False),
)
FEATURE_NAMES = tuple(feature['name'] for feature in FEATURES)
# The kernel modules GPUDirect RDMA needs loaded before nvidia-peermem (the RDMA core of MOFED/DOCA-OFED or the in-box stack).
RDMA_CORE = 'ib_core'
MODULES_LOAD_FILE = 'gpuops-gpudirect.conf'
RECORD_FILE = '/var/lib/gpuops/gpudirect.json'


class GpuDirectError(GpuOpsError):
    """A state the gpudirect module cannot act on (bad input, a prerequisite missing)."""


def feature(name):
    return next(item for item in FEATURES if item['name'] == name)


def enabled_features(params):
    return [item for item in FEATURES if params[item['name']]]


def capable_labels(modules):
    """The labels the chart's NodeFeatureRule nvidia-kernel-modules gives a node, from its loaded modules ({name: refcount})."""
    return dict((item['label'], 'true') for item in FEATURES if item['module'] in modules)


def check(item, facts):
    """dict(feature, module, loaded, version, devices_missing, problems) of one feature on the node as `facts` show it."""
    name = item['module']
    loaded = name in facts['modules']
    version = facts['module_versions'].get(name)
    problems = []
    if not loaded:
        problems.append('kernel module %s is not loaded (/proc/modules)' % name)
    missing = [os.path.join(facts['dev_root'], device) for device in item['devices'] if device not in facts['devices']]
    if loaded and missing:
        problems.append('device node %s is missing' % ', '.join(missing))
    driver = facts['module_versions'].get('nvidia')
    if loaded and item['driver_version'] and version and driver and version != driver:
        problems.append('%s %s does not match the loaded NVIDIA driver %s (built for another driver: reinstall it with the driver, '
                        'then unload and load it)' % (name, version, driver))
    return dict(feature=item['name'], module=name, loaded=loaded, version=version, devices_missing=missing, problems=problems)


def packages_of(item, params, manager):
    given = (params.get('packages') or {}).get(item['name'])
    return list(given) if given is not None else list(item['packages'].get(manager) or [])


def modules_load_text(items):
    return ('# Written by gpuops.gpu_operator.gpudirect: GPUDirect kernel modules loaded at boot.\n'
            + ''.join('%s\n' % item['module'] for item in items))


def _ready_path(params, item):
    return os.path.join(params['validations_dir'], item['ready'])


def _present(facts, params, result):
    items = enabled_features(params)
    manager = facts['record'].get('manager') or facts['manager']
    wanted = [name for item in items for name in packages_of(item, params, manager)]
    steps = []
    if wanted and manager is None:
        raise GpuDirectError('neither apt-get nor dnf was found to install %s' % ', '.join(wanted))
    commands = COMMANDS.get(manager, {})
    missing = [name for name in wanted if name not in facts['installed_packages']]
    if missing:
        steps.append(dict(kind='install', argv=commands['install'] + missing, packages=missing))
    to_hold = [name for name in wanted if name not in facts['held_packages']]
    if params['hold'] and to_hold:
        steps.append(dict(kind='run', argv=commands['hold'] + to_hold, hold=to_hold))
    path = os.path.join(params['modules_load_dir'], MODULES_LOAD_FILE)
    recorded = facts['record'].get('files', {})
    if items:
        data = to_bytes(modules_load_text(items))
    else:
        # Nothing enabled: a list this module wrote goes back to what was there before it.
        data = to_bytes(recorded[path]) if recorded.get(path) is not None else None
    if facts['files'].get(path) != data and (items or path in recorded):
        steps.append(dict(kind='write', path=path, data=data, record=True) if data is not None else dict(kind='remove', path=path))
    loadable = []
    for item in items:
        if item['module'] in facts['modules']:
            continue
        if item['name'] == 'rdma' and RDMA_CORE not in facts['modules']:
            if params['use_host_mofed']:
                raise GpuDirectError('driver.rdma.useHostMofed is set but the host RDMA stack is not loaded (%s is not in /proc/modules): '
                                     'install and load MOFED/DOCA-OFED (or the in-box RDMA modules) on the host first' % RDMA_CORE)
            result['warnings'].append('nvidia_peermem waits for the RDMA stack (%s is not loaded; without useHostMofed the Network '
                                      "Operator's MOFED driver brings it): run again once it is" % RDMA_CORE)
            continue
        loadable.append(item['module'])
    if params['load_modules']:
        steps += [dict(kind='run', argv=['modprobe', name], soft=True, load=name) for name in loadable]
    elif loadable:
        result['reboot_required'] = True  # modules-load.d loads them at the next boot
    if steps:
        steps.append(dict(kind='record', path=params['record_file']))
    result['steps'] = steps
    result['packages'] = missing


def ready_steps(facts, params, checks):
    """The status files of the features whose checks pass: written (empty, as the validator creates them) when missing,
    removed when a check fails and this module wrote one."""
    steps = []
    for found in checks:
        path = _ready_path(params, feature(found['feature']))
        if not found['problems'] and facts['files'].get(path) is None:
            steps.append(dict(kind='write', path=path, data=b'', record=True))
        elif found['problems'] and facts['files'].get(path) is not None and path in facts['record'].get('files', {}):
            steps.append(dict(kind='remove', path=path))
    return steps


def _absent(facts, params, result):
    record = facts['record']
    if not record:
        return
    commands = COMMANDS[record.get('manager') or facts['manager'] or 'apt']
    steps = []
    held = [name for name in record.get('held', []) if name in facts['held_packages']]
    if held:
        steps.append(dict(kind='run', argv=commands['unhold'] + held, unhold=held))
    loaded = [name for name in reversed(record.get('loaded', [])) if name in facts['modules']]
    if loaded:
        steps.append(dict(kind='run', argv=['modprobe', '-r'] + loaded, soft=True))
    ours = [name for name in record.get('installed', []) if name in facts['installed_packages']]
    if ours:
        steps.append(dict(kind='run', argv=commands['remove'] + ours, remove=ours))
    for path, before in sorted(record.get('files', {}).items()):
        wanted = to_bytes(before) if before is not None else None
        if facts['files'].get(path) != wanted:
            steps.append(dict(kind='write', path=path, data=wanted) if wanted is not None else dict(kind='remove', path=path))
    steps.append(dict(kind='remove', path=params['record_file']))
    # The directories the module made (the record's own among them), innermost first, where they are empty.
    steps += [dict(kind='rmdir', path=path) for path in reversed(record.get('directories', []))]
    result['steps'] = steps
    result['packages'] = ours


def describe(step):
    """The line of RV(actions) for a step."""
    return 'rmdir %s' % step['path'] if step['kind'] == 'rmdir' else driver_plan.describe(step)


def files_to_read(params, record):
    """The files the planner compares: the modules-load file, the status files and those the record names."""
    return sorted(set([os.path.join(params['modules_load_dir'], MODULES_LOAD_FILE)]
                      + [_ready_path(params, item) for item in FEATURES] + list(record.get('files', {}))))


def plan(facts, params):
    """dict(steps, checks, packages, reboot_required, warnings); raises GpuDirectError."""
    for item in FEATURES:
        for name in (params.get('packages') or {}).get(item['name']) or []:
            if not name or name.startswith('-') or len(name.split()) != 1:
                raise GpuDirectError('packages.%s: %r is not a package name (no spaces, no leading -)' % (item['name'], name))
    unknown = sorted(set(params.get('packages') or {}) - set(FEATURE_NAMES))
    if unknown:
        raise GpuDirectError('packages: %s is none of %s' % (', '.join(unknown), ', '.join(FEATURE_NAMES)))
    result = dict(steps=[], checks=[], packages=[], reboot_required=False, warnings=[])
    if params['state'] == 'absent':
        _absent(facts, params, result)
        return result
    if not facts['gpu_count']:
        return result
    _present(facts, params, result)
    result['checks'] = [check(item, facts) for item in enabled_features(params)]
    return result
