# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The nvidia_driver module's runner and executor: reads the node's facts, then carries out the planner's steps.

Every command runs through `run()`: an argv list, LC_ALL=C (and a non-interactive apt).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import systemd as init
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import packages as driver_packages
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import plan as driver_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.state import DriverError

ENVIRON = dict(commands.C_LOCALE, DEBIAN_FRONTEND='noninteractive')
# Whatever went wrong with a package manager is in the last lines of its output.
OUTPUT_LINES = 15


def run(module, argv, timeout=commands.DEFAULT_TIMEOUT):
    return commands.run(module, argv, environ=ENVIRON, timeout=timeout)


def _tail(rc, out, err):
    lines = (to_text(err) or to_text(out) or 'no output').strip().splitlines()
    return 'rc=%d: %s' % (rc, ' / '.join(lines[-OUTPUT_LINES:]))


def query_smi(module, configured, pci_gpus):
    """What nvidia-smi says: dict(binary, working, version, gpus, errors, addresses, unlisted); unlisted: the message
    naming the GPUs of `pci_gpus` (the PCI bus's) that it must list and does not, or None."""
    binary = gpu_discovery.find_nvidia_smi(configured, module.get_bin_path)
    xml_report, query_rows, listing, errors = gpu_discovery.query_nvidia_smi(gpu_discovery.runner(module), binary, bool(configured))
    merged = gpu_discovery.merge_views(xml_report, query_rows, listing)
    version = (xml_report or {}).get('driver_version') or next(
        (row['driver_version'] for row in query_rows or [] if row.get('driver_version')), None)
    return dict(binary=binary, working=bool(merged), version=version, gpus=len(merged), errors=errors,
                addresses=[gpu['address'] for gpu in merged if gpu.get('address')],
                unlisted=gpu_discovery.unlisted_message(gpu_discovery.unlisted(pci_gpus, merged), merged))


def installed_packages(module, manager):
    """({installed name: version}, held names) as the package manager sees them."""
    if manager == 'apt':
        rc, out, err = run(module, ['dpkg-query', '-W', '-f=${db:Status-Abbrev} ${Package} ${Version}\\n'])
        if rc != 0:
            raise DriverError('cannot list the installed packages: dpkg-query %s' % _tail(rc, out, err))
        installed = driver_packages.parse_dpkg_status(out)
        rc, out, err = run(module, ['apt-mark', 'showhold'])
        return installed, set(out.split()) if rc == 0 else set()
    rc, out, err = run(module, ['rpm', '-qa', '--qf', '%{NAME} %{VERSION}-%{RELEASE}\\n'])
    if rc != 0:
        raise DriverError('cannot list the installed packages: rpm %s' % _tail(rc, out, err))
    installed = driver_packages.parse_rpm_packages(out)
    # Without the versionlock plugin nothing is locked.
    rc, locks, err = run(module, ['dnf', 'versionlock', 'list'])
    return installed, driver_packages.parse_versionlock(locks) if rc == 0 else set()


def package_version(module, manager, record, installed):
    """upstream_version() of the installed driver's main package (the first the record names); None when unknown."""
    name = driver_packages.package_name(record['packages'][0]) if record.get('packages') else None
    if name not in installed:
        return None
    argv = ['dpkg-query', '-W', '-f=${Version}', name] if manager == 'apt' else ['rpm', '-q', '--qf', '%{VERSION}', name]
    rc, out, err = run(module, argv)
    return driver_packages.upstream_version(out) if rc == 0 else None


def apt_available(module, names):
    """The `names` apt has an installable version of (`apt-cache policy`: read-only, so it runs in check mode too)."""
    rc, out, err = run(module, ['apt-cache', 'policy'] + list(names))
    return driver_packages.apt_candidates(out) if rc == 0 else set()


