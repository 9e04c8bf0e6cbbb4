# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Pure transformations of containerd config.toml documents (no I/O).

The rules follow nvidia-ctk so that a file we write means the same to containerd:
version detection, the CRI plugin table per config version, how a new runtime
inherits its options and how the default runtime is set and unset.
Every function works on tomlkit documents so comments, key order and quoting
of everything we do not touch survive.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import fnmatch

try:
    import tomlkit
    from tomlkit.items import Table, Whitespace
    from tomlkit.container import OutOfOrderTableProxy
except ImportError:  # the module reports the missing library via missing_required_lib
    tomlkit = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import NVIDIA_NAME_PREFIX
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.toml_doc import (
    add_table, delete, dotted, dumps, fresh, get_table, parse, prune_empty, set_value, sub_table, takes_headers)

DEFAULT_VERSION = 2
# Config versions containerd knows: 1 and 2 (containerd 1.x), 3 (containerd 2.x, which migrates 1 and 2).
KNOWN_VERSIONS = (1, 2, 3)
DEFAULT_RUNTIME_TYPE = 'io.containerd.runc.v2'
# The first containerd whose CRI plugin reads enable_cdi (and 1.6 drops it: its `config dump` of a config setting it
# shows none). SOURCE: containerd/containerd pkg/cri/config/config.go, PluginConfig.EnableCDI `toml:"enable_cdi"`:
# absent at v1.6.20 and v1.6.39, there at v1.7.0 (commit c9b4ccf83 "add configuration for CDI") and v1.7.24;
# tests/unit/fixtures/containerd/dump-enable-cdi-1.6.20.toml is 1.6.20's dump.
ENABLE_CDI_SINCE = (1, 7)
FALLBACK_RUNTIMES = ('runc', 'crun')


def detect_version(doc):
    """Empty document: version 2; content without `version`: 1; else the integer."""
    if len(doc) == 0:
        return DEFAULT_VERSION
    if 'version' not in doc:
        return 1
    version = doc['version']
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise runtime_config.error(doc, 'key "version" must be a positive integer, got %r' % (version,))
    if int(version) not in KNOWN_VERSIONS:
        raise runtime_config.error(doc, 'config version %d is unknown: containerd reads versions 1, 2 (containerd 1.x) and 3 '
                                        '(containerd 2.x)' % version)
    return int(version)


def cri_plugin_name(version):
    if version == 1:
        return 'cri'
    if version == 2:
        return 'io.containerd.grpc.v1.cri'
    return 'io.containerd.cri.v1.runtime'


def cri_keys(version):
    return ('plugins', cri_plugin_name(version))


def runtimes_keys(version):
    return cri_keys(version) + ('containerd', 'runtimes')


def default_runtime(doc, version):
    keys = cri_keys(version) + ('containerd',)
    table = get_table(doc, keys)
    if table is None:
        return None
    value = table.get('default_runtime_name')
    if value is not None and not isinstance(value, str):
        raise runtime_config.error(doc, 'key %s.default_runtime_name must be a string' % dotted(keys))
    return None if value is None else str(value)


def binary_name(doc, version, name):
    """options.BinaryName of runtime `name` (None when unset: containerd then runs runc); the runtime must exist."""
    keys = runtimes_keys(version) + (name,)
    options = sub_table(doc, get_table(doc, keys), keys, 'options')
    value = options.get('BinaryName') if options is not None else None
    if value is not None and not isinstance(value, str):
        raise runtime_config.error(doc, 'key %s.options.BinaryName must be a string' % dotted(keys))
    return None if value is None else str(value)


def is_ours(name, ours):
    # nvidia-ctk never inherits from a runtime named like NVIDIA's.
    return name in ours or name.startswith(NVIDIA_NAME_PREFIX)


def inherit_source(docs, version, ours):
    """Return (name, table, doc) of the runtime a new runtime copies its options from.

    The current default runtime (unless it is one of ours), else runc, else crun,
    looked up in `docs` in order; (None, None, None) when none exists.
    """
    candidates = []
    for doc in docs:
        name = default_runtime(doc, version)
        if name and not is_ours(name, ours):
            candidates.append(name)
            break
    candidates.extend(FALLBACK_RUNTIMES)
    keys = runtimes_keys(version)
    runtimes = [(doc, get_table(doc, keys)) for doc in docs]
    for name in candidates:
        for doc, table in runtimes:
            source = sub_table(doc, table, keys, name) if table is not None else None
            if source is not None:
                return name, source, doc
    return None, None, None


def _new_runtime_table(source):
    if source is None:
        table = tomlkit.table()
        table['runtime_type'] = DEFAULT_RUNTIME_TYPE
        return table
    if isinstance(source, Table) and not source.is_super_table():
        return copy.deepcopy(source)
    return _table_copy(source)


