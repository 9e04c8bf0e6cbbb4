# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's checks and report: parsers of runtime output, driver, kernel log, runtime and cluster checks.

GPU facts come from the captured fixtures (gather() through the lab's nvidia-smi simulator); the containerd
dumps in doctor_data/ are real output of the lab images' containerd 1.6, 1.7 and 2.1 (doctor_data/README.md).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import checks
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import doctor_cluster_checks as cluster_checks
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import doctor_report
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import toml_doc
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS, SIMULATOR, facts_of, sim_runner
from tests.unit.plugins.module_utils.driver.test_driver_state import multi_gpu_sysfs

DATA = os.path.join(os.path.dirname(__file__), 'doctor_data')


def data(name):
    with open(os.path.join(DATA, name), encoding='utf-8') as stream:
        return stream.read()


def checks_of(findings):
    return [(item['check'], item['severity']) for item in findings]


# --- parsers ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('dump, runtimes, imports', [
    # bookworm's containerd 1.6 after the container_toolkit role: config version 2, double quotes.
    ('containerd-1.6-nvidia.toml', {'nvidia': '/usr/bin/nvidia-container-runtime'}, ['/etc/containerd/config.toml']),
    # sid's containerd 2.1 dumps version 3 with single quotes, and its default runc runtime.
    ('containerd-2.1-nvidia.toml', {'nvidia': '/usr/bin/nvidia-container-runtime', 'runc': None}, []),
    # trixie's containerd 1.7 as Debian ships it: only runc.
    ('containerd-1.7-debian.toml', {'runc': None}, ['/etc/containerd/config.toml']),
])
def test_containerd_runtimes_and_imports_of_real_dumps(dump, runtimes, imports):
    text = data(dump)
    assert checks.containerd_runtimes(text) == runtimes
    assert checks.containerd_imports(text) == imports


def test_runtime_config_that_cannot_be_read(monkeypatch):
    """tomlkit reads the runtimes' output (one TOML reader): invalid TOML, and a node without python3-tomlkit, say why."""
    with pytest.raises(GpuOpsError, match='containerd config dump: invalid TOML at line 1'):
        checks.containerd_runtimes('[plugins\n')
    monkeypatch.setattr(toml_doc, 'tomlkit', None)
    with pytest.raises(GpuOpsError, match='crio config cannot be read: python3-tomlkit is not installed'):
        checks.crio_runtimes('')


@pytest.mark.parametrize('text, expected', [
    ('[crio.runtime.runtimes.runc]\nruntime_path = ""\n[crio.runtime.runtimes.nvidia]\n  runtime_path = "/usr/bin/nvidia-container-runtime"\n'
     '  runtime_type = "oci"\n[crio.runtime.runtimes.nvidia.extra]\nx = 1\n',
     {'runc': None, 'nvidia': '/usr/bin/nvidia-container-runtime'}),
    ("[crio.runtime]\ndefault_runtime = 'runc'\n", {}),
    ('', {}),
])
def test_crio_runtimes(text, expected):
    assert checks.crio_runtimes(text) == expected


@pytest.mark.parametrize('text, expected', [
    ('{"runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}, "default-runtime": "nvidia"}',
     {'nvidia': '/usr/bin/nvidia-container-runtime'}),
    ('{"log-driver": "journald"}', {}),
    ('', {}),
    ('[1]', None),
    ('{"runtimes": ["nvidia"]}', None),
    ('not json', None),
])
def test_daemon_json_runtimes(text, expected):
    assert checks.daemon_json_runtimes(text) == expected


@pytest.mark.parametrize('text, expected', [
    ('{"io.containerd.runc.v2":{"path":"runc"},"nvidia":{"path":"/usr/bin/nvidia-container-runtime"},"runc":{"path":"runc"}}\n',
     {'io.containerd.runc.v2': 'runc', 'nvidia': '/usr/bin/nvidia-container-runtime', 'runc': 'runc'}),
    ('', {}),
    ('Cannot connect to the Docker daemon', None),
])
def test_docker_info_runtimes(text, expected):
    assert checks.docker_info_runtimes(text) == expected


@pytest.mark.parametrize('properties, expected', [
    # Active since 100 s after boot, now 1000 s after boot at wall clock 5000: it started at 4100.
    ({'ActiveEnterTimestampMonotonic': '100000000'}, 4100.0),
    ({'ActiveEnterTimestampMonotonic': '0'}, None),
    ({}, None),
    ({'ActiveEnterTimestampMonotonic': 'n/a'}, None),
])
def test_active_since(properties, expected):
    assert checks.active_since(properties, 5000.0, 1000.0) == expected


def test_systemd_properties():
    assert checks.systemd_properties('LoadState=loaded\nActiveState=active\nExecMainStatus=0\n\n') == {
        'LoadState': 'loaded', 'ActiveState': 'active', 'ExecMainStatus': '0'}


def test_runtime_log_errors_keep_only_errors_about_the_nvidia_runtime():
    lines = [
        'time="2026-01-01T00:00:00Z" level=error msg="failed to load cni during init"',
        'time="2026-01-01T00:00:01Z" level=error msg="RunPodSandbox failed" error="no runtime for \\"nvidia\\" is configured"',
        'time="2026-01-01T00:00:02Z" level=info msg="nvidia runtime registered"',
        'time="2026-01-01T00:00:03Z" level=fatal msg="gpu-rt: exec failed"',
    ]
    assert checks.runtime_log_errors(lines, 'nvidia') == [lines[1]]
    assert checks.runtime_log_errors(lines, 'gpu-rt') == [lines[1], lines[3]]


# --- driver ------------------------------------------------------------------------------------------------

def driver_facts(sys_fixture, smi_fixture=None, **extra):
    gpu = facts_of(sys_fixture, smi_fixture)
    facts = dict(gpu=gpu, proc_driver=driver_state.proc_driver(os.path.join(GPUS, sys_fixture, 'proc')),
                 modules=driver_state.loaded_modules(os.path.join(GPUS, sys_fixture, 'proc')), secure_boot='unknown')
    facts.update(extra)
    return facts


