# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""nfd_labels, nvidia_driver and gpu_node_doctor through real ansible-playbook, their options written as inventory
YAML, with odd paths: a sysfs_root that is no sysfs, an nvidia_smi that cannot be run, an nvidia-smi that prints
nothing, a PCI view that disagrees with nvidia-smi, a driver record of the wrong shape, a validations directory that
cannot be created.

The node is the real H200 capture (tests/fixtures/gpus/h200-x1: sysfs, procfs, and nvidia-smi through the lab
simulator); every path the modules read or write is the capture's or the test's temporary directory.
All cases run in one playbook (tests/node_playbook.py); each test asserts its own steps.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess

import pytest

from tests.node_playbook import Step, outcome, run_steps
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, SIMULATOR

H200 = os.path.join(GPUS, 'h200-x1')
SERVE_H200 = {'GPUOPS_LAB_GPU_FIXTURE': H200}
# Where a containerized driver puts nvidia-smi (the example), under the test's directory: not there yet.
DRIVER_ROOT_SMI = os.path.join('run', 'nvidia', 'driver', 'usr', 'bin', 'nvidia-smi')


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    top = tmp_path_factory.mktemp('discovery-node')
    paths = dict(missing_sysfs=str(top / 'no-sys'), driver_smi=str(top / DRIVER_ROOT_SMI), record=str(top / 'nvidia_driver.json'),
                 bad_record=str(top / 'bad-record.json'), blocked=str(top / 'a-file' / 'validations'), silent_smi=str(top / 'silent-nvidia-smi'),
                 directory_smi=str(top), plain_smi=str(top / 'plain-nvidia-smi'), locked=str(top / 'locked' / 'validations'))
    (top / 'a-file').write_text('not a directory\n')
    # A directory no one may create entries in (root included): the unwritable validations directory.
    (top / 'locked').mkdir()
    locked = _immutable(top / 'locked', True)
    # The record: the right keys, the wrong types.
    (top / 'bad-record.json').write_text(json.dumps(dict(manager='apt', packages=5, installed=3, held=1, files=7)))
    (top / 'silent-nvidia-smi').write_text('#!/bin/sh\nexit 0\n')
    (top / 'silent-nvidia-smi').chmod(0o755)
    (top / 'plain-nvidia-smi').write_text('#!/bin/sh\n')
    h200 = dict(sysfs_root=os.path.join(H200, 'sys'), procfs_root=os.path.join(H200, 'proc'))
    labels = dict(h200, apply=False, nvidia_smi=SIMULATOR, os_release_path=os.path.join(H200, 'host', 'os-release'),
                  driver_record_file=paths['record'])
    driver = dict(h200, nvidia_smi=SIMULATOR, state='validated', os_release_path=os.path.join(H200, 'host', 'os-release'),
                  record_file=paths['record'], validations_dir=str(top / 'validations'), modprobe_dir=str(top / 'modprobe.d'))
    doctor = dict(h200, nvidia_smi=SIMULATOR, runtime='containerd', containerd_config=str(top / 'config.toml'),
                  device_plugin_dir=str(top / 'device-plugins'))
    cpu_sysfs = os.path.join(GPUS, 'cpu-only', 'sys')
    steps = [
        # Item 4: a sysfs_root that is no sysfs, and a PCI view that shows none of the GPUs nvidia-smi lists.
        Step('labels_missing_sysfs', 'nfd_labels', dict(labels, sysfs_root=paths['missing_sysfs']), environment=SERVE_H200),
        Step('driver_missing_sysfs', 'nvidia_driver', dict(driver, sysfs_root=paths['missing_sysfs']), environment=SERVE_H200),
        Step('doctor_missing_sysfs', 'gpu_node_doctor', dict(doctor, sysfs_root=paths['missing_sysfs']), environment=SERVE_H200),
        Step('labels_disagree', 'nfd_labels', dict(labels, sysfs_root=cpu_sysfs), environment=SERVE_H200),
        Step('driver_disagree', 'nvidia_driver', dict(driver, sysfs_root=cpu_sysfs), environment=SERVE_H200),
        Step('doctor_disagree', 'gpu_node_doctor', dict(doctor, sysfs_root=cpu_sysfs), environment=SERVE_H200),
        # Item 6: nvidia_smi where the driver will be, before it is installed; a directory; a file that is not executable.
        Step('labels_driver_root_smi', 'nfd_labels', dict(labels, nvidia_smi=paths['driver_smi'])),
        Step('labels_directory_smi', 'nfd_labels', dict(labels, nvidia_smi=paths['directory_smi'])),
        Step('labels_plain_smi', 'nfd_labels', dict(labels, nvidia_smi=paths['plain_smi'])),
        Step('driver_driver_root_smi', 'nvidia_driver', dict(driver, nvidia_smi=paths['driver_smi'])),
        Step('doctor_driver_root_smi', 'gpu_node_doctor', dict(doctor, nvidia_smi=paths['driver_smi'])),
        # Item 7: an nvidia-smi that prints nothing.
        Step('labels_silent_smi', 'nfd_labels', dict(labels, nvidia_smi=paths['silent_smi'])),
        Step('driver_silent_smi', 'nvidia_driver', dict(driver, nvidia_smi=paths['silent_smi'])),
        # Item 8: a record of the wrong types; a validations directory that cannot be created (in check mode too: item 5).
        Step('driver_bad_record', 'nvidia_driver', dict(driver, state='absent', record_file=paths['bad_record']), environment=SERVE_H200),
        Step('driver_blocked_check', 'nvidia_driver', dict(driver, validations_dir=paths['blocked']), environment=SERVE_H200,
             check_mode=True),
        Step('driver_blocked', 'nvidia_driver', dict(driver, validations_dir=paths['blocked']), environment=SERVE_H200),
        Step('driver_locked_check', 'nvidia_driver', dict(driver, validations_dir=paths['locked']), environment=SERVE_H200, check_mode=True),
        Step('driver_locked', 'nvidia_driver', dict(driver, validations_dir=paths['locked']), environment=SERVE_H200),
        # Item 5: nfd_labels' feature file in a directory that does not exist, in check mode.
        Step('labels_features_check', 'nfd_labels', dict(labels, features_d=str(top / 'no-features.d' / 'gpuops')), environment=SERVE_H200,
             check_mode=True),
    ]
    try:
        results, output = run_steps(top, steps)
    finally:
        if locked:
            _immutable(top / 'locked', False)
    return dict(results=results, paths=paths, top=top, output=output, locked=locked)


