# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The nvidia_driver planner: from the node's facts and the options, the steps to take (pure).

A step is a dict with `kind`:
  run       argv (+ `soft`: a failure is reported as needing a reboot, not fatal: loading and unloading modules; `hold`,
            `unhold`, `remove`: the packages it holds, unholds or removes)
  write     path, data (bytes): written atomically
  remove    path
  install   argv, packages, names: the package manager command whose new packages are recorded for state=absent (names:
            the package names of its specs)
  persistenced, validate: decided when they run (after the install), shown as the command they run (validate `pending`:
            a replaced driver's old module is still loaded, only the installed version is read; `path`: the driver-ready
            file it may write)
  record    path: the undo record is written (its content is kept by the executor)
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shlex

from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import packages as driver_packages
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.systemd import NOT_BOOTED
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.state import DriverError

PERSISTENCED_UNIT = 'nvidia-persistenced.service'
BLACKLIST_FILE = 'blacklist-nouveau.conf'
# replace: installing other versions over the driver's packages (apt asks before downgrading; dnf up- or downgrades to a
# named version by itself, but only within the enabled module stream, hence the stream switch first).
COMMANDS = dict(
    apt=dict(install=['apt-get', 'install', '-y', '--no-install-recommends'],
             replace=['apt-get', 'install', '-y', '--no-install-recommends', '--allow-downgrades'],
             hold=['apt-mark', 'hold'], unhold=['apt-mark', 'unhold'], remove=['apt-get', 'purge', '-y'],
             initramfs=['update-initramfs', '-u']),
    dnf=dict(install=['dnf', 'install', '-y'], replace=['dnf', 'install', '-y'],
             switch=['dnf', 'module', 'switch-to', '-y', '--allowerasing'],
             hold=['dnf', 'versionlock', 'add'], unhold=['dnf', 'versionlock', 'delete'], remove=['dnf', 'remove', '-y'],
             initramfs=['dracut', '-f']),
)


def describe(step):
    """The line of RV(actions) for a step."""
    if step['kind'] in ('run', 'install', 'persistenced', 'validate'):
        return ' '.join(shlex.quote(arg) for arg in step['argv'])
    return '%s %s' % ('remove' if step['kind'] == 'remove' else 'write', step['path'])


def _driver(facts, source, kernel_module_type):
    loaded = facts['loaded']
    version = facts['smi']['version'] or (loaded or {}).get('version') or facts['package_version']
    return dict(installed=bool(facts['smi']['working'] or loaded or facts['smi']['binary'] or source == 'package'),
                loaded=bool(loaded or 'nvidia' in facts['modules']),
                version=version, branch=driver_state.branch_of(version), source=source,
                kernel_module_type=(loaded or {}).get('kernel_module_type') or kernel_module_type)


def _ready_steps(facts, params):
    path = os.path.join(params['validations_dir'], driver_state.DRIVER_READY)
    data = to_bytes(driver_state.driver_ready_text())
    return [] if facts['files'].get(path) == data else [dict(kind='write', path=path, data=data)]


def _validated(facts, params, result):
    if not facts['smi']['working']:
        kind, message = driver_state.smi_failure(facts['smi']['errors'], facts['loaded'])
        raise DriverError(('state=validated installs nothing and %s' % message) if kind == 'no-driver' else message)
    if facts['smi'].get('unlisted'):
        raise DriverError('the driver does not work on every GPU: %s' % facts['smi']['unlisted'])
    result['driver'] = _driver(facts, driver_state.driver_source(True, facts['record']), None)
    result['steps'] = _ready_steps(facts, params)


def _package_plan(facts, params, kernel_module_type):
    if params['packages']:
        manager = facts['manager']
        if manager is None:
            raise DriverError('neither apt-get nor dnf was found to install packages %s' % ', '.join(params['packages']))
        return dict(manager=manager, install=list(params['packages']),
                    names=[driver_packages.package_name(spec) for spec in params['packages']], headers=None)
    return driver_packages.driver_packages(facts['os_release'], params['version'], kernel_module_type, facts['kernel_release'],
                                           params['persistence_mode'], facts['available_packages'])


