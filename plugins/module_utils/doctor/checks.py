# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's node checks: pure functions from what a node shows to findings.

A finding is a dict(check, severity, summary, evidence, fix): `check` is a stable id (docs/operations.md
lists them all), severity is error, warning or info, evidence the lines that show the problem and fix
what to do about it. A fix may say `<node>`, `<inventory>` or `<namespace>`; the report spells them out.

The checks take what module_utils/doctor/node.py gathered on the node; the cluster checks, which take the
objects kubernetes.core.k8s_info returns, run on the controller (plugin_utils/doctor_cluster_checks.py). The
parsers of the commands' output are here as well, so that they are tested with the checks.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re
import time

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.systemd import NOT_BOOTED
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect import plan as gpudirect_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_config, toml_doc

SEVERITIES = ('error', 'warning', 'info')
SITE = 'ansible-playbook -i <inventory> gpuops.gpu_operator.site --limit <node>'


def finding(check, severity, summary, evidence=(), fix=''):
    return dict(check=check, severity=severity, summary=summary, evidence=[str(line) for line in evidence], fix=fix)


def by_severity(findings):
    """Errors first, then warnings, then info; in their order within a severity."""
    return sorted(findings, key=lambda item: SEVERITIES.index(item['severity']))


def utc(timestamp):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(timestamp))


# --- parsers of command output ----------------------------------------------------------------

def _toml(text, label):
    """The TOML `text` a runtime printed, read with tomlkit (the reader the runtime modules edit configs with)."""
    if toml_doc.tomlkit is None:
        raise GpuOpsError('%s cannot be read: python3-tomlkit is not installed on the node (the container toolkit stage installs it)' % label)
    return toml_doc.parse(text or '', label)


def containerd_runtimes(dump):
    """{runtime name: BinaryName or None} of the CRI plugin in `containerd config dump` (1.x and 2.x)."""
    doc = _toml(dump, 'containerd config dump')
    version = containerd_config.detect_version(doc)
    return dict((name, containerd_config.binary_name(doc, version, name) or None)
                for name in toml_doc.get_table(doc, containerd_config.runtimes_keys(version)) or {})


def containerd_imports(dump):
    """The files `containerd config dump` says it read (its top-level imports)."""
    return containerd_config.imports_list(_toml(dump, 'containerd config dump'))


def crio_runtimes(text):
    """{runtime name: runtime_path or None} from `crio config`."""
    runtimes = toml_doc.get_table(_toml(text, 'crio config'), ('crio', 'runtime', 'runtimes')) or {}
    return dict((name, str(table.get('runtime_path') or '') or None) for name, table in runtimes.items())


def _json_object(text):
    try:
        data = json.loads(text) if (text or '').strip() else {}
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def daemon_json_runtimes(text):
    """{runtime name: path} configured in Docker's daemon.json; None when it is not a JSON object."""
    data = _json_object(text)
    if data is None:
        return None
    runtimes = data.get('runtimes') or {}
    return {name: (value or {}).get('path') for name, value in runtimes.items()} if isinstance(runtimes, dict) else None


def docker_info_runtimes(text):
    """{runtime name: path} the running dockerd has, from `docker info --format '{{json .Runtimes}}'`; None when unreadable."""
    data = _json_object(text)
    if data is None:
        return None
    return {name: (value or {}).get('path') if isinstance(value, dict) else None for name, value in data.items()}


def systemd_properties(text):
    """{property: value} of `systemctl show` output."""
    return dict(line.split('=', 1) for line in (text or '').splitlines() if '=' in line)


def active_since(properties, wall_now, monotonic_now):
    """Wall-clock time the unit last became active, from ActiveEnterTimestampMonotonic; None when unknown."""
    try:
        entered = int(properties.get('ActiveEnterTimestampMonotonic') or 0)
    except ValueError:
        return None
    if entered <= 0:
        return None
    return wall_now - (monotonic_now - entered / 1e6)


# logrus lines of containerd, dockerd and CRI-O: time="..." level=error msg="..."
_LOG_ERROR = re.compile(r'\blevel=(?:error|fatal|panic)\b')