def _unindent(table):
    """Drop the indentation a table copied from another document brought along.

    Indented sibling headers under an implicit parent do not survive a tomlkit
    parse/dump round trip, which would make the next run rewrite the file.
    """
    for _key, item in table.value.body:
        if not isinstance(item, Whitespace):
            item.trivia.indent = ''
        if isinstance(item, Table):
            _unindent(item)
    return table


def _table_copy(source):
    """A [header] table with the content of `source`, a table written in pieces, inline or with dotted keys."""
    table = tomlkit.table()
    for key, value in source.items():
        table[key] = _table_copy(value) if isinstance(value, (Table, OutOfOrderTableProxy)) else fresh(value)
    return table


def ensure_runtime(doc, version, name, binary, source, source_doc=None):
    """Create or update runtime `name`; return True when the document changed.

    A new runtime copies `source` (a runtime table of `source_doc`); copied within
    the same document its header is indented like the source's, otherwise not at all.
    Where the runtimes are written inline or with dotted keys, so is the new one.
    """
    keys = runtimes_keys(version)
    runtimes = get_table(doc, keys)
    changed = False
    runtime = sub_table(doc, runtimes, keys, name) if runtimes is not None else None
    if runtime is None:
        table = _new_runtime_table(source)
        if not takes_headers(doc, keys):
            if not table.get('runtime_type'):
                set_value(table, 'runtime_type', DEFAULT_RUNTIME_TYPE)
            if 'options' not in table:
                table['options'] = tomlkit.table()
            set_value(table['options'], 'BinaryName', binary, style_from=(table,))
            add_table(doc, keys, name, table)
            return True
        runtimes = get_table(doc, keys, create=True)
        same_doc = source_doc is doc and isinstance(source, Table)
        if not same_doc:
            _unindent(table)
        runtimes[name] = table
        runtime = runtimes[name]
        runtime.trivia.indent = source.trivia.indent if same_doc else ''
        changed = True
    runtime_type = runtime.get('runtime_type')
    if not runtime_type:
        changed |= set_value(runtime, 'runtime_type', DEFAULT_RUNTIME_TYPE)
    options = sub_table(doc, runtime, keys + (name,), 'options')
    if options is None:
        options = tomlkit.table()
        if not takes_headers(doc, keys + (name,)):
            set_value(options, 'BinaryName', binary, style_from=(runtime,))
            add_table(doc, keys + (name,), 'options', options)
            return True
        runtime['options'] = options
        options = runtime['options']
        options.trivia.indent = runtime.trivia.indent
        changed = True
    changed |= set_value(options, 'BinaryName', binary, style_from=(runtime,))
    return changed


def ensure_version(doc, version):
    """Give a document without keys its `version`; return True when added.

    A document with keys but no `version` is version 1 by definition, so only
    an empty one (perhaps holding comments) can lack the key here; without it
    containerd would read the file as version 1.
    """
    if version == 1 or 'version' in doc:
        return False
    doc['version'] = version
    return True


def remove_runtime(doc, version, name):
    return delete(get_table(doc, runtimes_keys(version)), name)


def set_default(doc, version, name):
    """Set or (name=None) remove default_runtime_name; return True on change."""
    if name is None:
        return delete(get_table(doc, cri_keys(version) + ('containerd',)), 'default_runtime_name')
    return set_value(get_table(doc, cri_keys(version) + ('containerd',), create=True), 'default_runtime_name', name)


def get_enable_cdi(doc, version):
    table = get_table(doc, cri_keys(version))
    if table is None or 'enable_cdi' not in table:
        return None
    value = table['enable_cdi']
    if not isinstance(value, bool):
        raise runtime_config.error(doc, 'key %s.enable_cdi must be true or false' % dotted(cri_keys(version)))
    return value


def set_enable_cdi(doc, version, value):
    """Set or (value=None) remove enable_cdi in the CRI table; return True on change."""
    if value is None:
        return delete(get_table(doc, cri_keys(version)), 'enable_cdi')
    return set_value(get_table(doc, cri_keys(version), create=True), 'enable_cdi', value)


