# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Plan, then act, for the containerd_nvidia_runtime module.

plan() is pure: it takes the current bytes of every file involved (config,
drop-in, state file) and returns the bytes each should have, the state to keep
and the values to return. execute() does the I/O. Undo information lives on the
node in a JSON state file next to the config (see state_path), so
present -> absent restores the original bytes whoever runs the playbook.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils import containerd_config as cc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.nvidia_runtime_options import all_runtime_names, runtime_entries

STATE_SUFFIX = '.gpuops-nvidia-runtime.json'
STATE_FORMAT = 1
STATE_MODE = 0o600  # it may hold a copy of the config, which can carry registry credentials


def state_path(path):
    return path + STATE_SUFFIX


def _text(data, label):
    if data is None:
        return ''
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise cc.ConfigError('%s: not UTF-8 at byte %d' % (label, exc.start))


def _bytes(text):
    return text.encode('utf-8')


def _load_state(data, label):
    if data is None:
        return None
    try:
        state = json.loads(data.decode('utf-8'))
    except ValueError as exc:
        raise cc.ConfigError('%s: unreadable state file: %s' % (label, exc))
    if not isinstance(state, dict) or state.get('format') != STATE_FORMAT:
        raise cc.ConfigError('%s: unknown state file format; remove it to start over' % label)
    return state


def _dump_state(state):
    return _bytes(json.dumps(state, indent=2, sort_keys=True) + '\n')


def _intact(state, current):
    """True when every file we wrote still has the bytes we wrote."""
    for name, record in state['files'].items():
        data = current.get(name)
        if data is None or files.sha256(data) != record['written_sha256']:
            return False
    return True


class Plan(object):
    """Desired bytes per file (None: remove), plus the values the module returns."""

    def __init__(self, current):
        self.current = current
        self.desired = dict(current)
        self.result = {}

    def changes(self):
        return [name for name in sorted(self.desired) if self.desired[name] != self.current.get(name)]

    def actions(self):
        return ['%s %s' % ('remove' if self.desired[name] is None else 'write', name) for name in self.changes()]


def plan(params, current, load_default_config):
    """Compute the end state.

    `current` maps every path involved (config, drop-in, state file) to its
    bytes or None; `load_default_config` returns `containerd config default`
    output or None and is only called when the config is missing or empty.
    """
    path = params['path']
    drop_in = params.get('drop_in')
    result = Plan(current)
    state = _load_state(current.get(state_path(path)), state_path(path))
    if params['state'] == 'present':
        _plan_present(params, result, state, load_default_config)
    else:
        _plan_absent(params, result, state)
    doc = cc.parse(_text(result.desired[path], path), path) if result.desired[path] is not None else cc.parse('')
    version = cc.detect_version(doc)
    effective_default = cc.default_runtime(doc, version)
    if drop_in and result.desired.get(drop_in) is not None:
        effective_default = cc.default_runtime(cc.parse(_text(result.desired[drop_in], drop_in), drop_in), version) or effective_default
    result.result.update(
        path=path,
        drop_in=drop_in,
        config_version=version,
        cri_table=cc.dotted(cc.cri_keys(version)),
        default_runtime=effective_default,
    )
    return result


def _source_doc(params, text, load_default_config):
    """The document runtimes inherit from, and whether it came from containerd itself."""
    if text.strip() or params['config_source'] == 'file':
        return cc.parse(text, params['path']), False
    default_text = load_default_config()
    if default_text is None:
        if params['config_source'] == 'command':
            raise cc.ConfigError('config_source=command but containerd is not installed, so `containerd config default` cannot run')
        return cc.parse('', params['path']), False
    return cc.parse(default_text, 'containerd config default'), True


def _usable_state(state, current, path, managed_docs, version):
    """Keep a state whose files are intact; keep only its facts when our runtimes are still there.

    A config rewritten by someone else since our last run either still holds
    our runtimes (then the recorded originals no longer describe the file and
    absent has to undo structurally) or does not (then the state is stale).
    """
    if state is None or state.get('path') != path:
        return None
    if _intact(state, current):
        return state
    still_ours = any(cc.get_table(doc, cc.runtimes_keys(version) + (name,)) is not None
                     for doc in managed_docs for name in state['runtimes'])
    if not still_ours:
        return None
    for record in state['files'].values():
        record['original'] = None
    return state


def _plan_present(params, result, state, load_default_config):
    path, drop_in = params['path'], params.get('drop_in')
    entries = runtime_entries(params['runtime_name'], params['runtime_binary'], params['variants'])
    names = [name for name, _binary in entries]
    file_text = _text(result.current[path], path)
    source, from_command = _source_doc(params, file_text, load_default_config)
    version = cc.detect_version(source)
    file_doc = cc.parse(file_text, path) if drop_in else source
    if drop_in:
        if version == 1:
            raise cc.ConfigError('drop_in needs a config of version 2 or later; %s is version 1' % path)
        target = cc.parse(_text(result.current.get(drop_in), drop_in), drop_in)
        docs = [target]
    else:
        target = source
        docs = [source]
    state = _usable_state(state, result.current, path, docs, version)
    previous_names = state['runtimes'] if state else []
    ours = set(names) | set(previous_names)
    stale = [name for name in previous_names if name not in names]
    if drop_in:
        cc.ensure_version(target, version)
        if version == 2:
            cc.copy_cri_section(source, target, version)
        facts = cc.apply_present(target, version, entries, params['set_as_default'], params['enable_cdi'], ours,
                                 sources=[target, source], stale=stale)
        import_added, version_added = cc.add_import(file_doc, drop_in, version)
        result.desired[drop_in] = _bytes(cc.dumps(target))
    else:
        facts = cc.apply_present(target, version, entries, params['set_as_default'], params['enable_cdi'], ours, stale=stale)
        import_added = False
        version_added = facts['version_added']
    if from_command and not drop_in:
        result.desired[path] = _bytes(cc.dumps(target))
    else:
        result.desired[path] = _bytes(cc.dumps(file_doc))

    touched = [name for name in (path, drop_in) if name and result.desired[name] != result.current.get(name)]
    new_state = _next_state(params, state, result, facts, names, import_added, version_added, touched)
    result.desired[state_path(path)] = _dump_state(new_state) if new_state else result.current.get(state_path(path))
    result.result.update(
        runtimes=names,
        previous_default_runtime=new_state['previous_default'] if new_state else facts['previous_default'],
        inherited_from=facts['inherited_from'],
    )