def runtime_log_errors(lines, runtime_name):
    """The runtime's error lines that name the NVIDIA runtime (other errors are not the doctor's business)."""
    needles = ('nvidia', runtime_name)
    return [line for line in lines if _LOG_ERROR.search(line) and any(needle in line for needle in needles)]


# --- kernel log -------------------------------------------------------------------------------

_XID = re.compile(r'NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+)\b')
# NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/): severity, meaning, what to do.
_DRAIN = 'drain the node, then reset the GPU (nvidia-smi -r -i <gpu>) or reboot'
XIDS = {
    13: ('warning', 'graphics engine exception', 'usually the application (illegal instruction or address): check it with compute-sanitizer; '
         'if several applications hit it, test the GPU'),
    31: ('warning', 'GPU memory page fault', 'usually an illegal memory access by the application; if it recurs across applications, test the GPU'),
    43: ('warning', 'GPU stopped processing', 'the application was stopped by a fault of its own; the GPU stays usable'),
    45: ('info', 'preemptive cleanup after earlier errors', 'follows another error: look at the Xid before it'),
    48: ('error', 'double-bit ECC error', _DRAIN + '; replace the GPU if it recurs'),
    61: ('error', 'internal micro-controller breakpoint', _DRAIN + '; update the driver if it recurs'),
    62: ('error', 'internal micro-controller halt', _DRAIN + '; update the driver if it recurs'),
    63: ('warning', 'ECC page retirement or row remapping recorded', 'reset the GPU or reboot when idle so that the retirement takes effect'),
    64: ('error', 'ECC page retirement or row remapping failed', _DRAIN + '; the GPU likely needs replacing'),
    74: ('error', 'NVLink error', _DRAIN + '; check the NVLink bridges and, on NVSwitch systems, nvidia-fabricmanager'),
    79: ('error', 'GPU has fallen off the bus', 'the GPU stopped answering on PCIe: check power, cooling and seating, then reboot; '
         'replace the GPU if it recurs'),
    92: ('warning', 'high single-bit ECC error rate', 'watch the GPU (nvidia-smi -q -d ECC); plan to replace it if the rate grows'),
    94: ('warning', 'contained ECC error', 'the affected application was stopped; reset the GPU when idle'),
    95: ('error', 'uncontained ECC error', _DRAIN),
    119: ('error', 'GSP RPC timeout', 'reboot; if it recurs, update the driver'),
    120: ('error', 'GSP error', 'reboot; if it recurs, update the driver'),
}
# Other kernel lines that explain a driver that does not work: check, severity, pattern, summary, fix.
KERNEL_PATTERNS = (
    ('driver-library-mismatch', 'error', re.compile(r'NVRM: API mismatch'),
     'the kernel module and the user-space driver libraries are of different versions',
     'reboot the node, or unload and load the modules again when no process uses the GPU'),
    ('gpu-init-failed', 'error', re.compile(r'NVRM: (?:The NVIDIA probe routine failed|RmInitAdapter failed|(?!Xid).*fallen off the bus)'),
     'the driver could not initialise a GPU', 'check that the driver supports this GPU (and the open or proprietary module type), '
     'look at the lines around it in the kernel log, then reboot'),
    ('module-signature-rejected', 'error',
     re.compile(r'(?:Lockdown: .*unsigned module loading is restricted|Loading of unsigned module is rejected|Key was rejected by service)'),
     'the kernel refused an unsigned module (Secure Boot)',
     'sign the NVIDIA modules with a key enrolled in the firmware (DKMS: mokutil --import /var/lib/dkms/mok.pub, then reboot and enrol it), '
     'use the distribution\'s signed modules, or turn Secure Boot off'),
)
_KERNEL_RELEVANT = re.compile(r'NVRM|nvidia|nouveau|Lockdown|unsigned module|Key was rejected', re.I)


def relevant_kernel_lines(lines):
    """The kernel log lines the doctor looks at (the module returns only these)."""
    return [line for line in lines if _KERNEL_RELEVANT.search(line)]


