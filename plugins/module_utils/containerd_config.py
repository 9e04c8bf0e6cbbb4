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
import re

try:
    import tomlkit
    from tomlkit.exceptions import ParseError, TOMLKitError
    from tomlkit.items import AoT, InlineTable, String, Table, Whitespace
    from tomlkit.container import Container, OutOfOrderTableProxy
except ImportError:  # the module reports the missing library via missing_required_lib
    tomlkit = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils import runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.runtime_config import ConfigError

DEFAULT_VERSION = 2
DEFAULT_RUNTIME_TYPE = 'io.containerd.runc.v2'
FALLBACK_RUNTIMES = ('runc', 'crun')
# nvidia-ctk never inherits from a runtime whose name starts with this.
NVIDIA_PREFIX = 'nvidia'


# An indented [header]: only text with one can meet the tomlkit bug _repair_indents works around.
INDENTED_HEADER = re.compile(r'^[ \t]+\[', re.MULTILINE)
# Where a document parsed from text without a final newline keeps that text (see parse and dumps).
UNTERMINATED_ATTR = '_gpuops_unterminated'


def parse(text, label='config'):
    """Parse TOML text; invalid TOML raises ConfigError with line and column.

    The document remembers `label`, so that errors found in it later name the file.
    Text without a final newline gets one: tomlkit would append new tables to its
    last line. dumps() gives the text back as it was while nothing else changed.
    """
    terminated = text
    if text and not text.endswith('\n'):
        terminated += '\r\n' if '\r\n' in text else '\n'
    try:
        doc = tomlkit.parse(terminated)
    except ParseError as exc:
        # tomlkit counts columns from 0; editors and humans from 1.
        reason = re.sub(r' at line \d+ col \d+$', '', str(exc))
        raise ConfigError('%s: invalid TOML at line %d, column %d: %s' % (label, exc.line, exc.col + 1, reason))
    except TOMLKitError as exc:  # a table defined twice, found after parsing, has no position
        raise ConfigError('%s: invalid TOML: %s' % (label, exc))
    except RecursionError:
        raise ConfigError('%s: invalid TOML: nested too deeply' % label)
    _repair_indents(doc, terminated)
    if terminated != text:
        setattr(doc, UNTERMINATED_ATTR, text)
    return runtime_config.labelled(doc, label)


def _header_tables(container):
    """The tables of `container` written with a [header], in the order they are written."""
    body = container.body if isinstance(container, Container) else container.value.body
    for _key, item in body:
        if isinstance(item, Table):
            if not item.is_super_table():
                yield item
            yield from _header_tables(item)


def _repair_indents(doc, text):
    """Give indented [headers] the indentation they have in `text`.

    tomlkit (0.11 to 0.15 at least) adds the indentation of an implicit parent's
    first indented sub-table to the next ones, so every parse and dump would
    indent them further and a file would change on every run.
    """
    if not INDENTED_HEADER.search(text) or tomlkit.dumps(doc) == text:
        return
    position = 0
    for table in _header_tables(doc):
        index = text.find('[%s]' % table.display_name, position) if table.display_name else -1
        if index < 0:
            continue
        position = index + 1
        indent = text[text.rfind('\n', 0, index) + 1:index]
        if not indent.strip() and '\n' not in table.trivia.indent:
            table.trivia.indent = indent


def dumps(doc):
    text = tomlkit.dumps(doc)
    original = getattr(doc, UNTERMINATED_ATTR, None)
    if original is not None and text.startswith(original) and not text[len(original):].strip():
        return original
    return text


def detect_version(doc):
    """Empty document: version 2; content without `version`: 1; else the integer."""
    if len(doc) == 0:
        return DEFAULT_VERSION
    if 'version' not in doc:
        return 1
    version = doc['version']
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise runtime_config.error(doc, 'key "version" must be a positive integer, got %r' % (version,))
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


def dotted(keys):
    """Render a key path the way a TOML header would name it."""
    return '.'.join(tomlkit.key(k).as_string() for k in keys)


