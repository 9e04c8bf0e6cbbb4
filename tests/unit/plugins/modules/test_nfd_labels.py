# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The nfd_labels module without an API (apply=false): compute, features.d file, check mode, bad input."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import stat
import time

import pytest
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.modules import nfd_labels
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, MISSING, SIMULATOR
from tests.module_runner import run_module
from tests.unit.plugins.module_utils.driver.test_driver_state import multi_gpu_sysfs


def run(capsys, monkeypatch, fixture, smi_fixture=None, failed=False, **args):
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', smi_fixture or os.path.join(GPUS, fixture))
    root = os.path.join(GPUS, fixture)
    # Every path the module reads is the fixture's or a missing one: none of the machine running the tests.
    args = dict(dict(apply=False, sysfs_root=os.path.join(root, 'sys'), procfs_root=os.path.join(root, 'proc'), nvidia_smi=SIMULATOR,
                     os_release_path=MISSING, driver_record_file=MISSING), **args)
    return run_module(capsys, nfd_labels.main, args, failed=failed)


def test_compute_only(capsys, monkeypatch):
    result = run(capsys, monkeypatch, 'h100-sxm5-80gb-x1', deploy={'driver': 'pre-installed', 'dcgm': False})
    assert result['changed'] is False and result['added'] == result['updated'] == result['removed'] == []
    labels = result['labels']
    assert labels['nvidia.com/gpu.product'] == 'NVIDIA-H100-80GB-HBM3' and labels['nvidia.com/gpu.family'] == 'hopper'
    assert labels['nvidia.com/gpu.deploy.driver'] == 'pre-installed' and labels['nvidia.com/gpu.deploy.dcgm'] == 'false'
    assert result['discovery']['proc_driver_version'] == '590.48.01' and len(result['discovery']['nvidia_smi_errors']) == 1


@pytest.mark.parametrize('fixture, smi_fixture, present', [
    ('h100-sxm5-80gb-x1', None, True),
    # No driver: nvidia-smi answers like one without a loaded driver; the PCI bus shows the GPU all the same.
    ('t4', 'cpu-only', True),
    # A VirtualBox guest: its VGA controller is not NVIDIA's.
    ('cpu-only', None, False),
])
def test_gpu_present_says_whether_the_operator_would_count_the_node(capsys, monkeypatch, fixture, smi_fixture, present):
    """site.yml ends a node after its labels on gpu_present false (issue #25): nothing installed on a CPU-only node."""
    result = run(capsys, monkeypatch, fixture, smi_fixture=smi_fixture and os.path.join(GPUS, smi_fixture))
    assert result['gpu_present'] is present
    assert ('nvidia.com/gpu.present' in result['labels']) is present
    # Given labels are not the node's: nothing is said of its GPUs.
    assert run(capsys, monkeypatch, fixture, labels={})['gpu_present'] is None


def test_nvidia_smi_failure_is_a_warning(capsys, monkeypatch):
    # Recorded at the call: where they end up depends on whether controller code
    # (a filter plugin in another test) was imported into this process first.
    warnings = []
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, msg: warnings.append(msg))
    result = run(capsys, monkeypatch, 't4', smi_fixture=os.path.join(GPUS, 'cpu-only'))
    assert 'failed' not in result and result['labels']['nvidia.com/gpu.present'] == 'true'
    assert any('nvidia-smi gave no GPU data' in w for w in warnings), warnings


def test_malformed_xml_fails_clearly(capsys, monkeypatch, tmp_path):
    broken = tmp_path / 'broken'
    shutil.copytree(os.path.join(GPUS, 't4'), broken)
    xml = broken / 'nvidia-smi' / 'q-x.xml'
    xml.write_text(xml.read_text()[:3000])  # the real capture, cut short
    result = run(capsys, monkeypatch, 't4', smi_fixture=str(broken), failed=True)
    # The message names the binary that printed it.
    assert result['msg'].startswith('%s -q -x: printed malformed XML: no element found' % SIMULATOR)


def test_a_gpu_nvidia_smi_does_not_list_is_not_labelled_away(capsys, monkeypatch, tmp_path):
    """Issue #28 item 6: four GPUs on the PCI bus (multi_gpu_sysfs), nvidia-smi lists one: no gpu.count=1; the run fails
    naming the missing bus ids and writes no feature file."""
    features = tmp_path / 'features.d' / 'gpuops'
    features.parent.mkdir()
    result = run(capsys, monkeypatch, 'h200-x1', sysfs_root=multi_gpu_sysfs(tmp_path / 'sys'), features_d=str(features), failed=True)
    assert result['msg'].startswith('the labels are not computed: nvidia-smi lists 1 GPU(s) but not every NVIDIA GPU on the PCI bus; '
                                    'missing: 0000:00:09.0 (no driver bound), 0000:00:1e.0 (no driver bound), 0000:01:00.0 (no driver bound).')
    assert 'exception' not in result and result['labels'] == {} and not features.exists()
    assert [dev['address'] for dev in result['discovery']['unlisted']] == ['0000:00:09.0', '0000:00:1e.0', '0000:01:00.0']


