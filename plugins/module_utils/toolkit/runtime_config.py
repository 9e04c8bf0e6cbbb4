# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the containerd, Docker and CRI-O runtime modules share.

- The undo record: a JSON state file on the node holding, per file written,
  whether it existed, its original text and the hash of what we wrote, plus
  the facts needed to undo structurally (previous default runtime, the
  runtimes that were there before, ...). An intact file is restored byte for
  byte; an edited one is undone key by key.
- Ownership is recorded, never inferred: absent changes only what a record
  names; without one (none, deleted, or another file's) it changes nothing and
  says so (`notes`), and a runtime the record says was there before stays.
- Plan: desired bytes per path, computed purely from the current bytes.
- Dialect: the few primitives a runtime's config format needs (get/set the
  default runtime, add/remove a runtime, CDI switch); present/absent rules are
  written once on top of them.
- plan_file(): the whole present/absent planner for runtimes configured in a
  single file (Docker's daemon.json, CRI-O's drop-in).
- gather() and execute(): the I/O, shared by all three modules.
- without_tomlkit(): what the TOML runtimes' modules do on a node without tomlkit.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import stat

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import (
    all_runtime_names, check_options, is_nvidia_runtime, runtime_entries)

STATE_SUFFIX = '.gpuops-nvidia-runtime.json'
STATE_FORMAT = 1
STATE_MODE = 0o600  # it may hold a copy of the config, which can carry registry credentials
# Configs are a few KiB; anything near this is not one, and parsing it would take minutes.
MAX_CONFIG_BYTES = 1024 * 1024
# Where a parsed document keeps the name of the file it came from.
LABEL_ATTR = '_gpuops_label'


def state_path(path, beside=True):
    """Where the undo record of the config file `path` lives: the one rule for every runtime.

    Beside the file (config.toml -> config.toml.gpuops-nvidia-runtime.json), or, with `beside`
    false, for a drop-in in a directory the runtime reads whole (CRI-O reads every file of
    crio.conf.d), in that directory's parent:
    /etc/crio/crio.conf.d/99-nvidia.conf -> /etc/crio/crio.conf.d.99-nvidia.conf.gpuops-nvidia-runtime.json
    """
    if beside:
        return path + STATE_SUFFIX
    return '%s.%s%s' % (os.path.dirname(path), os.path.basename(path), STATE_SUFFIX)


class ConfigError(GpuOpsError):
    """A config cannot be handled; the message names the file, and the position or key."""


def labelled(doc, label):
    """Remember that `doc` was parsed from file `label`, so that error() can name it."""
    setattr(doc, LABEL_ATTR, label)
    return doc


def error(doc, message):
    """A ConfigError about `doc`, naming its file when labelled() knows it."""
    label = getattr(doc, LABEL_ATTR, None)
    return ConfigError('%s: %s' % (label, message) if label else message)


def text(data, label):
    if data is None:
        return ''
    if data.startswith(b'\xef\xbb\xbf'):
        # Invisible in an editor, and the TOML and JSON parsers report it as a bad first character.
        raise ConfigError('%s: starts with a UTF-8 byte order mark; remove it' % label)
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ConfigError('%s: not UTF-8 at byte %d' % (label, exc.start))


def to_bytes(value):
    return value.encode('utf-8')


def crlf(text):
    """True when every line of `text` ends with CRLF (a file written on Windows)."""
    return '\r\n' in text and text.count('\n') == text.count('\r\n')


def line_ends_like(original, text):
    """`text` with CRLF line ends when `original` has only those, so lines we add do not mix LF into the file."""
    return re.sub(r'(?<!\r)\n', '\r\n', text) if crlf(original) else text


# --- the undo record ---------------------------------------------------------

# The undo record's keys and the types of their values (previous_enable_cdi is
# whatever the config held); containerd's records also carry CONTAINERD_STATE_KEYS.
STATE_KEYS = {'path': str, 'runtimes': list, 'files': dict, 'previous_default': (str, type(None)),
              'previous_enable_cdi': object, 'enable_cdi_set': bool}
CONTAINERD_STATE_KEYS = {'drop_in': (str, type(None)), 'import_added': bool, 'version_added': bool}
# Keys a record may lack (written by an earlier release), with their types. found_runtimes: the names of the runtimes
# that were in the file before this module changed it (not ours: absent leaves them).
OPTIONAL_STATE_KEYS = {'created_directories': list, 'found_runtimes': list}
FILE_RECORD_KEYS = {'existed': bool, 'original': (str, type(None)), 'written_sha256': str}