def _next_state(params, state, result, facts, names, import_added, version_added, touched):
    """The undo record after this run; None when there is nothing of ours to undo."""
    if state is None and not touched:
        # Nothing changed and nothing recorded: the runtime was configured by
        # someone else, so absent must not treat the current bytes as the original.
        return None
    path, drop_in = params['path'], params.get('drop_in')
    if state is None:
        state = {
            'format': STATE_FORMAT,
            'path': path,
            'files': {},
            'previous_default': facts['previous_default'],
            'previous_enable_cdi': facts['previous_enable_cdi'],
            'enable_cdi_set': False,
            'import_added': False,
            'version_added': False,
        }
    else:
        state = json.loads(json.dumps(state))
    state['runtimes'] = names
    state['drop_in'] = drop_in
    state['enable_cdi_set'] = state['enable_cdi_set'] or (params['enable_cdi'] and facts['previous_enable_cdi'] is not True)
    state['import_added'] = state['import_added'] or import_added
    state['version_added'] = state['version_added'] or version_added
    for name in (path, drop_in):
        if not name:
            continue
        record = state['files'].get(name)
        if record is None:
            before = result.current.get(name)
            record = {'existed': before is not None, 'original': _text(before, name) if before is not None else None}
            state['files'][name] = record
        record['written_sha256'] = files.sha256(result.desired[name])
    return state


def _plan_absent(params, result, state):
    path = params['path']
    result.desired[state_path(path)] = None
    if state is not None and state.get('path') == path:
        names = state['runtimes']
        previous_default = state['previous_default']
        for name, record in state['files'].items():
            current = result.current.get(name)
            intact = current is not None and files.sha256(current) == record['written_sha256']
            if intact and not record['existed']:
                result.desired[name] = None
            elif intact and record['original'] is not None:
                result.desired[name] = _bytes(record['original'])
            else:
                _undo_structurally(params, result, name, state)
    else:
        # No record: undo what can be recognised as ours, as nvidia-ctk does.
        names = all_runtime_names(params['runtime_name'])
        previous_default = None
        state = {'runtimes': names, 'drop_in': params.get('drop_in'), 'previous_default': None, 'previous_enable_cdi': None,
                 'enable_cdi_set': False, 'import_added': True, 'version_added': False, 'files': {}, 'structural_only': True}
        for name in (path, params.get('drop_in')):
            if name and result.current.get(name) is not None:
                _undo_structurally(params, result, name, state)
    result.result.update(runtimes=names, previous_default_runtime=previous_default)


def _undo_structurally(params, result, name, state):
    """Remove what we added from a file that changed since we wrote it (or has no record)."""
    current = result.current.get(name)
    if current is None:
        return
    drop_in = state.get('drop_in')
    if name == drop_in and not state['files'].get(name, {}).get('existed', False):
        # The drop-in is ours: we created it, or the caller named it as ours.
        result.desired[name] = None
        return
    doc = cc.parse(_text(current, name), name)
    version = cc.detect_version(doc)
    if name == drop_in or not drop_in:
        cc.apply_absent(doc, version, state['runtimes'],
                        previous_default=state['previous_default'], restore_default=not state.get('structural_only'),
                        previous_enable_cdi=state['previous_enable_cdi'], restore_enable_cdi=state['enable_cdi_set'])
    if drop_in and name == params['path'] and state['import_added']:
        cc.remove_import(doc, drop_in)
    if state['version_added']:
        cc.drop_lone_version(doc)
    result.desired[name] = _bytes(cc.dumps(doc))


def execute(module, result):
    """Write what plan() decided; nothing in check mode. Returns the module's result dict."""
    params = module.params
    changes = result.changes()
    out = dict(result.result)
    out.update(changed=bool(changes), actions=result.actions(), backup_file=None)
    if module._diff:
        out['diff'] = [files.diff_entry(name, result.current.get(name), result.desired[name])
                       for name in changes if not name.endswith(STATE_SUFFIX)]
    if module.check_mode or not changes:
        return out
    for name in changes:
        data = result.desired[name]
        is_state = name.endswith(STATE_SUFFIX)
        backup = params['backup'] and not is_state
        if data is None:
            backup_file = files.remove(module, name, backup=backup)
        else:
            backup_file = files.write_atomic(module, name, data, backup=backup, mode=STATE_MODE if is_state else None)
        if name == params['path'] and backup_file:
            out['backup_file'] = backup_file
    return out


def gather(module):
    """Current bytes of every file the module may touch."""
    path, drop_in = module.params['path'], module.params.get('drop_in')
    current = {}
    for name in (path, drop_in, state_path(path)):
        if name:
            current[name] = files.read_bytes(name)
    return current