def test_features_file_lifecycle(capsys, monkeypatch, tmp_path):
    path = tmp_path / 'features.d' / 'gpuops'
    path.parent.mkdir()
    checked = run(capsys, monkeypatch, 't4', features_d=str(path), _ansible_check_mode=True, _ansible_diff=True)
    assert checked['changed'] is True and not path.exists() and 'nvidia.com/gpu.product=Tesla-T4' in checked['diff'][0]['after']
    written = run(capsys, monkeypatch, 't4', features_d=str(path))
    assert written['changed'] is True and 'nvidia.com/gpu.product=Tesla-T4\n' in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert run(capsys, monkeypatch, 't4', features_d=str(path))['changed'] is False
    # A node without GPU labels has nothing to feed NFD.
    assert run(capsys, monkeypatch, 'cpu-only', features_d=str(path))['changed'] is True and not path.exists()
    run(capsys, monkeypatch, 't4', features_d=str(path))
    assert run(capsys, monkeypatch, 't4', features_d=str(path), state='absent')['changed'] is True and not path.exists()


def test_features_dir_missing_fails(capsys, monkeypatch, tmp_path):
    result = run(capsys, monkeypatch, 't4', features_d=str(tmp_path / 'nope' / 'gpuops'), failed=True)
    assert result['failed'] is True and 'does not exist' in result['msg']


def test_given_labels_skip_discovery(capsys, monkeypatch):
    result = run(capsys, monkeypatch, 'cpu-only', labels={'nvidia.com/gpu.present': 'true'})
    assert result['labels'] == {'nvidia.com/gpu.present': 'true'} and result['discovery'] is None
    bad = run(capsys, monkeypatch, 'cpu-only', labels={'nvidia.com/gpu.count': 8}, failed=True)
    assert bad['failed'] is True and 'labels: nvidia.com/gpu.count: value 8 is not a valid label value' in bad['msg']


def test_apply_needs_node_name(capsys, monkeypatch):
    result = run(capsys, monkeypatch, 't4', apply=True, failed=True)
    assert result['failed'] is True and 'node_name' in result['msg']


def test_deploy_driver_follows_the_driver_on_the_node(capsys, monkeypatch, tmp_path):
    record = tmp_path / 'nvidia_driver.json'
    # h200-x1 (real capture): a loaded module nvidia_driver did not install is pre-installed; t4 (no module loaded)
    # gets the driver deployed; a record of installed packages makes the driver ours.
    labels = run(capsys, monkeypatch, 'h200-x1', driver_record_file=str(record))['labels']
    assert labels['nvidia.com/gpu.deploy.driver'] == 'pre-installed'
    assert run(capsys, monkeypatch, 't4', driver_record_file=str(record))['labels']['nvidia.com/gpu.deploy.driver'] == 'true'
    record.write_text('{"manager": "apt", "packages": ["nvidia-driver"], "installed": ["nvidia-driver"], "held": [], "files": {}}')
    labels = run(capsys, monkeypatch, 'h200-x1', driver_record_file=str(record))['labels']
    assert labels['nvidia.com/gpu.deploy.driver'] == 'true'
    given = run(capsys, monkeypatch, 'h200-x1', driver_record_file=str(record), deploy={'driver': 'false'})['labels']
    assert given['nvidia.com/gpu.deploy.driver'] == 'false'


def test_a_corrupt_driver_record_fails_clearly(capsys, monkeypatch, tmp_path):
    record = tmp_path / 'nvidia_driver.json'
    record.write_text('{not json')
    result = run(capsys, monkeypatch, 'h200-x1', driver_record_file=str(record), failed=True)
    assert result['failed'] and str(record) in result['msg']


def test_a_hanging_nvidia_smi_is_stopped(capsys, monkeypatch, tmp_path):
    # A real hang (exec sleep) under the real coreutils timeout; the limit is lowered from 60 s to keep the test short.
    hanging = tmp_path / 'nvidia-smi'
    hanging.write_text('#!/bin/sh\nexec /bin/sleep 600\n')
    hanging.chmod(0o755)
    monkeypatch.setattr(gpu_discovery, 'NVIDIA_SMI_TIMEOUT', 1)
    warnings = []
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, message: warnings.append(message))
    started = time.monotonic()
    result = run(capsys, monkeypatch, 'h200-x1', nvidia_smi=str(hanging))
    # One query waited; the other two were not tried after it.
    assert time.monotonic() - started < 10
    assert result['labels']['nvidia.com/gpu.present'] == 'true' and 'nvidia.com/gpu.product' not in result['labels']
    assert result['discovery']['nvidia_smi_errors'] == ['%s -q -x failed (rc=124): %s -q -x did not finish within 1 s and was stopped'
                                                        % (hanging, hanging)]
    assert any('did not finish within 1 s' in warning for warning in warnings)