def _key_problem(record, keys, where):
    for key, types in sorted(keys.items()):
        if key not in record:
            return 'key %s%s is missing' % (where, key)
        if not isinstance(record[key], types):
            return 'key %s%s has the wrong type' % (where, key)
    return None


def _state_problem(state):
    """What is wrong with a parsed undo record, or None."""
    problem = _key_problem(state, STATE_KEYS, '')
    if problem is None and any(key in state for key in CONTAINERD_STATE_KEYS):
        problem = _key_problem(state, CONTAINERD_STATE_KEYS, '')
    if problem is not None:
        return problem
    for key, types in sorted(OPTIONAL_STATE_KEYS.items()):
        if key in state and not isinstance(state[key], types):
            return 'key %s has the wrong type' % key
    if not all(isinstance(name, str) for key in ('runtimes', 'created_directories', 'found_runtimes') for name in state.get(key, [])):
        return 'keys runtimes, created_directories and found_runtimes must list names'
    for name, record in sorted(state['files'].items()):
        if not isinstance(record, dict):
            return 'key files.%s must be an object' % name
        problem = _key_problem(record, FILE_RECORD_KEYS, 'files.%s.' % name)
        if problem is not None:
            return problem
    return None


def load_state(data, label):
    """The parsed undo record, or None when there is none; a damaged one raises ConfigError (nothing is changed then)."""
    if data is None:
        return None
    try:
        state = json.loads(data.decode('utf-8'))
    except ValueError as exc:  # UnicodeDecodeError is one too
        raise ConfigError('%s: unreadable state file: %s' % (label, exc))
    if not isinstance(state, dict) or state.get('format') != STATE_FORMAT:
        raise ConfigError('%s: unknown state file format; remove it to start over' % label)
    problem = _state_problem(state)
    if problem:
        raise ConfigError('%s: corrupt state file (%s); remove it to start over' % (label, problem))
    return state


def dump_state(state):
    return to_bytes(json.dumps(state, indent=2, sort_keys=True) + '\n')


def _as_written(record, data):
    return data is not None and files.sha256(data) == record['written_sha256']


def _as_before(record, data):
    """True when a file is (still, or again) what it was before we first wrote it."""
    if not record['existed']:
        return data is None
    return data is not None and record['original'] is not None and data == to_bytes(record['original'])


def intact(state, current):
    """True when every file recorded is as we wrote it or as it was before.

    The second happens when a run was interrupted between writing the record
    and the file (the record is written first, see execute).
    """
    return all(_as_written(record, current.get(name)) or _as_before(record, current.get(name))
               for name, record in state['files'].items())


def usable_state(state, current, path, still_ours):
    """Keep a state whose files are intact; keep only its facts when our runtimes are still there.

    A config rewritten by someone else since our last run either still holds
    our runtimes (then the recorded originals no longer describe the file and
    absent has to undo structurally) or does not (then the state is stale).
    `still_ours(names)` tells whether any of `names` is still configured.
    """
    if state is None or state.get('path') != path:
        return None
    if intact(state, current):
        return state
    if not still_ours(state['runtimes']):
        return None
    for record in state['files'].values():
        record['original'] = None
    return state


def next_state(state, path, first_facts, names, file_names, current, desired, found=()):
    """The undo record after a present run; None when there is nothing of ours to undo.

    `first_facts` seed a new record (what was in effect before we changed
    anything); an existing record keeps its facts and originals. `found` are
    the runtimes of `names` that were there before this run and that no record
    names: they are recorded as found, so that absent leaves them.
    """
    touched = [name for name in file_names if desired[name] != current.get(name)]
    if state is None and not touched:
        # Nothing changed and nothing recorded: the runtime was configured by
        # someone else, so absent must not treat the current bytes as the original.
        return None
    if state is None:
        state = dict(first_facts, format=STATE_FORMAT, path=path, files={})
    else:
        state = json.loads(json.dumps(state))
    state['found_runtimes'] = sorted(set(state.get('found_runtimes', [])) | set(found))
    state['runtimes'] = names
    for name in file_names:
        record = state['files'].get(name)
        if record is None:
            before = current.get(name)
            record = {'existed': before is not None, 'original': text(before, name) if before is not None else None}
            state['files'][name] = record
        record['written_sha256'] = files.sha256(desired[name])
    return state


def ours(state):
    """The runtimes of a record that absent removes: those present registered, not those it found there."""
    return [name for name in state['runtimes'] if name not in state.get('found_runtimes', [])]


