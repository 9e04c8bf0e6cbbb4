# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Shared by the nfd_labels tests: the captured GPU fixtures and the lab nvidia-smi simulator serving them."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import subprocess

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery

GPUS = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'fixtures', 'gpus'))
SIMULATOR = os.path.join(GPUS, 'gpuops-lab-nvidia-smi')
MISSING = os.path.join(GPUS, 'no-such-file')

# `nvidia-smi -L` of an A100-SXM4-40GB with two 1c.3g.20gb MIG devices, as published in the comments of
# deephyper/scalable-bo, experiments/thetagpu/mig-example.sh (ThetaGPU at ALCF): the only public -L capture
# with MIG lines found; no -q -x of that machine exists, so it is used on its own.
A100_40GB_MIG_LIST = (
    'GPU 0: A100-SXM4-40GB (UUID: GPU-2fa5cf01-9520-1bc1-995b-cc0c6d9bca7c)\n'
    '  MIG 1c.3g.20gb Device 0: (UUID: MIG-GPU-2fa5cf01-9520-1bc1-995b-cc0c6d9bca7c/1/0)\n'
    '  MIG 1c.3g.20gb Device 1: (UUID: MIG-GPU-2fa5cf01-9520-1bc1-995b-cc0c6d9bca7c/2/0)\n'
)


def sim_runner(fixture_dir):
    """A runner (argv -> rc, out, err) for the simulator serving `fixture_dir`, as the module runs nvidia-smi."""
    env = dict(os.environ, GPUOPS_LAB_GPU_FIXTURE=fixture_dir, **commands.C_LOCALE)

    def run(argv):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    return run


def facts_of(name, smi_fixture=None, os_release_path=MISSING):
    """gather() on a captured fixture; nvidia-smi may serve another fixture (cpu-only: the driver is not loaded)."""
    root = os.path.join(GPUS, name)
    return gpu_discovery.gather(sim_runner(os.path.join(GPUS, smi_fixture or name)), os.path.join(root, 'sys'), os.path.join(root, 'proc'),
                                os_release_path, SIMULATOR)


def listing_only_runner(listing):
    """nvidia-smi that answers -L with a published capture and, like the simulator, refuses what was not captured."""
    def run(argv):
        if argv[1:] == ['-L']:
            return 0, listing, ''
        return 3, '', 'not captured'
    return run