def _present(facts, params, result):
    smi = facts['smi']
    loaded = bool(smi['working'] or facts['loaded'] or 'nvidia' in facts['modules'])
    have = smi['version'] or facts['package_version']
    # Another version is asked for: replaced only when this module installed the driver (its record names the packages).
    replace = bool(have) and not driver_state.version_matches(have, params['version'])
    if replace and not facts['record'].get('packages'):
        raise DriverError('the node has NVIDIA driver %s, not the requested version %s, and this module did not install it (%s names '
                          'no packages): it is not replaced. Uninstall that driver yourself and run again, or keep it with '
                          'state=validated (ClusterPolicy driver.enabled=false)' % (have, params['version'], params['record_file']))
    if smi['working'] and not replace:
        _validated(facts, params, result)
        return
    if not smi['working']:
        kind, message = driver_state.smi_failure(smi['errors'], facts['loaded'])
        if kind != 'no-driver':
            raise DriverError(message)
    kernel_module_type = driver_state.resolve_kernel_module_type(params['kernel_module_type'], facts['gpus'],
                                                                 driver_state.branch_of(params['version']), facts['loaded'])
    packages = _package_plan(facts, params, kernel_module_type)
    if packages['headers'] and facts['secure_boot'] == 'enabled' and not facts['signing_key']:
        raise DriverError('Secure Boot is enabled and no DKMS signing key is set up (%s): the kernel would refuse the nvidia module '
                          'DKMS builds. Enroll a machine owner key for DKMS (mokutil --import), disable Secure Boot, or give signed '
                          'packages in packages' % ', '.join(driver_state.DKMS_SIGNING_KEYS))
    commands = COMMANDS[packages['manager']]
    installed = facts['installed_packages']
    steps = []
    nouveau = [name for name in driver_state.NOUVEAU_MODULES if name in facts['modules']]
    # Headers first: when the running kernel has none, nothing else is changed.
    if packages['headers'] and packages['headers'] not in installed:
        steps.append(dict(kind='install', argv=commands['install'] + [packages['headers']], packages=[packages['headers']],
                          names=[packages['headers']], headers=True))
    if params['blacklist_nouveau']:
        path = os.path.join(params['modprobe_dir'], BLACKLIST_FILE)
        data = to_bytes(driver_state.blacklist_text())
        if facts['files'].get(path) != data:
            steps.append(dict(kind='write', path=path, data=data, record=True))
            # Without an initramfs tool the node boots without an initramfs: modprobe.d alone applies at the next boot.
            if facts['initramfs']:
                steps.append(dict(kind='run', argv=list(facts['initramfs'])))
    if nouveau:
        result['reboot_required'] = True
        result['warnings'].append('%s is loaded and holds the GPU: reboot so that the NVIDIA module can take it' % ' and '.join(nouveau))
    held = facts['held_packages']
    if replace:
        # Held packages cannot be changed; they are held again below.
        unhold = [name for name in facts['record'].get('held', []) if name in held]
        if unhold:
            steps.append(dict(kind='run', argv=commands['unhold'] + unhold, unhold=unhold))
            held = held - set(unhold)
        if 'switch' in commands and packages['install'][0].startswith('@'):
            steps.append(dict(kind='run', argv=commands['switch'] + [packages['install'][0][1:]]))
    if replace or any(name not in installed for name in packages['names']):
        steps.append(dict(kind='install', argv=commands['replace' if replace else 'install'] + packages['install'],
                          packages=packages['install'], names=packages['names']))
    to_hold = [name for name in packages['names'] if name not in held]
    if params['hold'] and to_hold:
        steps.append(dict(kind='run', argv=commands['hold'] + to_hold, hold=to_hold))
    if steps:
        steps.append(dict(kind='record', path=params['record_file']))
    # After replacing a loaded driver the old kernel module keeps running: the new modules cannot join it, and only the
    # installed version can be read.
    pending = replace and loaded
    if params['load_modules'] and not nouveau and not pending:
        steps += [dict(kind='run', argv=['modprobe', name], soft=True) for name in driver_state.NVIDIA_MODULES
                  if name not in facts['modules']]
    elif not loaded:
        result['reboot_required'] = True  # nothing here loads the driver: it starts with the next boot
    if params['persistence_mode'] and not facts['persistenced']['active']:
        if facts['systemd']:
            steps.append(dict(kind='persistenced', argv=['systemctl', 'enable', '--now', PERSISTENCED_UNIT]))
        else:
            result['warnings'].append('%s: nvidia-persistenced is neither enabled nor started (persistence_mode); run it the way this '
                                      'node runs its services' % NOT_BOOTED)
    if pending:
        result['reboot_required'] = True
        result['warnings'].append('the driver packages change from %s to the requested version %s; the loaded kernel module stays %s '
                                  'until the node reboots (or, when no process uses the GPU, the modules are unloaded and loaded '
                                  'again: modprobe -r nvidia_drm nvidia_modeset nvidia_uvm nvidia; modprobe nvidia nvidia_uvm)'
                                  % (have, params['version'], have))
    steps.append(dict(kind='validate', argv=[smi['binary'] or 'nvidia-smi', '-q', '-x'], pending=pending,
                      path=os.path.join(params['validations_dir'], driver_state.DRIVER_READY)))
    result['steps'] = steps
    result['packages'] = [spec for step in steps if step['kind'] == 'install' for spec in step['packages']]
    result['driver'] = _driver(facts, 'package', kernel_module_type)