def found_before(has_runtime, names, state):
    """The runtimes of `names` there before this run (`has_runtime(name)`) that the record `state` does not name as ours."""
    recorded = state['runtimes'] if state else []
    return [name for name in names if name not in recorded and has_runtime(name)]


def not_recorded_note(path, state_file, there, state=None):
    """What absent says when it finds no record of its own for `path` and leaves the runtimes `there` as they are."""
    why = ('%s is the undo record of %s, not of this file' % (state_file, state['path']) if state is not None
           else 'there is no undo record (%s)' % state_file)
    return ('%s: %s, so state=absent leaves %s as it is: this module did not configure it, or its record was removed. '
            'Remove it yourself if it should go' % (path, why, ', '.join(there)))


def found_note(path, names):
    return ('%s: the runtimes %s were there already, not registered by this module: no undo record is kept, and '
            'state=absent will leave them' % (path, ', '.join(names)))


def restore_files(result, state, undo):
    """Absent with a record: give back the original of each file as we wrote it, undo the edited ones with `undo(name)`."""
    for name, record in state['files'].items():
        current = result.current.get(name)
        if _as_written(record, current) and not record['existed']:
            result.desired[name] = None
        elif _as_written(record, current) and record['original'] is not None:
            result.desired[name] = to_bytes(record['original'])
        elif not _as_before(record, current):
            undo(name)


class Plan(object):
    """Desired bytes per file (None: remove), the directories to create or remove, and the values the module returns."""

    def __init__(self, current):
        self.current = current
        self.desired = dict(current)
        self.result = {}
        # Created before any file is written (outermost first); removed, when empty, after every file.
        self.create_directories = []
        self.remove_directories = []
        # The mode of a file this plan creates, where it must not get the default (0666 minus the umask).
        self.modes = {}

    def changes(self):
        return [name for name in sorted(self.desired) if self.desired[name] != self.current.get(name)]

    def desired_in_new_directories(self):
        """The files to write in a directory this plan creates."""
        new = set(self.create_directories)
        return [name for name in self.changes() if self.desired[name] is not None and os.path.dirname(os.path.abspath(name)) in new]

    def actions(self):
        return (['create directory %s' % directory for directory in self.create_directories]
                + ['%s %s' % ('remove' if self.desired[name] is None else 'write', name) for name in self.changes()]
                + ['remove directory %s' % directory for directory in self.remove_directories])


# --- present/absent rules over a config format --------------------------------

