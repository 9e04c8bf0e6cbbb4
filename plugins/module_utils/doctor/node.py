# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The gpu_node_doctor module's reader: what a node shows, through read-only commands and file reads only.

Every command runs through `run()`: an argv list and LC_ALL=C; a program that is not installed gives
rc 127. The checks themselves are in doctor_checks.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import time

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_cli
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import device_plugin as device_plugin_check
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import checks
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect import executor as gpudirect_executor
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import systemd as init
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import VM_PASSTHROUGH, VM_VGPU
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.commands import run
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_detection
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_detection import DAEMONS, UNITS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.vfio import plan as vfio_plan

# Enough of the kernel log for a boot's worth of driver messages; the runtime's recent errors.
KERNEL_LOG_LINES = 20000
RUNTIME_LOG_LINES = 500
CRIO_CONFIG = '/etc/crio/crio.conf'


def failure(argv, rc, out, err):
    detail = ' '.join((to_text(err) or to_text(out) or 'no output').split())
    return '%s failed (rc=%d): %s' % (' '.join(argv), rc, detail[:500])


def gather_driver(module):
    """What doctor_checks.driver_findings() needs."""
    params = module.params
    binary = gpu_discovery.find_nvidia_smi(params['nvidia_smi'], module.get_bin_path)
    # A sysfs_root that is no sysfs fails the module (DiscoveryError) here, before nvidia-smi runs.
    pci_gpus = gpu_discovery.nvidia_display_devices(gpu_discovery.pci_devices(params['sysfs_root']))
    try:
        gpu = gpu_discovery.gather(gpu_discovery.runner(module), params['sysfs_root'], params['procfs_root'], nvidia_smi=binary,
                                   configured=bool(params['nvidia_smi']))
    except gpu_discovery.DiscoveryError as exc:
        # nvidia-smi printed something it does not document: report that, keep the PCI view.
        gpu = dict(pci_gpus=pci_gpus, gpus=[], nvidia_smi=binary, nvidia_smi_errors=[str(exc)], nvidia_smi_problem=None, driver_version=None,
                   disagreement=None, unlisted=[])
    modules = gpu_discovery.read_text(os.path.join(params['procfs_root'], 'modules'))
    return dict(gpu=gpu, proc_driver=driver_state.proc_driver(params['procfs_root']),
                modules=driver_state.parse_proc_modules(modules) if modules is not None else None,
                secure_boot=driver_state.secure_boot(params['sysfs_root']))


def gather_gpudirect(module):
    """What doctor_checks.gpudirect_findings() needs: the modules gpudirect's modules-load.d list names, and the node's state."""
    params = module.params
    text = gpu_discovery.read_text(params['gpudirect_modules_load_file'])
    wanted = None if text is None else [line.strip() for line in text.splitlines() if line.strip() and not line.startswith('#')]
    return dict(wanted=wanted, state=gpudirect_executor.node_state(params) if wanted else None)


def gather_kernel_log(module):
    """dict(source, lines, error): the driver's kernel log lines from the journal, else dmesg."""
    problems = []
    argv = ['journalctl', '-k', '-b', '-q', '--no-pager', '-o', 'short-monotonic', '-n', str(KERNEL_LOG_LINES)]
    rc, out, err = run(module, argv)
    if rc == 0 and out.strip():
        return dict(source='journalctl -k', lines=checks.relevant_kernel_lines(out.splitlines()), error=None)
    problems.append(failure(argv, rc, out, err) if rc else 'journalctl -k: the journal holds no kernel messages')
    rc, out, err = run(module, ['dmesg'])
    if rc == 0:
        return dict(source='dmesg', lines=checks.relevant_kernel_lines(out.splitlines()[-KERNEL_LOG_LINES:]), error=None)
    problems.append(failure(['dmesg'], rc, out, err))
    return dict(source=None, lines=[], error='; '.join(problems))


