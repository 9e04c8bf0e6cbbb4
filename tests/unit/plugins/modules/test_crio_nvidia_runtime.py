# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The crio_nvidia_runtime module end to end on temporary files."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest
import tomlkit

from ansible_collections.gpuops.gpu_operator.plugins.modules import crio_nvidia_runtime
from tests.module_runner import run_module


# The support matrix rows this module proves (tools/support_matrix.py collects them into the README).
SUPPORT_MATRIX = [
    {'os': 'any', 'runtime': 'CRI-O', 'distribution': 'none (crio.service)', 'evidence': 'tested with captured or simulated parts',
     'how': 'the module on a config file in a temporary directory; no CRI-O runs',
     'test': 'tests/unit/plugins/modules/test_crio_nvidia_runtime.py::test_drop_in_written_and_removed_state_outside_the_directory'},
]


def run(capsys, failed=False, **args):
    return run_module(capsys, crio_nvidia_runtime.main, args, failed=failed)


def test_drop_in_written_and_removed_state_outside_the_directory(capsys, tmp_path):
    conf_d = tmp_path / 'crio.conf.d'
    conf_d.mkdir()
    path = conf_d / '99-nvidia.conf'
    result = run(capsys, path=str(path), set_as_default=True, variants=['cdi'])
    assert result['changed'] is True and result['default_runtime'] == 'nvidia' and 'backup_file' not in result
    assert os.listdir(conf_d) == ['99-nvidia.conf']  # CRI-O loads every file here
    assert sorted(os.listdir(tmp_path)) == ['crio.conf.d', 'crio.conf.d.99-nvidia.conf.gpuops-nvidia-runtime.json']
    doc = tomlkit.parse(path.read_text())
    assert doc['crio']['runtime']['runtimes']['nvidia-cdi'] == {'runtime_path': '/usr/bin/nvidia-container-runtime.cdi', 'runtime_type': 'oci'}
    assert run(capsys, path=str(path), set_as_default=True, variants=['cdi'])['changed'] is False
    assert run(capsys, path=str(path), state='absent')['changed'] is True
    assert os.listdir(tmp_path) == ['crio.conf.d'] and os.listdir(conf_d) == []


@pytest.mark.parametrize('args', [{'enable_cdi': True}, {'backup': True}])
def test_options_crio_does_not_have_are_refused(capsys, tmp_path, args):
    result = run(capsys, path=str(tmp_path / '99-nvidia.conf'), **args, failed=True)
    assert result['failed'] is True and 'Unsupported parameters' in result['msg']


def test_missing_directory_fails_clearly(capsys, tmp_path):
    result = run(capsys, path=str(tmp_path / 'crio.conf.d' / '99-nvidia.conf'), failed=True)
    assert result['failed'] is True and 'does not exist' in result['msg']
