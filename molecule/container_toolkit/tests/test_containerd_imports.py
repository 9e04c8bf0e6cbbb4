# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Real containerd is the judge of configs that import other files.

- The cases of containerd_import_cases.py: `containerd config dump` on each node must come to what
  containerd_imports reads from the same files under that node's containerd's rules.
- converge.yml's registrations in the configs whose conf.d drop-in makes crun the default: in config.toml itself
  it was refused and wrote nothing; the drop-in the module wrote (in a directory it created) takes effect, and that
  config.toml is left as prepare.yml wrote it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import os
import tomllib

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_imports as ci
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.containerd_cli import parse_version
from tests.unit.plugins.module_utils.toolkit.containerd_import_cases import CASES, materialise, model, names_in

CASES_ROOT = '/etc/gpuops-imports/cases'
MODULE_ROOT = '/etc/gpuops-imports/drop-in'
IN_PLACE_ROOT = '/etc/gpuops-imports/in-place'
BINARY = '/usr/bin/nvidia-container-runtime'

testinfra_hosts = ['podman://container_toolkit-%s' % name for name in ('bookworm', 'trixie', 'sid')]


def cri(dump):
    plugin = 'io.containerd.cri.v1.runtime' if dump['version'] >= 3 else 'io.containerd.grpc.v1.cri'
    return dump['plugins'][plugin]['containerd']


def test_reading_of_imports_matches_containerd(host):
    rules = ci.rules_for(2, parse_version(host.check_output('containerd --version'))[0])[0]
    cases = [(name, files, '%s/%d' % (CASES_ROOT, number)) for number, (name, (files, answers)) in enumerate(CASES.items())
             if rules in answers]
    # Two commands per node: write every case's files, then dump every case's config.
    writes = ['rm -rf %s' % CASES_ROOT] + [
        'mkdir -p %s && echo %s | base64 -d > %s' % (os.path.dirname(path), base64.b64encode(text.encode()).decode(), path)
        for _name, files, root in cases for path, text in sorted(materialise(files, root).items())]
    host.check_output(' && '.join(writes))
    out = host.check_output('; '.join('echo "=== %s"; containerd --config %s/config.toml config dump 2>&1; echo "rc=$?"' % (number, root)
                                      for number, (_name, _files, root) in enumerate(cases)))
    mismatches = []
    for (name, files, root), part in zip(cases, out.split('=== ')[1:]):
        body, rc = part.split('\n', 1)[1].rsplit('rc=', 1)
        if int(rc) != 0:
            real = None
        else:
            table = cri(tomllib.loads(body))
            real = (sorted('%s=%s' % (runtime, entry.get('options', {}).get('BinaryName', ''))
                           for runtime, entry in table.get('runtimes', {}).items() if runtime in names_in(files)),
                    table.get('default_runtime_name') or 'runc')
        if real != model(files, root, rules):
            mismatches.append('%s: containerd %s, containerd_imports %s' % (name, real, model(files, root, rules)))
    host.check_output('rm -rf %s' % CASES_ROOT)
    assert mismatches == [], mismatches
    assert len(cases) >= 10


def test_the_drop_in_the_module_wrote_takes_effect(host):
    table = cri(tomllib.loads(host.check_output('containerd --config %s/config.toml config dump' % MODULE_ROOT)))
    assert table['default_runtime_name'] == 'nvidia'
    assert table['runtimes']['nvidia']['options']['BinaryName'] == BINARY
    # The user's crun is still there; the directory was created with the mode nvidia-ctk gives it.
    assert table['runtimes']['crun']['options']['BinaryName'] == '/usr/bin/crun'
    assert host.file('%s/nvidia.d' % MODULE_ROOT).mode == 0o755
    # config.toml already imports nvidia.d/*.toml: it is left as it was.
    assert 'runtimes.nvidia' not in host.file('%s/config.toml' % MODULE_ROOT).content_string


def test_the_refused_in_place_run_wrote_nothing(host):
    assert sorted(host.file(IN_PLACE_ROOT).listdir()) == ['conf.d', 'config.toml']
    assert 'runtimes.nvidia' not in host.file('%s/config.toml' % IN_PLACE_ROOT).content_string
