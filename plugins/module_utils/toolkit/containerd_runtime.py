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

import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_cli
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_config as cc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_imports
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config as rc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import all_runtime_names, check_options, runtime_entries
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_config import Plan, state_path
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.toml_doc import get_table, parse


class NodeFiles(object):
    """What plan() reads from the node besides the files gather() read: containerd's defaults and version, the files
    the config imports, and which directories exist. Tests hand plan() a stand-in holding a node's files instead."""

    def __init__(self, module):
        self.module = module

    def default_config(self):
        """`containerd config default` output, or None when containerd is not installed."""
        return containerd_cli.default_config(self.module)

    def containerd_major(self):
        """The installed containerd's major version, or None."""
        found = containerd_cli.version(self.module)
        return found[0] if found else None

    def read(self, path):
        return files.read_bytes(path, rc.MAX_CONFIG_BYTES)

    def listdir(self, directory):
        try:
            return os.listdir(directory)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise files.FileError('cannot list %s: %s' % (directory, exc.strerror))

    def missing_directories(self, path):
        return files.missing_directories(path)


def plan(params, current, node):
    """Compute the end state.

    `current` maps every path involved (config, drop-in, state file) to its
    bytes or None; `node` (NodeFiles) is asked for `containerd config default`
    only when the config is missing or empty, for the files the config imports
    and containerd's version only when it imports any.
    """
    check_options(params)
    path = params['path']
    drop_in = params.get('drop_in')
    _check_drop_in(path, drop_in)
    result = Plan(current)
    state = rc.load_state(current.get(state_path(path)), state_path(path))
    if params['state'] == 'present':
        _plan_present(params, result, state, node)
    else:
        _plan_absent(params, result, state)
    doc = cc.parse(rc.text(result.desired[path], path), path) if result.desired[path] is not None else cc.parse('')
    version = cc.detect_version(doc)
    effective_default = cc.default_runtime(doc, version)
    if drop_in and result.desired.get(drop_in) is not None:
        effective_default = cc.default_runtime(cc.parse(rc.text(result.desired[drop_in], drop_in), drop_in), version) or effective_default
    result.result.update(
        path=path,
        drop_in=drop_in,
        config_version=version,
        cri_table=cc.dotted(cc.cri_keys(version)),
        default_runtime=effective_default,
    )
    return result


def _check_drop_in(path, drop_in):
    """A drop-in must be a file of its own that containerd can find."""
    if not drop_in:
        return
    if not os.path.isabs(drop_in):
        raise rc.ConfigError('drop_in: %s is not an absolute path; containerd would look for it relative to %s' % (drop_in, os.path.dirname(path)))
    same = os.path.normpath(drop_in)
    if same in (os.path.normpath(os.path.abspath(path)), os.path.normpath(os.path.abspath(state_path(path)))):
        raise rc.ConfigError('drop_in: %s is %s itself; a drop-in is a file of its own that %s imports' % (
            drop_in, 'the config' if same == os.path.normpath(os.path.abspath(path)) else 'the undo record of the config', path))


def _source_doc(params, text, node):
    """The document runtimes inherit from, and whether it came from containerd itself."""
    if text.strip() or params['config_source'] == 'file':
        return cc.parse(text, params['path']), False
    default_text = node.default_config()
    if default_text is None:
        if params['config_source'] == 'command':
            raise rc.ConfigError('config_source=command but containerd is not installed, so `containerd config default` cannot run')
        return cc.parse('', params['path']), False
    return cc.parse(default_text, 'containerd config default'), True


