# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Editing TOML documents in place with tomlkit (no I/O): containerd's config.toml and CRI-O's drop-ins.

Comments, key order, quoting and indentation of everything not touched survive; a table is
added the way its surroundings are written (a [header] table, an inline table or dotted keys);
errors name the file and, where tomlkit knows it, the line and column.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

try:
    import tomlkit
    from tomlkit.exceptions import ParseError, TOMLKitError
    from tomlkit.items import AoT, InlineTable, String, Table
    from tomlkit.container import Container, OutOfOrderTableProxy
except ImportError:  # the module reports the missing library via missing_required_lib
    tomlkit = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_config import ConfigError

# An indented [header]: only text with one can meet the tomlkit bug _repair_indents works around.
INDENTED_HEADER = re.compile(r'^[ \t]+\[', re.MULTILINE)
# Where a document parsed from text without a final newline keeps that text (see parse and dumps).
UNTERMINATED_ATTR = '_gpuops_unterminated'
# Set on a document parsed from text whose lines all end with CRLF: dumps() ends added lines the same way.
CRLF_ATTR = '_gpuops_crlf'


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
    if runtime_config.crlf(terminated):
        setattr(doc, CRLF_ATTR, True)
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
    return runtime_config.line_ends_like('\r\n' if getattr(doc, CRLF_ATTR, False) else '', text)


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
    `inline` is true inside an inline table, also one a dotted key holds
    (`containerd.runtimes = { ... }`: an inline table cannot be extended by
    more dotted keys); (None, None, False) means a [header] table.
    """
    current = doc
    owner = relative = None
    for depth, key in enumerate(keys):
        if isinstance(current, InlineTable):
            return None, None, True
        entry = _entry_key(current, key) if owner is None else None
        if entry is not None and entry.is_dotted():
            owner, relative = current, keys[depth:]
        current = _child(current, key)
        if current is None:
            break
    if isinstance(current, InlineTable):
        return None, None, True
    return owner, relative, False


def fresh(value):
    """A new item with `value`'s value and none of its layout.

    A value moved between a [header] table, an inline table and dotted keys
    must not keep the old layout: one from an inline table has no line end,
    and tomlkit before 0.15 would glue the next line to it.
    """
    return tomlkit.item(value.unwrap() if hasattr(value, 'unwrap') else value)


def _inline_copy(item):
    if not _is_table(item):
        return fresh(item)
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
            yield path + (key,), fresh(value)


def _before_headers(owner, key):
    """True when every dotted key `key...` of `owner` comes before its first [header] table.

    tomlkit before 0.13 appends them after the tables, where they belong to the last one.
    """
    body = owner.body if isinstance(owner, Container) else owner.value.body
    headers = [index for index, (entry, item) in enumerate(body)
               if isinstance(item, (Table, AoT)) and not (entry is not None and entry.is_dotted())]
    dotted_keys = [index for index, (entry, _item) in enumerate(body) if entry is not None and entry.is_dotted() and entry.key == key]
    return not headers or max(dotted_keys) < min(headers)


def takes_headers(doc, keys):
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


def set_value(table, key, value, style_from=()):
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


def delete(table, key):
    if table is not None and key in table:
        del table[key]
        return True
    return False


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
