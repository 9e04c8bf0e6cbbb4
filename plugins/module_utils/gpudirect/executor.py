# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The gpudirect module's reader and executor: the node's facts, then the planner's steps, then the checks."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import packages as driver_packages
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.executor import installed_packages, run
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect import plan as gpudirect_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect.plan import GpuDirectError

RECORD_KEYS = (('manager', lambda value: value is None or isinstance(value, str)),
               ('installed', lambda value: isinstance(value, list)), ('held', lambda value: isinstance(value, list)),
               ('loaded', lambda value: isinstance(value, list)), ('files', lambda value: isinstance(value, dict)),
               ('directories', lambda value: isinstance(value, list)))


def load_record(path):
    """The undo record ({} when none); one of another shape raises GpuDirectError."""
    text = to_text(files.read_bytes(path), nonstring='passthru')
    if text is None:
        return {}
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise GpuDirectError('%s is not the JSON record gpudirect writes (%s); fix or remove it' % (path, exc))
    if not isinstance(record, dict) or any(key not in record or not valid(record[key]) for key, valid in RECORD_KEYS):
        raise GpuDirectError('%s is not the record gpudirect writes (keys %s); fix or remove it'
                             % (path, ', '.join(key for key, valid in RECORD_KEYS)))
    return record


def module_versions(sysfs_root, names):
    """{module: version} from <sysfs_root>/module/<name>/version (the MODULE_VERSION a loaded module exports)."""
    versions = {}
    for name in names:
        text = gpu_discovery.read_text(os.path.join(sysfs_root, 'module', name, 'version'))
        if text and text.strip():
            versions[name] = text.strip()
    return versions


def node_state(params):
    """The loaded modules, their versions and the device nodes (what the checks read; read again after the steps)."""
    names = ['nvidia'] + [item['module'] for item in gpudirect_plan.FEATURES]
    devices = [device for item in gpudirect_plan.FEATURES for device in item['devices']]
    return dict(modules=driver_state.loaded_modules(params['procfs_root']),
                module_versions=module_versions(params['sysfs_root'], names),
                dev_root=params['dev_root'],
                devices=set(device for device in devices if os.path.exists(os.path.join(params['dev_root'], device))))


def gather(module):
    params = module.params
    record = load_record(params['record_file'])
    manager = driver_packages.manager_of(driver_packages.distro_family(gpu_discovery.os_release(params['os_release_path'])))
    if manager is None:
        manager = next((name for name, tool in (('apt', 'apt-get'), ('dnf', 'dnf')) if module.get_bin_path(tool)), None)
    facts = dict(record=record, manager=manager, installed_packages={}, held_packages=set(),
                 gpu_count=len(driver_state.gpus(gpu_discovery.pci_devices(params['sysfs_root']))),
                 files=dict((path, files.read_bytes(path)) for path in gpudirect_plan.files_to_read(params, record)))
    facts.update(node_state(params))
    wants = params['state'] == 'present' and any(params[name] for name in gpudirect_plan.FEATURE_NAMES)
    if (record.get('manager') or manager) and (wants or (params['state'] == 'absent' and record)):
        facts['installed_packages'], facts['held_packages'] = installed_packages(module, record.get('manager') or manager)
    return facts


def check_steps(steps):
    for step in steps:
        if step['kind'] in ('write', 'remove', 'record'):
            files.check_writable(step['path'], create_directories=step['kind'] != 'remove')


