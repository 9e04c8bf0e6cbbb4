# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The docker_nvidia_runtime module end to end on temporary files."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.modules import docker_nvidia_runtime
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_config import STATE_SUFFIX
from tests.module_runner import run_module

ORIGINAL = b'{\n    "log-driver": "journald",\n    "default-runtime": "runc"\n}\n'


# The support matrix rows this module proves (tools/support_matrix.py collects them into the README).
SUPPORT_MATRIX = [
    {'os': 'any', 'runtime': 'Docker', 'distribution': 'none (docker.service)', 'evidence': 'tested with captured or simulated parts',
     'how': 'the module on a config file in a temporary directory; no Docker runs',
     'test': 'tests/unit/plugins/modules/test_docker_nvidia_runtime.py::test_present_absent_roundtrip'},
]


def run(capsys, failed=False, **args):
    return run_module(capsys, docker_nvidia_runtime.main, args, failed=failed)


@pytest.fixture
def daemon_json(tmp_path):
    path = tmp_path / 'daemon.json'
    path.write_bytes(ORIGINAL)
    path.chmod(0o640)
    return path


def test_present_absent_roundtrip(capsys, daemon_json):
    result = run(capsys, path=str(daemon_json), set_as_default=True, enable_cdi=True, variants=['cdi'], backup=True)
    assert result['changed'] is True and result['runtimes'] == ['nvidia', 'nvidia-cdi']
    assert result['default_runtime'] == 'nvidia' and result['previous_default_runtime'] == 'runc'
    with open(result['backup_file'], 'rb') as handle:
        assert handle.read() == ORIGINAL
    written = json.loads(daemon_json.read_bytes())
    assert list(written) == ['log-driver', 'default-runtime', 'runtimes', 'features'] and written['features'] == {'cdi': True}
    assert stat.S_IMODE(daemon_json.stat().st_mode) == 0o640
    state = daemon_json.parent / (daemon_json.name + STATE_SUFFIX)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert run(capsys, path=str(daemon_json), set_as_default=True, enable_cdi=True, variants=['cdi'])['changed'] is False

    removed = run(capsys, path=str(daemon_json), state='absent')
    assert removed['changed'] is True and removed['default_runtime'] == 'runc'
    assert daemon_json.read_bytes() == ORIGINAL and not state.exists()
    assert run(capsys, path=str(daemon_json), state='absent')['changed'] is False


def test_check_mode_and_diff(capsys, daemon_json):
    result = run(capsys, path=str(daemon_json), _ansible_check_mode=True, _ansible_diff=True)
    assert result['changed'] is True and daemon_json.read_bytes() == ORIGINAL
    assert os.listdir(daemon_json.parent) == ['daemon.json']
    assert [entry['before'] for entry in result['diff']] == [ORIGINAL.decode()]
    assert '"nvidia"' in result['diff'][0]['after']


def test_missing_file_created_then_removed(capsys, tmp_path):
    path = tmp_path / 'daemon.json'
    run(capsys, path=str(path))
    assert json.loads(path.read_bytes()) == {'runtimes': {'nvidia': {'path': '/usr/bin/nvidia-container-runtime', 'args': []}}}
    run(capsys, path=str(path), state='absent')
    assert os.listdir(tmp_path) == []


def test_invalid_json_fails_and_leaves_file_untouched(capsys, tmp_path):
    path = tmp_path / 'daemon.json'
    path.write_bytes(b'{"debug": true,}\n')
    result = run(capsys, path=str(path), failed=True)
    assert result['failed'] is True and 'invalid JSON at line 1, column 16' in result['msg']
    assert path.read_bytes() == b'{"debug": true,}\n' and os.listdir(tmp_path) == ['daemon.json']


def test_directory_fails_clearly(capsys, tmp_path):
    result = run(capsys, path=str(tmp_path), failed=True)
    assert result['failed'] is True and 'is a directory' in result['msg']