@pytest.mark.parametrize('sys_fixture, smi_fixture, extra, expected', [
    ('cpu-only', None, {}, [('no-gpu', 'info')]),
    # The real H200 capture: the driver is loaded (proc/modules), every nvidia-smi query answers: nothing to report.
    ('h200-x1', None, {}, []),
    # --query-gpu and -L answer, -q -x was not captured; /proc agrees with nvidia-smi (590.48.01).
    ('h100-sxm5-80gb-x1', None, {}, [('nvidia-smi-query-failed', 'warning')]),
    # A node whose nvidia-smi finds no driver (the simulator's exit 9 of a fixture without nvidia-smi captures).
    ('t4', 'cpu-only', {}, [('driver-not-loaded', 'error')]),
    ('t4', 'cpu-only', {'secure_boot': 'enabled'}, [('driver-not-loaded', 'error'), ('secure-boot', 'error')]),
    ('h200-x1', None, {'modules': {'nouveau': 1}}, [('nouveau-loaded', 'error')]),
    # The H100's kernel module (590.48.01) under the A100's user space (535.54.03), whose GPU has another PCI address:
    # the H100 is not listed by nvidia-smi, the A100 nvidia-smi lists is not on the PCI bus.
    ('h100-sxm5-80gb-x1', 'a100-sxm4-80gb-mig', {},
     [('gpu-not-on-pci', 'warning'), ('nvidia-smi-query-failed', 'warning'), ('driver-library-mismatch', 'error'), ('gpu-not-visible', 'error')]),
])
def test_driver_findings_on_fixtures(sys_fixture, smi_fixture, extra, expected):
    assert checks_of(checks.driver_findings(driver_facts(sys_fixture, smi_fixture, **extra))) == expected


@pytest.mark.parametrize('drivers, evidence', [
    ({}, ['PCI 0000:00:09.0: not in nvidia-smi (no driver bound)', 'PCI 0000:00:1e.0: not in nvidia-smi (no driver bound)',
          'PCI 0000:01:00.0: not in nvidia-smi (no driver bound)']),
    ({'0000:00:09.0': 'vfio-pci', '0000:00:1e.0': 'vfio-pci', '0000:01:00.0': 'nouveau'}, ['PCI 0000:01:00.0: not in nvidia-smi (bound to nouveau)']),
    # Passed through to VMs: not the driver's to list (discovery's rule, which the driver validation applies too).
    ({'0000:00:09.0': 'vfio-pci', '0000:00:1e.0': 'vfio-pci', '0000:01:00.0': 'vfio-pci'}, None),
])
def test_gpus_nvidia_smi_does_not_list_follow_discoverys_rule(tmp_path, drivers, evidence):
    gpu = gpu_discovery.gather(sim_runner(os.path.join(GPUS, 'h200-x1')), multi_gpu_sysfs(tmp_path / 'sys', drivers),
                               os.path.join(GPUS, 'h200-x1', 'proc'), GPUS, SIMULATOR)
    found = [item for item in checks.driver_findings(dict(driver_facts('h200-x1'), gpu=gpu)) if item['check'] == 'gpu-not-visible']
    assert [item['evidence'] for item in found] == ([evidence] if evidence else [])


def test_h100_query_failure_names_the_missing_query():
    found = checks.driver_findings(driver_facts('h100-sxm5-80gb-x1'))
    assert found[0]['evidence'] == facts_of('h100-sxm5-80gb-x1')['nvidia_smi_errors']
    assert '-q -x' in found[0]['evidence'][0]


def test_driver_not_loaded_says_how_to_install_it():
    found = checks.driver_findings(driver_facts('t4', 'cpu-only'))[0]
    assert "couldn't communicate with the NVIDIA driver" in ' '.join(found['evidence'])
    assert 'nvidia_driver_enabled' in found['fix'] and '--limit <node>' in found['fix']


def test_mismatch_reported_by_nvml():
    facts = driver_facts('h100-sxm5-80gb-x1')
    # NVML's message when library and module differ; every query fails with it.
    facts['gpu'] = dict(facts['gpu'], gpus=[], driver_version=None, nvidia_smi_errors=[
        'nvidia-smi -q -x failed (rc=18): Failed to initialize NVML: Driver/library version mismatch'])
    found = checks.driver_findings(facts)
    assert checks_of(found) == [('driver-library-mismatch', 'error')]
    assert '590.48.01' in found[0]['summary'] and 'modprobe -r' in found[0]['fix']


def test_nvidia_smi_missing_with_a_loaded_module():
    facts = driver_facts('h200-x1')
    facts['gpu'] = dict(facts['gpu'], nvidia_smi=None, gpus=[], nvidia_smi_errors=['nvidia-smi was not found'])
    assert checks_of(checks.driver_findings(facts)) == [('nvidia-smi-missing', 'warning')]
    facts['proc_driver'] = None
    assert checks_of(checks.driver_findings(facts)) == [('driver-not-loaded', 'error')]


# --- kernel log -----------------------------------------------------------------------------------------

def test_real_h200_kernel_log_has_nothing_to_report():
    with open(os.path.join(GPUS, 'h200-x1', 'host', 'dmesg-nvrm'), encoding='utf-8') as stream:
        lines = stream.read().splitlines()
    assert checks.relevant_kernel_lines(lines) == lines
    assert checks.kernel_log_findings(dict(source='dmesg', lines=lines, error=None)) == []


# Lines in the form NVIDIA's driver prints them (the Xid catalogue, https://docs.nvidia.com/deploy/xid-errors/);
# format examples for the parser, not captures of a GPU.
XID_79 = '[ 1843.1] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.'
XID_13_OLD = '[ 4909.9] NVRM: Xid (0000:01:00): 13, 0005 00000000 0000502d 00000104 00000000 00000100'