class Dialect(object):
    """One runtime's config format; subclasses implement the primitives on a parsed document.

    The rules (which default to set, unset or restore) live here once, so the
    modules agree on what present and absent mean.
    """

    label = 'config'
    # A file that is ours alone (a drop-in) is removed rather than left empty.
    remove_when_empty = False

    def parse(self, content, label):
        raise NotImplementedError

    def render(self, doc, original):
        """Text of `doc`; `original` is the text it was parsed from (for its style)."""
        raise NotImplementedError

    def rendered(self, doc, original):
        """Bytes of `doc`, or None when the file should go."""
        if self.remove_when_empty and len(doc) == 0:
            return None
        return to_bytes(self.render(doc, original))

    def has_runtime(self, doc, name):
        raise NotImplementedError

    def runtime_binary(self, doc, name):
        """The program runtime `name` runs (None: the runtime's built-in default); only asked of a runtime that exists."""
        raise NotImplementedError

    def runtime_key(self, name):
        """Where runtime `name` is written, for messages."""
        raise NotImplementedError

    def check_takeover(self, doc, entries, recorded):
        """Refuse to take over a runtime of `entries` that exists in `doc` and is neither ours nor an NVIDIA runtime.

        Ours: named in the undo record (`recorded`), or already running the binary we would set.
        """
        for name, binary in entries:
            if name in recorded or not self.has_runtime(doc, name):
                continue
            current = self.runtime_binary(doc, name)
            if current != binary and not is_nvidia_runtime(name, current):
                raise error(doc, '%s is a runtime of its own (%s), not the NVIDIA runtime, and this module did not register it: '
                                 'it is not taken over; choose another runtime_name' % (
                                     self.runtime_key(name), 'it runs %s' % current if current else 'the default program'))

    def set_runtime(self, doc, name, binary):
        raise NotImplementedError

    def remove_runtime(self, doc, name):
        raise NotImplementedError

    def get_default(self, doc):
        raise NotImplementedError

    def set_default(self, doc, name):
        """Set the default runtime, or remove the setting when `name` is None."""
        raise NotImplementedError

    def get_cdi(self, doc):
        return None

    def set_cdi(self, doc, value):
        """Set the CDI switch, or remove it when `value` is None; only called by dialects with a CDI option."""
        raise ConfigError('%s has no CDI switch to set' % self.label)

    def prune(self, doc):
        """Drop containers present created and absent emptied."""

    def configured(self, doc, names):
        """What of the runtimes `names` `doc` configures, for messages: ['runtime NAME', ..., 'default runtime NAME']."""
        there = ['runtime %s' % name for name in names if self.has_runtime(doc, name)]
        default = self.get_default(doc)
        return there + (['default runtime %s' % default] if default in names else [])

    def apply_present(self, doc, entries, set_as_default, enable_cdi, ours, stale=(), recorded=()):
        """Register `entries` [(name, binary)]; return the facts needed to undo it.

        `ours` are every runtime name the module manages: a default naming one
        is unset when `set_as_default` is off; `stale` runtimes (managed before,
        no longer wanted) are removed; `recorded` are the names the undo record
        holds (see check_takeover).
        """
        self.check_takeover(doc, entries, recorded)
        facts = {'previous_default': self.get_default(doc), 'previous_enable_cdi': self.get_cdi(doc)}
        for name in stale:
            self.remove_runtime(doc, name)
        for name, binary in entries:
            self.set_runtime(doc, name, binary)
        current = facts['previous_default']
        if set_as_default:
            if current != entries[0][0]:
                self.set_default(doc, entries[0][0])
        elif current is not None and current in ours:
            self.set_default(doc, None)
        if enable_cdi and facts['previous_enable_cdi'] is not True:
            self.set_cdi(doc, True)
        return facts

    def apply_absent(self, doc, names, record):
        """Remove runtimes `names`; restore the default and the CDI switch the undo `record` holds."""
        for name in names:
            self.remove_runtime(doc, name)
        if self.get_default(doc) != record['previous_default']:
            self.set_default(doc, record['previous_default'])
        if record['enable_cdi_set'] and self.get_cdi(doc) != record['previous_enable_cdi']:
            self.set_cdi(doc, record['previous_enable_cdi'])
        self.prune(doc)


def plan_file(params, current, path, state_file, dialect):
    """Plan present/absent for a runtime configured in the single file `path`.

    `current` maps `path` and `state_file` to their bytes or None.
    """
    check_options(params)
    result = Plan(current)
    state = load_state(current.get(state_file), state_file)
    original = text(current.get(path), path)
    result.result['notes'] = []
    if params['state'] == 'present':
        names, previous_default, default = _plan_file_present(params, result, state, path, state_file, original, dialect)
    else:
        names, previous_default, default = _plan_file_absent(params, result, state, path, state_file, original, dialect)
    result.result.update(path=path, runtimes=names, previous_default_runtime=previous_default, default_runtime=default)
    return result


def _plan_file_present(params, result, state, path, state_file, original, dialect):
    current = result.current
    doc = dialect.parse(original, path)
    entries = runtime_entries(params['runtime_name'], params['runtime_binary'], params['variants'])
    names = [name for name, _binary in entries]
    state = usable_state(state, current, path, lambda recorded: any(dialect.has_runtime(doc, name) for name in recorded))
    previous = state['runtimes'] if state else []
    found = found_before(lambda name: dialect.has_runtime(doc, name), names, state)
    facts = dialect.apply_present(doc, entries, params['set_as_default'], params.get('enable_cdi', False),
                                  set(names) | set(previous), stale=[name for name in ours(state) if name not in names] if state else [],
                                  recorded=previous)
    result.desired[path] = dialect.rendered(doc, original)
    new_state = next_state(state, path, dict(facts, enable_cdi_set=False), names, [path], current, result.desired, found)
    if new_state is None and found:
        result.result['notes'].append(found_note(path, found))
    if new_state is not None:
        new_state['enable_cdi_set'] = new_state['enable_cdi_set'] or (
            params.get('enable_cdi', False) and facts['previous_enable_cdi'] is not True)
        result.desired[state_file] = dump_state(new_state)
    previous_default = new_state['previous_default'] if new_state else facts['previous_default']
    return names, previous_default, dialect.get_default(doc) if result.desired[path] is not None else None


