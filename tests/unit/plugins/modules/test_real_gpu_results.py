# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node modules on the h200-x1 fixture give what they gave on the real H200 it was captured from.

tests/fixtures/gpus/h200-x1/module-results/ holds the modules' output on that host (see SOURCE.md there); run on the
captured sysfs/procfs and the nvidia-smi simulator, they must agree in everything that describes the node.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.modules import nfd_labels, nvidia_driver
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, SIMULATOR
from tests.module_runner import run_module

FIXTURE = os.path.join(GPUS, 'h200-x1')


def real(name):
    with open(os.path.join(FIXTURE, 'module-results', name)) as stream:
        return json.load(stream)


def roots(monkeypatch):
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', FIXTURE)
    return dict(sysfs_root=os.path.join(FIXTURE, 'sys'), procfs_root=os.path.join(FIXTURE, 'proc'), nvidia_smi=SIMULATOR)


def test_nvidia_driver_validated_matches_the_real_run(capsys, monkeypatch, tmp_path):
    expected = real('nvidia_driver-validated.json')
    result = run_module(capsys, nvidia_driver.main, dict(
        roots(monkeypatch), state='validated', validations_dir=str(tmp_path / 'validations'),
        record_file=str(tmp_path / 'record.json'), os_release_path=os.path.join(FIXTURE, 'host', 'os-release')))
    for key in ('gpus', 'gpu_count', 'nvswitch_count', 'driver', 'deploy_driver_label', 'nouveau_loaded',
                'secure_boot', 'reboot_required', 'packages', 'changed'):
        assert result[key] == expected[key], key
    # That run predates the validator's three other keys, the same for every host driver: its two lines lead the file.
    ready = (tmp_path / 'validations' / 'driver-ready').read_text()
    assert ready == expected['diff'][0]['after'] + 'DRIVER_ROOT_CTR_PATH=/host\nNVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n'


def test_nfd_labels_match_the_real_run(capsys, monkeypatch, tmp_path):
    expected = real('nfd_labels-mig-single.json')
    # No nvidia_driver record, as on that host (not the one, if any, of the machine running the tests).
    result = run_module(capsys, nfd_labels.main, dict(
        roots(monkeypatch), apply=False, mig_strategy='single', os_release_path=os.path.join(FIXTURE, 'host', 'os-release'),
        driver_record_file=str(tmp_path / 'no-record.json')))
    # That run predates nfd_labels deriving gpu.deploy.driver from the node (it then always said true); it must now
    # agree with what nvidia_driver reported on the real host.
    assert result['labels'].pop('nvidia.com/gpu.deploy.driver') == real('nvidia_driver-validated.json')['deploy_driver_label']
    assert expected['labels'].pop('nvidia.com/gpu.deploy.driver') == 'true'
    # It also predates nvidia.com/gpu.deploy.client, a state label the Operator writes on every GPU node (the contract's).
    assert result['labels'].pop('nvidia.com/gpu.deploy.client') == 'true' and 'nvidia.com/gpu.deploy.client' not in expected['labels']
    assert result['labels'] == expected['labels']
    # That run was on the first of the two H200s captured (SOURCE.md): all but the UUID describe both.
    without_uuid = [dict(gpu, uuid=None) for gpu in result['discovery']['gpus']]
    assert without_uuid == [dict(gpu, uuid=None) for gpu in expected['discovery']['gpus']]


# --- h100-x1: the collection run on a real H100 (tests/fixtures/gpus/h100-x1/SOURCE.md) -------------------------------

H100 = os.path.join(GPUS, 'h100-x1')


def h100_real(name):
    with open(os.path.join(H100, 'module-results', name)) as stream:
        return json.load(stream)


def h100_roots(monkeypatch):
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', H100)
    return dict(sysfs_root=os.path.join(H100, 'sys'), procfs_root=os.path.join(H100, 'proc'), nvidia_smi=SIMULATOR,
                os_release_path=os.path.join(H100, 'host', 'os-release'))


@pytest.mark.parametrize('case', ['validated-check', 'validated'])
def test_h100_nvidia_driver_matches_the_real_run(capsys, monkeypatch, tmp_path, case):
    expected = h100_real('nvidia_driver-%s.json' % case)
    result = run_module(capsys, nvidia_driver.main, dict(
        h100_roots(monkeypatch), state='validated', validations_dir=str(tmp_path / 'validations'),
        record_file=str(tmp_path / 'record.json'), _ansible_check_mode=case.endswith('check')))
    for key in ('gpus', 'gpu_count', 'nvswitch_count', 'driver', 'deploy_driver_label', 'nouveau_loaded',
                'secure_boot', 'reboot_required', 'packages', 'changed'):
        assert result[key] == expected[key], key
    assert [action.split(' ')[0] for action in result['actions']] == [action.split(' ')[0] for action in expected['actions']]


def test_h100_driver_ready_matches_the_real_file(capsys, monkeypatch, tmp_path):
    run_module(capsys, nvidia_driver.main, dict(
        h100_roots(monkeypatch), state='validated', validations_dir=str(tmp_path / 'validations'),
        record_file=str(tmp_path / 'record.json')))
    with open(os.path.join(H100, 'module-results', 'driver-ready')) as stream:
        assert (tmp_path / 'validations' / 'driver-ready').read_text() == stream.read()


@pytest.mark.parametrize('case', ['mig-none', 'mig-single', 'mig-mixed', 'time-slicing-4', 'mps-2'])
def test_h100_labels_match_the_real_run(capsys, monkeypatch, case):
    expected = h100_real('nfd_labels-%s.json' % case)
    given = expected['invocation']['module_args']
    result = run_module(capsys, nfd_labels.main, dict(
        h100_roots(monkeypatch), apply=False, mig_strategy=given['mig_strategy'], sharing=given['sharing'],
        _ansible_check_mode=True))
    # Those runs predate nvidia.com/gpu.deploy.client (a state label the Operator writes on every GPU node).
    assert result['labels'].pop('nvidia.com/gpu.deploy.client') == 'true' and 'nvidia.com/gpu.deploy.client' not in expected['labels']
    assert result['labels'] == expected['labels']
    assert result['discovery']['gpus'] == expected['discovery']['gpus']
