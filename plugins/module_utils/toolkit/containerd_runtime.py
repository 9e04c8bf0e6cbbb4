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
import stat

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
    the config imports (and those its undo record names), files' modes, and which directories exist. Tests hand plan()
    a stand-in holding a node's files instead."""

    def __init__(self, module):
        self.module = module
        self._version = []

    def default_config(self):
        """`containerd config default` output, or None when containerd is not installed."""
        return containerd_cli.default_config(self.module, self.module.params['containerd'])

    def containerd_version(self):
        """(major, minor) of the installed containerd, or None; asked once."""
        if not self._version:
            self._version.append(containerd_cli.version(self.module, self.module.params['containerd']))
        return self._version[0]

    def read(self, path):
        return files.read_bytes(path, rc.MAX_CONFIG_BYTES)

    def mode(self, path):
        """The permission bits of an existing file."""
        return stat.S_IMODE(os.stat(path).st_mode)

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
    only when the config is missing or empty, for the files the undo record
    names that `current` lacks, for the files the config imports, and for
    containerd's version only where it matters (imports, a drop-in, a version 1
    config, enable_cdi).
    """
    check_options(params)
    path = params['path']
    _check_drop_in(path, params.get('drop_in'))
    if params.get('generated'):
        _check_generated(params, current)
    state = rc.load_state(current.get(state_path(path)), state_path(path))
    if state is not None and state['path'] == path:
        # absent follows the record: the drop-in it names is undone whatever the drop_in option says.
        current = dict(current, **dict((name, node.read(name)) for name in state['files'] if name not in current))
    result = Plan(current)
    result.result['notes'] = []
    if params['state'] == 'present':
        _plan_present(params, result, state, node)
        drop_in = params.get('drop_in')
    else:
        drop_in = _plan_absent(params, result, state, node)
    if params.get('generated') and params['state'] == 'present':
        _keep_generated(params, result)
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
    """A drop-in must be a file of its own that containerd can find; a symlink to the config is the config."""
    if not drop_in:
        return
    if not os.path.isabs(drop_in):
        raise rc.ConfigError('drop_in: %s is not an absolute path; containerd would look for it relative to %s' % (drop_in, os.path.dirname(path)))
    same = os.path.realpath(drop_in)
    if same in (os.path.realpath(path), os.path.realpath(state_path(path))):
        raise rc.ConfigError('drop_in: %s is %s itself; a drop-in is a file of its own that %s imports' % (
            drop_in, 'the config' if same == os.path.realpath(path) else 'the undo record of the config', path))


GENERATED = ('%s is written by the distribution at each start (generated), so it is not edited: an edit would be gone at '
             'the next start. ')


def _check_generated(params, current):
    """A generated config is read, never written: the runtimes go into the drop-in it imports."""
    path = params['path']
    if current.get(path) is None:
        raise rc.ConfigError(GENERATED % path + 'It does not exist yet: start the distribution once, then run again')
    if not params.get('drop_in'):
        raise rc.ConfigError(GENERATED % path + 'This release imports no drop-in directory of its own for a config of this version: '
                             'nothing was written')


def _keep_generated(params, result):
    """Fail where a present run would edit the generated config (absent never does: present added no import to it)."""
    path = params['path']
    if result.desired[path] != result.current[path]:
        raise rc.ConfigError(GENERATED % path + 'It does not import %s (this release has no drop-in directory there): nothing '
                             'was written' % params['drop_in'])


def _check_containerd(params, source, version, node):
    """Fail, before anything is written, where the installed containerd would not do what this run configures."""
    if version == 1:
        found = node.containerd_version()
        if found and found[0] >= 2:
            # Observed with Debian's 2.1.9 (the sid lab image): `config dump` warns "Ignoring unknown key" for each of a
            # version 1 config's plugins.cri.containerd tables and shows no runtime of them.
            raise rc.ConfigError('%s is a version 1 config (%s): containerd %d.%d ignores its plugins.cri tables (it reads the '
                                 'runtimes from version 2 and 3 tables only), so the NVIDIA runtime would not exist. Nothing was '
                                 'written: migrate the config (containerd config migrate prints it as version 3) and run again' % (
                                     params['path'], 'it has no version key' if 'version' not in source else 'version = 1',
                                     found[0], found[1]))
    if params['enable_cdi']:
        found = node.containerd_version()
        if found and found < cc.ENABLE_CDI_SINCE:
            raise rc.ConfigError('enable_cdi: containerd %d.%d ignores enable_cdi (CDI came in containerd %d.%d), so containers '
                                 'would get no CDI devices. Nothing was written: upgrade containerd, or set enable_cdi false '
                                 '(ClusterPolicy cdi.enabled)' % (found + cc.ENABLE_CDI_SINCE))


def _check_same_drop_in(params, state):
    """A run may not move the runtimes to another drop-in than the one its record names: the old one would stay."""
    if state is None or state['path'] != params['path'] or state['drop_in'] == params.get('drop_in'):
        return
    recorded = 'names the drop-in %s' % state['drop_in'] if state['drop_in'] else 'says the runtimes are in %s itself' % params['path']
    raise rc.ConfigError('drop_in: the undo record %s %s, and this run asks for %s. Nothing was written: run state=absent first '
                         '(it undoes what the record names), then state=present with the new drop_in' % (
                             state_path(params['path']), recorded, params.get('drop_in') or 'none'))


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
    _check_same_drop_in(params, state)
    entries = runtime_entries(params['runtime_name'], params['runtime_binary'], params['variants'])
    names = [name for name, _binary in entries]
    file_text = rc.text(result.current[path], path)
    source, from_command = _source_doc(params, file_text, node)
    version = cc.detect_version(source)
    _check_containerd(params, source, version, node)
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
    found = rc.found_before(lambda name: cc.get_table(target, cc.runtimes_keys(version) + (name,)) is not None, names, state)
    ours = set(names) | set(previous_names)
    stale = [name for name in rc.ours(state) if name not in names] if state else []
    if drop_in:
        cc.ensure_version(target, version)
        if version == 2:
            _copy_cri_table(params, file_doc, target, (source, None if from_command else path), version, result, node)
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

    new_state = _next_state(params, state, result, facts, names, import_added, version_added, found)
    result.desired[state_path(path)] = rc.dump_state(new_state) if new_state else result.current.get(state_path(path))
    if new_state is None and found:
        result.result['notes'].append(rc.found_note(drop_in or path, found))
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


def _copy_cri_table(params, file_doc, target, source, version, result, node):
    """Give a new version 2 drop-in the CRI table containerd 1.x would use without it, where containerd may be 1.x.

    containerd 1.x keeps only the last CRI table it loads, so the drop-in must carry the rest of it (SystemdCgroup, the
    registry settings and their credentials); 2.x merges key by key and needs none of it. The copy may hold secrets:
    the drop-in gets the mode of the file it comes from. `source` is (document, its file or None).
    """
    found = node.containerd_version()
    if found and found[0] >= 2:
        return
    if params.get('generated'):
        raise rc.ConfigError(GENERATED % params['path'] + 'containerd %s puts a drop-in\'s CRI table in place of the generated one '
                             'whole, and a copy of it in %s would not follow what the distribution writes at its next start '
                             '(an upgrade): nothing was written' % ('%d.%d' % found if found else '1.x (or unknown)', params['drop_in']))
    base, base_path = _cri_base(params, file_doc, target, source, version, result, node)
    if cc.copy_cri_section(base, target, version) and base_path is not None:
        result.modes[params['drop_in']] = node.mode(base_path)


def _cri_base(params, file_doc, target, source, version, result, node):
    """(document, its file) whose CRI table a new version 2 drop-in starts from: the last file containerd loads before
    the drop-in that has one (an import of the config, such as a conf.d file), else `source` (the config, or
    containerd's defaults: no file)."""
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
    if base is None or base is with_import:
        return source
    return base, next(name for name, doc, _importer in order if doc is base)


def _check_takes_effect(params, result, top, version, entries, node):
    """Fail, before anything is written, when a file the config imports would override what this run registers."""
    if not cc.imports_list(top):
        return
    order, missing = containerd_imports.load_order(params['path'], top, *_reader(result, node))
    installed = None if version >= 3 else node.containerd_version()
    rules = containerd_imports.rules_for(version, installed[0] if installed else None)
    ours = os.path.normpath(os.path.abspath(params.get('drop_in') or params['path']))
    found = containerd_imports.problems(order, missing, version, rules, entries, params['set_as_default'], ours)
    if found:
        raise rc.ConfigError('the NVIDIA runtime would not take effect: %s. Nothing was written: remove or change that setting, '
                             'or register the runtime in a drop_in that containerd loads after it' % '; '.join(found))


def _next_state(params, state, result, facts, names, import_added, version_added, found):
    """The undo record after this run; None when there is nothing of ours to undo."""
    path, drop_in = params['path'], params.get('drop_in')
    first = dict(previous_default=facts['previous_default'], previous_enable_cdi=facts['previous_enable_cdi'],
                 enable_cdi_set=False, import_added=False, version_added=False)
    state = rc.next_state(state, path, first, names, [name for name in (path, drop_in) if name], result.current, result.desired, found)
    if state is None:
        return None
    state['drop_in'] = drop_in
    state['created_directories'] = state.get('created_directories', []) + [
        directory for directory in result.create_directories if directory not in state.get('created_directories', [])]
    state['enable_cdi_set'] = state['enable_cdi_set'] or (params['enable_cdi'] and facts['previous_enable_cdi'] is not True)
    state['import_added'] = state['import_added'] or import_added
    state['version_added'] = state['version_added'] or version_added
    return state


def _plan_absent(params, result, state, node):
    """Undo what the undo record names (its drop-in, whatever the drop_in option says); without a record of this config,
    change nothing. Returns the drop-in whose default counts (the record's, else the option's)."""
    path = params['path']
    if state is None or state['path'] != path:
        _note_not_recorded(params, result, state)
        result.result.update(runtimes=[], previous_default_runtime=None)
        return params.get('drop_in')
    drop_in = state['drop_in']
    if params.get('drop_in') and params['drop_in'] != drop_in:
        result.result['notes'].append('the undo record %s names %s, not drop_in %s: that is what is undone' % (
            state_path(path), 'the drop-in %s' % drop_in if drop_in else 'no drop-in', params['drop_in']))
    result.desired[state_path(path)] = None
    rc.restore_files(result, state, lambda name: _undo_structurally(params, result, name, state))
    # Innermost first, and only the drop-in's own: each when nothing but what this run removes is in it (files
    # someone put there since keep it).
    _read, listdir = _reader(result, node)
    for directory in reversed(state.get('created_directories', [])):
        left = [entry for entry in listdir(directory) if os.path.join(directory, entry) not in result.remove_directories]
        if drop_in and drop_in.startswith(directory.rstrip('/') + '/') and not left:
            result.remove_directories.append(directory)
    result.result.update(runtimes=rc.ours(state), previous_default_runtime=state['previous_default'])
    return drop_in


def _note_not_recorded(params, result, state):
    """Say what absent leaves for want of a record: the runtimes (and a default naming one) in the config and drop-in."""
    names = all_runtime_names(params['runtime_name'])
    there = []
    for name in (params['path'], params.get('drop_in')):
        if name and result.current.get(name) is not None:
            doc = cc.parse(rc.text(result.current[name], name), name)
            there += ['%s in %s' % (what, name) for what in cc.Dialect(cc.detect_version(doc)).configured(doc, names)]
    if there:
        result.result['notes'].append(rc.not_recorded_note(params['path'], state_path(params['path']), there, state))


def _undo_structurally(params, result, name, state):
    """Remove what we added from a file that changed since we wrote it."""
    current = result.current.get(name)
    if current is None:
        return
    drop_in = state['drop_in']
    if name == drop_in and not state['files'][name]['existed']:
        result.desired[name] = None  # the drop-in is ours: we created it
        return
    doc = cc.parse(rc.text(current, name), name)
    version = cc.detect_version(doc)
    if name == drop_in or not drop_in:
        cc.apply_absent(doc, version, rc.ours(state), state)
    if drop_in and name == params['path'] and state['import_added']:
        cc.remove_import(doc, drop_in)
    if state['version_added']:
        cc.drop_lone_version(doc)
    result.desired[name] = rc.to_bytes(cc.dumps(doc))


class NotLoadedError(rc.ConfigError):
    """containerd's own reading of the config does not show the runtimes as registered."""


def dump_problems(dump, entries, enable_cdi=False, set_as_default=False):
    """What `containerd config dump` output shows wrong for the runtimes `entries` ([(name, binary)]) and, with
    `enable_cdi`, the CDI switch, with `set_as_default` the default runtime: a runtime missing, one whose BinaryName is
    another, enable_cdi not true (containerd before 1.7 drops it), another default; [] when containerd reads everything
    as written. Pure."""
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
    if enable_cdi and cc.get_enable_cdi(doc, version) is not True:
        problems.append('enable_cdi is not true (containerd before %d.%d ignores it)' % cc.ENABLE_CDI_SINCE)
    default = cc.default_runtime(doc, version)
    if set_as_default and default != entries[0][0]:
        problems.append('the default runtime is %s, not %s' % (default or 'unset (runc)', entries[0][0]))
    return problems


def execute(module, result):
    """Write what plan() decided; nothing in check mode. Returns the module's result dict.

    With `verify`, containerd then reads the config as it will at its next start (`containerd config dump`, the
    contract): the run fails, giving back what it wrote, unless it shows every runtime with its binary (and enable_cdi
    when asked for). In check mode a config that would change is not on disk yet: it is not verified (`verified`
    false).
    """
    params = module.params
    verified = []

    config = params.get('verify_path') or params['path']

    def verify():
        dump = containerd_cli.config_dump(module, config, params['containerd'])
        if dump is None:
            raise NotLoadedError('cannot verify %s: containerd is not installed (no %s)' % (config, params['containerd']))
        problems = dump_problems(dump, runtime_entries(params['runtime_name'], params['runtime_binary'], params['variants']),
                                 params['enable_cdi'], params['set_as_default'])
        if problems:
            raise NotLoadedError('%s --config %s config dump does not show the NVIDIA runtimes as written: %s' % (
                params['containerd'], config, '; '.join(problems)))
        verified.append(True)
    out = rc.execute(module, result, params['path'], state_path(params['path']),
                     verify=verify if params['verify'] and params['state'] == 'present' else None)
    out['verified'] = bool(verified)
    return out


def gather(module):
    """Current bytes of every file the module may touch."""
    path = module.params['path']
    return rc.gather([path, module.params.get('drop_in'), state_path(path)])
