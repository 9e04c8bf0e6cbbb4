# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""containerd's reading of a config and the files it imports (pure): which files it loads, in which order, and
which runtimes and default runtime they come to, so the module can tell whether what it writes takes effect.

containerd loads the top file, then the files it imports, breadth first, each path once (a file importing itself
or an earlier one is skipped); an import with a `*` is a glob (sorted matches), a relative one is relative to the
importing file's directory. Later files override earlier ones, differently per release:

- containerd 1.x: a file that has a plugin's table puts it in place of that plugin's whole table: an import with a
  CRI table drops the runtimes and the default of every file loaded before it.
- containerd 2.x: plugin tables are merged key by key, so a later file's value wins key by key (an empty string
  too).

SOURCE: containerd/containerd LoadConfig, resolveImports and mergeConfig in services/server/config/config.go at
v1.6.20 and v1.7.24, cmd/containerd/server/config/config.go at v2.1.9 (1.6.20 globs a relative pattern from its
working directory instead, which is not modelled). molecule/container_toolkit compares this reading with
`containerd config dump` of Debian's containerd 1.6.20, 1.7.24 and 2.1.9. Imported files are read with the top
file's config version.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_config as cc

REPLACES_TABLES = 'containerd 1.x'
MERGES_KEYS = 'containerd 2.x'


def rules_for(version, containerd_major):
    """The merge rules a config of `version` is read with: containerd's own when its major version is known, else both
    (a version 1 or 2 config may be read by containerd 1.x or 2.x; version 3 only by 2.x)."""
    if version >= 3 or containerd_major is not None and containerd_major >= 2:
        return [MERGES_KEYS]
    if containerd_major is not None:
        return [REPLACES_TABLES]
    return [REPLACES_TABLES, MERGES_KEYS]


def glob(pattern, listdir):
    """Go's filepath.Glob as containerd calls it: sorted matches; `*` also matches names starting with a dot."""
    directory, name = os.path.split(pattern)
    if '*' in directory or '?' in directory or '[' in directory:
        directories = glob(directory, listdir)
    else:
        directories = [directory]
    matches = []
    for parent in directories:
        matches.extend(os.path.join(parent, entry) for entry in listdir(parent) if fnmatch.fnmatchcase(entry, name))
    return sorted(matches)


def resolve(parent, entry, listdir):
    """The paths one `imports` entry of file `parent` names."""
    path = os.path.normpath(entry)
    if not os.path.isabs(path):
        path = os.path.join(os.path.dirname(parent), path)
    return glob(path, listdir) if '*' in path else [path]


def load_order(top, top_doc, read_doc, listdir):
    """(order, missing): [(path, doc, importer)] in the order containerd loads them, and the first (path, importer)
    that does not exist, or None; `read_doc(path)` parses a file (None: missing).

    containerd stops at a missing file: 1.x then refuses to start; 2.x starts with the files loaded before it
    (LoadConfig returns the not-found error, which the daemon ignores).
    """
    order = []
    loaded = set()
    pending = [(os.path.normpath(os.path.abspath(top)), None)]
    while pending:
        path, importer = pending.pop(0)
        if path in loaded:
            continue
        doc = top_doc if importer is None else read_doc(path)
        if doc is None:
            return order, (path, importer)
        loaded.add(path)
        order.append((path, doc, importer))
        for entry in cc.imports_list(doc):
            pending.extend((name, path) for name in resolve(path, entry, listdir))
    return order, None


class Effective(object):
    """The runtimes and default runtime containerd ends up with, and which file each came from."""

    def __init__(self):
        self.runtimes = {}  # name -> [binary or None, file defining the runtime, file setting the binary]
        self.default = (None, None)  # (name, file setting it)
        self.replaced_by = None  # containerd 1.x: the file whose CRI table is the one in effect


def effective(order, version, rules):
    """What containerd reads from the files of `order` (load_order) under `rules`."""
    result = Effective()
    keys = cc.cri_keys(version)
    for path, doc, _importer in order:
        table = cc.get_table(doc, keys)
        if table is None:
            continue
        if rules == REPLACES_TABLES:
            result.runtimes, result.default, result.replaced_by = {}, (None, None), path
        default = cc.default_runtime(doc, version)
        if default is not None:
            result.default = (default, path)
        runtimes = cc.get_table(doc, cc.runtimes_keys(version))
        for name in (runtimes or {}):
            binary = cc.binary_name(doc, version, name)
            entry = result.runtimes.setdefault(name, [None, path, None])
            if binary is not None:
                entry[0], entry[2] = binary, path
    return result


def problems(order, missing, version, rules, entries, set_as_default, ours):
    """Why the runtimes `entries` [(name, binary)] written to file `ours` (and the default) would not take effect;
    `order` and `missing` are what load_order() found."""
    found = []
    cri = cc.dotted(cc.cri_keys(version))
    loaded = [path for path, _doc, _importer in order]
    for rule in rules:
        if missing and rule == REPLACES_TABLES:
            found.append('%s imports %s, which does not exist: %s would not start' % (missing[1], missing[0], rule))
            continue
        if ours not in loaded:
            found.append('%s is not among the files %s loads%s' % (
                ours, rule, ' (it stops at %s, imported by %s, which does not exist)' % missing if missing else ''))
            continue
        seen = effective(order, version, rule)
        replaced = rule == REPLACES_TABLES and seen.replaced_by != ours
        for name, binary in entries:
            runtime = seen.runtimes.get(name)
            if replaced and runtime is None:
                found.append('%s has a [%s] table and is loaded after %s: %s puts it in place of the earlier ones whole, so '
                             'runtime %s would not exist' % (seen.replaced_by, cri, ours, rule, name))
            elif runtime is not None and runtime[0] != binary:
                found.append('%s sets runtime %s to %s and is loaded after %s: %s would run that, not %s' % (
                    runtime[2] or runtime[1], name, runtime[0] or 'the default program (no BinaryName)', ours, rule, binary))
        default, source = seen.default
        if set_as_default and default != entries[0][0]:
            if replaced:
                found.append('%s has a [%s] table and is loaded after %s: %s puts it in place of the earlier ones whole, so the '
                             'default runtime would be %s, not %s' % (seen.replaced_by, cri, ours, rule, default or 'runc', entries[0][0]))
            else:
                found.append('%s sets default_runtime_name = "%s" and is loaded after %s: with %s the default runtime would '
                             'stay %s, not %s' % (source, default, ours, rule, default, entries[0][0]))
    # The same finding under both rules is said once.
    return list(dict.fromkeys(found))


def base_before(order, path, version):
    """The document whose CRI table containerd 1.x would use just before loading `path`: the last one loaded before
    it that has one (None when none has)."""
    base = None
    for name, doc, _importer in order:
        if name == path:
            break
        if cc.get_table(doc, cc.cri_keys(version)) is not None:
            base = doc
    return base