def kernel_log_findings(log):
    """Xid errors and driver load failures in the kernel log; log is dict(source, lines, error)."""
    if log.get('source') is None:
        return [finding('kernel-log-unreadable', 'info', 'the kernel log could not be read: Xid errors and driver load failures are not checked',
                        [log.get('error') or 'no journalctl or dmesg'],
                        'run the doctor as root on a node whose journal keeps kernel messages (journalctl -k) or that allows dmesg')]
    found = []
    xids = {}
    for line in log['lines']:
        match = _XID.search(line)
        if match:
            xids.setdefault(int(match.group(2)), []).append((match.group(1), line))
    for code in sorted(xids):
        severity, meaning, fix = XIDS.get(code, ('warning', 'an Xid NVIDIA\'s catalogue describes', 'look it up in https://docs.nvidia.com/deploy/xid-errors/'))
        devices = sorted(set(device for device, _line in xids[code]))
        found.append(finding('gpu-xid', severity, 'Xid %d (%s) on %s, %d time(s) this boot' % (code, meaning, ', '.join(devices), len(xids[code])),
                             [line for _device, line in xids[code]], fix))
    for check, severity, pattern, summary, fix in KERNEL_PATTERNS:
        lines = [line for line in log['lines'] if pattern.search(line)]
        if lines:
            found.append(finding(check, severity, summary + ' (kernel log)', lines, fix))
    return found


# --- node checks: driver -----------------------------------------------------------------------

_SMI_CHECKS = {'no-driver': 'driver-not-loaded', 'mismatch': 'driver-library-mismatch', 'failed': 'nvidia-smi-failed'}
_SMI_SUMMARIES = {
    'no-driver': 'nvidia-smi finds no NVIDIA driver: no NVIDIA kernel module answers (loaded: %s)',
    'mismatch': 'the loaded NVIDIA kernel module (%s) and the installed user-space libraries are of different versions, '
                'usually after a driver upgrade without a reboot',
    'failed': 'the NVIDIA kernel module %s is loaded but nvidia-smi fails',
}
_INSTALL_DRIVER = ('install the driver with the driver stage (nvidia_driver_enabled: true) and ' + SITE
                   + ', or load it (modprobe nvidia) and read the kernel log for why it does not load')
_RELOAD_DRIVER = ('reboot the node, or, when no process uses the GPU, unload the modules (modprobe -r nvidia_drm nvidia_modeset '
                  'nvidia_uvm nvidia) and load them again (modprobe nvidia nvidia_uvm)')