def _configured(module, runtime):
    """(what was read, {runtime: binary} or None, the running runtimes or None, config files, error)."""
    params = module.params
    if runtime == 'containerd':
        path = params['containerd_config']
        try:
            dump = containerd_cli.config_dump(module, path, params['containerd'])
        except commands.CommandError as exc:
            return 'containerd config dump', None, None, [path], str(exc)
        if dump is None:
            return 'containerd config dump', None, None, [path], 'containerd is not installed'
        try:
            return 'containerd config dump', checks.containerd_runtimes(dump), None, [path] + checks.containerd_imports(dump), None
        except GpuOpsError as exc:
            return 'containerd config dump', None, None, [path], str(exc)
    if runtime == 'docker':
        path = params['docker_config']
        try:
            configured = checks.daemon_json_runtimes(to_text(files.read_bytes(path) or b''))
        except files.FileError as exc:
            return path, None, None, [path], str(exc)
        rc, out, err = run(module, ['docker', 'info', '--format', '{{json .Runtimes}}'])
        loaded = checks.docker_info_runtimes(out) if rc == 0 else None
        return path, configured, loaded, [path], None if configured is not None else '%s is not a JSON object' % path
    argv = ['crio', 'config']
    rc, out, err = run(module, argv)
    if rc != 0:
        return 'crio config', None, None, [params['crio_drop_in'], CRIO_CONFIG], failure(argv, rc, out, err)
    try:
        return 'crio config', checks.crio_runtimes(out), None, [params['crio_drop_in'], CRIO_CONFIG], None
    except GpuOpsError as exc:
        return 'crio config', None, None, [params['crio_drop_in'], CRIO_CONFIG], str(exc)


def _binary_exists(module, binary):
    return os.path.exists(binary) if os.path.isabs(binary) else module.get_bin_path(binary) is not None


def gather_runtime(module):
    """What doctor_checks.runtime_findings() needs."""
    params = module.params
    runtime = params['runtime']
    facts = dict(runtime=runtime, runtime_name=params['runtime_name'], source=None, configured=None, loaded=None, error=None, binaries={},
                 unit=params.get('unit') or UNITS.get(runtime), systemd=None, process=None, active_state=None, active_since=None, config_files={},
                 log_errors=[])
    if not runtime:
        facts['error'] = 'no runtime given: the kubelet\'s config names none and no containerd, CRI-O or Docker service is installed'
        return facts
    source, configured, loaded, paths, error = _configured(module, runtime)
    facts.update(source=source, configured=configured, loaded=loaded, error=error)
    binary = (configured or {}).get(params['runtime_name'])
    if binary:
        facts['binaries'][binary] = _binary_exists(module, binary)
    facts['config_files'] = dict((path, os.stat(path).st_mtime) for path in paths if path and os.path.isfile(path))
    facts['systemd'] = init.booted(module)
    if not facts['systemd']:
        # Run by something else (a container's entrypoint, a supervisor): its process tells whether and since when it runs;
        # a daemon that is not even installed is not called stopped, as systemd calls no unit that is not found inactive.
        pids = runtime_detection.daemon_processes(runtime_detection.PROC_ROOT)[runtime]
        if pids:
            facts.update(process='%s process %d' % (DAEMONS[runtime], pids[0]), active_state='active',
                         active_since=runtime_detection.process_started(runtime_detection.PROC_ROOT, pids[0]))
        elif module.get_bin_path(DAEMONS[runtime]):
            facts['active_state'] = 'inactive'
        return facts
    rc, out, err = run(module, ['systemctl', 'show', facts['unit'], '--property=LoadState', '--property=ActiveState',
                                '--property=ActiveEnterTimestampMonotonic'])
    properties = checks.systemd_properties(out) if rc == 0 else {}
    # A runtime not run by systemd: its state and start time are unknown.
    if properties.get('LoadState') == 'loaded':
        facts['active_state'] = properties.get('ActiveState')
        facts['active_since'] = checks.active_since(properties, time.time(), time.monotonic())
    rc, out, err = run(module, ['journalctl', '-u', facts['unit'], '-b', '-q', '--no-pager', '-o', 'cat', '-n', str(RUNTIME_LOG_LINES)])
    if rc == 0:
        facts['log_errors'] = checks.runtime_log_errors(out.splitlines(), params['runtime_name'])
    return facts


