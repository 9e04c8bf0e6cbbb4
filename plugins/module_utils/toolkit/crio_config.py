# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Pure transformations of a CRI-O drop-in file (no I/O).

The drop-in holds [crio.runtime.runtimes.<name>] with runtime_path and
runtime_type "oci", and crio.runtime.default_runtime when set as default, as
nvidia-ctk writes them. CRI-O reads every file of its drop-in directory in
lexical order, so the undo record cannot live next to the drop-in (see runtime_config.state_path).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

try:
    import tomlkit
except ImportError:  # the module reports the missing library via missing_required_lib
    tomlkit = None

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import toml_doc as toml
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_config import Dialect, error

RUNTIME_KEYS = ('crio', 'runtime')
RUNTIMES_KEYS = RUNTIME_KEYS + ('runtimes',)
RUNTIME_TYPE = 'oci'


def state_path(path):
    """The undo record of drop-in `path`: not in the drop-in directory, which CRI-O reads whole."""
    return runtime_config.state_path(path, beside=False)


def _set(table, key, value):
    if table.get(key) != value:
        table[key] = value


class CrioDialect(Dialect):
    label = 'CRI-O drop-in'
    remove_when_empty = True

    def parse(self, content, label):
        return toml.parse(content, label)

    def render(self, doc, original):
        return toml.dumps(doc)

    def has_runtime(self, doc, name):
        return toml.get_table(doc, RUNTIMES_KEYS + (name,)) is not None

    def runtime_binary(self, doc, name):
        value = toml.get_table(doc, RUNTIMES_KEYS + (name,)).get('runtime_path')
        return str(value) if isinstance(value, str) else None

    def runtime_key(self, name):
        return toml.dotted(RUNTIMES_KEYS + (name,))

    def set_runtime(self, doc, name, binary):
        runtime = toml.get_table(doc, RUNTIMES_KEYS + (name,))
        new = runtime is None
        if new:
            runtime = tomlkit.table()
        _set(runtime, 'runtime_path', binary)
        _set(runtime, 'runtime_type', RUNTIME_TYPE)
        if new:
            toml.add_table(doc, RUNTIMES_KEYS, name, runtime)

    def remove_runtime(self, doc, name):
        runtimes = toml.get_table(doc, RUNTIMES_KEYS)
        if runtimes is not None and name in runtimes:
            del runtimes[name]

    def get_default(self, doc):
        table = toml.get_table(doc, RUNTIME_KEYS)
        value = table.get('default_runtime') if table is not None else None
        if value is not None and not isinstance(value, str):
            raise error(doc, 'key crio.runtime.default_runtime must be a string')
        return None if value is None else str(value)

    def set_default(self, doc, name):
        if name is None:
            table = toml.get_table(doc, RUNTIME_KEYS)
            if table is not None and 'default_runtime' in table:
                del table['default_runtime']
        else:
            _set(toml.get_table(doc, RUNTIME_KEYS, create=True), 'default_runtime', name)

    def prune(self, doc):
        # Every table on the way is the drop-in's own, header or not.
        toml.prune_empty(doc, RUNTIMES_KEYS, implicit_only=False)
