# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""labctl.py molecule-platforms: which lab nodes a scenario gets, and which fixture each one is served."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
import yaml

from tests.lab import labctl

RECIPE = {'distro': {'bookworm': {'run': ['--systemd=always']}, 'trixie': {'run': ['--systemd=always']},
                     'sid': {'run': ['--systemd=false']}}}


def platforms(recipe, scenario='s'):
    text = labctl.molecule_platforms(recipe, scenario)
    return {item['name']: item['extra_opts'] for item in yaml.safe_load(text)}


@pytest.mark.parametrize('settings, expected', [
    ({}, {'s-bookworm': None, 's-trixie': None, 's-sid': None}),
    ({'fixtures': {'sid': 'h200-x1'}}, {'s-bookworm': None, 's-trixie': None, 's-sid': 'h200-x1'}),
    ({'distros': ['bookworm', 'sid'], 'fixtures': {'bookworm': 'h100-sxm5-80gb-x1'}}, {'s-bookworm': 'h100-sxm5-80gb-x1', 's-sid': None}),
])
def test_platforms(settings, expected):
    found = platforms(dict(RECIPE, molecule={'s': settings}))
    assert sorted(found) == sorted(expected)
    for name, fixture in expected.items():
        mounts = [opt for opt in found[name] if opt.startswith('--volume=${MOLECULE_PROJECT_DIRECTORY}/tests/fixtures/gpus/')]
        if fixture is None:
            assert mounts == []
        else:
            assert mounts[0].startswith('--volume=${MOLECULE_PROJECT_DIRECTORY}/tests/fixtures/gpus/%s:' % fixture)


def test_unknown_distro_is_refused():
    with pytest.raises(labctl.LabError, match='no such distro in the recipe: jessie'):
        platforms(dict(RECIPE, molecule={'s': {'distros': ['jessie', 'sid']}}))