def _is_table(item):
    return isinstance(item, (Table, OutOfOrderTableProxy)) or (isinstance(item, dict) and not isinstance(item, String))


def _child(container, key):
    """The item at `key` in `container`, or None.

    One lookup: each lookup of a table defined in pieces makes tomlkit build
    and validate a proxy (deep copies), the bulk of the time on such files.
    """
    try:
        return container[key]
    except KeyError:
        return None


def get_table(doc, keys, create=False):
    """Walk to the table at `keys`; a non-table on the way raises ConfigError naming it.

    Missing tables are created when `create` is true (as implicit super tables,
    so no empty headers appear; inline in an inline table), else None is returned.
    """
    current = doc
    for depth in range(len(keys)):
        current = sub_table(doc, current, keys[:depth], keys[depth], create)
        if current is None:
            return None
    return current


def sub_table(doc, table, keys, key, create=False):
    """The table at `key` in `table`, which is the table at `keys` of `doc`; see get_table."""
    item = _child(table, key)
    if item is None:
        if not create:
            return None
        table[key] = tomlkit.inline_table() if isinstance(table, InlineTable) else tomlkit.table(is_super_table=True)
        item = table[key]
    if not _is_table(item):
        raise runtime_config.error(doc, 'key %s must be a table, found %s' % (dotted(keys + (key,)), type(item).__name__))
    return item


def _entry_key(container, key):
    """The Key object `key` has in `container`'s body (it says how the key was written), or None."""
    if isinstance(container, Container):
        body = container.body
    elif isinstance(container, Table):
        body = container.value.body
    else:  # a table defined in several pieces: none of them is written with dotted keys here
        return None
    for entry, _item in body:
        if entry is not None and entry.key == key:
            return entry
    return None


def _placement(doc, keys):
    """How a table added under `keys` must be written: (owner, relative keys, inline).

    `owner` is the table whose dotted keys define the table at `keys` (a
    [header] table added there would be rendered after the keys that follow
    and take them over, so new content goes in as dotted keys of `owner`);
    `inline` is true inside an inline table; (None, None, False) means a [header] table.
    """
    current = doc
    for depth, key in enumerate(keys):
        if isinstance(current, InlineTable):
            return None, None, True
        entry = _entry_key(current, key)
        if entry is not None and entry.is_dotted():
            return current, keys[depth:], False
        current = _child(current, key)
        if current is None:
            return None, None, False
    return None, None, isinstance(current, InlineTable)


def _fresh(value):
    """A new item with `value`'s value and none of its layout.

    A value moved between a [header] table, an inline table and dotted keys
    must not keep the old layout: one from an inline table has no line end,
    and tomlkit before 0.15 would glue the next line to it.
    """
    return tomlkit.item(value.unwrap() if hasattr(value, 'unwrap') else value)


def _inline_copy(item):
    if not _is_table(item):
        return _fresh(item)
    inline = tomlkit.inline_table()
    for key, value in item.items():
        inline[key] = _inline_copy(value)
    return inline


def _leaves(table, path=()):
    """(key path, value) of every value in `table` and its sub-tables (inline tables are values)."""
    for key, value in table.items():
        if isinstance(value, (Table, OutOfOrderTableProxy)):
            yield from _leaves(value, path + (key,))
        else:
            yield path + (key,), _fresh(value)


def _before_headers(owner, key):
    """True when every dotted key `key...` of `owner` comes before its first [header] table.

    tomlkit before 0.13 appends them after the tables, where they belong to the last one.
    """
    body = owner.body if isinstance(owner, Container) else owner.value.body
    headers = [index for index, (entry, item) in enumerate(body)
               if isinstance(item, (Table, AoT)) and not (entry is not None and entry.is_dotted())]
    dotted_keys = [index for index, (entry, _item) in enumerate(body) if entry is not None and entry.is_dotted() and entry.key == key]
    return not headers or max(dotted_keys) < min(headers)