class Dialect(runtime_config.Dialect):
    """containerd's config.toml of one `version`; new runtimes inherit from a runtime found in `sources`."""

    label = 'containerd config'

    def __init__(self, version, sources=None):
        self.version = version
        self.sources = sources
        self._source = (None, None)

    def parse(self, content, label):
        return parse(content, label)

    def render(self, doc, original):
        return dumps(doc)

    def has_runtime(self, doc, name):
        return get_table(doc, runtimes_keys(self.version) + (name,)) is not None

    def runtime_binary(self, doc, name):
        return binary_name(doc, self.version, name)

    def runtime_key(self, name):
        return dotted(runtimes_keys(self.version) + (name,))

    def check_takeover(self, doc, entries, recorded):
        # A runtime in any file the new one is looked up with (config.toml beside a drop-in) counts.
        for source in self.sources or [doc]:
            super(Dialect, self).check_takeover(source, entries, recorded)

    def set_runtime(self, doc, name, binary):
        ensure_runtime(doc, self.version, name, binary, *self._source)

    def remove_runtime(self, doc, name):
        remove_runtime(doc, self.version, name)

    def get_default(self, doc):
        return default_runtime(doc, self.version)

    def set_default(self, doc, name):
        set_default(doc, self.version, name)

    def get_cdi(self, doc):
        return get_enable_cdi(doc, self.version)

    def set_cdi(self, doc, value):
        set_enable_cdi(doc, self.version, value)

    def prune(self, doc):
        prune_empty(doc, runtimes_keys(self.version))

    def apply_present(self, doc, entries, set_as_default, enable_cdi, ours, stale=(), recorded=()):
        source_name, source, source_doc = inherit_source(self.sources or [doc], self.version, ours)
        self._source = (source, source_doc)
        # `version` goes in first so it heads a new file, as nvidia-ctk writes it.
        version_added = ensure_version(doc, self.version)
        facts = super(Dialect, self).apply_present(doc, entries, set_as_default, enable_cdi, ours, stale, recorded)
        facts.update(inherited_from=source_name, version_added=version_added)
        return facts


def apply_present(doc, version, runtimes, set_as_default, enable_cdi, ours, sources=None, stale=(), recorded=()):
    """Register `runtimes` [(name, binary)] in `doc`.

    `sources` are the documents searched for the runtime to inherit from
    (default: `doc`); `ours` are every runtime name this module manages, so
    none of them is inherited from and a default naming one is unset when
    `set_as_default` is off; `stale` runtimes (managed before, no longer
    wanted) are removed; `recorded` are the names the undo record holds (an
    existing runtime of another name that is no NVIDIA runtime is refused).
    Returns the facts needed to undo the change.
    """
    return Dialect(version, sources).apply_present(doc, runtimes, set_as_default, enable_cdi, ours, stale, recorded)


def apply_absent(doc, version, names, record):
    """Remove runtimes `names`; restore the default and enable_cdi the undo `record` holds."""
    Dialect(version).apply_absent(doc, names, record)


def imports_list(doc):
    if 'imports' not in doc:
        return []
    value = doc['imports']
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        raise runtime_config.error(doc, 'key imports must be an array of strings')
    return [str(entry) for entry in value]


def import_covered(doc, path):
    """True when an `imports` entry (a path or glob) already loads `path`."""
    return any(entry == path or fnmatch.fnmatchcase(path, entry) for entry in imports_list(doc))


def add_import(doc, path, version):
    """Append `path` to the top-level imports unless already covered.

    Returns (import_added, version_added). An empty document gains `version`
    first so containerd reads it with the intended schema.
    """
    if import_covered(doc, path):
        return False, False
    version_added = False
    if len(doc) == 0:
        doc['version'] = version
        version_added = True
    if 'imports' in doc:
        doc['imports'].append(path)
    else:
        doc['imports'] = [path]
    return True, version_added


def remove_import(doc, path):
    """Remove `path` from the top-level imports."""
    if 'imports' not in doc:
        return
    imports = doc['imports']
    for index in range(len(imports) - 1, -1, -1):
        if imports[index] == path:
            del imports[index]


def drop_lone_version(doc):
    """Remove `version` (and an empty `imports`) when nothing else is left, as nvidia-ctk does."""
    if 'imports' in doc and len(doc['imports']) == 0 and set(doc.keys()) == {'version', 'imports'}:
        del doc['imports']
    if list(doc.keys()) == ['version']:
        del doc['version']


def copy_cri_section(source_doc, doc, version):
    """Copy the source's whole CRI plugin table into `doc` (when it has none); True when copied.

    containerd 1.x replaces a plugin's section wholesale when an import defines
    it (containerd issue 5837), so a version 2 drop-in must carry the rest of the
    CRI settings (SystemdCgroup and friends) along with our runtimes.
    """
    source = get_table(source_doc, cri_keys(version))
    if source is None or get_table(doc, cri_keys(version)) is not None:
        return False
    plugins = get_table(doc, ('plugins',), create=True)
    plugins[cri_plugin_name(version)] = _unindent(_new_runtime_table(source))
    plugins[cri_plugin_name(version)].trivia.indent = ''
    return True
