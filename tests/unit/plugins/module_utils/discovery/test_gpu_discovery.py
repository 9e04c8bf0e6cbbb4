# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""gpu_discovery on the captured fixtures: sysfs/procfs readers, nvidia-smi parsers, the merged view."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import platform

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as disc
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import A100_40GB_MIG_LIST, GPUS, SIMULATOR, facts_of, listing_only_runner, sim_runner
from tests.unit.plugins.module_utils.driver.test_driver_state import multi_gpu_sysfs


def read(*parts):
    with open(os.path.join(GPUS, *parts), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize('fixture, addresses', [
    ('h100-sxm5-80gb-x1', ['0000:00:09.0']),
    ('a100-sxm4-80gb-mig', ['0000:01:00.0']),
    ('t4', ['0000:00:1e.0']),
    # Ten PCI functions, one a VirtualBox VGA controller (vendor 80ee): not an NVIDIA GPU.
    ('cpu-only', []),
])
def test_nvidia_display_devices(fixture, addresses):
    devices = disc.pci_devices(os.path.join(GPUS, fixture, 'sys'))
    assert [dev['address'] for dev in disc.nvidia_display_devices(devices)] == addresses
    if fixture == 'cpu-only':
        assert len(devices) == 10 and any(dev['pci_class'] == '0x030000' for dev in devices)


# Which PCI functions make a node a GPU node, as the GPU Operator decides it from NFD's labels. SOURCE: NVIDIA/gpu-operator
# v26.7.0 deployments/gpu-operator/values.yaml (node-feature-discovery worker config, sources.pci: deviceClassWhitelist
# "02", "0200", "0207", "0300", "0302", deviceLabelFields [vendor], so pci-10de.present) and controllers/state_manager.go
# (gpuNodeLabels: pci-10de.present, pci-0302_10de.present, pci-0300_10de.present = "true"; hasGPULabels, which
# nodelabeling_controller.go's reconcileCommonGPULabel turns into nvidia.com/gpu.present). NFD's own default whitelist
# ("03") gives a 0380 or 0301 function pci-0380_10de.present / pci-0301_10de.present, which the Operator does not count.
@pytest.mark.parametrize('vendor, pci_class, gpu', [
    ('0x10de', '0x030000', True),   # VGA compatible controller
    ('0x10de', '0x030200', True),   # 3D controller
    ('0x10de', '0x030100', False),  # XGA controller: not one of the Operator's labels
    ('0x10de', '0x038000', False),  # other display controller: likewise
    ('0x10de', '0x068000', False),  # NVSwitch (bridge): not whitelisted
    # A network function: the chart's whitelist gives it pci-10de.present; no GPU here (docs: the gpu_node_labels README).
    ('0x10de', '0x020000', False),
    ('0x15b3', '0x020000', False),  # a ConnectX NIC, what the chart's "02" entries are for
    ('0x80ee', '0x030000', False),  # another vendor's VGA controller (the cpu-only capture has one)
])
def test_gpu_classes_as_the_operator_counts_them(vendor, pci_class, gpu):
    device = dict(address='0000:01:00.0', vendor=vendor, device='0x0000', pci_class=pci_class, driver=None, virtual_function=False)
    assert disc.nvidia_display_devices([device]) == ([device] if gpu else [])


@pytest.mark.parametrize('fixture, version', [
    ('h100-sxm5-80gb-x1', '590.48.01'), ('a100-sxm4-80gb-mig', '535.54.03'), ('t4', None), ('cpu-only', None)])
def test_proc_driver_version(fixture, version):
    assert disc.proc_driver_version(os.path.join(GPUS, fixture, 'proc')) == version


def test_host_kernel_and_os_release_match_the_standard_library():
    # The real files of the machine running the tests, checked against independent readers.
    assert disc.kernel_release('/proc') == os.uname().release
    expected = platform.freedesktop_os_release()
    parsed = disc.os_release('/etc/os-release')
    assert {key: parsed.get(key) for key in ('ID', 'VERSION_ID')} == {key: expected.get(key) for key in ('ID', 'VERSION_ID')}


def test_missing_files_read_as_unknown(tmp_path):
    assert disc.os_release(str(tmp_path / 'os-release')) == {}
    assert disc.kernel_release(str(tmp_path)) is None and disc.dmi_product_name(str(tmp_path)) is None
    # A sysfs tree without PCI devices: none (a tree without bus/pci/devices at all is no sysfs, see below).
    (tmp_path / 'bus' / 'pci' / 'devices').mkdir(parents=True)
    assert disc.pci_devices(str(tmp_path)) == []


def test_parse_xml_a100_mig():
    report = disc.parse_smi_xml(read('a100-sxm4-80gb-mig', 'nvidia-smi', 'q-x.xml'))
    assert (report['driver_version'], report['cuda_version'], report['attached_gpus']) == ('535.54.03', '12.2', 4)
    # The upstream capture was trimmed to one <gpu> although attached_gpus says 4 (see SOURCE.md).
    [gpu] = report['gpus']
    assert gpu['address'] == '0000:01:00.0' and gpu['name'] == 'NVIDIA A100-SXM4-80GB' and gpu['architecture'] == 'Ampere'
    assert gpu['memory'] == 81920 and gpu['mig_capable'] and gpu['mig_enabled'] and gpu['compute_capability'] is None
    assert [dev['index'] for dev in gpu['mig_devices']] == [0, 1, 2, 3]
    assert gpu['mig_devices'][0] == dict(index=0, memory=19968, multiprocessors=14,
                                         engines=dict(copy=1, decoder=1, encoder=0, jpeg=0, ofa=0))


def test_parse_xml_t4_is_not_mig_capable():
    [gpu] = disc.parse_smi_xml(read('t4', 'nvidia-smi', 'q-x.xml'))['gpus']
    assert (gpu['name'], gpu['memory'], gpu['architecture'], gpu['address']) == ('Tesla T4', 15360, 'Turing', '0000:00:1e.0')
    assert not gpu['mig_capable'] and not gpu['mig_enabled'] and gpu['mig_devices'] == []


@pytest.mark.parametrize('text, message', [
    (read('t4', 'nvidia-smi', 'q-x.xml')[:5000], 'malformed XML'),
    ('', 'printed nothing'),
    ('\n', 'printed nothing'),
    ('<?xml version="1.0" ?><nvidia_smi><gpu/></nvidia_smi>', 'root element is <nvidia_smi>'),
    (read('t4', 'nvidia-smi', 'q-x.xml').replace('<total>15360 MiB</total>', '<total>15 GiB</total>', 1), 'expected "<number> MiB"'),
])
def test_parse_xml_rejects_malformed_output(text, message):
    with pytest.raises(disc.DiscoveryError, match=message):
        disc.parse_smi_xml(text)


def test_query_gpu_through_the_simulator_h100():
    rc, out, err = sim_runner(os.path.join(GPUS, 'h100-sxm5-80gb-x1'))([SIMULATOR] + disc.QUERY_GPU_ARGS)
    assert rc == 0, err
    [row] = disc.parse_query_gpu(out)
    assert row == {'index': '0', 'uuid': 'GPU-00000000-0000-0000-0000-000000000000', 'pci.bus_id': '00000000:00:09.0',
                   'name': 'NVIDIA H100 80GB HBM3', 'memory.total': '81559', 'compute_cap': '9.0', 'driver_version': '590.48.01',
                   'mig.mode.current': 'Disabled'}


@pytest.mark.parametrize('bus_id, address', [
    ('00000000:01:00.0', '0000:01:00.0'), ('0000:C1:00.0', '0000:c1:00.0'), ('00000001:01:00.7', '0001:01:00.7'),
    # NVML's error where nvidia-smi cannot read a GPU's PCI info (--query-gpu prints it in brackets, -q -x without).
    ('[Unknown Error]', None), ('Unknown Error', None), ('', None), (None, None), ('00000000:01:00', None),
])
def test_sysfs_address(bus_id, address):
    assert disc.sysfs_address(bus_id) == address


def test_query_gpu_reads_nvmls_bracketed_errors_as_unknown():
    [row] = disc.parse_query_gpu('0, GPU-1, [Unknown Error], NVIDIA H200, [GPU requires reset], [Not Supported], 580.159.04, [N/A]\n')
    assert [field for field, value in row.items() if value is None] == ['pci.bus_id', 'memory.total', 'compute_cap', 'mig.mode.current']


def test_query_gpu_rejects_a_short_row():
    with pytest.raises(disc.DiscoveryError, match='line 1 has 2 fields, expected 8'):
        disc.parse_query_gpu('0, NVIDIA H100 80GB HBM3\n')


def test_parse_list_gpus():
    assert disc.parse_list_gpus(read('h100-sxm5-80gb-x1', 'nvidia-smi', 'L.txt')) == [
        dict(index=0, name='NVIDIA H100 80GB HBM3', uuid='GPU-00000000-0000-0000-0000-000000000000', mig_profiles=[])]
    [gpu] = disc.parse_list_gpus(A100_40GB_MIG_LIST)
    assert gpu['name'] == 'A100-SXM4-40GB' and gpu['mig_profiles'] == ['1c.3g.20gb', '1c.3g.20gb']
    with pytest.raises(disc.DiscoveryError, match='does not document'):
        disc.parse_list_gpus('No devices were found\n')


@pytest.mark.parametrize('fixture, expected, failed_queries', [
    # name, memory, compute capability, MIG enabled, MIG devices known
    ('h100-sxm5-80gb-x1', [('NVIDIA H100 80GB HBM3', 81559, (9, 0), False)], ['-q -x']),
    ('a100-sxm4-80gb-mig', [('NVIDIA A100-SXM4-80GB', 81920, None, True)], ['--query-gpu', '-L']),
    ('t4', [('Tesla T4', 15360, None, False)], ['--query-gpu', '-L']),
    ('cpu-only', [], ['-q -x', '--query-gpu', '-L']),
])
def test_gather_uses_what_each_fixture_captured(fixture, expected, failed_queries):
    facts = facts_of(fixture)
    assert [(gpu['name'], gpu['memory'], gpu['compute_capability'], gpu['mig_enabled']) for gpu in facts['gpus']] == expected
    errors = facts['nvidia_smi_errors']
    assert [query for query in ('-q -x', '--query-gpu', '-L') if any(' %s failed' % query in error for error in errors)] == failed_queries
    assert len(errors) == len(failed_queries)
    assert all(gpu['pci_class'] == '0x030200' for gpu in facts['gpus'])
    if fixture == 'cpu-only':
        assert 'rc=9' in facts['nvidia_smi_errors'][0] and "couldn't communicate with the NVIDIA driver" in facts['nvidia_smi_errors'][0]


def test_gpu_on_the_bus_with_the_driver_not_loaded():
    facts = facts_of('a100-sxm4-80gb-mig', smi_fixture='cpu-only')
    assert facts['gpus'] == [] and len(facts['pci_gpus']) == 1 and len(facts['nvidia_smi_errors']) == 3
    assert facts['proc_driver_version'] == '535.54.03' and facts['driver_version'] is None


def test_listing_alone_names_gpus_and_mig_profiles():
    # The simulator's path stands for an nvidia-smi that exists; the runner answers for it.
    facts = disc.gather(listing_only_runner(A100_40GB_MIG_LIST), nvidia_smi=SIMULATOR, sysfs_root=os.path.join(GPUS, 'cpu-only', 'sys'),
                        procfs_root=GPUS, os_release_path=GPUS)
    [gpu] = facts['gpus']
    assert gpu['name'] == 'A100-SXM4-40GB' and gpu['mig_enabled'] and gpu['mig_profiles'] == ['1c.3g.20gb'] * 2
    # The PCI view (a CPU node's capture) shows no GPU: the two disagree, which is said.
    assert facts['disagreement'].startswith('nvidia-smi lists 1 GPU(s) that the PCI bus under %s does not show (GPU 0)' % os.path.join(
        GPUS, 'cpu-only', 'sys'))


def test_pci_and_nvidia_smi_agree_on_every_capture():
    for name in ('a100-sxm4-80gb-mig', 'h100-sxm5-80gb-x1', 'h200-x1', 't4'):
        facts = facts_of(name)
        assert facts['disagreement'] is None and facts['unlisted'] == [], name


def multi_gpu_facts(tmp_path, drivers=None, runner=None):
    """gather() on four GPUs on the PCI bus (multi_gpu_sysfs) with the H200 capture's nvidia-smi, which lists one."""
    sysfs = multi_gpu_sysfs(tmp_path / 'sys', drivers)
    return disc.gather(runner or sim_runner(os.path.join(GPUS, 'h200-x1')), sysfs, os.path.join(GPUS, 'h200-x1', 'proc'), GPUS, SIMULATOR)


OTHERS = ['0000:00:09.0', '0000:00:1e.0', '0000:01:00.0']


@pytest.mark.parametrize('drivers, missing', [
    # Issue #28 item 6: GPUs on the bus that nvidia-smi does not list, bound to nvidia (RmInitAdapter failed), to no driver
    # (the probe failed) or to nouveau: the NVIDIA driver does not drive them.
    ({}, OTHERS),
    ({'0000:00:06.0': 'nvidia', '0000:00:09.0': 'nvidia', '0000:01:00.0': 'nouveau'}, OTHERS),
    # Passed through to VMs (the Operator's vfio-manager binds vfio-pci) or reserved by pci-stub: not the driver's to list.
    ({'0000:00:09.0': 'vfio-pci', '0000:00:1e.0': 'pci-stub', '0000:01:00.0': 'nvgrace_gpu_vfio_pci'}, []),
    ({'0000:00:09.0': 'vfio-pci'}, ['0000:00:1e.0', '0000:01:00.0']),
])
def test_gpus_nvidia_smi_does_not_list_are_named(tmp_path, drivers, missing):
    facts = multi_gpu_facts(tmp_path, drivers)
    assert [gpu['address'] for gpu in facts['gpus']] == ['0000:00:06.0']
    assert [dev['address'] for dev in facts['unlisted']] == missing
    message = disc.unlisted_message(facts['unlisted'], facts['gpus'])
    if not missing:
        assert message is None
        return
    assert message.startswith('nvidia-smi lists 1 GPU(s) but not every NVIDIA GPU on the PCI bus; missing: ')
    assert all(address in message for address in missing) and 'journalctl -k' in message
    binding = drivers.get('0000:01:00.0')
    assert '0000:01:00.0 (%s)' % ('bound to %s' % binding if binding else 'no driver bound') in message


def test_a_virtual_function_is_not_expected_in_nvidia_smi(tmp_path):
    # A vGPU host's SR-IOV virtual functions carry a physfn link to their GPU; nvidia-smi lists the physical GPU only.
    sysfs = multi_gpu_sysfs(tmp_path / 'sys')
    for address in OTHERS:
        os.symlink(os.path.join('..', '0000:00:06.0'), os.path.join(sysfs, 'bus', 'pci', 'devices', address, 'physfn'))
    facts = disc.gather(sim_runner(os.path.join(GPUS, 'h200-x1')), sysfs, os.path.join(GPUS, 'h200-x1', 'proc'), GPUS, SIMULATOR)
    assert facts['unlisted'] == []


def test_gpus_listed_without_a_bus_id_may_be_any_of_those_on_the_bus(tmp_path):
    """-L alone names GPUs but no bus id: they cover as many GPUs on the bus; fewer leave every unmatched one named."""
    listing = read('h200-x1', 'nvidia-smi', 'L.txt')
    covered = multi_gpu_facts(tmp_path / 'one', {address: 'vfio-pci' for address in OTHERS}, listing_only_runner(listing))
    assert len(covered['gpus']) == 1 and covered['gpus'][0]['address'] is None and covered['unlisted'] == []
    short = multi_gpu_facts(tmp_path / 'two', {'0000:00:09.0': 'vfio-pci', '0000:00:1e.0': 'vfio-pci'}, listing_only_runner(listing))
    assert [dev['address'] for dev in short['unlisted']] == ['0000:00:06.0', '0000:01:00.0']
    assert disc.unlisted_message(short['unlisted'], short['gpus']).startswith(
        'nvidia-smi lists 1 GPU(s) (1 without a readable PCI bus id) but not every NVIDIA GPU on the PCI bus; missing: 0000:00:06.0')


def test_no_gpu_is_missing_while_nvidia_smi_lists_none(tmp_path):
    # nvidia-smi failing is reported as such (the driver is not loaded), not as every GPU missing.
    facts = multi_gpu_facts(tmp_path, runner=sim_runner(os.path.join(GPUS, 'cpu-only')))
    assert facts['gpus'] == [] and facts['unlisted'] == [] and len(facts['nvidia_smi_errors']) == 3


@pytest.mark.parametrize('make, said', [
    (lambda root: None, 'sysfs_root: %s does not exist; point sysfs_root at the node\'s sysfs (default /sys)'),
    (lambda root: root.write_text(''), 'sysfs_root: %s is not a directory'),
    (lambda root: (root / 'class').mkdir(parents=True), 'sysfs_root: %s has no bus/pci/devices, so it is no sysfs tree'),
])
def test_a_sysfs_root_that_is_no_sysfs_fails(tmp_path, make, said):
    # A missing root read as "no GPU" made nvidia_driver validate 0 GPUs and the doctor call a GPU node a CPU node.
    root = tmp_path / 'sys'
    make(root)
    with pytest.raises(disc.DiscoveryError) as raised:
        disc.pci_devices(str(root))
    assert str(raised.value).startswith(said % root)


@pytest.mark.parametrize('make, problem', [
    (lambda path: None, 'does not exist'),
    (lambda path: path.mkdir(), 'is a directory, not a program'),
    (lambda path: path.write_text('#!/bin/sh\n'), 'is not executable'),
])
def test_an_nvidia_smi_path_that_cannot_be_run_is_named_once(tmp_path, make, problem):
    path = tmp_path / 'nvidia-smi'
    make(path)

    def never(argv):
        raise AssertionError('ran %s' % argv)
    assert disc.query_nvidia_smi(never, str(path), configured=True) == (None, None, None, ['nvidia_smi: %s %s' % (path, problem)])
    assert disc.query_nvidia_smi(never, str(path))[3] == ['%s %s' % (path, problem)]


@pytest.mark.parametrize('answer, said', [
    ('', '-q -x: printed nothing'),
    ('Failed to initialize NVML: Unknown Error\n', '-q -x: printed malformed XML: syntax error: line 1, column 0'),
    (read('t4', 'nvidia-smi', 'q-x.xml')[:3000], '-q -x: printed malformed XML: no element found'),
])
def test_output_that_is_not_nvidia_smis_names_the_binary(answer, said):
    with pytest.raises(disc.DiscoveryError) as raised:
        disc.query_nvidia_smi(lambda argv: (0, answer, ''), SIMULATOR)
    assert str(raised.value).startswith(SIMULATOR + ' ' + said)


def test_after_a_query_that_ran_out_of_time_the_others_are_not_tried():
    calls = []

    def hung(argv):
        calls.append(argv)
        return 124, '', '%s did not finish within 60 s and was stopped' % ' '.join(argv)
    xml, rows, listing, errors = disc.query_nvidia_smi(hung, SIMULATOR)
    assert (xml, rows, listing) == (None, None, None) and calls == [[SIMULATOR, '-q', '-x']]
    assert errors == ['%s -q -x failed (rc=124): %s -q -x did not finish within 60 s and was stopped' % (SIMULATOR, SIMULATOR)]


def test_nvidia_smi_search_order(tmp_path):
    assert disc.find_nvidia_smi('/opt/custom/nvidia-smi', lambda name: None) == '/opt/custom/nvidia-smi'
    found = disc.find_nvidia_smi(None, lambda name: str(tmp_path / name))
    fixed = [os.path.join(directory, 'nvidia-smi') for directory in disc.SEARCH_DIRS]
    assert found in fixed + [str(tmp_path / 'nvidia-smi')]


def test_missing_nvidia_smi_is_reported():
    assert disc.query_nvidia_smi(None, None)[3] == ['nvidia-smi was not found (searched /usr/bin, /usr/sbin, /bin, /sbin, /opt/bin and PATH)']

    def refuse(argv):
        raise OSError(13, 'Permission denied', argv[0])

    xml, rows, listing, errors = disc.query_nvidia_smi(refuse, SIMULATOR)
    assert (xml, rows, listing) == (None, None, None) and all('could not be run' in error for error in errors)