def _immutable(path, on):
    """chattr +i / -i; False when this machine cannot (no CAP_LINUX_IMMUTABLE, or a file system without the flag)."""
    return subprocess.run(['chattr', '+i' if on else '-i', str(path)], capture_output=True, check=False).returncode == 0


def result(node, name):
    return node['results'][name]


@pytest.mark.parametrize('step', ['labels_missing_sysfs', 'driver_missing_sysfs', 'doctor_missing_sysfs'])
def test_a_sysfs_root_that_does_not_exist_fails(node, step):
    msg = outcome(result(node, step), failed=True)
    assert msg.startswith('sysfs_root: %s does not exist' % node['paths']['missing_sysfs']), msg


def test_labels_warn_when_pci_and_nvidia_smi_disagree(node):
    labels = result(node, 'labels_disagree')
    outcome(labels, failed=False)
    assert any(warning.startswith('nvidia-smi lists 1 GPU(s) that the PCI bus under %s does not show (0000:00:06.0)' % os.path.join(
        GPUS, 'cpu-only', 'sys')) for warning in labels['warnings']), labels.get('warnings')


def test_the_driver_warns_when_pci_and_nvidia_smi_disagree(node):
    driver = result(node, 'driver_disagree')
    outcome(driver, failed=False)
    assert driver['gpu_count'] == 0 and any('nvidia-smi lists 1 GPU(s) that the PCI bus' in warning for warning in driver['warnings'])