def _plan_present(params, result, state, node):
    path, drop_in = params['path'], params.get('drop_in')
    entries = runtime_entries(params['runtime_name'], params['runtime_binary'], params['variants'])
    names = [name for name, _binary in entries]
    file_text = rc.text(result.current[path], path)
    source, from_command = _source_doc(params, file_text, node)
    version = cc.detect_version(source)
    file_doc = cc.parse(file_text, path) if drop_in else source
    if drop_in:
        if version == 1:
            raise rc.ConfigError('drop_in needs a config of version 2 or later; %s is version 1' % path)
        target = cc.parse(rc.text(result.current.get(drop_in), drop_in), drop_in)
        docs = [target]
    else:
        target = source
        docs = [source]
    state = rc.usable_state(state, result.current, path,
                            lambda recorded: any(cc.get_table(doc, cc.runtimes_keys(version) + (name,)) is not None
                                                 for doc in docs for name in recorded))
    previous_names = state['runtimes'] if state else []
    ours = set(names) | set(previous_names)
    stale = [name for name in previous_names if name not in names]
    if drop_in:
        cc.ensure_version(target, version)
        if version == 2:
            # containerd 1.x keeps only the last CRI table it loads: the drop-in carries on the one it would use without it.
            cc.copy_cri_section(_cri_base(params, file_doc, target, source, version, result, node), target, version)
        facts = cc.apply_present(target, version, entries, params['set_as_default'], params['enable_cdi'], ours,
                                 sources=[target, source], stale=stale, recorded=previous_names)
        import_added, version_added = cc.add_import(file_doc, drop_in, version)
        result.desired[drop_in] = rc.to_bytes(cc.dumps(target))
        # As nvidia-ctk's --drop-in-config does, a missing directory is created (and recorded, so absent removes it).
        result.create_directories = node.missing_directories(drop_in) if result.current.get(drop_in) is None else []
    else:
        facts = cc.apply_present(target, version, entries, params['set_as_default'], params['enable_cdi'], ours, stale=stale,
                                 recorded=previous_names)
        import_added = False
        version_added = facts['version_added']
    if from_command and not drop_in:
        result.desired[path] = rc.to_bytes(cc.dumps(target))
    else:
        result.desired[path] = rc.to_bytes(cc.dumps(file_doc))
    _check_takes_effect(params, result, target if from_command and not drop_in else file_doc, version, entries, node)

    new_state = _next_state(params, state, result, facts, names, import_added, version_added)
    result.desired[state_path(path)] = rc.dump_state(new_state) if new_state else result.current.get(state_path(path))
    result.result.update(
        runtimes=names,
        previous_default_runtime=new_state['previous_default'] if new_state else facts['previous_default'],
        inherited_from=facts['inherited_from'],
    )


def _reader(result, node):
    """(read_doc, listdir) of the node's files as they will be after this run: a file the plan writes or removes as
    planned, any other as it is on the node."""
    def read_doc(name):
        data = result.desired[name] if name in result.desired else node.read(name)
        return None if data is None else cc.parse(rc.text(data, name), name)

    def listdir(directory):
        planned = dict((os.path.basename(name), data) for name, data in result.desired.items() if os.path.dirname(name) == directory)
        return sorted(set(node.listdir(directory) + [name for name, data in planned.items() if data is not None])
                      - set(name for name, data in planned.items() if data is None))
    return read_doc, listdir


def _cri_base(params, file_doc, target, source, version, result, node):
    """The document whose CRI table a new version 2 drop-in starts from: the last file containerd loads before the
    drop-in that has one (an import of the config, such as a conf.d file), else the config (or containerd's defaults)."""
    drop_in = params['drop_in']
    if not cc.imports_list(file_doc):
        return source
    with_import = cc.parse(cc.dumps(file_doc), params['path'])
    cc.add_import(with_import, drop_in, version)
    read_doc, listdir = _reader(result, node)
    order, _missing = containerd_imports.load_order(params['path'], with_import, lambda name: target if name == drop_in else read_doc(name),
                                                    lambda directory: sorted(set(listdir(directory) + (
                                                        [os.path.basename(drop_in)] if directory == os.path.dirname(drop_in) else []))))
    base = containerd_imports.base_before(order, drop_in, version)
    return source if base is None or base is with_import else base


def _check_takes_effect(params, result, top, version, entries, node):
    """Fail, before anything is written, when a file the config imports would override what this run registers."""
    if not cc.imports_list(top):
        return
    order, missing = containerd_imports.load_order(params['path'], top, *_reader(result, node))
    rules = containerd_imports.rules_for(version, None if version >= 3 else node.containerd_major())
    ours = os.path.normpath(os.path.abspath(params.get('drop_in') or params['path']))
    found = containerd_imports.problems(order, missing, version, rules, entries, params['set_as_default'], ours)
    if found:
        raise rc.ConfigError('the NVIDIA runtime would not take effect: %s. Nothing was written: remove or change that setting, '
                             'or register the runtime in a drop_in that containerd loads after it' % '; '.join(found))