def _plan_file_absent(params, result, state, path, state_file, original, dialect):
    current = result.current
    if state is None or state.get('path') != path:
        # Not a record of ours for this file: nothing here is known to be ours.
        if current.get(path) is None:
            return [], None, None
        doc = dialect.parse(original, path)
        there = dialect.configured(doc, all_runtime_names(params['runtime_name']))
        if there:
            result.result['notes'].append(not_recorded_note(path, state_file, there, state))
        return [], None, dialect.get_default(doc)
    result.desired[state_file] = None
    names = ours(state)
    undone = []

    def undo(name):
        if current.get(name) is not None:
            doc = dialect.parse(original, path)
            dialect.apply_absent(doc, names, state)
            result.desired[name] = dialect.rendered(doc, original)
            undone.append(doc)
    restore_files(result, state, undo)
    if result.desired[path] is None:
        default = None
    elif undone:
        default = dialect.get_default(undone[0])
    else:
        # The file is its original again, whose default the record took when present first ran.
        default = state['previous_default']
    return names, state['previous_default'], default


# --- I/O -----------------------------------------------------------------------

# The directory lock this process holds from gather() to the end of execute().
# A module process runs once; in-process callers (the unit tests) may leave one
# behind when planning fails, and the next gather() lets it go.
_lock = []


def _unlock():
    while _lock:
        files.unlock(_lock.pop())


def gather(paths):
    """Lock the directory of the first path, then read every file the module may touch.

    The lock is held until execute() is done, so two runs on one node (two
    plays, a retry racing a slow run) plan and write one after the other and
    neither loses the other's update.
    """
    _unlock()
    _lock.append(files.lock_directory(os.path.dirname(os.path.abspath(paths[0]))))
    return dict((name, files.read_bytes(name, MAX_CONFIG_BYTES)) for name in paths if name)


def _write_order(plan, path, state_file):
    """The undo record is written before and removed after the files it describes.

    So an interrupted run leaves either no change or a record of it: present
    writes the record, the drop-in, then the config that imports it; absent
    restores the config, removes the drop-in, then the record.
    """
    def rank(name):
        written = plan.desired[name] is not None
        if name == state_file:
            return 0 if written else 4
        if name == path:
            return 2
        return 1 if written else 3
    return sorted(plan.changes(), key=rank)


def _check_unchanged(plan):
    """Fail when a file changed since gather() read it (someone else edited it meanwhile)."""
    for name in sorted(plan.current):
        if files.read_bytes(name, MAX_CONFIG_BYTES) != plan.current[name]:
            raise files.FileError('%s changed while this run was planning; nothing was written, run again' % name)


def execute(module, plan, path, state_file, verify=None):
    """Write what the plan decided; nothing in check mode. Returns the module's result dict.

    `path` is the file whose backup is reported; the state file is bookkeeping,
    left out of the diff and never backed up. Temp files are made next to the
    state file, which is never in a directory the runtime loads every file of
    (CRI-O's drop-in directory); those a killed run left there are removed,
    whatever else the run does. `verify()`, when given, is asked after the
    files are written (or, when nothing is to change, instead) and raises a
    GpuOpsError to fail the run, which then gives back what it wrote. The
    plan's notes are warnings of a state=absent run (it leaves something a user
    may expect it to remove). Releases gather()'s lock.
    """
    try:
        return _execute(module, plan, path, state_file, verify)
    finally:
        _unlock()


def _execute(module, plan, path, state_file, verify):
    changes = plan.changes()
    temp_dir = os.path.dirname(os.path.abspath(state_file))
    stale = sorted(set(temp for name in plan.desired for temp in files.stale_temp_files(name, temp_dir)))
    out = dict(plan.result)
    out.update(changed=bool(changes or plan.create_directories or plan.remove_directories or stale),
               actions=['remove %s' % temp for temp in stale] + plan.actions(), backup_file=None)
    if module.params['state'] == 'absent':
        for note in out.get('notes', []):
            module.warn(note)
    if module._diff:
        out['diff'] = [files.diff_entry(name, plan.current.get(name), plan.desired[name]) for name in changes if name != state_file]
    if not out['changed']:
        if verify:
            verify()
        return out
    # What the run would refuse, check mode refuses too; and no file is written when another one cannot be.
    for name in changes:
        files.check_writable(name, create_directories=name in plan.desired_in_new_directories())
    if module.check_mode:
        return out
    _check_unchanged(plan)
    for temp in stale:
        files.remove(module, temp)
    order = _write_order(plan, path, state_file)
    # A file removed and then put back by _roll_back gets its mode again.
    modes = dict((name, stat.S_IMODE(os.stat(name).st_mode)) for name in order if plan.current.get(name) is not None)
    backups = []
    try:
        files.make_directories(plan.create_directories)
        for name in order:
            data = plan.desired[name]
            is_state = name == state_file
            if module.params.get('backup', False) and not is_state and plan.current.get(name) is not None:
                backups.append(files.backup_copy(name))
                if name == path:
                    out['backup_file'] = backups[-1]
            if data is None:
                files.remove(module, name)
            else:
                files.write_atomic(module, name, data, mode=STATE_MODE if is_state else plan.modes.get(name), temp_dir=temp_dir)
        removed = [directory for directory in plan.remove_directories if files.remove_empty_directory(directory)]
    except files.FileError as exc:
        raise files.FileError('%s; %s' % (exc, _roll_back(module, plan, order, modes, temp_dir, backups)))
    # A directory someone filled since the plan keeps its files and stays: actions say only what was done.
    out['actions'] = [action for action in out['actions'] if not action.startswith('remove directory ')
                      or action[len('remove directory '):] in removed]
    if verify:
        try:
            verify()
        except GpuOpsError as exc:
            raise type(exc)('%s; %s' % (exc, _roll_back(module, plan, order, modes, temp_dir, backups)))
    return out