@pytest.mark.parametrize('lines, expected, summary', [
    ([XID_79, XID_79], [('gpu-xid', 'error')], 'Xid 79 (GPU has fallen off the bus) on 0000:3b:00, 2 time(s)'),
    # Drivers before the PCI: prefix.
    ([XID_13_OLD], [('gpu-xid', 'warning')], 'Xid 13 (graphics engine exception) on 0000:01:00, 1 time(s)'),
    (['NVRM: Xid (PCI:0000:01:00): 999, something new'], [('gpu-xid', 'warning')], 'Xid 999 (an Xid'),
    (['NVRM: API mismatch: the client has the version 535.54.03, but this kernel module has the version 590.48.01.'],
     [('driver-library-mismatch', 'error')], 'the kernel module and the user-space driver libraries'),
    (['NVRM: The NVIDIA probe routine failed for 1 device(s).'], [('gpu-init-failed', 'error')], 'could not initialise'),
    # Without an Xid (the message newer drivers print over several lines).
    (['NVRM: fallen off the bus and is not responding to commands.'], [('gpu-init-failed', 'error')], 'could not initialise'),
    (['Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7'],
     [('module-signature-rejected', 'error')], 'unsigned module'),
    (['nvidia: loading out-of-tree module taints kernel.'], [], None),
])
def test_kernel_log_findings(lines, expected, summary):
    found = checks.kernel_log_findings(dict(source='journalctl -k', lines=lines, error=None))
    assert checks_of(found) == expected
    if summary:
        assert found[0]['summary'].startswith(summary) or summary in found[0]['summary']
        assert found[0]['evidence'] == lines


def test_unreadable_kernel_log_is_info():
    found = checks.kernel_log_findings(dict(source=None, lines=[], error='dmesg failed (rc=1): Operation not permitted'))
    assert checks_of(found) == [('kernel-log-unreadable', 'info')]
    assert found[0]['evidence'] == ['dmesg failed (rc=1): Operation not permitted']


def test_kernel_lines_kept():
    lines = ['usb 1-1: new device', 'NVRM: loading', 'nouveau 0000:01:00.0: DRM: VRAM: 8192 MiB', 'Lockdown: modprobe: x']
    assert checks.relevant_kernel_lines(lines) == lines[1:]


# --- container runtime -------------------------------------------------------------------------------------

BINARY = '/usr/bin/nvidia-container-runtime'


def runtime(**changes):
    facts = dict(runtime='containerd', runtime_name='nvidia', source='containerd config dump', configured={'nvidia': BINARY, 'runc': None},
                 loaded=None, error=None, binaries={BINARY: True}, unit='containerd.service', systemd=True, process=None, active_state='active',
                 active_since=2000.0, config_files={'/etc/containerd/config.toml': 1000.0}, log_errors=[])
    facts.update(changes)
    return facts


@pytest.mark.parametrize('facts, expected', [
    (runtime(), []),
    (runtime(runtime=None, error='no runtime given'), [('runtime-not-found', 'error')]),
    (runtime(configured={'runc': None}), [('runtime-not-configured', 'error')]),
    (runtime(configured=None, error='containerd config dump failed (rc=1): invalid toml'), [('runtime-config-unreadable', 'error')]),
    (runtime(binaries={BINARY: False}), [('runtime-binary-missing', 'error')]),
    # The config changed after containerd started; within a second of the start is the restart handler's write.
    (runtime(config_files={'/etc/containerd/config.toml': 1000.0, '/etc/containerd/conf.d/99-nvidia.toml': 2500.0}),
     [('runtime-not-reloaded', 'error')]),
    (runtime(config_files={'/etc/containerd/config.toml': 2000.5}), []),
    (runtime(active_since=None, config_files={'/etc/containerd/config.toml': 9000.0}), []),
    (runtime(active_state='failed'), [('runtime-not-running', 'error')]),
    (runtime(runtime='docker', unit='docker.service', source='/etc/docker/daemon.json', loaded={'runc': 'runc'}), [('runtime-not-reloaded', 'error')]),
    (runtime(runtime='docker', unit='docker.service', source='/etc/docker/daemon.json', loaded={'runc': 'runc', 'nvidia': BINARY}), []),
    (runtime(log_errors=['level=error msg="no runtime for \\"nvidia\\" is configured"']), [('runtime-log-errors', 'warning')]),
    # systemd is not PID 1: the runtime's process says whether and since when it runs.
    (runtime(systemd=False, process='containerd process 6'), []),
    (runtime(systemd=False, process='containerd process 6', config_files={'/etc/containerd/config.toml': 2500.0}),
     [('runtime-not-reloaded', 'error')]),
    (runtime(systemd=False, active_state='inactive', active_since=None), [('runtime-not-running', 'error')]),
    (runtime(systemd=False, active_state=None, active_since=None), []),
])
def test_runtime_findings(facts, expected):
    assert checks_of(checks.runtime_findings(facts)) == expected


def test_runtime_not_configured_lists_what_is_there_and_the_fix():
    found = checks.runtime_findings(runtime(configured={'runc': None}))[0]
    assert found['evidence'] == ['containerd config dump lists the runtimes: runc']
    assert 'gpuops.gpu_operator.site --limit <node>' in found['fix']


def test_not_reloaded_names_the_newest_file_and_the_restart():
    found = checks.runtime_findings(runtime(config_files={'/etc/containerd/config.toml': 1000.0, '/etc/containerd/conf.d/99-nvidia.toml': 2500.0}))[0]
    assert found['summary'].startswith('/etc/containerd/conf.d/99-nvidia.toml changed after containerd.service started')
    assert found['evidence'] == ['/etc/containerd/conf.d/99-nvidia.toml modified 1970-01-01T00:41:40Z', 'containerd.service active since 1970-01-01T00:33:20Z']
    assert found['fix'] == 'restart it: systemctl restart containerd'


