# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Odd nvidia-smi output through discovery, nfd_labels and nvidia_driver (issue #28, items 6 and 11).

Item 6: two GPUs on the PCI bus, nvidia-smi lists one and exits 0: neither the validation nor the labels pass.
Item 11: the output is the real H200 capture (tests/fixtures/gpus/h200-x1) served by the lab simulator, changed on its way the
way drivers print it for a GPU in trouble or a broken terminal: NVML's error in brackets for a value it cannot read
(`[Unknown Error]`), a byte that is not UTF-8, a digit that is not ASCII. The runner decodes bytes as
AnsibleModule.run_command does (surrogate escapes). Every case ends in either the labels and the validation computed
from what could be read, or a clean failure whose message names the query and the field; never a traceback.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import subprocess

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.modules import nfd_labels, nvidia_driver
from tests.module_runner import run_module
from tests.unit.fault.fault_support import count
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, MISSING, SIMULATOR

H200 = os.path.join(GPUS, 'h200-x1')
XML, QUERY, LISTING = ('-q', '-x'), ('--query-gpu',), ('-L',)
BUS_ID = b'00000000:00:06.0'
SUITE = 'hostile nvidia-smi output'


def _failing(out):
    return None


# (case, the query whose output changes, how its bytes change (None: the query fails), the outcome):
# ('ok', check(facts)) or ('refused', what the message says).
CASES = [
    ('[Unknown Error] bus id in --query-gpu', QUERY, lambda out: out.replace(BUS_ID, b'[Unknown Error]'),
     ('ok', lambda facts: facts['gpus'][0]['address'] == '0000:00:06.0')),  # -q -x gives it
    ('[Unknown Error] bus id, -q -x failing', QUERY, lambda out: out.replace(BUS_ID, b'[Unknown Error]'),
     ('ok', lambda facts: facts['gpus'][0]['address'] is None and facts['unlisted'] == [])),
    ('[GPU requires reset] memory', QUERY, lambda out: out.replace(b'143771', b'[GPU requires reset]'),
     ('ok', lambda facts: facts['gpus'][0]['memory'] == 143771)),
    ('non-UTF-8 byte in -q -x', XML, lambda out: out.replace(b'<product_name>NVIDIA H200', b'<product_name>NVIDIA H200\xe9', 1),
     ('ok', lambda facts: facts['gpus'][0]['name'] == 'NVIDIA H200\ufffd')),
    ('non-UTF-8 byte in -L', LISTING, lambda out: out.replace(b'NVIDIA H200', b'NVIDIA\xff H200', 1),
     ('ok', lambda facts: facts['gpus'][0]['name'] == 'NVIDIA H200')),
    ('superscript digit as the index', QUERY, lambda out: b'\xc2\xb2' + out[1:],
     ('refused', SIMULATOR + " --query-gpu: line 1: index is '\u00b2', not a GPU index")),
    ('Arabic-Indic digit as the index', QUERY, lambda out: '\u0660'.encode('utf-8') + out[1:],
     ('refused', "line 1: index is '\u0660', not a GPU index")),
    ('superscript digit in attached_gpus', XML,
     lambda out: out.replace(b'<attached_gpus>1</attached_gpus>', '<attached_gpus>\u00b9</attached_gpus>'.encode('utf-8')),
     ('ok', lambda facts: len(facts['gpus']) == 1)),
]


def hostile_run_command(query, change, changed, xml_fails=False):
    """AnsibleModule.run_command for the simulator serving the H200, `query`'s output changed by `change` (each time
    noted in `changed`)."""
    def run_command(self, args, **kwargs):
        argv = list(args)
        proc = subprocess.run(argv, capture_output=True, env=dict(os.environ, GPUOPS_LAB_GPU_FIXTURE=H200), check=False)
        rc, out = proc.returncode, proc.stdout
        asked = tuple(argv[argv.index(SIMULATOR) + 1:])  # the module runs it under timeout(1)
        if asked == query or (query == QUERY and asked[0].startswith(QUERY[0])):
            out = change(out)
            changed.append(asked)
        if xml_fails and asked == XML:
            rc, out = 3, b''
        # As run_command decodes: bytes that are not UTF-8 become surrogate escapes.
        return rc, out.decode('utf-8', 'surrogateescape'), proc.stderr.decode('utf-8', 'surrogateescape')
    return run_command


def params(case):
    return dict(xml_fails='-q -x failing' in case)