def driver_findings(facts):
    """The driver's state: facts is dict(gpu=gpu_discovery.gather(), proc_driver, modules, secure_boot)."""
    gpu = facts['gpu']
    if not gpu['pci_gpus'] and not gpu['gpus']:
        return [finding('no-gpu', 'info', 'no NVIDIA GPU on the PCI bus: a CPU node, nothing to check for the driver', [],
                        'nothing to do; if a GPU should be there, check that it is seated and enabled in the firmware '
                        '(or passed through to this VM)')]
    found = []
    if gpu.get('disagreement'):
        found.append(finding('gpu-not-on-pci', 'warning', 'nvidia-smi lists GPUs the PCI bus does not show', [gpu['disagreement']],
                             'point sysfs_root at this node\'s sysfs (default /sys); in a container, mount the host\'s /sys'))
    modules = facts.get('modules') or {}
    nouveau = [name for name in driver_state.NOUVEAU_MODULES if name in modules]
    if nouveau:
        found.append(finding('nouveau-loaded', 'error', '%s is loaded and holds the GPU, so the NVIDIA module cannot' % ' and '.join(nouveau),
                             ['/proc/modules lists %s' % name for name in nouveau],
                             'blacklist it (nvidia_driver_blacklist_nouveau: true, the default, writes /etc/modprobe.d/blacklist-nouveau.conf '
                             'and updates the initramfs) and reboot the node'))
    loaded = facts.get('proc_driver')
    errors = gpu['nvidia_smi_errors']
    # A missing nvidia-smi, or one the nvidia_smi option points at a path that cannot be run (a driver under
    # /run/nvidia/driver not installed yet): the message says what is wrong with which path.
    problem = gpu.get('nvidia_smi_problem')
    if gpu['nvidia_smi'] is None or problem:
        if loaded:
            found.append(finding('nvidia-smi-missing', 'warning', 'the NVIDIA kernel module %s is loaded but %s' % (
                loaded['version'], problem or 'nvidia-smi is not installed'),
                errors, 'install the driver\'s user-space tools (nvidia-utils for the same version) or set nvidia_smi'))
        else:
            found.append(finding('driver-not-loaded', 'error', 'no NVIDIA driver: %s and no NVIDIA kernel module loaded' % (problem or 'no nvidia-smi'),
                                 errors, _INSTALL_DRIVER))
    # Every query failed (or, after one ran out of time, the others were not tried): nothing answered.
    elif errors and (not gpu['gpus'] or driver_state.MISMATCH in ' '.join(errors)):
        kind = driver_state.smi_failure(errors, loaded)[0]
        found.append(finding(_SMI_CHECKS[kind], 'error', _SMI_SUMMARIES[kind] % (loaded or {}).get('version'), errors,
                             _RELOAD_DRIVER if kind == 'mismatch' else _INSTALL_DRIVER))
    elif errors:
        found.append(finding('nvidia-smi-query-failed', 'warning', 'some nvidia-smi queries fail, so some GPU labels cannot be computed', errors,
                             'run the failing command on the node; an older driver may not know a queried field (update the driver)'))
    smi_version = gpu.get('driver_version')
    if loaded and smi_version and loaded['version'] != smi_version and not any(item['check'] == 'driver-library-mismatch' for item in found):
        found.append(finding('driver-library-mismatch', 'error',
                             'the loaded kernel module is %s but nvidia-smi reports %s' % (loaded['version'], smi_version),
                             ['/proc/driver/nvidia/version: %s' % loaded['version'], 'nvidia-smi driver_version: %s' % smi_version], _RELOAD_DRIVER))
    # Which GPUs nvidia-smi must list is discovery's rule, the one the driver validation and the labels apply.
    missing = gpu.get('unlisted') or []
    if missing:
        found.append(finding('gpu-not-visible', 'error', '%d GPU(s) on the PCI bus are not listed by nvidia-smi' % len(missing),
                             ['PCI %s: not in nvidia-smi (%s)' % (dev['address'], 'bound to %s' % dev['driver'] if dev.get('driver') else
                                                                  'no driver bound') for dev in missing],
                             'the driver failed to initialise them: look for Xid and NVRM lines in the kernel log, then reboot; '
                             'replace a GPU that stays missing'))
    working = not any(item['check'] in ('driver-not-loaded', 'nvidia-smi-failed') for item in found)
    if facts.get('secure_boot') == 'enabled' and not working:
        found.append(finding('secure-boot', 'error', 'Secure Boot is enabled and no NVIDIA module works: the kernel loads only signed modules',
                             ['SecureBoot EFI variable: enabled'], KERNEL_PATTERNS[2][4]))
    return found


def gpudirect_findings(facts):
    """GPUDirect as module gpudirect set it up: facts is dict(wanted: the modules its modules-load.d list names (None: no list),
    state: gpudirect executor.node_state()). Each wanted module gets a finding: info when its checks pass, error otherwise."""
    found = []
    for item in gpudirect_plan.FEATURES:
        if item['module'] not in (facts['wanted'] or ()):
            continue
        result = gpudirect_plan.check(item, facts['state'])
        check = 'gpudirect-%s' % item['name']
        if not result['problems']:
            version = ' (%s)' % result['version'] if result['version'] else ''
            found.append(finding(check, 'info', '%s (%s) is loaded%s' % (item['module'], item['field'], version),
                                 ['/proc/modules lists %s' % item['module']]))
            continue
        found.append(finding(check, 'error', '%s (%s) is not ready' % (item['module'], item['field']), result['problems'],
                             'run %s again (it installs and loads %s); a module that does not load says why in the kernel log (dmesg); '
                             'nvidia_peermem needs the RDMA stack (ib_core) loaded first; a module built for another driver is '
                             'reinstalled with the driver and loaded again' % (SITE, item['module'])))
    return found


# --- node checks: container runtime ------------------------------------------------------------

# Where systemd does not run the node (runtime['systemd'] false) something else runs the runtime: its process is named,
# and whoever runs it starts or restarts it.