def gather_tee(sysfs_root):
    """{kvm module parameter: its value ('Y', 'N'), None where the module is not loaded} of checks.TEE_PARAMETERS."""
    found = {}
    for module_name, parameter, _name in checks.TEE_PARAMETERS:
        text = gpu_discovery.read_text(os.path.join(sysfs_root, 'module', module_name, 'parameters', parameter))
        found['%s.%s' % (module_name, parameter)] = text.strip() if text is not None else None
    return found


def gather_vfio(sysfs_root, procfs_root, confidential_computing=False):
    """What doctor_checks.vfio_findings() needs; with confidential_computing, the CPU's TEE as KVM offers it (tee)."""
    modules = gpu_discovery.read_text(os.path.join(procfs_root, 'modules'))
    return dict(functions=vfio_plan.functions(sysfs_root), iommu_groups=len(vfio_plan.iommu_groups(sysfs_root)),
                kernel_parameters=vfio_plan.kernel_iommu_parameters(gpu_discovery.read_text(os.path.join(procfs_root, 'cmdline'))),
                vfio_pci=os.path.isdir(os.path.join(sysfs_root, 'bus', 'pci', 'drivers', vfio_plan.VFIO_DRIVER))
                or 'vfio_pci' in driver_state.parse_proc_modules(modules or ''),
                tee=gather_tee(sysfs_root) if confidential_computing else None)


def gather(module):
    """Everything the node checks need, and the device plugin's sockets for the cluster checks."""
    params = module.params
    gathered = dict(driver=gather_driver(module), kernel_log=gather_kernel_log(module), runtime=gather_runtime(module),
                    gpudirect=gather_gpudirect(module),
                    device_plugin_sockets=device_plugin_check.observe_sockets(params['device_plugin_dir'], params['resource_name']),
                    workload_config=params['workload_config'], vfio=None)
    if params['workload_config'] == VM_PASSTHROUGH:
        gathered['vfio'] = gather_vfio(params['sysfs_root'], params['procfs_root'], params['confidential_computing'])
    return gathered


def findings(gathered):
    # A vm-passthrough node's GPUs belong to VMs: no driver and no NVIDIA runtime are wanted there.
    if gathered['vfio'] is not None:
        return checks.vfio_findings(gathered['vfio']) + checks.kernel_log_findings(gathered['kernel_log'])
    # A vm-vgpu node's GPUs are the vGPU manager's (an NVIDIA driver on the host): no NVIDIA runtime is wanted there.
    if gathered['workload_config'] == VM_VGPU:
        return checks.driver_findings(gathered['driver']) + checks.kernel_log_findings(gathered['kernel_log'])
    return (checks.driver_findings(gathered['driver']) + checks.gpudirect_findings(gathered['gpudirect'])
            + checks.kernel_log_findings(gathered['kernel_log']) + checks.runtime_findings(gathered['runtime']))


def summary(gathered):
    """The facts the report shows per node."""
    driver, runtime = gathered['driver'], gathered['runtime']
    gpu = driver['gpu']
    loaded = driver['proc_driver'] or {}
    return dict(
        pci_gpus=len(gpu['pci_gpus']),
        gpu_names=sorted(set(item['name'] for item in gpu['gpus'] if item.get('name'))),
        driver_version=gpu.get('driver_version') or loaded.get('version'),
        kernel_module_type=loaded.get('kernel_module_type'),
        nvidia_smi=gpu['nvidia_smi'],
        secure_boot=driver['secure_boot'],
        nouveau_loaded=any(name in (driver['modules'] or {}) for name in driver_state.NOUVEAU_MODULES),
        kernel_log=gathered['kernel_log'],
        runtime=runtime['runtime'],
        runtime_status=runtime,
        device_plugin_sockets=gathered['device_plugin_sockets'],
        workload_config=gathered['workload_config'],
        vfio=gathered['vfio'],
    )