def _roll_back(module, plan, order, modes, temp_dir, backups):
    """Give every file this run changed (the undo record first among them) its old bytes back; says how that went.

    A run that fails half way must leave the node as it found it: no record of a change that did not happen, and no
    backup of a file it did not change. A file counts as changed when it is no longer as gather() read it, also when
    the step that changed it failed after its rename (a directory fsync).
    """
    problems = []
    restored = []
    for name in reversed(order):
        before = plan.current.get(name)
        try:
            if files.read_bytes(name, MAX_CONFIG_BYTES) == before:
                continue
            if before is None:
                files.remove(module, name)
            else:
                files.write_atomic(module, name, before, mode=modes.get(name), temp_dir=temp_dir)
            restored.append(name)
        except files.FileError as exc:
            problems.append(str(exc))
    for directory in reversed(plan.create_directories):
        try:
            files.remove_empty_directory(directory)
        except files.FileError as exc:
            problems.append(str(exc))
    for backup_file in backups:
        try:
            files.remove(module, backup_file)
        except files.FileError as exc:
            problems.append(str(exc))
    if problems:
        return 'undoing what this run wrote failed too: %s' % '; '.join(problems)
    return 'nothing was changed' if not restored else 'what this run wrote was undone (%s)' % ', '.join(reversed(restored))


# A fresh node has no tomlkit until the container toolkit stage installs python3-tomlkit, which check mode does not do.
NO_TOMLKIT_PREVIEW = ('check mode: the preview of %s needs tomlkit on the node, and python3-tomlkit is not installed there yet '
                      '(the run installs it before it configures the runtime): what the run would change in it is not shown')


# state=absent on a node without tomlkit and without an undo record: uninstall installs no package to read the config.
NO_TOMLKIT_NOTHING_RECORDED = ('%s: there is no undo record (%s), so state=absent has nothing of this module to undo there; '
                               'tomlkit is not installed, so the file was not read (runtimes someone else configured in it stay)')


def without_tomlkit(module, path, state_file, keys, import_error):
    """A node without tomlkit. state=absent (the role installs python3-tomlkit for state=present only): without an undo
    record of `path` (`state_file`) there is nothing to undo and nothing is read; with one, check mode and the run fail
    naming the library and the record. state=present: check mode skips the preview of `path` and says why (a skip, not a
    failure: the run installs tomlkit first); a run fails naming the library. `keys` are the module's other RETURN keys,
    null here."""
    if module.params['state'] == 'absent':
        if os.path.lexists(state_file):
            module.fail_json(msg=missing_required_lib('tomlkit', reason='to undo what the undo record %s names in %s (the run that '
                                                      'wrote it had tomlkit: install python3-tomlkit again, then run again)' % (
                                                          state_file, path)), exception=import_error)
        note = NO_TOMLKIT_NOTHING_RECORDED % (path, state_file)
        result = dict.fromkeys(keys)
        result.update(changed=False, path=path, actions=[], runtimes=[], notes=[note])
        module.exit_json(**result)
    if module.check_mode:
        result = dict.fromkeys(keys)
        result.update(changed=False, skipped=True, msg=NO_TOMLKIT_PREVIEW % path, path=path, actions=[], notes=[NO_TOMLKIT_PREVIEW % path])
        module.exit_json(**result)
    module.fail_json(msg=missing_required_lib('tomlkit'), exception=import_error)