def test_the_doctor_does_not_call_it_a_cpu_node_when_nvidia_smi_lists_gpus(node):
    doctor = result(node, 'doctor_disagree')
    outcome(doctor, failed=False)
    checks = [item['check'] for item in doctor['findings']]
    assert 'no-gpu' not in checks and 'gpu-not-on-pci' in checks


@pytest.mark.parametrize('step, problem', [
    ('labels_driver_root_smi', '{driver_smi} does not exist'),
    ('labels_directory_smi', '{directory_smi} is a directory, not a program'),
    ('labels_plain_smi', '{plain_smi} is not executable'),
])
def test_labels_warn_what_is_wrong_with_nvidia_smi(node, step, problem):
    labels = result(node, step)
    outcome(labels, failed=False)
    said = 'nvidia_smi: ' + problem.format(**node['paths'])
    assert labels['labels']['nvidia.com/gpu.present'] == 'true' and any(said in warning for warning in labels['warnings']), labels['warnings']


def test_the_driver_names_the_nvidia_smi_it_cannot_run(node):
    msg = outcome(result(node, 'driver_driver_root_smi'), failed=True)
    assert msg == ('the NVIDIA kernel module 580.159.04 is loaded but nvidia-smi fails: nvidia_smi: %s does not exist'
                   % node['paths']['driver_smi'])


def test_the_doctor_reports_the_nvidia_smi_it_cannot_run(node):
    doctor = result(node, 'doctor_driver_root_smi')
    outcome(doctor, failed=False)
    [found] = [item for item in doctor['findings'] if item['check'] == 'nvidia-smi-missing']
    assert found['summary'] == 'the NVIDIA kernel module 580.159.04 is loaded but nvidia_smi: %s does not exist' % node['paths']['driver_smi']


@pytest.mark.parametrize('step', ['labels_silent_smi', 'driver_silent_smi'])
def test_empty_output_names_the_binary(node, step):
    assert outcome(result(node, step), failed=True) == '%s -q -x: printed nothing' % node['paths']['silent_smi']


def test_a_record_of_the_wrong_types_is_named(node):
    msg = outcome(result(node, 'driver_bad_record'), failed=True)
    assert msg.startswith('%s is not the record nvidia_driver writes: packages must be a list of package names; fix or remove it'
                          % node['paths']['bad_record'])


@pytest.mark.parametrize('step', ['driver_blocked_check', 'driver_blocked'])
def test_a_validations_directory_that_cannot_be_made_fails_clearly(node, step):
    # Under a regular file: found when the module reads what is there, before it changes anything.
    assert outcome(result(node, step), failed=True) == 'cannot read %s/driver-ready: Not a directory' % node['paths']['blocked']
    assert not os.path.exists(node['paths']['record'])


@pytest.mark.parametrize('step', ['driver_locked_check', 'driver_locked'])
def test_a_validations_directory_that_cannot_be_created_fails_clearly(node, step):
    if not node['locked']:
        pytest.skip('chattr +i is not possible here (needs CAP_LINUX_IMMUTABLE and a file system with the flag)')
    # Was a raw PermissionError from os.makedirs; now found before any step, in check mode too.
    locked = node['paths']['locked']
    assert outcome(result(node, step), failed=True) == ('cannot write %s/driver-ready: directory %s is not writable (read-only file system or '
                                                        'permissions)' % (locked, os.path.dirname(locked)))


def test_check_mode_fails_for_a_features_directory_that_does_not_exist(node):
    msg = outcome(result(node, 'labels_features_check'), failed=True)
    assert msg == 'cannot write %s: directory %s does not exist' % (node['top'] / 'no-features.d' / 'gpuops', node['top'] / 'no-features.d')
