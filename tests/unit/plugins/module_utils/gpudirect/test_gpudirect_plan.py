# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The gpudirect planner and checks on the captured h100-x1 and h200-x1 trees (proc/modules, sys/module/nvidia/version).

No capture has a GPUDirect module loaded. The trees where one is are COPIES of h100-x1's proc and sys with lines and files
this test adds, and says so where it adds them: a /proc/modules line per module (only its first field, the name, is read;
size, refcount and address are those of the captured nvidia line), sys/module/<name>/version (the version a module
exports), and device nodes under a dev directory of the test's own.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import checks as doctor_checks
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import plan as driver_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect import executor as gpudirect_executor
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect import plan as gpudirect_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect.plan import GpuDirectError

GPUS = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'fixtures', 'gpus')
LOAD_FILE = '/etc/modules-load.d/gpuops-gpudirect.conf'
RECORD = '/var/lib/gpuops/gpudirect.json'
CAPTURED_DRIVER = '580.159.04'  # h100-x1/sys/module/nvidia/version


def params_of(**overrides):
    params = dict(state='present', rdma=False, use_host_mofed=False, gds=False, gdrcopy=False, packages={}, hold=True,
                  load_modules=True, modules_load_dir='/etc/modules-load.d', validations_dir='/run/nvidia/validations',
                  record_file=RECORD, sysfs_root='/sys', procfs_root='/proc', dev_root='/dev')
    params.update(overrides)
    return params


def facts_of(root, record=None, installed=(), held=(), files=None, dev_root=None):
    """The facts gather() reads, the node part from `root` (a captured fixture or a copy of one) by the module's own reader."""
    params = params_of(procfs_root=os.path.join(root, 'proc'), sysfs_root=os.path.join(root, 'sys'),
                       dev_root=dev_root or os.path.join(root, 'dev'))
    facts = dict(record=record or {}, manager='apt', installed_packages=dict((name, '1') for name in installed), held_packages=set(held),
                 gpu_count=1, files=dict((path, None) for path in gpudirect_plan.files_to_read(params_of(), record or {})))
    facts['files'].update(files or {})
    facts.update(gpudirect_executor.node_state(params))
    return facts


@pytest.fixture
def loaded_tree(tmp_path):
    """h100-x1's proc and sys, plus (added by this test) ib_core, nvidia_peermem, nvidia_fs and gdrdrv loaded, nvidia_peermem
    exporting the captured driver's version, and the device nodes nvidia-fs0 and gdrdrv (plain files: only their presence is read)."""
    for part in ('proc', 'sys'):
        shutil.copytree(os.path.join(GPUS, 'h100-x1', part), str(tmp_path / part))
    with open(str(tmp_path / 'proc' / 'modules'), 'a') as handle:
        for name in ('ib_core', 'nvidia_peermem', 'nvidia_fs', 'gdrdrv'):
            handle.write('%s 14299136 - - Live 0xffffffffc0400000 (O)\n' % name)
    (tmp_path / 'sys' / 'module' / 'nvidia_peermem').mkdir()
    (tmp_path / 'sys' / 'module' / 'nvidia_peermem' / 'version').write_text(CAPTURED_DRIVER + '\n')
    (tmp_path / 'dev').mkdir()
    for device in ('nvidia-fs0', 'gdrdrv'):
        (tmp_path / 'dev' / device).write_text('')
    return str(tmp_path)


def actions(planned):
    return [driver_plan.describe(step) for step in planned['steps']]


@pytest.mark.parametrize('fixture', ['h100-x1', 'h200-x1'])
def test_captured_node_gets_packages_modules_load_file_and_modprobe(fixture):
    facts = facts_of(os.path.join(GPUS, fixture))
    planned = gpudirect_plan.plan(facts, params_of(rdma=True, gds=True, gdrcopy=True))
    assert actions(planned) == [
        'apt-get install -y --no-install-recommends nvidia-fs gdrdrv-dkms',
        'apt-mark hold nvidia-fs gdrdrv-dkms',
        'write ' + LOAD_FILE,
        'modprobe nvidia_fs',
        'modprobe gdrdrv',
        'write ' + RECORD,
    ]
    assert planned['steps'][2]['data'] == (b'# Written by gpuops.gpu_operator.gpudirect: GPUDirect kernel modules loaded at boot.\n'
                                           b'nvidia_peermem\nnvidia_fs\ngdrdrv\n')
    # The captured /proc/modules has no RDMA core: nvidia_peermem waits for it, with a warning saying so.
    assert ['ib_core' in warning for warning in planned['warnings']] == [True]
    assert [(found['feature'], found['loaded'], found['problems']) for found in planned['checks']] == [
        ('rdma', False, ['kernel module nvidia_peermem is not loaded (/proc/modules)']),
        ('gds', False, ['kernel module nvidia_fs is not loaded (/proc/modules)']),
        ('gdrcopy', False, ['kernel module gdrdrv is not loaded (/proc/modules)'])]
    assert gpudirect_plan.ready_steps(facts, params_of(), planned['checks']) == []
    assert gpudirect_plan.capable_labels(facts['modules']) == {}