class Executor(object):
    """Carries out the steps in order, keeping the undo record current after each change."""

    def __init__(self, module, facts, planned):
        self.module = module
        self.facts = facts
        self.planned = planned
        self.record = dict(facts['record']) or dict(manager=facts['manager'], installed=[], held=[], loaded=[], files={}, directories=[])
        self.actions = []
        self.diff = []
        self.changed = False

    def _directories(self, path):
        """Make the missing directories above `path`, recorded first (state=absent removes them when empty)."""
        missing = files.missing_directories(path)
        if missing:
            self.record['directories'] = self.record['directories'] + [item for item in missing if item not in self.record['directories']]
            if path != self.module.params['record_file']:
                self._write_record()
            files.make_directories(missing)

    def _write_record(self):
        path = self.module.params['record_file']
        self._directories(path)
        files.write_atomic(self.module, path, to_bytes(json.dumps(self.record, indent=2, sort_keys=True) + '\n'), mode=0o600)

    def _done(self, step):
        self.actions.append(gpudirect_plan.describe(step))
        self.changed = True

    def write(self, step):
        path = step['path']
        before = self.facts['files'].get(path)
        if step.get('record') and path not in self.record['files']:
            self.record['files'][path] = to_text(before) if before is not None else None
            self._write_record()
        self._directories(path)
        files.write_atomic(self.module, path, step['data'], mode=0o644)
        self.diff.append(files.diff_entry(path, before, step['data']))
        self.facts['files'][path] = step['data']
        self._done(step)

    def remove(self, step):
        path = step['path']
        before = files.read_bytes(path)
        files.remove(self.module, path)
        if path != self.module.params['record_file']:
            self.diff.append(files.diff_entry(path, before, None))
            self.facts['files'][path] = None
        self._done(step)

    def install(self, step):
        before = set(self.facts['installed_packages'])
        rc, out, err = run(self.module, step['argv'], timeout=commands.LONG_TIMEOUT)
        after, held = installed_packages(self.module, self.record['manager'])
        self.facts['installed_packages'], self.facts['held_packages'] = after, held
        new = sorted(set(after) - before)
        if new:
            self.record['installed'] = sorted(set(self.record['installed']) | set(new))
            self._write_record()
        if rc != 0:
            raise GpuDirectError('installing %s failed (rc=%d: %s)' % (' '.join(step['packages']), rc, (to_text(err) or to_text(out)).strip()))
        self._done(step)

    def command(self, step):
        rc, out, err = run(self.module, step['argv'], timeout=commands.LONG_TIMEOUT)
        if rc != 0 and step.get('soft'):
            self.planned['reboot_required'] = True
            self.planned['warnings'].append('%s failed (rc=%d: %s): the modules are as wanted only after a reboot (a container cannot '
                                            'load kernel modules)' % (gpudirect_plan.describe(step), rc, (to_text(err) or to_text(out)).strip()))
            return
        if rc != 0:
            raise GpuDirectError('%s failed (rc=%d: %s)' % (gpudirect_plan.describe(step), rc, (to_text(err) or to_text(out)).strip()))
        if step.get('hold') or step.get('load'):
            self.record['held'] = sorted(set(self.record['held']) | set(step.get('hold', ())))
            self.record['loaded'] += [step['load']] if step.get('load') and step['load'] not in self.record['loaded'] else []
            self._write_record()
        self._done(step)

    def rmdir(self, step):
        if files.remove_empty_directory(step['path']):
            self._done(step)

    def record_step(self, step):
        if self.record != self.facts['record']:
            self.actions.append(gpudirect_plan.describe(step))

    def run_steps(self, steps):
        handlers = dict(write=self.write, remove=self.remove, install=self.install, run=self.command, record=self.record_step,
                        rmdir=self.rmdir)
        for step in steps:
            handlers[step['kind']](step)


ARGUMENT_SPEC = dict(
    state=dict(type='str', default='present', choices=['present', 'absent']),
    rdma=dict(type='bool', default=False),
    use_host_mofed=dict(type='bool', default=False),
    gds=dict(type='bool', default=False),
    gdrcopy=dict(type='bool', default=False),
    packages=dict(type='dict', default={}),
    hold=dict(type='bool', default=True),
    load_modules=dict(type='bool', default=True),
    modules_load_dir=dict(type='path', default='/etc/modules-load.d'),
    validations_dir=dict(type='path', default='/run/nvidia/validations'),
    record_file=dict(type='path', default=gpudirect_plan.RECORD_FILE),
    os_release_path=dict(type='path', default='/etc/os-release'),
    sysfs_root=dict(type='path', default='/sys'),
    procfs_root=dict(type='path', default='/proc'),
    dev_root=dict(type='path', default='/dev'),
)


def apply(module, result):
    """Plan, then (unless in check mode) act, then check; fills `result` as it goes."""
    params = module.params
    facts = gather(module)
    planned = gpudirect_plan.plan(facts, params)
    result['packages'] = planned['packages']
    steps = planned['steps'] + gpudirect_plan.ready_steps(facts, params, planned['checks'])
    check_steps(steps)
    if module.check_mode:
        result.update(actions=[gpudirect_plan.describe(step) for step in steps], checks=planned['checks'])
        result['changed'] = bool(result['actions'])
        if module._diff:
            result['diff'] = [files.diff_entry(step['path'], facts['files'].get(step['path']), step.get('data'))
                              for step in steps if step['kind'] in ('write', 'remove') and step['path'] in facts['files']]
    else:
        executor = Executor(module, facts, planned)
        try:
            executor.run_steps(planned['steps'])
            if params['state'] == 'present' and facts['gpu_count']:
                # The checks again on the node as the steps left it; the status files follow them.
                facts.update(node_state(params))
                facts['record'] = executor.record
                result['checks'] = [gpudirect_plan.check(item, facts) for item in gpudirect_plan.enabled_features(params)]
                # A status file written is recorded by the write itself.
                executor.run_steps(gpudirect_plan.ready_steps(facts, params, result['checks']))
        finally:
            result.update(actions=executor.actions, changed=executor.changed)
            if module._diff:
                result['diff'] = executor.diff
    result['ready'] = all(not found['problems'] for found in result['checks'])
    result['labels'] = gpudirect_plan.capable_labels(facts['modules'])
    result['reboot_required'] = planned['reboot_required']
    # A feature whose checks fail does not fail the run (a module loads at the next boot, the RDMA stack comes later): it is said.
    planned['warnings'] += ['%s is not ready: %s' % (gpudirect_plan.feature(found['feature'])['field'], '; '.join(found['problems']))
                            for found in result['checks'] if found['problems'] and not module.check_mode]
    for warning in planned['warnings']:
        module.warn(warning)