def _runs_as(runtime):
    """(the runtime's unit or, without systemd, its process, the word for its state)."""
    return (runtime['unit'], 'active') if runtime['systemd'] else (runtime['process'] or runtime['runtime'], 'running')


def _restart(runtime, name):
    # The unit that runs it: the runtime's own, or a distribution's (k3s.service restarts k3s's containerd).
    unit = runtime['unit'][:-len('.service')] if runtime['unit'].endswith('.service') else runtime['unit']
    return 'restart it: systemctl restart ' + unit if runtime['systemd'] else 'restart %s the way this node runs it (%s)' % (name, NOT_BOOTED)


def runtime_findings(runtime):
    """The NVIDIA runtime's registration with the kubelet's container runtime (doctor_node.gather_runtime())."""
    name = runtime.get('runtime')
    if not name:
        return [finding('runtime-not-found', 'error', 'no container runtime found for the kubelet (containerd, CRI-O or Docker)',
                        [runtime.get('error') or 'none detected'],
                        'install the runtime the kubelet uses, or name it with container_toolkit_runtime')]
    found = []
    if runtime.get('active_state') not in (None, 'active'):
        if runtime['systemd']:
            found.append(finding('runtime-not-running', 'error', '%s is not running (%s)' % (runtime['unit'], runtime['active_state']),
                                 ['systemctl show %s: ActiveState=%s' % (runtime['unit'], runtime['active_state'])],
                                 'systemctl start %s, then read journalctl -u %s for why it stopped' % (runtime['unit'], runtime['unit'])))
        else:
            found.append(finding('runtime-not-running', 'error', '%s is not running' % name,
                                 ['no %s process (%s: no unit to ask)' % (name, NOT_BOOTED)],
                                 'start %s the way this node runs it, then read its log for why it stopped' % name))
    configured = runtime.get('configured')
    runtime_name = runtime['runtime_name']
    if configured is None:
        found.append(finding('runtime-config-unreadable', 'error', 'the %s configuration could not be read' % name, [runtime.get('error') or ''],
                             'fix the configuration error shown; ' + SITE + ' registers the NVIDIA runtime again'))
    elif runtime_name not in configured:
        found.append(finding('runtime-not-configured', 'error', 'the %s runtime is not registered with %s' % (runtime_name, name),
                             ['%s lists the runtimes: %s' % (runtime['source'], ', '.join(sorted(configured)) or 'none')],
                             'register it (container_toolkit stage): ' + SITE + '; it writes the configuration and restarts ' + name))
    else:
        binary = configured[runtime_name]
        if binary and runtime.get('binaries', {}).get(binary) is False:
            found.append(finding('runtime-binary-missing', 'error',
                                 'the %s runtime points at %s, which does not exist: its containers cannot start' % (runtime_name, binary),
                                 ['%s: %s runtime binary %s' % (runtime['source'], runtime_name, binary)],
                                 'install the NVIDIA Container Toolkit (container_toolkit_install_packages: true) or set container_toolkit_install_dir '
                                 'to where nvidia-container-runtime is; then ' + SITE))
        found.extend(_reload_findings(runtime, name))
    if runtime.get('log_errors'):
        found.append(finding('runtime-log-errors', 'warning', '%s logged errors about the NVIDIA runtime this boot' % runtime['unit'],
                             runtime['log_errors'], 'read them in full: journalctl -u %s -b' % runtime['unit']))
    return found


def _reload_findings(runtime, name):
    runtime_name = runtime['runtime_name']
    loaded = runtime.get('loaded')
    if loaded is not None and runtime_name not in loaded:
        return [finding('runtime-not-reloaded', 'error', 'the %s runtime is configured but the running %s does not have it' % (runtime_name, name),
                        ['running runtimes: %s' % (', '.join(sorted(loaded)) or 'none')], _restart(runtime, name))]
    since = runtime.get('active_since')
    changed = runtime.get('config_files') or {}
    newest = max(changed, key=changed.get) if changed else None
    # A second of slack: the restart handler runs right after the write.
    if since is not None and newest is not None and changed[newest] > since + 1:
        who, state = _runs_as(runtime)
        return [finding('runtime-not-reloaded', 'error', '%s changed after %s started: the running %s may not have the %s runtime'
                        % (newest, who, name, runtime_name),
                        ['%s modified %s' % (newest, utc(changed[newest])), '%s %s since %s' % (who, state, utc(since))], _restart(runtime, name))]
    return []