@pytest.mark.parametrize('case, query, change, outcome', CASES, ids=[case[0] for case in CASES])
def test_discovery_takes_or_refuses_clearly(case, query, change, outcome):
    changed = []
    run_command = hostile_run_command(query, change, changed, **params(case))

    def run(argv):  # discovery's runner: argv -> (rc, out, err)
        return run_command(None, argv)
    kind, expected = outcome
    if kind == 'refused':
        with pytest.raises(gpu_discovery.DiscoveryError) as caught:
            gpu_discovery.gather(run, os.path.join(H200, 'sys'), os.path.join(H200, 'proc'), MISSING, SIMULATOR)
        assert str(caught.value).startswith(expected) if expected.startswith(SIMULATOR) else expected in str(caught.value)
    else:
        facts = gpu_discovery.gather(run, os.path.join(H200, 'sys'), os.path.join(H200, 'proc'), MISSING, SIMULATOR)
        assert expected(facts), facts['gpus']
    assert changed, 'the output was changed'
    count(SUITE, 'discovery cases')


@pytest.mark.parametrize('module, args', [
    (nfd_labels, dict(apply=False, driver_record_file=MISSING)),
    (nvidia_driver, dict(state='validated', record_file=MISSING)),
], ids=['nfd_labels', 'nvidia_driver'])
@pytest.mark.parametrize('case, query, change, outcome', CASES, ids=[case[0] for case in CASES])
def test_modules_succeed_or_fail_clearly(capsys, monkeypatch, tmp_path, module, args, case, query, change, outcome):
    changed = []
    monkeypatch.setattr(AnsibleModule, 'run_command', hostile_run_command(query, change, changed, **params(case)))
    monkeypatch.setattr(AnsibleModule, 'warn', lambda self, msg: None)
    paths = dict(validations_dir=str(tmp_path / 'validations'), modprobe_dir=str(tmp_path)) if module is nvidia_driver else {}
    kind, expected = outcome
    result = run_module(capsys, module.main, dict(args, sysfs_root=os.path.join(H200, 'sys'), procfs_root=os.path.join(H200, 'proc'),
                                                  nvidia_smi=SIMULATOR, os_release_path=MISSING, **paths), failed=kind == 'refused')
    assert 'exception' not in result and changed, 'a clean outcome of changed output'
    if kind == 'refused':
        assert expected in result['msg']
    elif module is nfd_labels:
        assert result['labels']['nvidia.com/gpu.count'] == '1' and expected(result['discovery']), result['discovery']['gpus']
    else:
        assert os.path.exists(os.path.join(str(tmp_path), 'validations', 'driver-ready'))
    count(SUITE, 'module runs')


@pytest.mark.parametrize('module, args, message', [
    (nfd_labels, dict(apply=False, driver_record_file=MISSING), 'the labels are not computed: '),
    (nvidia_driver, dict(state='validated', record_file=MISSING), 'the driver does not work on every GPU: '),
], ids=['nfd_labels', 'nvidia_driver'])
def test_a_second_gpu_missing_from_nvidia_smi_fails(capsys, monkeypatch, tmp_path, module, args, message):
    """The H200 and the A100 capture's GPU on one PCI bus (composed as multi_gpu_sysfs does), nvidia-smi serving the H200."""
    sysfs = tmp_path / 'sys'
    shutil.copytree(os.path.join(H200, 'sys'), str(sysfs))
    shutil.copytree(os.path.join(GPUS, 'a100-sxm4-80gb-mig', 'sys', 'bus', 'pci', 'devices', '0000:01:00.0'),
                    str(sysfs / 'bus' / 'pci' / 'devices' / '0000:01:00.0'))
    monkeypatch.setenv('GPUOPS_LAB_GPU_FIXTURE', H200)
    paths = dict(validations_dir=str(tmp_path / 'validations'), modprobe_dir=str(tmp_path)) if module is nvidia_driver else {}
    result = run_module(capsys, module.main, dict(args, sysfs_root=str(sysfs), procfs_root=os.path.join(H200, 'proc'), nvidia_smi=SIMULATOR,
                                                  os_release_path=MISSING, **paths), failed=True)
    assert result['msg'].startswith(message + 'nvidia-smi lists 1 GPU(s) but not every NVIDIA GPU on the PCI bus; missing: '
                                    '0000:01:00.0 (no driver bound).')
    assert 'exception' not in result and not os.path.exists(str(tmp_path / 'validations'))
    count(SUITE, 'module runs')