def _takes_headers(doc, keys):
    """True when a table added under `keys` can be written as a [header] table."""
    owner, _relative, inline = _placement(doc, keys)
    return owner is None and not inline


def add_table(doc, keys, name, table):
    """Add the complete `table` as `name` under the table at `keys` (created when missing).

    It is written the way its surroundings are: a [header] table, an inline
    table, or dotted keys of the table that holds the other dotted keys.
    """
    owner, relative, inline = _placement(doc, keys)
    if owner is not None:
        for path, value in _leaves(table):
            owner.append(tomlkit.key(list(relative + (name,) + path)), value)
        if not _before_headers(owner, relative[0]):
            raise runtime_config.error(doc, '%s is written with dotted keys before [tables]; tomlkit %s would add %s after those '
                                            'tables, which would take it over: write it as a [%s] table' % (
                                                dotted(keys), tomlkit.__version__, name, dotted(keys)))
    else:
        get_table(doc, keys, create=True)[name] = _inline_copy(table) if inline else table


def _is_literal(item):
    """True for a single-quoted string item.

    Read from its text: the tomlkit Debian ships (0.11.7 in bookworm, 0.13.2
    in trixie, 0.13.3 in sid) has no String.type; 0.15 has.
    """
    return item.as_string().startswith("'")


def _string_like(value, tables):
    """A string item quoted like the first string found in `tables` (literal vs basic)."""
    literal = False
    strings = (item for table in tables for item in table.values() if isinstance(item, String))
    for item in strings:
        literal = _is_literal(item)
        break
    if literal and "'" not in value and '\n' not in value:
        return tomlkit.string(value, literal=True)
    return tomlkit.string(value)


def _set_value(table, key, value, style_from=()):
    """Set a plain value, keeping the old item's quoting or the table's indentation.

    A new string is quoted like the strings in `table`, else in `style_from`.
    """
    old = table.get(key)
    if isinstance(value, str):
        if isinstance(old, String):
            literal = _is_literal(old) and "'" not in value and '\n' not in value
            item = tomlkit.string(value, literal=literal)
        else:
            item = _string_like(value, (table,) + tuple(style_from))
    else:
        item = tomlkit.item(value)
    if old is not None:
        plain = old.unwrap() if hasattr(old, 'unwrap') else old
        if plain == value and type(plain) is type(value):
            return False
        table[key] = item
        return True
    indent = _plain_indent(table)
    table[key] = item
    if indent is not None:
        # tomlkit prefixes the table's own indentation; mirror the siblings instead.
        item.trivia.indent = indent
    return True


def _plain_indent(table):
    body = getattr(table, 'value', None)
    for _key, item in getattr(body, 'body', ()):
        if _key is not None and not _is_table(item):
            return item.trivia.indent
    return None


def _delete(table, key):
    if table is not None and key in table:
        del table[key]
        return True
    return False


def default_runtime(doc, version):
    keys = cri_keys(version) + ('containerd',)
    table = get_table(doc, keys)
    if table is None:
        return None
    value = table.get('default_runtime_name')
    if value is not None and not isinstance(value, str):
        raise runtime_config.error(doc, 'key %s.default_runtime_name must be a string' % dotted(keys))
    return None if value is None else str(value)


def is_ours(name, ours):
    return name in ours or name.startswith(NVIDIA_PREFIX)


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
        table[key] = _table_copy(value) if isinstance(value, (Table, OutOfOrderTableProxy)) else _fresh(value)
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
        if not _takes_headers(doc, keys):
            if not table.get('runtime_type'):
                _set_value(table, 'runtime_type', DEFAULT_RUNTIME_TYPE)
            if 'options' not in table:
                table['options'] = tomlkit.table()
            _set_value(table['options'], 'BinaryName', binary, style_from=(table,))
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
        changed |= _set_value(runtime, 'runtime_type', DEFAULT_RUNTIME_TYPE)
    options = sub_table(doc, runtime, keys + (name,), 'options')
    if options is None:
        options = tomlkit.table()
        if not _takes_headers(doc, keys + (name,)):
            _set_value(options, 'BinaryName', binary, style_from=(runtime,))
            add_table(doc, keys + (name,), 'options', options)
            return True
        runtime['options'] = options
        options = runtime['options']
        options.trivia.indent = runtime.trivia.indent
        changed = True
    changed |= _set_value(options, 'BinaryName', binary, style_from=(runtime,))
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
    return _delete(get_table(doc, runtimes_keys(version)), name)