# The KVM module parameters that say whether the host can run confidential VMs, as the CC manager's GPUs need (bool
# parameters read Y or N). SOURCE: Linux arch/x86/kvm/svm/sev.c module_param_named(sev_snp, ...) and
# arch/x86/kvm/vmx/tdx.c module_param_named(tdx, ...); NVIDIA's Confidential Containers prerequisites (an SNP- or
# TDX-enabled host kernel, IOMMU on).
TEE_PARAMETERS = (('kvm_amd', 'sev_snp', 'AMD SEV-SNP'), ('kvm_intel', 'tdx', 'Intel TDX'))
_PASSTHROUGH = 'vfio_manager_workload_config: vm-passthrough for the node, then ' + SITE


def _tee_evidence(tee):
    found = []
    for module_name, parameter, name in TEE_PARAMETERS:
        value = tee['%s.%s' % (module_name, parameter)]
        found.append('%s: /sys/module/%s/parameters/%s %s' % (
            name, module_name, parameter, 'reads %s' % value if value is not None else 'is absent (%s not loaded)' % module_name))
    return found


def vfio_findings(facts):
    """A vm-passthrough node's: facts is doctor_node.gather_vfio() (IOMMU groups and parameters, the GPU functions and
    their companions with their drivers, whether the kernel has vfio-pci, the TEE parameters where the CC manager runs)."""
    if not facts['functions']:
        return [finding('no-gpu', 'info', 'no NVIDIA GPU on the PCI bus: nothing to give to virtual machines', [],
                        'nothing to do; if a GPU should be there, check that it is seated and enabled in the firmware')]
    found = []
    if not facts['iommu_groups']:
        parameters = ' '.join('%s=%s' % item if item[1] else item[0] for item in sorted(facts['kernel_parameters'].items()))
        found.append(finding('iommu-off', 'error', 'the IOMMU is off, so vfio-pci cannot take the GPUs',
                             ['/sys/kernel/iommu_groups is empty', 'IOMMU kernel parameters: %s' % (parameters or 'none')],
                             'turn on VT-d / AMD-Vi in the firmware, add intel_iommu=on (Intel) or amd_iommu=on (AMD) and iommu=pt '
                             'to the kernel command line, reboot, then ' + SITE))
    if not facts['vfio_pci']:
        found.append(finding('vfio-pci-missing', 'error', 'the kernel shows no vfio-pci driver',
                             ['no bus/pci/drivers/vfio-pci', 'vfio_pci is not in /proc/modules'],
                             'load it (modprobe vfio-pci; the vfio_manager stage does, and loads it at boot); a kernel built '
                             'without CONFIG_VFIO_PCI needs another kernel'))
    held = [dev for dev in facts['functions'] if dev['driver'] != 'vfio-pci']
    if held:
        found.append(finding('gpu-not-on-vfio', 'error', '%d GPU functions of the node are not bound to vfio-pci, so no VM can '
                             'be given them' % len(held),
                             ['%s (%s): %s' % (dev['address'], dev['role'], 'bound to %s' % dev['driver'] if dev['driver'] else 'no driver')
                              for dev in held],
                             'bind them with the vfio_manager stage (' + _PASSTHROUGH + '); the kernel refuses to unbind a GPU '
                             'a process still uses (nvidia-smi lists them; stop them first)'))
    if facts.get('tee') is not None and 'Y' not in facts['tee'].values():
        found.append(finding('cc-tee-off', 'error', 'the CC manager runs here (sandboxWorkloads.mode kata), but KVM offers no '
                             'confidential VM (AMD SEV-SNP or Intel TDX), so no confidential container can start',
                             _tee_evidence(facts['tee']),
                             'turn on SEV-SNP (AMD) or TDX (Intel) in the firmware and the host kernel (kvm_amd.sev_snp=1 or '
                             'kvm_intel.tdx=1), reboot; or set ccManager.enabled: false where the node runs no confidential containers'))
    return found
