# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""containerd_imports: which files containerd loads and what their runtimes come to, under 1.x's and 2.x's rules.

The answers in containerd_import_cases.py are what `containerd config dump` of Debian's 1.6.20, 1.7.24 and 2.1.9
printed for those files (molecule/container_toolkit checks them again on every run).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_config as cc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_imports as ci
from tests.unit.plugins.module_utils.toolkit.containerd_import_cases import CASES, materialise, model

ROOT = '/etc/gpuops-imports/case'
NVIDIA = [('nvidia', '/usr/bin/nvidia-container-runtime')]


@pytest.mark.parametrize('name, rules, expected', [
    (name, rules, expected) for name, (_files, answers) in CASES.items() for rules, expected in answers.items()])
def test_reading_matches_containerd(name, rules, expected):
    assert model(CASES[name][0], ROOT, rules) == (tuple(expected) if expected else None)


@pytest.mark.parametrize('version, major, rules', [
    (2, None, [ci.REPLACES_TABLES, ci.MERGES_KEYS]),
    (1, None, [ci.REPLACES_TABLES, ci.MERGES_KEYS]),
    (2, 1, [ci.REPLACES_TABLES]),
    (2, 2, [ci.MERGES_KEYS]),
    (3, None, [ci.MERGES_KEYS]),
])
def test_rules_for(version, major, rules):
    assert ci.rules_for(version, major) == rules


def test_glob_sorts_and_matches_dot_files_like_go():
    tree = {'/c': ['b.toml', '.a.toml', 'x.conf', 'a.toml'], '/d': ['one', 'two'], '/d/one': ['z.toml'], '/d/two': ['y.toml']}
    assert ci.glob('/c/*.toml', lambda directory: tree.get(directory, [])) == ['/c/.a.toml', '/c/a.toml', '/c/b.toml']
    assert ci.glob('/d/*/*.toml', lambda directory: tree.get(directory, [])) == ['/d/one/z.toml', '/d/two/y.toml']
    assert ci.glob('/nowhere/*.toml', lambda directory: tree.get(directory, [])) == []


def _order(name):
    placed = materialise(CASES[name][0], ROOT)
    top = ROOT + '/config.toml'
    return ci.load_order(top, cc.parse(placed[top], top), lambda path: cc.parse(placed[path], path) if path in placed else None,
                         lambda directory: [path.rsplit('/', 1)[1] for path in placed if path.rsplit('/', 1)[0] == directory])


def test_the_drop_in_that_overrides_is_named():
    order, missing = _order('glob drop-in overrides the default')
    found = ci.problems(order, missing, 2, [ci.REPLACES_TABLES, ci.MERGES_KEYS], NVIDIA, True, ROOT + '/config.toml')
    assert found == [
        '%s/conf.d/10-crun.toml has a [plugins."io.containerd.grpc.v1.cri"] table and is loaded after %s/config.toml: containerd 1.x '
        'puts it in place of the earlier ones whole, so runtime nvidia would not exist' % (ROOT, ROOT),
        '%s/conf.d/10-crun.toml has a [plugins."io.containerd.grpc.v1.cri"] table and is loaded after %s/config.toml: containerd 1.x '
        'puts it in place of the earlier ones whole, so the default runtime would be crun, not nvidia' % (ROOT, ROOT),
        '%s/conf.d/10-crun.toml sets default_runtime_name = "crun" and is loaded after %s/config.toml: with containerd 2.x the default '
        'runtime would stay crun, not nvidia' % (ROOT, ROOT)]
    # Without set_as_default, containerd 2.x has the runtime: only 1.x's reading is a problem.
    assert len(ci.problems(order, missing, 2, [ci.MERGES_KEYS], NVIDIA, False, ROOT + '/config.toml')) == 0
    assert len(ci.problems(order, missing, 2, [ci.REPLACES_TABLES], NVIDIA, False, ROOT + '/config.toml')) == 1


def test_a_drop_in_loaded_last_takes_effect():
    order, missing = _order('drop-in loaded last')
    assert ci.problems(order, missing, 2, [ci.REPLACES_TABLES, ci.MERGES_KEYS], NVIDIA, True, ROOT + '/conf.d/99-nvidia.toml') == []


def test_another_binary_set_later_is_named():
    order, missing = _order('import changes the binary')
    assert ci.problems(order, missing, 2, [ci.MERGES_KEYS], NVIDIA, False, ROOT + '/config.toml') == [
        '%s/binary.toml sets runtime nvidia to /opt/other and is loaded after %s/config.toml: containerd 2.x would run that, not '
        '/usr/bin/nvidia-container-runtime' % (ROOT, ROOT)]


def test_a_missing_import():
    order, missing = _order('missing import')
    assert missing == (ROOT + '/missing.toml', ROOT + '/config.toml')
    assert ci.problems(order, missing, 2, [ci.REPLACES_TABLES], NVIDIA, True, ROOT + '/config.toml') == [
        '%s/config.toml imports %s/missing.toml, which does not exist: containerd 1.x would not start' % (ROOT, ROOT)]
    # containerd 2.x stops there: a file imported after it is not loaded.
    assert ci.problems(order, missing, 2, [ci.MERGES_KEYS], NVIDIA, True, ROOT + '/after.toml') == [
        '%s/after.toml is not among the files containerd 2.x loads (it stops at %s/missing.toml, imported by %s/config.toml, which '
        'does not exist)' % (ROOT, ROOT, ROOT)]


def test_base_before_is_the_last_cri_table_loaded_before_the_drop_in():
    order, _missing = _order('glob drop-in overrides the default')
    assert ci.base_before(order, ROOT + '/conf.d/99-nvidia.toml', 2) is order[1][1]
    assert ci.base_before(order, ROOT + '/conf.d/10-crun.toml', 2) is order[0][1]