def test_on_a_distribution_s_node_the_fix_restarts_the_distribution():
    """k3s runs its containerd: restarting containerd.service would restart nothing (k3s writes its config anew then)."""
    drop_in = '/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/99-nvidia.toml'
    found = checks.runtime_findings(runtime(unit='k3s.service', config_files={drop_in: 2500.0}))[0]
    assert found['summary'].startswith(drop_in + ' changed after k3s.service started')
    assert found['fix'] == 'restart it: systemctl restart k3s'


def test_without_systemd_the_findings_name_the_process_and_no_systemctl():
    """Where systemd is not PID 1 nothing can be fixed with systemctl: the runtime is restarted or started by whoever runs it."""
    reloaded = checks.runtime_findings(runtime(systemd=False, process='containerd process 6',
                                               config_files={'/etc/containerd/config.toml': 2500.0}))[0]
    assert reloaded['summary'].startswith('/etc/containerd/config.toml changed after containerd process 6 started')
    assert reloaded['evidence'] == ['/etc/containerd/config.toml modified 1970-01-01T00:41:40Z', 'containerd process 6 running since 1970-01-01T00:33:20Z']
    assert reloaded['fix'] == 'restart containerd the way this node runs it (systemd is not PID 1 on this node)'
    docker = checks.runtime_findings(runtime(runtime='docker', unit='docker.service', systemd=False, process='dockerd process 30',
                                             source='/etc/docker/daemon.json', loaded={'runc': 'runc'}))[0]
    assert docker['fix'] == 'restart docker the way this node runs it (systemd is not PID 1 on this node)'
    stopped = checks.runtime_findings(runtime(systemd=False, active_state='inactive', active_since=None))[0]
    assert (stopped['summary'], stopped['evidence']) == (
        'containerd is not running', ['no containerd process (systemd is not PID 1 on this node: no unit to ask)'])
    assert 'systemctl' not in stopped['fix'] + reloaded['fix'] + docker['fix']


# --- cluster: Nodes ----------------------------------------------------------------------------------------

def node(name='gpu-1', labels=None, owned=None, capacity=None, allocatable=None, taints=None):
    metadata = dict(name=name, labels=dict(labels or {}))
    if owned is not None:
        metadata['annotations'] = {'gpuops.io/nfd-labels': '[%s]' % ','.join('"%s"' % key for key in owned)}
    status = {}
    if capacity is not None:
        status['capacity'] = {'nvidia.com/gpu': capacity}
    if allocatable is not None:
        status['allocatable'] = {'nvidia.com/gpu': allocatable}
    return dict(metadata=metadata, spec=dict(taints=taints) if taints else {}, status=status)


EXPECTED = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.count': '1', 'nvidia.com/gpu.product': 'Tesla-T4',
            'nvidia.com/gpu.deploy.driver': 'true', 'nvidia.com/gpu.deploy.device-plugin': 'true'}


@pytest.mark.parametrize('current, owned, expected', [
    (EXPECTED, list(EXPECTED), []),
    ({}, [], [('labels-missing', 'error')]),
    (dict(EXPECTED, **{'nvidia.com/gpu.product': 'NVIDIA-A100'}), list(EXPECTED), [('labels-outdated', 'warning')]),
    # The Operator's rule: a deploy label set to another value (pre-installed, false) is kept, not reported.
    (dict(EXPECTED, **{'nvidia.com/gpu.deploy.driver': 'pre-installed'}), list(EXPECTED), []),
    # A label we set that no longer applies.
    (dict(EXPECTED, **{'nvidia.com/mig.strategy': 'single'}), list(EXPECTED) + ['nvidia.com/mig.strategy'], [('labels-outdated', 'warning')]),
])
def test_label_findings(current, owned, expected):
    assert checks_of(cluster_checks.label_findings('gpu-1', node(labels=current, owned=owned), EXPECTED)) == expected


def test_labels_missing_lists_them_with_values():
    found = cluster_checks.label_findings('gpu-1', node(labels={'nvidia.com/gpu.present': 'true'}), EXPECTED)[0]
    assert found['evidence'] == ['nvidia.com/gpu.count=1', 'nvidia.com/gpu.deploy.device-plugin=true', 'nvidia.com/gpu.deploy.driver=true',
                                 'nvidia.com/gpu.product=Tesla-T4']


def test_node_not_registered_and_labels_unknown():
    assert checks_of(cluster_checks.label_findings('gpu-1', None, EXPECTED)) == [('node-not-registered', 'error')]
    assert cluster_checks.label_findings('gpu-1', node(), None) == []


SOCKETS = {'/var/lib/kubelet/device-plugins/kubelet.sock': True, '/var/lib/kubelet/device-plugins/nvidia-gpu.sock': False}


@pytest.mark.parametrize('kwargs, expected', [
    (dict(labels=EXPECTED, capacity='1', allocatable='1'), []),
    (dict(labels={}), []),
    (dict(labels=EXPECTED), [('device-plugin-not-registered', 'error')]),
    (dict(labels=EXPECTED, capacity='0', allocatable='0'), [('gpu-capacity-zero', 'error')]),
    (dict(labels=EXPECTED, capacity='1', allocatable='0'), [('gpu-capacity-zero', 'error')]),
    (dict(labels=dict(EXPECTED, **{'nvidia.com/gpu.replicas': '4'}), capacity='1', allocatable='1'), [('gpu-capacity-mismatch', 'warning')]),
])
def test_device_plugin_findings(kwargs, expected):
    assert checks_of(cluster_checks.device_plugin_findings(node(**kwargs), SOCKETS)) == expected


def test_device_plugin_not_registered_names_the_missing_socket():
    found = cluster_checks.device_plugin_findings(node(labels=EXPECTED), SOCKETS)[0]
    assert found['evidence'] == ['Node gpu-1 has no status.capacity[nvidia.com/gpu]',
                                 'socket missing: /var/lib/kubelet/device-plugins/nvidia-gpu.sock (served by the device plugin for nvidia.com/gpu)']