def test_use_host_mofed_without_the_rdma_core_fails():
    facts = facts_of(os.path.join(GPUS, 'h100-x1'))
    with pytest.raises(GpuDirectError, match='useHostMofed is set but the host RDMA stack is not loaded'):
        gpudirect_plan.plan(facts, params_of(rdma=True, use_host_mofed=True))


def test_nothing_enabled_changes_nothing():
    planned = gpudirect_plan.plan(facts_of(os.path.join(GPUS, 'h100-x1')), params_of())
    assert planned['steps'] == [] and planned['checks'] == []


def test_cpu_only_node_is_left_alone():
    facts = facts_of(os.path.join(GPUS, 'h100-x1'))
    facts['gpu_count'] = 0
    assert gpudirect_plan.plan(facts, params_of(gds=True))['steps'] == []


def test_given_packages_replace_the_defaults_and_empty_installs_none():
    facts = facts_of(os.path.join(GPUS, 'h100-x1'))
    planned = gpudirect_plan.plan(facts, params_of(gds=True, gdrcopy=True, packages=dict(gds=['nvidia-fs-dkms'], gdrcopy=[])))
    assert actions(planned)[:2] == ['apt-get install -y --no-install-recommends nvidia-fs-dkms', 'apt-mark hold nvidia-fs-dkms']
    with pytest.raises(GpuDirectError, match='packages: nccl is none of'):
        gpudirect_plan.plan(facts, params_of(packages=dict(nccl=[])))
    with pytest.raises(GpuDirectError, match='not a package name'):
        gpudirect_plan.plan(facts, params_of(gds=True, packages=dict(gds=['-o foo'])))


def test_loaded_node_passes_and_gets_the_status_files_and_labels(loaded_tree):
    data = gpudirect_plan.modules_load_text(gpudirect_plan.FEATURES)
    facts = facts_of(loaded_tree, installed=['nvidia-fs', 'gdrdrv-dkms'], held=['nvidia-fs', 'gdrdrv-dkms'],
                     files={LOAD_FILE: data.encode()})
    planned = gpudirect_plan.plan(facts, params_of(rdma=True, use_host_mofed=True, gds=True, gdrcopy=True))
    assert planned['steps'] == []
    assert [found['problems'] for found in planned['checks']] == [[], [], []]
    assert planned['checks'][0]['version'] == CAPTURED_DRIVER
    assert [step['path'] for step in gpudirect_plan.ready_steps(facts, params_of(), planned['checks'])] == [
        '/run/nvidia/validations/nvidia-peermem-ready', '/run/nvidia/validations/nvidia-fs-ready', '/run/nvidia/validations/gdrcopy-ready']
    assert gpudirect_plan.capable_labels(facts['modules']) == {
        'nvidia.com/peermem.capable': 'true', 'nvidia.com/gds.capable': 'true', 'nvidia.com/gdrcopy.capable': 'true'}


def test_peermem_of_another_driver_and_missing_device_nodes_fail_the_checks(loaded_tree):
    with open(os.path.join(loaded_tree, 'sys', 'module', 'nvidia_peermem', 'version'), 'w') as handle:
        handle.write('570.172.08\n')  # added by this test: a peermem built for another driver
    os.remove(os.path.join(loaded_tree, 'dev', 'gdrdrv'))
    record = dict(manager='apt', installed=[], held=[], loaded=[], files={'/run/nvidia/validations/gdrcopy-ready': None})
    # nvidia-peermem-ready is there but not by this module (the record does not name it): it stays.
    facts = facts_of(loaded_tree, record=record, files={'/run/nvidia/validations/gdrcopy-ready': b'',
                                                        '/run/nvidia/validations/nvidia-peermem-ready': b''})
    checks = [gpudirect_plan.check(item, facts) for item in gpudirect_plan.FEATURES]
    assert checks[0]['problems'] == ['nvidia_peermem 570.172.08 does not match the loaded NVIDIA driver 580.159.04 (built for another '
                                     'driver: reinstall it with the driver, then unload and load it)']
    assert checks[1]['problems'] == []
    assert checks[2]['problems'] == ['device node %s is missing' % os.path.join(loaded_tree, 'dev', 'gdrdrv')]
    # The status file this module wrote goes when its check fails, the other one stays; the passing feature's is written.
    assert [(step['kind'], step['path']) for step in gpudirect_plan.ready_steps(facts, params_of(), checks)] == [
        ('write', '/run/nvidia/validations/nvidia-fs-ready'), ('remove', '/run/nvidia/validations/gdrcopy-ready')]