def _absent(facts, params, result):
    record = facts['record']
    ready = os.path.join(params['validations_dir'], driver_state.DRIVER_READY)
    if not record:
        source = driver_state.driver_source(facts['smi']['working'] or facts['loaded'], record)
        result['driver'] = _driver(facts, source, None)
        # A driver installed by others stays; the driver-ready its validation wrote goes (what it holds is what it wrote).
        if facts['files'].get(ready) == to_bytes(driver_state.driver_ready_text()):
            result['steps'] = [dict(kind='remove', path=ready)]
        return
    commands = COMMANDS[record.get('manager') or facts['manager'] or 'apt']
    steps = []
    held = [name for name in record.get('held', []) if name in facts['held_packages']]
    if held:
        steps.append(dict(kind='run', argv=commands['unhold'] + held, unhold=held))
    ours = [name for name in record.get('installed', []) if name in facts['installed_packages']]
    if ours:
        steps.append(dict(kind='run', argv=commands['remove'] + ours, remove=ours))
    loaded = [name for name in driver_state.UNLOAD_ORDER if name in facts['modules']]
    if loaded:
        steps.append(dict(kind='run', argv=['modprobe', '-r'] + loaded, soft=True))
    restored = False
    for path, before in sorted(record.get('files', {}).items()):
        current = facts['files'].get(path)
        wanted = to_bytes(before) if before is not None else None
        if current != wanted:
            steps.append(dict(kind='write', path=path, data=wanted) if wanted is not None else dict(kind='remove', path=path))
            restored = restored or path.endswith(BLACKLIST_FILE)
    if restored and facts['initramfs']:
        steps.append(dict(kind='run', argv=list(facts['initramfs'])))
    if facts['files'].get(ready) is not None:
        steps.append(dict(kind='remove', path=ready))
    steps.append(dict(kind='remove', path=params['record_file']))
    result['steps'] = steps
    result['packages'] = ours


def check_packages(packages):
    for spec in packages:
        if not spec or spec.startswith('-') or len(spec.split()) != 1:
            raise DriverError('packages: %r is not a package name (no spaces, no leading -)' % spec)


# A package the run installs whose version only the package manager picks then (no simulation, or one that failed).
UNKNOWN_VERSION = '(version picked by the run)'


def package_steps(steps):
    """The indexes of the steps that install or remove packages (the ones check mode simulates)."""
    return [index for index, step in enumerate(steps) if step['kind'] == 'install' or step.get('remove')]


def predicted_packages(facts, steps, simulated):
    """(versions, held) of the node's packages after the steps, as check mode predicts them. `simulated` maps a package
    step's index to what the package manager's simulation says ({name: version, None: removed}); a step without one
    installs its packages at their pin (else UNKNOWN_VERSION), or removes the packages it names."""
    versions, held = dict(facts['installed_packages']), set(facts['held_packages'])
    for index, step in enumerate(steps):
        held = (held | set(step.get('hold', ()))) - set(step.get('unhold', ()))
        changes = simulated.get(index)
        if changes is None and step['kind'] == 'install':
            pins = dict((driver_packages.package_name(spec), spec.split('=', 1)[1]) for spec in step['packages'] if '=' in spec)
            changes = dict((name, pins.get(name, UNKNOWN_VERSION)) for name in step['names'])
        elif changes is None:
            changes = dict.fromkeys(step.get('remove', ()))
        for name, version in changes.items():
            if version is None:
                versions.pop(name, None)
                held.discard(name)
            else:
                versions[name] = version
    return versions, held


def package_diff(manager, before, after):
    """The diff entry of the packages whose version or hold differs between `before` and `after` ((versions, held) each),
    or None when none does."""
    (old, old_held), (new, new_held) = before, after
    names = [name for name in set(old) | set(new) if (old.get(name), name in old_held) != (new.get(name), name in new_held)]
    if not names:
        return None
    header = 'packages (%s)' % manager
    return dict(before_header=header, after_header=header, before=driver_packages.package_set_text(old, old_held, names),
                after=driver_packages.package_set_text(new, new_held, names))


def preview_diff(facts, steps, simulated):
    """The diff of the files the steps write or remove and of the packages they change, for check mode."""
    diff = [files.diff_entry(step['path'], facts['files'].get(step['path']), step.get('data'))
            for step in steps if step['kind'] in ('write', 'remove') and step['path'] in facts['files']]
    packages = package_diff(facts['record'].get('manager') or facts['manager'], (facts['installed_packages'], facts['held_packages']),
                            predicted_packages(facts, steps, simulated))
    return diff + ([packages] if packages else [])


def plan(facts, params):
    """dict(steps, driver, packages, reboot_required, deploy_driver_label, warnings); raises DriverError."""
    driver_state.check_version(params['version'])
    check_packages(params['packages'])
    result = dict(steps=[], packages=[], reboot_required=False, warnings=[],
                  driver=dict(installed=False, loaded=False, version=None, branch=None, source='none', kernel_module_type=None))
    if params['state'] == 'absent':
        _absent(facts, params, result)
    elif facts['gpus']:
        (_validated if params['state'] == 'validated' else _present)(facts, params, result)
    result['deploy_driver_label'] = driver_state.deploy_driver_label(len(facts['gpus']), result['driver']['source'])
    if facts.get('disagreement'):
        result['warnings'].append(facts['disagreement'])
    return result