def gather(module):
    """The node's facts the planner needs."""
    params = module.params
    devices = gpu_discovery.pci_devices(params['sysfs_root'])
    os_release = gpu_discovery.os_release(params['os_release_path'])
    manager = driver_packages.manager_of(driver_packages.distro_family(os_release))
    if manager is None:
        manager = next((name for name, tool in (('apt', 'apt-get'), ('dnf', 'dnf')) if module.get_bin_path(tool)), None)
    record = driver_state.load_record(params['record_file'])
    # Nodes without the initramfs tool (minimal systems, direct kernel boot) boot without an initramfs to update.
    commands = driver_plan.COMMANDS.get(record.get('manager') or manager, {})
    initramfs = commands['initramfs'] if commands and module.get_bin_path(commands['initramfs'][0]) else None
    facts = dict(
        gpus=driver_state.gpus(devices),
        nvswitch_count=len(gpu_discovery.nvswitch_devices(devices)),
        loaded=driver_state.proc_driver(params['procfs_root']),
        modules=driver_state.loaded_modules(params['procfs_root']),
        secure_boot=driver_state.secure_boot(params['sysfs_root']),
        signing_key=any(os.path.exists(path) for path in driver_state.DKMS_SIGNING_KEYS),
        os_release=os_release,
        kernel_release=gpu_discovery.kernel_release(params['procfs_root']),
        manager=manager,
        initramfs=initramfs,
        record=record,
        smi=dict(binary=None, working=False, version=None, gpus=0, errors=[], unlisted=None),
        installed_packages={},
        held_packages=set(),
        package_version=None,
        available_packages=set(),
        systemd=init.booted(module),
        persistenced=dict(active=False),
    )
    paths = [os.path.join(params['validations_dir'], driver_state.DRIVER_READY),
             os.path.join(params['modprobe_dir'], driver_plan.BLACKLIST_FILE)] + sorted(record.get('files', {}))
    facts['files'] = dict((path, files.read_bytes(path)) for path in paths)
    # validated asks nvidia-smi on a node whose PCI bus shows no GPU too: GPUs it lists there mean the two views
    # disagree (a sysfs_root that is not this node's), which is reported rather than validating "0 GPUs".
    if facts['gpus'] or params['state'] == 'validated' or (params['state'] == 'absent' and facts['loaded']):
        facts['smi'] = query_smi(module, params['nvidia_smi'], gpu_discovery.nvidia_display_devices(devices))
    facts['disagreement'] = gpu_discovery.disagreement(gpu_discovery.nvidia_display_devices(devices), [
        dict(address=address, index=number) for number, address in enumerate(facts['smi'].get('addresses', []))], params['sysfs_root'])
    working = facts['smi']['working']
    # A version asked of a working driver this module installed may mean replacing it.
    installing = params['state'] == 'present' and facts['gpus'] and (not working or bool(params['version'] and record.get('packages')))
    if manager and (installing or (params['state'] == 'absent' and record)):
        facts['installed_packages'], facts['held_packages'] = installed_packages(module, record.get('manager') or manager)
        if installing and not working:
            facts['package_version'] = package_version(module, record.get('manager') or manager, record, facts['installed_packages'])
    # Whether Ubuntu has precompiled modules for the running kernel decides between them and DKMS (with headers).
    probe = driver_packages.precompiled_modules(os_release, params['version'], facts['kernel_release']) if installing else []
    if probe and not params['packages']:
        facts['available_packages'] = apt_available(module, probe)
    if installing and params['persistence_mode'] and facts['systemd']:
        facts['persistenced'] = dict(active=run(module, ['systemctl', 'is-active', '--quiet', driver_plan.PERSISTENCED_UNIT])[0] == 0)
    return facts


def simulate(module, facts, steps):
    """({step index: {name: version, None: removed}}, warnings): what `apt-get -s` says each package step would do, for
    check mode's diff (read-only; without -y, which would refuse to change held packages the run unholds first). dnf has
    no such simulation: its steps show their named packages. A simulation that fails is left out, with a warning."""
    simulated, warnings = {}, []
    if (facts['record'].get('manager') or facts['manager']) != 'apt':
        return simulated, warnings
    for index in driver_plan.package_steps(steps):
        argv = ['apt-get', '-s'] + [arg for arg in steps[index]['argv'][1:] if arg != '-y']
        rc, out, err = run(module, argv)
        if rc == 0:
            simulated[index] = driver_packages.apt_simulation(out)
        else:
            warnings.append('%s failed (%s): the diff shows its packages without the versions the run installs (the run refreshes '
                            'the package lists first)' % (' '.join(argv), _tail(rc, out, err)))
    return simulated, warnings


def check_steps(steps):
    """Fail (files.FileError) when a file the steps write or remove could not be, before any step runs (in check mode too)."""
    for step in steps:
        if step['kind'] in ('write', 'remove', 'record', 'validate'):
            files.check_writable(step['path'], create_directories=step['kind'] != 'remove')