@pytest.mark.parametrize('toleration, taint, expected', [
    ({'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}, {'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}, True),
    ({'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}, {'key': 'nvidia.com/gpu', 'effect': 'NoExecute'}, False),
    ({'key': 'nvidia.com/gpu', 'operator': 'Exists'}, {'key': 'nvidia.com/gpu', 'value': 'x', 'effect': 'NoExecute'}, True),
    ({'operator': 'Exists'}, {'key': 'anything', 'effect': 'NoSchedule'}, True),
    ({'key': 'dedicated', 'value': 'gpu', 'effect': 'NoSchedule'}, {'key': 'dedicated', 'value': 'gpu', 'effect': 'NoSchedule'}, True),
    ({'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu'}, {'key': 'dedicated', 'value': 'ml', 'effect': 'NoSchedule'}, False),
    ({'key': 'dedicated', 'operator': 'Equal'}, {'key': 'dedicated', 'effect': 'NoSchedule'}, True),
])
def test_tolerates(toleration, taint, expected):
    assert cluster_checks.tolerates(toleration, taint) is expected


def daemonset(name, deploy, tolerations, status=None):
    pod_spec = dict(nodeSelector={'nvidia.com/gpu.deploy.%s' % deploy: 'true'}, tolerations=tolerations)
    return dict(metadata=dict(name=name), spec=dict(template=dict(spec=pod_spec)), status=status or {})


GPU_TOLERATION = [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
OPERANDS = [daemonset('nvidia-device-plugin-daemonset', 'device-plugin', GPU_TOLERATION), daemonset('nvidia-mig-manager', 'mig-manager', GPU_TOLERATION)]


@pytest.mark.parametrize('taints, expected_names', [
    ([{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}], None),
    ([{'key': 'node.kubernetes.io/unschedulable', 'effect': 'NoSchedule'}], None),
    ([{'key': 'dedicated', 'value': 'ml', 'effect': 'PreferNoSchedule'}], None),
    # Only the device plugin selects this node (no mig-manager deploy label).
    ([{'key': 'dedicated', 'value': 'ml', 'effect': 'NoSchedule'}], ['dedicated=ml:NoSchedule blocks nvidia-device-plugin-daemonset']),
])
def test_taint_findings(taints, expected_names):
    found = cluster_checks.taint_findings(node(labels=EXPECTED, taints=taints), OPERANDS)
    if expected_names is None:
        assert found == []
    else:
        assert checks_of(found) == [('taint-not-tolerated', 'error')]
        assert found[0]['evidence'] == expected_names
        assert 'kubectl taint nodes gpu-1 dedicated=ml:NoSchedule-' in found[0]['fix']


def test_taints_count_the_labels_the_node_should_have():
    # The deploy label is missing on the Node but expected: the taint would still block the operand once labelled.
    found = cluster_checks.taint_findings(node(taints=[{'key': 'dedicated', 'effect': 'NoExecute'}]), OPERANDS, EXPECTED)
    assert found[0]['evidence'] == ['dedicated:NoExecute blocks nvidia-device-plugin-daemonset']


# --- cluster: operands, namespace, ClusterPolicy ----------------------------------------------------------

def pod(name, phase='Running', ready=False, containers=None, node_name='gpu-1'):
    return dict(metadata=dict(name=name, namespace='gpu-operator'), spec=dict(nodeName=node_name),
                status=dict(phase=phase, conditions=[dict(type='Ready', status='True' if ready else 'False', reason='ContainersNotReady',
                                                          message='containers with unready status: [x]')],
                            containerStatuses=containers or []))


WAITING_CRASH = [dict(name='nvidia-device-plugin', restartCount=3, state=dict(waiting=dict(reason='CrashLoopBackOff', message='back-off 40s')),
                      lastState=dict(terminated=dict(reason='Error', exitCode=1)))]
WAITING_PULL = [dict(name='nvidia-dcgm-exporter', state=dict(waiting=dict(reason='ImagePullBackOff', message='Back-off pulling image')))]
RUNTIME_EVENT = dict(type='Warning', reason='FailedCreatePodSandBox', involvedObject=dict(kind='Pod', name='p1'),
                     message='Failed to create pod sandbox: rpc error: no runtime for "nvidia" is configured')


@pytest.mark.parametrize('the_pod, events, log, expected_fix', [
    (pod('p1', ready=True), [], '', None),
    (pod('p1', phase='Succeeded'), [], '', None),
    (pod('p1', containers=WAITING_CRASH), [], 'E1 failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND', 'the container exits'),
    (pod('p1', containers=WAITING_PULL), [], '', 'the image cannot be pulled'),
    (pod('p1', phase='Pending'), [RUNTIME_EVENT], '', 'the nvidia runtime cannot start containers on <node>'),
    (pod('p1', phase='Pending'), [], '', 'kubectl -n gpu-operator describe pod p1'),
])
def test_pod_finding(the_pod, events, log, expected_fix):
    found = cluster_checks.pod_finding(the_pod, cluster_checks.pod_events(the_pod, events), log)
    if expected_fix is None:
        assert found is None
    else:
        assert found['check'] == 'operand-pod-not-ready'
        assert found['fix'].startswith(expected_fix)


def test_pod_finding_evidence():
    found = cluster_checks.pod_finding(pod('p1', containers=WAITING_CRASH), [], 'line 1\nE1 failed to initialize NVML\n')
    assert found['summary'] == 'Pod gpu-operator/p1 is not ready (CrashLoopBackOff)'
    assert found['evidence'] == [
        'phase Running',
        'container nvidia-device-plugin waiting: CrashLoopBackOff: back-off 40s',
        'container nvidia-device-plugin restarted 3 time(s), last exit: Error (exit 1)',
        'condition Ready=False ContainersNotReady: containers with unready status: [x]',
        'log: line 1',
        'log: E1 failed to initialize NVML',
    ]


def test_pod_events_are_the_pods_own():
    other = dict(RUNTIME_EVENT, involvedObject=dict(kind='Pod', name='p2'))
    assert cluster_checks.pod_events(pod('p1'), [RUNTIME_EVENT, other, dict(involvedObject=dict(kind='DaemonSet', name='p1'))]) == [RUNTIME_EVENT]


def test_daemonset_findings():
    daemonsets = [daemonset('a', 'device-plugin', []), daemonset('b', 'dcgm-exporter', [], dict(desiredNumberScheduled=0)),
                  daemonset('c', 'mig-manager', [], dict(desiredNumberScheduled=2, numberReady=1)),
                  daemonset('d', 'gpu-feature-discovery', [], dict(desiredNumberScheduled=2, numberReady=2))]
    found = cluster_checks.daemonset_findings(daemonsets)
    assert checks_of(found) == [('operands-not-rolled-out', 'warning')]
    assert found[0]['evidence'] == ['a: no status yet (no controller has rolled it out)',
                                    'b: schedules no Pod: no Node matches nvidia.com/gpu.deploy.dcgm-exporter=true', 'c: 1/2 Pods ready']
    assert cluster_checks.daemonset_findings(daemonsets[3:]) == []


def namespace(labels):
    return dict(metadata=dict(name='gpu-operator', labels=labels))


PRIVILEGED = {'pod-security.kubernetes.io/enforce': 'privileged'}
PSA_EVENT = dict(reason='FailedCreate', involvedObject=dict(kind='DaemonSet', name='nvidia-device-plugin-daemonset'),
                 message='Error creating: pods "nvidia-device-plugin-daemonset-x" is forbidden: violates PodSecurity "baseline:latest": '
                         'host namespaces (hostPID=true)')
RBAC_EVENT = dict(reason='FailedCreate', involvedObject=dict(kind='DaemonSet', name='gpu-feature-discovery'),
                  message='Error creating: pods "gpu-feature-discovery-x" is forbidden: error looking up service account '
                          'gpu-operator/gpu-feature-discovery: serviceaccount "gpu-feature-discovery" not found')


@pytest.mark.parametrize('ns, events, logs, expected', [
    (namespace(PRIVILEGED), [], {}, []),
    (None, [], {}, [('namespace-missing', 'error')]),
    (namespace({'pod-security.kubernetes.io/enforce': 'baseline'}), [], {}, [('namespace-psa-restricted', 'error')]),
    (namespace({}), [], {}, [('namespace-psa-restricted', 'warning')]),
    (namespace(PRIVILEGED), [PSA_EVENT], {}, [('psa-refused', 'error')]),
    (namespace(PRIVILEGED), [RBAC_EVENT], {}, [('rbac-forbidden', 'error')]),
    (namespace(PRIVILEGED), [], {'gfd-x': 'E nodes "gpu-1" is forbidden: User "system:serviceaccount:gpu-operator:gfd" cannot patch'},
     [('rbac-forbidden', 'error')]),
])
def test_namespace_findings(ns, events, logs, expected):
    assert checks_of(cluster_checks.namespace_findings('gpu-operator', ns, events, logs)) == expected


@pytest.mark.parametrize('policies, expected', [
    ([], [('clusterpolicy-missing', 'error')]),
    ([dict(metadata=dict(name='cluster-policy'), status=dict(state='ready'))], []),
    ([dict(metadata=dict(name='cluster-policy'))], [('clusterpolicy-not-ready', 'warning')]),
    ([dict(metadata=dict(name='cluster-policy'), status=dict(state='notReady', conditions=[
        dict(type='Ready', status='False', reason='OperandNotReady', message='vectorAdd did not pass')]))], [('clusterpolicy-not-ready', 'warning')]),
])
def test_cluster_policy_findings(policies, expected):
    assert checks_of(cluster_checks.cluster_policy_findings(policies)) == expected


def test_api_findings():
    found = cluster_checks.api_findings([['Pods in gpu-operator', '403 Forbidden']])
    assert checks_of(found) == [('api-read-failed', 'error')] and found[0]['evidence'] == ['403 Forbidden']


# --- Node labels against the device plugin config --------------------------------------------------------

PLUGIN_POLICY = [dict(metadata=dict(name='cluster-policy'),
                      spec=dict(mig=dict(strategy='single'), devicePlugin=dict(config=dict(name='plugin-configs', default='ts'))))]
PLUGIN_CONFIGS = [dict(metadata=dict(name='kube-root-ca.crt'), data={'ca.crt': 'x'}),
                  dict(metadata=dict(name='plugin-configs'), data={
                      'ts': 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n',
                      'mps': 'version: v1\nsharing:\n  mps:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 2}\n',
                      'broken': 'sharing: [a'})]
TIME_SLICED = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3-SHARED', 'nvidia.com/gpu.replicas': '4',
               'nvidia.com/gpu.sharing-strategy': 'time-slicing', 'nvidia.com/mps.capable': 'false', 'nvidia.com/mig.strategy': 'single'}
MPS_SHARED = dict(TIME_SLICED, **{'nvidia.com/device-plugin.config': 'mps', 'nvidia.com/gpu.replicas': '2',
                                  'nvidia.com/gpu.sharing-strategy': 'mps', 'nvidia.com/mps.capable': 'true'})


@pytest.mark.parametrize('labels, expected', [
    (TIME_SLICED, []),                                   # the default config, labelled as it shares
    (MPS_SHARED, []),                                    # the config the node's label picks
    (dict(TIME_SLICED, **{'nvidia.com/device-plugin.config': 'mps'}), [('labels-disagree-with-plugin-config', 'error')]),
    (dict(MPS_SHARED, **{'nvidia.com/mps.capable': 'false'}), [('labels-disagree-with-plugin-config', 'error')]),
    (dict(TIME_SLICED, **{'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3'}), [('labels-disagree-with-plugin-config', 'error')]),
    (dict(TIME_SLICED, **{'nvidia.com/mig.strategy': 'mixed'}), [('labels-disagree-with-plugin-config', 'error')]),
    (dict(TIME_SLICED, **{'nvidia.com/device-plugin.config': 'other'}), [('device-plugin-config-missing', 'error')]),
    (dict(TIME_SLICED, **{'nvidia.com/device-plugin.config': 'broken'}), [('device-plugin-config-invalid', 'error')]),
    ({'nvidia.com/gpu.present': 'true'}, []),            # labels missing altogether: labels-missing says so
    ({'nvidia.com/gpu.present': 'false'}, []),
])
def test_plugin_config_findings(labels, expected):
    assert checks_of(cluster_checks.plugin_config_findings(node(labels=labels), PLUGIN_POLICY, PLUGIN_CONFIGS)) == expected


def test_plugin_config_disagreement_says_what_and_why():
    found = cluster_checks.plugin_config_findings(node(labels=dict(TIME_SLICED, **{'nvidia.com/device-plugin.config': 'mps'})), PLUGIN_POLICY, PLUGIN_CONFIGS)
    assert found[0]['evidence'] == [
        'nvidia.com/gpu.replicas: Node has 4, config mps of ConfigMap plugin-configs (label nvidia.com/device-plugin.config) makes it 2',
        'nvidia.com/gpu.sharing-strategy: Node has time-slicing, config mps of ConfigMap plugin-configs (label nvidia.com/device-plugin.config) '
        'makes it mps',
        'nvidia.com/mps.capable: Node has false, config mps of ConfigMap plugin-configs (label nvidia.com/device-plugin.config) makes it true']
    assert 'gpu_node_labels_device_plugin_config' in found[0]['fix']
    # without a config, nothing is shared: a node labelled as shared disagrees
    no_config = [dict(PLUGIN_POLICY[0], spec=dict(mig=dict(strategy='single'), devicePlugin={}))]
    assert checks_of(cluster_checks.plugin_config_findings(node(labels=TIME_SLICED), no_config, [])) == [('labels-disagree-with-plugin-config', 'error')]
    assert cluster_checks.plugin_config_findings(node(labels=TIME_SLICED), None, PLUGIN_CONFIGS) == []
    assert cluster_checks.plugin_config_findings(node(labels=TIME_SLICED), PLUGIN_POLICY, None) == [], 'ConfigMaps not read: not checked'


# --- report -------------------------------------------------------------------------------------------------

def node_result(findings, sockets=None):
    return dict(findings=findings, facts=dict(pci_gpus=1, gpu_names=['Tesla T4'], driver_version='515.105.01', runtime='containerd',
                                              device_plugin_sockets=sockets or SOCKETS))


def cluster(**changes):
    result = dict(namespace='gpu-operator', nodes=[node('gpu-1', labels=EXPECTED, owned=list(EXPECTED), capacity='1', allocatable='1'),
                                                   node('gpu-2', labels={}, owned=[])],
                  namespaces=[namespace(PRIVILEGED)],
                  daemonsets=[daemonset('nvidia-device-plugin-daemonset', 'device-plugin', GPU_TOLERATION, dict(desiredNumberScheduled=1, numberReady=1))],
                  pods=[pod('p1', containers=WAITING_CRASH, node_name='gpu-2')], events=[], logs={},
                  cluster_policies=[dict(metadata=dict(name='cluster-policy'), status=dict(state='ready'))], errors=[])
    result.update(changes)
    return result


NOT_CONFIGURED = checks.runtime_findings(runtime(configured={'runc': None}))


def test_report_per_node_and_cluster():
    nodes = {
        'host-1': dict(node_name='gpu-1', result=node_result([]), expected_labels=EXPECTED),
        'host-2': dict(node_name='gpu-2', result=node_result(NOT_CONFIGURED), expected_labels=EXPECTED),
        'host-3': None,
    }
    report = doctor_report.build(nodes, cluster(), generated='now', inventory='inventory/prod.yml')
    assert report['nodes']['host-1']['findings'] == []
    assert checks_of(report['nodes']['host-2']['findings']) == [
        ('runtime-not-configured', 'error'), ('labels-missing', 'error'), ('operand-pod-not-ready', 'error')]
    # <node> and <inventory> are spelled out in the fixes.
    fix = report['nodes']['host-2']['findings'][0]['fix']
    assert 'ansible-playbook -i inventory/prod.yml gpuops.gpu_operator.site --limit host-2' in fix
    assert checks_of(report['nodes']['host-3']['findings']) == [('node-unreachable', 'error'), ('node-not-registered', 'error')]
    assert report['cluster']['findings'] == []
    assert report['summary'] == dict(nodes=3, errors=5, warnings=0, info=0, nodes_with_errors=['host-2', 'host-3'],
                                     checks=['labels-missing', 'node-not-registered', 'node-unreachable', 'operand-pod-not-ready',
                                             'runtime-not-configured'])


# As doctor.yml records a node: nothing when the host never got to the end of its checks (unreachable), the failed
# task and its message when one of its check tasks failed (the message of the run on the H100 host, SOURCE.md there).
SYSTEMCTL = 'systemctl show failed (rc=127): systemctl: command not found'
RUNTIME_TASK = "Read the node's container runtime, its services and the toolkit's packages"


@pytest.mark.parametrize('data, check, summary, evidence, fix', [
    (None, 'node-unreachable', 'the node checks did not run on this host',
     ['unreachable, or it failed before the checks (see the play output)'], 'ansible -i inv.yml gpu-1 -m ansible.builtin.ping'),
    (dict(node_name='gpu-1', result=None, failed_task=RUNTIME_TASK, error=SYSTEMCTL, expected_labels=EXPECTED), 'node-check-failed',
     "the check task '%s' failed on the node; the checks after it did not run" % RUNTIME_TASK, [SYSTEMCTL],
     "fix what the task's message says on the node"),
    (dict(node_name='gpu-1', result=None, failed_task='Check the driver, the kernel log and the container runtime', error=None,
          expected_labels=EXPECTED), 'node-check-failed',
     "the check task 'Check the driver, the kernel log and the container runtime' failed on the node; the checks after it did not run",
     ['failed'], 'ansible-playbook -i inv.yml gpuops.gpu_operator.doctor'),
], ids=['unreachable', 'runtime detection failed', 'the doctor module failed without a message'])
def test_a_node_that_answered_is_not_called_unreachable(data, check, summary, evidence, fix):
    report = doctor_report.build({'gpu-1': data}, cluster(), inventory='inv.yml')
    [found] = [item for item in report['nodes']['gpu-1']['findings'] if item['check'] in ('node-unreachable', 'node-check-failed')]
    assert (found['check'], found['severity'], found['summary'], found['evidence']) == (check, 'error', summary, evidence)
    assert fix in found['fix']
    assert report['summary']['nodes_with_errors'] == ['gpu-1']
    # The node's labels and the cluster's view of it are still checked: gpu-1 has them all.
    assert [item['check'] for item in report['nodes']['gpu-1']['findings']] == [check]


def test_report_when_the_api_could_not_be_read():
    nodes = {'host-1': dict(node_name='gpu-1', result=node_result([]), expected_labels=EXPECTED)}
    report = doctor_report.build(nodes, cluster(nodes=None, pods=None, namespaces=None, cluster_policies=None, daemonsets=None,
                                                errors=[['Nodes', 'Unauthorized']]))
    assert checks_of(report['cluster']['findings']) == [('api-read-failed', 'error')]
    # Nothing claimed about what could not be read.
    assert report['nodes']['host-1']['findings'] == []


def test_report_cluster_findings_and_unscheduled_pods():
    unscheduled = pod('p9', phase='Pending', node_name=None)
    report = doctor_report.build({}, cluster(pods=[unscheduled], cluster_policies=[], namespaces=[]))
    assert checks_of(report['cluster']['findings']) == [('namespace-missing', 'error'), ('clusterpolicy-missing', 'error'),
                                                        ('operand-pod-not-ready', 'error')]


def test_labels_not_computed_only_for_a_registered_node():
    nodes = {'host-1': dict(node_name='gpu-1', result=node_result([]), expected_labels=None, labels_error='cannot get Node'),
             'host-9': dict(node_name='gpu-9', result=node_result([]), expected_labels=None, labels_error='404 Not Found')}
    report = doctor_report.build(nodes, cluster())
    assert checks_of(report['nodes']['host-1']['findings']) == [('labels-not-computed', 'warning')]
    assert checks_of(report['nodes']['host-9']['findings']) == [('node-not-registered', 'error')]


def test_text():
    nodes = {'host-2': dict(node_name='gpu-2', result=node_result(NOT_CONFIGURED), expected_labels=EXPECTED)}
    lines = doctor_report.text(doctor_report.build(nodes, cluster(pods=[]), generated='2026-01-01T00:00:00Z'))
    assert lines[:4] == ['GPU doctor report 2026-01-01T00:00:00Z', '1 node(s): 2 error(s), 0 warning(s), 0 info; errors on: host-2', '',
                         'Cluster (operator namespace gpu-operator)']
    assert lines[4] == '  no findings'
    assert lines[6] == 'Node host-2 (Node object gpu-2): 1 GPU(s) on PCI, Tesla T4, driver 515.105.01, runtime containerd'
    assert lines[7] == '  ERROR   runtime-not-configured: the nvidia runtime is not registered with containerd'
    assert lines[8] == '          | containerd config dump lists the runtimes: runc'
    assert lines[9].startswith('          fix: register it (container_toolkit stage): ansible-playbook -i <inventory>')


def test_text_cuts_long_evidence_the_json_keeps_it():
    missing = cluster_checks.label_findings('gpu-2', node('gpu-2'), dict(('nvidia.com/l%02d' % number, 'x') for number in range(20)))
    report = doctor_report.build({'host-2': dict(node_name='gpu-2', result=node_result(missing))}, cluster(pods=[]))
    assert len(report['nodes']['host-2']['findings'][0]['evidence']) == 20
    lines = doctor_report.text(report)
    evidence = [line for line in lines if line.startswith('          | ')]
    assert len(evidence) == doctor_report.TEXT_EVIDENCE_LINES + 1
    assert evidence[-1] == '          | ... and 8 more (see the JSON report)'


NO_RUNTIME = ('No container runtime of the kubelet found on vm: its configuration names no runtime socket and this stage configures '
              'containerd, CRI-O or Docker (with no socket named, the first one installed); set container_toolkit_runtime.')


@pytest.mark.parametrize('findings, error, expected', [
    ([], None, []),
    # The real H100 host (tests/fixtures/gpus/h100-x1/host-run-after-fixes): no runtime installed.
    ([checks.finding('runtime-not-found', 'error', 'no container runtime found for the kubelet (containerd, CRI-O or Docker)')], NO_RUNTIME,
     [('runtime-not-found', 'error', [NO_RUNTIME])]),
    ([checks.finding('driver-not-loaded', 'error', 'x', ['y'])], 'kubelet config unreadable',
     [('driver-not-loaded', 'error', ['y']), ('runtime-detection-failed', 'warning', ['kubelet config unreadable'])]),
], ids=['no error', 'no runtime: the stage says why', 'detection failed, the module found a runtime'])
def test_the_node_is_checked_when_its_runtime_cannot_be_told(findings, error, expected):
    """doctor.yml goes on to the doctor module when the runtime detection fails; the stage's message is kept."""
    data = dict(node_name='gpu-1', result=dict(node_result([]), findings=findings), expected_labels=EXPECTED, runtime_error=error)
    report = doctor_report.build({'gpu-1': data}, cluster(), inventory='inv.yml')
    assert [(item['check'], item['severity'], item['evidence']) for item in report['nodes']['gpu-1']['findings']] == expected
