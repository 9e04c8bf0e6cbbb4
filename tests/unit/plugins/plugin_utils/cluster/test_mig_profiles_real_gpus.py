# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The MIG profiles of default-mig-parted-config against what real GPUs offer.

The profile table carries over the GPU Operator's facts (module_utils/k8s/mig_profiles.py names its source); the
real captures (tests/fixtures/gpus/<name>/nvidia-smi/mig-lgip.txt, `nvidia-smi mig -lgip` on the GPU) say which
GPU instance profiles each model offers. A node labelled nvidia.com/mig.config=<name> can only be partitioned as
that config says if every profile it names for the node's model is one the GPU offers.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import mig_profiles
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS

LGIP_PROFILE = re.compile(r'^\|\s+\d+\s+MIG (\S+)\s+\d+\s+\d+/\d+', re.M)
REAL_CAPTURES = ('h100-x1', 'h200-x1')


def offered(fixture):
    """(PCI device filter as the config writes it, profiles the GPU offers) of a real capture."""
    with open(os.path.join(GPUS, fixture, 'nvidia-smi', 'mig-lgip.txt')) as stream:
        profiles = set(LGIP_PROFILE.findall(stream.read()))
    devices = os.path.join(GPUS, fixture, 'sys', 'bus', 'pci', 'devices')
    (address,) = os.listdir(devices)
    with open(os.path.join(devices, address, 'device')) as stream:
        device = stream.read().strip()
    return '0x%s10DE' % device[2:].upper(), profiles


def filters_of(entry):
    found = entry.get('device-filter', [])
    return found if isinstance(found, list) else [found]


@pytest.mark.parametrize('fixture', REAL_CAPTURES)
def test_the_capture_lists_profiles(fixture):
    device_filter, profiles = offered(fixture)
    assert len(profiles) >= 6, (fixture, profiles)  # a 7-slice Hopper GPU offers at least 1g, 2g, 3g, 4g, 7g
    assert re.match(r'^0x[0-9A-F]{4}10DE$', device_filter)


@pytest.mark.parametrize('fixture', REAL_CAPTURES)
def test_every_config_for_the_model_names_only_profiles_it_offers(fixture):
    device_filter, profiles = offered(fixture)
    configs = mig_profiles.default_config()['mig-configs']
    for name, entries in configs.items():
        for entry in entries:
            if device_filter in filters_of(entry):
                unknown = set(entry.get('mig-devices', {})) - profiles
                assert not unknown, '%s for %s names %s, which the GPU does not offer (%s)' % (name, fixture, unknown, sorted(profiles))


@pytest.mark.parametrize('fixture', REAL_CAPTURES)
def test_the_balanced_config_covers_the_model(fixture):
    device_filter, _profiles = offered(fixture)
    balanced = mig_profiles.default_config()['mig-configs']['all-balanced']
    assert any(device_filter in filters_of(entry) for entry in balanced), 'all-balanced has no entry for %s' % fixture


@pytest.mark.parametrize('fixture', REAL_CAPTURES)
def test_every_offered_profile_has_an_all_config(fixture):
    _device_filter, profiles = offered(fixture)
    configs = mig_profiles.default_config()['mig-configs']
    missing = sorted(p for p in profiles if 'all-' + p.replace('+', '.') not in configs)
    assert not missing, '%s offers %s, for which the Operator ships no all-<profile> config' % (fixture, missing)