class Executor(object):
    """Carries out the planned steps in order; keeps the undo record up to date after each change."""

    def __init__(self, module, facts, planned):
        self.module = module
        self.facts = facts
        self.planned = planned
        self.record = dict(facts['record']) or dict(manager=facts['manager'], packages=[], installed=[], held=[], files={})
        self.packages_before = (dict(facts['installed_packages']), set(facts['held_packages']))
        self.actions = []
        self.diff = []
        self.changed = False
        self.load_failed = False

    def _write_record(self):
        path = self.module.params['record_file']
        files.make_directories(files.missing_directories(path))
        files.write_atomic(self.module, path, to_bytes(json.dumps(self.record, indent=2, sort_keys=True) + '\n'), mode=0o600)

    def _changed(self, step):
        self.actions.append(driver_plan.describe(step))
        self.changed = True

    def write(self, step):
        path = step['path']
        before = self.facts['files'].get(path)
        if step.get('record') and path not in self.record['files']:
            self.record['files'][path] = to_text(before) if before is not None else None
            self._write_record()
        files.make_directories(files.missing_directories(path))
        files.write_atomic(self.module, path, step['data'], mode=0o644)
        self.diff.append(files.diff_entry(path, before, step['data']))
        self._changed(step)

    def remove(self, step):
        path = step['path']
        before = files.read_bytes(path)
        files.remove(self.module, path)
        if path != self.module.params['record_file']:
            self.diff.append(files.diff_entry(path, before, None))
        self._changed(step)

    def install(self, step):
        before = set(self.facts['installed_packages'])
        rc, out, err = run(self.module, step['argv'], timeout=commands.LONG_TIMEOUT)
        after, held = installed_packages(self.module, self.record['manager'])
        self.facts['installed_packages'], self.facts['held_packages'] = after, held
        new = sorted(set(after) - before)
        if new:
            self.record['installed'] = sorted(set(self.record['installed']) | set(new))
        # The driver's packages as last installed: a replaced driver's new versions (its installed names need not change).
        ours = rc == 0 and not step.get('headers')
        if ours:
            self.record['packages'] = step['packages']
        if new or ours:
            self._write_record()
        if rc != 0:
            if step.get('headers'):
                raise DriverError('the kernel headers package %s for the running kernel %s cannot be installed; DKMS needs it to '
                                  'build the nvidia module (%s)' % (step['packages'][0], self.facts['kernel_release'], _tail(rc, out, err)))
            raise DriverError('installing %s failed (%s)' % (' '.join(step['packages']), _tail(rc, out, err)))
        self._changed(step)

    def command(self, step):
        if step.get('soft') and self.load_failed:
            return
        rc, out, err = run(self.module, step['argv'], timeout=commands.LONG_TIMEOUT)
        if rc != 0 and step.get('soft'):
            self.load_failed = True
            self.planned['reboot_required'] = True
            if '-r' in step['argv']:
                self.planned['driver']['loaded'] = True
            self.planned['warnings'].append('%s failed (%s): the kernel modules are not as wanted until the node reboots (a container '
                                            'cannot load or unload kernel modules)' % (driver_plan.describe(step), _tail(rc, out, err)))
            return
        if rc != 0:
            raise DriverError('%s failed (%s)' % (driver_plan.describe(step), _tail(rc, out, err)))
        if step.get('hold'):
            self.record['held'] = sorted(set(self.record['held']) | set(step['hold']))
            self._write_record()
        self._changed(step)

    def persistenced(self, step):
        rc, out, err = run(self.module, ['systemctl', 'show', '-p', 'LoadState', '--value', driver_plan.PERSISTENCED_UNIT])
        if rc != 0 or out.strip() != 'loaded':
            return
        rc, out, err = run(self.module, step['argv'])
        if rc != 0:
            self.planned['warnings'].append('%s failed (%s)' % (driver_plan.describe(step), _tail(rc, out, err)))
            return
        self._changed(step)

    def validate(self, step):
        params = self.module.params
        driver = self.planned['driver']
        if step['pending']:
            # nvidia-smi answers for (or reports a mismatch with) the old module until the reboot the plan reported.
            driver['version'] = self._installed_version() or driver['version']
            driver['branch'] = driver_state.branch_of(driver['version'])
            return
        smi = query_smi(self.module, params['nvidia_smi'], gpu_discovery.nvidia_display_devices(gpu_discovery.pci_devices(params['sysfs_root'])))
        loaded = driver_state.proc_driver(params['procfs_root'])
        driver.update(installed=True, loaded=bool(loaded or 'nvidia' in driver_state.loaded_modules(params['procfs_root'])),
                      version=smi['version'] or (loaded or {}).get('version') or self._installed_version() or driver['version'])
        driver['branch'] = driver_state.branch_of(driver['version'])
        if smi['unlisted']:
            raise DriverError('the driver is installed, but %s' % smi['unlisted'])
        if smi['working']:
            ready = os.path.join(params['validations_dir'], driver_state.DRIVER_READY)
            data = to_bytes(driver_state.driver_ready_text())
            if self.facts['files'].get(ready) != data:
                self.write(dict(kind='write', path=ready, data=data))
            return
        self.planned['reboot_required'] = True
        self.planned['warnings'].append('the driver is installed but does not work yet (%s); a reboot should load it'
                                        % driver_state.smi_failure(smi['errors'], loaded)[1])

    def _installed_version(self):
        return package_version(self.module, self.record['manager'], self.record, self.facts['installed_packages'])

    def record_step(self, step):
        if self.record != self.facts['record']:
            self.actions.append(driver_plan.describe(step))

    def run_steps(self):
        handlers = dict(write=self.write, remove=self.remove, install=self.install, run=self.command, persistenced=self.persistenced,
                        validate=self.validate, record=self.record_step)
        for step in self.planned['steps']:
            handlers[step['kind']](step)
        if self.module._diff and any(step['kind'] == 'install' or step.get('remove') or step.get('hold') or step.get('unhold')
                                     for step in self.planned['steps']):
            # The packages as the package manager lists them now, against the list read before the first step.
            packages = driver_plan.package_diff(self.record['manager'], self.packages_before,
                                                installed_packages(self.module, self.record['manager']))
            if packages:
                self.diff.append(packages)