def set_default(doc, version, name):
    """Set or (name=None) remove default_runtime_name; return True on change."""
    if name is None:
        return _delete(get_table(doc, cri_keys(version) + ('containerd',)), 'default_runtime_name')
    return _set_value(get_table(doc, cri_keys(version) + ('containerd',), create=True), 'default_runtime_name', name)


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
        return _delete(get_table(doc, cri_keys(version)), 'enable_cdi')
    return _set_value(get_table(doc, cri_keys(version), create=True), 'enable_cdi', value)


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

    def apply_present(self, doc, entries, set_as_default, enable_cdi, ours, stale=()):
        source_name, source, source_doc = inherit_source(self.sources or [doc], self.version, ours)
        self._source = (source, source_doc)
        # `version` goes in first so it heads a new file, as nvidia-ctk writes it.
        version_added = ensure_version(doc, self.version)
        facts = super(Dialect, self).apply_present(doc, entries, set_as_default, enable_cdi, ours, stale)
        facts.update(inherited_from=source_name, version_added=version_added)
        return facts


def apply_present(doc, version, runtimes, set_as_default, enable_cdi, ours, sources=None, stale=()):
    """Register `runtimes` [(name, binary)] in `doc`.

    `sources` are the documents searched for the runtime to inherit from
    (default: `doc`); `ours` are every runtime name this module manages, so
    none of them is inherited from and a default naming one is unset when
    `set_as_default` is off; `stale` runtimes (managed before, no longer
    wanted) are removed. Returns the facts needed to undo the change.
    """
    return Dialect(version, sources).apply_present(doc, runtimes, set_as_default, enable_cdi, ours, stale)


def apply_absent(doc, version, names, previous_default=None, restore_default=False, previous_enable_cdi=None, restore_enable_cdi=False):
    """Remove runtimes `names`; restore the recorded default and enable_cdi when asked.

    Without a record (restore_default false) a default naming one of `names`
    is removed, as nvidia-ctk does.
    """
    record = None
    if restore_default:
        record = {'previous_default': previous_default, 'previous_enable_cdi': previous_enable_cdi, 'enable_cdi_set': restore_enable_cdi}
    Dialect(version).apply_absent(doc, names, record)


def prune_empty(doc, keys, implicit_only=True):
    """Drop the empty tables along `keys`, deepest first.

    With `implicit_only` only those without a header of their own (the ones
    present may have created) go, so a user's empty table stays.
    """
    for depth in range(len(keys), 0, -1):
        parent = get_table(doc, keys[:depth - 1]) if depth > 1 else doc
        key = keys[depth - 1]
        if parent is None or key not in parent:
            continue
        item = parent[key]
        if isinstance(item, Table) and len(item) == 0 and (not implicit_only or item.is_super_table()):
            del parent[key]
        else:
            return


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
    """Copy the source's whole CRI plugin table into `doc` (when it has none).

    containerd 1.x replaces a plugin's section wholesale when an import defines
    it (containerd issue 5837), so a version 2 drop-in must carry the rest of the
    CRI settings (SystemdCgroup and friends) along with our runtimes.
    """
    source = get_table(source_doc, cri_keys(version))
    if source is None or get_table(doc, cri_keys(version)) is not None:
        return
    plugins = get_table(doc, ('plugins',), create=True)
    plugins[cri_plugin_name(version)] = _unindent(_new_runtime_table(source))
    plugins[cri_plugin_name(version)].trivia.indent = ''