def _next_state(params, state, result, facts, names, import_added, version_added):
    """The undo record after this run; None when there is nothing of ours to undo."""
    path, drop_in = params['path'], params.get('drop_in')
    first = dict(previous_default=facts['previous_default'], previous_enable_cdi=facts['previous_enable_cdi'],
                 enable_cdi_set=False, import_added=False, version_added=False)
    state = rc.next_state(state, path, first, names, [name for name in (path, drop_in) if name], result.current, result.desired)
    if state is None:
        return None
    state['drop_in'] = drop_in
    state['created_directories'] = state.get('created_directories', []) + [
        directory for directory in result.create_directories if directory not in state.get('created_directories', [])]
    state['enable_cdi_set'] = state['enable_cdi_set'] or (params['enable_cdi'] and facts['previous_enable_cdi'] is not True)
    state['import_added'] = state['import_added'] or import_added
    state['version_added'] = state['version_added'] or version_added
    return state


def _plan_absent(params, result, state):
    path = params['path']
    result.desired[state_path(path)] = None
    if state is not None and state.get('path') == path:
        names = state['runtimes']
        previous_default = state['previous_default']
        rc.restore_files(result, state, lambda name: _undo_structurally(params, result, name, state))
        # Innermost first, each only when empty (files someone put there since keep it), and only the drop-in's own.
        result.remove_directories = [directory for directory in reversed(state.get('created_directories', []))
                                     if state['drop_in'] and state['drop_in'].startswith(directory.rstrip('/') + '/')]
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
    doc = cc.parse(rc.text(current, name), name)
    version = cc.detect_version(doc)
    if name == drop_in or not drop_in:
        cc.apply_absent(doc, version, state['runtimes'],
                        previous_default=state['previous_default'], restore_default=not state.get('structural_only'),
                        previous_enable_cdi=state['previous_enable_cdi'], restore_enable_cdi=state['enable_cdi_set'])
    if drop_in and name == params['path'] and state['import_added']:
        cc.remove_import(doc, drop_in)
    if state['version_added']:
        cc.drop_lone_version(doc)
    result.desired[name] = rc.to_bytes(cc.dumps(doc))


class NotLoadedError(rc.ConfigError):
    """containerd's own reading of the config does not show the runtimes as registered."""


def dump_problems(dump, entries):
    """What `containerd config dump` output shows wrong for the runtimes `entries` ([(name, binary)]): a runtime missing,
    or one whose BinaryName is another; [] when containerd reads every one as registered. Pure."""
    doc = parse(dump, 'containerd config dump')
    version = cc.detect_version(doc)
    problems = []
    for name, binary in entries:
        if get_table(doc, cc.runtimes_keys(version) + (name,)) is None:
            problems.append('no runtime %s' % name)
            continue
        found = cc.binary_name(doc, version, name)
        if found != binary:
            problems.append('runtime %s has BinaryName %s, not %s' % (name, found or '(unset: runc)', binary))
    return problems


def execute(module, result):
    """Write what plan() decided; nothing in check mode. Returns the module's result dict.

    With `verify`, containerd then reads the config as it will at its next start (`containerd config dump`, the
    contract): the run fails unless it shows every runtime with its binary. In check mode a config that would change
    is not on disk yet: it is not verified (`verified` false).
    """
    params = module.params
    out = rc.execute(module, result, params['path'], state_path(params['path']))
    out['verified'] = False
    if params['verify'] and params['state'] == 'present' and not (module.check_mode and out['changed']):
        dump = containerd_cli.config_dump(module, params['path'])
        if dump is None:
            raise NotLoadedError('cannot verify %s: containerd is not installed (no containerd in PATH)' % params['path'])
        problems = dump_problems(dump, runtime_entries(params['runtime_name'], params['runtime_binary'], params['variants']))
        if problems:
            raise NotLoadedError('containerd --config %s config dump does not show the NVIDIA runtimes as written: %s' % (
                params['path'], '; '.join(problems)))
        out['verified'] = True
    return out


def gather(module):
    """Current bytes of every file the module may touch."""
    path = module.params['path']
    return rc.gather([path, module.params.get('drop_in'), state_path(path)])