def test_absent_undoes_only_what_the_record_names(loaded_tree):
    before = '# the admin\'s own list\nib_umad\n'
    record = dict(manager='apt', installed=['gdrdrv-dkms'], held=['gdrdrv-dkms'], loaded=['gdrdrv', 'nvidia_fs'],
                  files={LOAD_FILE: before, '/run/nvidia/validations/gdrcopy-ready': None})
    facts = facts_of(loaded_tree, record=record, installed=['gdrdrv-dkms', 'nvidia-fs'], held=['gdrdrv-dkms', 'nvidia-fs'],
                     files={LOAD_FILE: b'ours\n', '/run/nvidia/validations/gdrcopy-ready': b''})
    planned = gpudirect_plan.plan(facts, params_of(state='absent'))
    assert actions(planned) == [
        'apt-mark unhold gdrdrv-dkms',
        'modprobe -r nvidia_fs gdrdrv',
        'apt-get purge -y gdrdrv-dkms',
        'write ' + LOAD_FILE,
        'remove /run/nvidia/validations/gdrcopy-ready',
        'remove ' + RECORD,
    ]
    assert planned['steps'][3]['data'] == before.encode()  # byte for byte what was there
    assert planned['packages'] == ['gdrdrv-dkms']


def test_absent_without_record_does_nothing(loaded_tree):
    assert gpudirect_plan.plan(facts_of(loaded_tree), params_of(state='absent'))['steps'] == []


def test_disabling_every_feature_removes_the_modules_load_file_it_wrote():
    record = dict(manager='apt', installed=[], held=[], loaded=[], files={LOAD_FILE: None})
    facts = facts_of(os.path.join(GPUS, 'h100-x1'), record=record, files={LOAD_FILE: b'gdrdrv\n'})
    assert actions(gpudirect_plan.plan(facts, params_of())) == ['remove ' + LOAD_FILE, 'write ' + RECORD]
    record['files'][LOAD_FILE] = 'ib_umad\n'  # the admin's list this module replaced comes back
    restored = gpudirect_plan.plan(facts, params_of())['steps'][0]
    assert (restored['kind'], restored['data']) == ('write', b'ib_umad\n')
    record['files'][LOAD_FILE] = None
    planned = gpudirect_plan.plan(facts, params_of(gds=True, packages=dict(gds=[]), load_modules=False))
    assert actions(planned) == ['write ' + LOAD_FILE, 'write ' + RECORD]
    assert planned['reboot_required'] is True


def test_the_doctor_reports_each_module_the_list_names(loaded_tree):
    """doctor checks.gpudirect_findings on the captured tree (nothing loaded: an error each) and on the tree with the modules
    (info each); a module the list does not name is not checked, and without a list nothing is."""
    wanted = ['nvidia_fs', 'gdrdrv']
    captured = dict(wanted=wanted, state=gpudirect_executor.node_state(params_of(
        procfs_root=os.path.join(GPUS, 'h100-x1', 'proc'), sysfs_root=os.path.join(GPUS, 'h100-x1', 'sys'), dev_root=loaded_tree)))
    found = doctor_checks.gpudirect_findings(captured)
    assert [(item['check'], item['severity']) for item in found] == [('gpudirect-gds', 'error'), ('gpudirect-gdrcopy', 'error')]
    assert found[1]['evidence'] == ['kernel module gdrdrv is not loaded (/proc/modules)']
    loaded = dict(wanted=['nvidia_peermem'] + wanted, state=gpudirect_executor.node_state(params_of(
        procfs_root=os.path.join(loaded_tree, 'proc'), sysfs_root=os.path.join(loaded_tree, 'sys'), dev_root=os.path.join(loaded_tree, 'dev'))))
    found = doctor_checks.gpudirect_findings(loaded)
    assert [(item['check'], item['severity']) for item in found] == [
        ('gpudirect-rdma', 'info'), ('gpudirect-gds', 'info'), ('gpudirect-gdrcopy', 'info')]
    assert found[0]['summary'] == 'nvidia_peermem (driver.rdma.enabled) is loaded (%s)' % CAPTURED_DRIVER
    assert doctor_checks.gpudirect_findings(dict(wanted=None, state=None)) == []
