# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Configs that import other files, and what containerd makes of them: the runtimes (among those the files name,
as name=BinaryName) and the default runtime.

test_containerd_imports.py holds containerd_imports to these answers; molecule/container_toolkit writes the same
files on the lab nodes and holds `containerd config dump` of Debian's containerd 1.6.20, 1.7.24 and 2.1.9 to them.
Each file's text has {root} where the case's directory goes; `config.toml` is the top file.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_config as cc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_imports as ci

V2 = '[plugins."io.containerd.grpc.v1.cri".containerd]\n'
V3 = "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n"


def runtime(name, binary, version=2):
    plugin = 'plugins."io.containerd.grpc.v1.cri"' if version == 2 else "plugins.'io.containerd.cri.v1.runtime'"
    return ('[%s.containerd.runtimes.%s]\n  runtime_type = "io.containerd.runc.v2"\n'
            '[%s.containerd.runtimes.%s.options]\n  BinaryName = "%s"\n' % (plugin, name, plugin, name, binary))


NVIDIA = runtime('nvidia', '/usr/bin/nvidia-container-runtime')
CRUN = runtime('crun', '/usr/bin/crun')
N = 'nvidia=/usr/bin/nvidia-container-runtime'
C = 'crun=/usr/bin/crun'

# name -> (files, {rules: (runtimes, default)}); a rules entry of None: containerd does not start (config dump fails).
# The default is what containerd runs when nothing sets one: runc.
CASES = {
    # The case: a conf.d drop-in sets crun as the default after config.toml made nvidia the default.
    'glob drop-in overrides the default': ({
        'config.toml': 'version = 2\nimports = ["{root}/conf.d/*.toml"]\n' + V2 + '  default_runtime_name = "nvidia"\n' + NVIDIA,
        'conf.d/10-crun.toml': 'version = 2\n' + V2 + '  default_runtime_name = "crun"\n' + CRUN,
    }, {ci.REPLACES_TABLES: ([C], 'crun'), ci.MERGES_KEYS: ([C, N], 'crun')}),
    # A drop-in loaded last, holding the CRI table the config had plus nvidia: what the module writes for a new drop-in.
    'drop-in loaded last': ({
        'config.toml': 'version = 2\nimports = ["{root}/conf.d/*.toml"]\n' + CRUN,
        'conf.d/99-nvidia.toml': 'version = 2\n' + V2 + '  default_runtime_name = "nvidia"\n' + CRUN + NVIDIA,
    }, {ci.REPLACES_TABLES: ([C, N], 'nvidia'), ci.MERGES_KEYS: ([C, N], 'nvidia')}),
    # A later file that only changes the binary.
    'import changes the binary': ({
        'config.toml': 'version = 2\nimports = ["{root}/binary.toml"]\n' + NVIDIA,
        'binary.toml': 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n  BinaryName = "/opt/other"\n',
    }, {ci.REPLACES_TABLES: (['nvidia=/opt/other'], 'runc'), ci.MERGES_KEYS: (['nvidia=/opt/other'], 'runc')}),
    # An import without a CRI table changes nothing of it.
    'import without a CRI table': ({
        'config.toml': 'version = 2\nimports = ["{root}/metrics.toml"]\n' + V2 + '  default_runtime_name = "nvidia"\n' + NVIDIA,
        'metrics.toml': 'version = 2\n[metrics]\n  address = "127.0.0.1:1338"\n',
    }, {ci.REPLACES_TABLES: ([N], 'nvidia'), ci.MERGES_KEYS: ([N], 'nvidia')}),
    # Imports of imports come after every import of the top file (breadth first).
    'imports of imports load last': ({
        'config.toml': 'version = 2\nimports = ["{root}/a.toml", "{root}/b.toml"]\n',
        'a.toml': 'version = 2\nimports = ["{root}/c.toml"]\n' + V2 + '  default_runtime_name = "crun"\n' + CRUN,
        'b.toml': 'version = 2\n' + V2 + '  default_runtime_name = "nvidia"\n' + NVIDIA,
        'c.toml': 'version = 2\n' + V2 + '  default_runtime_name = "crun"\n',
    }, {ci.REPLACES_TABLES: ([], 'crun'), ci.MERGES_KEYS: ([C, N], 'crun')}),
    # A file importing itself is loaded once.
    'self import': ({
        'config.toml': 'version = 2\nimports = ["{root}/config.toml"]\n' + V2 + '  default_runtime_name = "nvidia"\n' + NVIDIA,
    }, {ci.REPLACES_TABLES: ([N], 'nvidia'), ci.MERGES_KEYS: ([N], 'nvidia')}),
    # A relative import is relative to the importing file's directory.
    'relative import': ({
        'config.toml': 'version = 2\nimports = ["conf.d/crun.toml"]\n' + NVIDIA,
        'conf.d/crun.toml': 'version = 2\n' + V2 + '  default_runtime_name = "crun"\n',
    }, {ci.REPLACES_TABLES: ([], 'crun'), ci.MERGES_KEYS: ([N], 'crun')}),
    # Go's glob: * matches a name starting with a dot too.
    'glob matches dot files': ({
        'config.toml': 'version = 2\nimports = ["{root}/conf.d/*.toml"]\n' + NVIDIA,
        'conf.d/.hidden.toml': 'version = 2\n' + V2 + '  default_runtime_name = "crun"\n',
    }, {ci.REPLACES_TABLES: ([], 'crun'), ci.MERGES_KEYS: ([N], 'crun')}),
    # An empty string overrides too (containerd 2.x merges the values as written; 1.x replaces the whole table).
    'empty default': ({
        'config.toml': 'version = 2\nimports = ["{root}/empty.toml"]\n' + V2 + '  default_runtime_name = "nvidia"\n' + NVIDIA,
        'empty.toml': 'version = 2\n' + V2 + '  default_runtime_name = ""\n',
    }, {ci.REPLACES_TABLES: ([], 'runc'), ci.MERGES_KEYS: ([N], 'runc')}),
    # A missing import: containerd 1.x does not start; 2.x keeps what it loaded before it.
    'missing import': ({
        'config.toml': 'version = 2\nimports = ["{root}/missing.toml", "{root}/after.toml"]\n' + V2 + '  default_runtime_name = "nvidia"\n' + NVIDIA,
        'after.toml': 'version = 2\n' + V2 + '  default_runtime_name = "crun"\n',
    }, {ci.REPLACES_TABLES: None, ci.MERGES_KEYS: ([N], 'nvidia')}),
    # Version 3 (containerd 2.x only).
    'version 3 glob drop-in': ({
        'config.toml': "version = 3\nimports = ['{root}/conf.d/*.toml']\n" + V3 + "  default_runtime_name = 'nvidia'\n"
                       + runtime('nvidia', '/usr/bin/nvidia-container-runtime', 3),
        'conf.d/10-crun.toml': 'version = 3\n' + V3 + "  default_runtime_name = 'crun'\n" + runtime('crun', '/usr/bin/crun', 3),
    }, {ci.MERGES_KEYS: ([C, N], 'crun')}),
}


def names_in(files):
    """The runtime names the case's files mention: containerd's dump adds its built-in ones (runc), not compared."""
    return set(name for text in files.values() for name in ('nvidia', 'crun') if 'runtimes.%s]' % name in text)


def materialise(files, root):
    """{absolute path: text} of a case's files placed under `root`."""
    return dict((os.path.join(root, name), text.replace('{root}', root)) for name, text in files.items())


def model(files, root, rules):
    """(runtimes, default) containerd_imports reads from the case's files under `rules`; None when containerd would
    not start (a missing import under containerd 1.x)."""
    placed = materialise(files, root)
    top = os.path.join(root, 'config.toml')

    def listdir(directory):
        return [os.path.basename(path) for path in placed if os.path.dirname(path) == directory]
    top_doc = cc.parse(placed[top], top)
    order, missing = ci.load_order(top, top_doc, lambda path: cc.parse(placed[path], path) if path in placed else None, listdir)
    if missing and rules == ci.REPLACES_TABLES:
        return None
    seen = ci.effective(order, cc.detect_version(top_doc), rules)
    names = names_in(files)
    return sorted('%s=%s' % (name, entry[0] or '') for name, entry in seen.runtimes.items() if name in names), seen.default[0] or 'runc'
