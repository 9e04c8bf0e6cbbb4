# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's checks: pure functions from what a node and the Kubernetes API show to findings.

A finding is a dict(check, severity, summary, evidence, fix): `check` is a stable id (docs/operations.md
lists them all), severity is error, warning or info, evidence the lines that show the problem and fix
what to do about it. A fix may say `<node>`, `<inventory>` or `<namespace>`; the report spells them out.

Node checks take what module_utils/doctor/node.py gathered on the node; cluster checks take objects as
kubernetes.core.k8s_info returns them. The parsers of the commands' output are here as well, so that
they are tested with the checks.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re
import time

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import device_plugin as device_plugin_check
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import plugin_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels import node_api as nfd_node_labels
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
    listed = [item for item in gpu['gpus'] if item.get('address')]
    if listed:
        missing = sorted(set(dev['address'] for dev in gpu['pci_gpus']) - set(item['address'] for item in listed))
        if missing:
            found.append(finding('gpu-not-visible', 'error', '%d GPU(s) on the PCI bus are not listed by nvidia-smi' % len(missing),
                                 ['PCI %s: not in nvidia-smi' % address for address in missing],
                                 'the driver failed to initialise them: look for Xid and NVRM lines in the kernel log, then reboot; '
                                 'replace a GPU that stays missing'))
    working = not any(item['check'] in ('driver-not-loaded', 'nvidia-smi-failed') for item in found)
    if facts.get('secure_boot') == 'enabled' and not working:
        found.append(finding('secure-boot', 'error', 'Secure Boot is enabled and no NVIDIA module works: the kernel loads only signed modules',
                             ['SecureBoot EFI variable: enabled'], KERNEL_PATTERNS[2][4]))
    return found


# --- node checks: container runtime ------------------------------------------------------------

_RESTART = {'containerd': 'systemctl restart containerd', 'docker': 'systemctl restart docker', 'crio': 'systemctl restart crio'}


def runtime_findings(runtime):
    """The NVIDIA runtime's registration with the kubelet's container runtime (doctor_node.gather_runtime())."""
    name = runtime.get('runtime')
    if not name:
        return [finding('runtime-not-found', 'error', 'no container runtime found for the kubelet (containerd, CRI-O or Docker)',
                        [runtime.get('error') or 'none detected'],
                        'install the runtime the kubelet uses, or name it with container_toolkit_runtime')]
    found = []
    if runtime.get('active_state') not in (None, 'active'):
        found.append(finding('runtime-not-running', 'error', '%s is not running (%s)' % (runtime['unit'], runtime['active_state']),
                             ['systemctl show %s: ActiveState=%s' % (runtime['unit'], runtime['active_state'])],
                             'systemctl start %s, then read journalctl -u %s for why it stopped' % (runtime['unit'], runtime['unit'])))
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
                        ['running runtimes: %s' % (', '.join(sorted(loaded)) or 'none')], 'restart it: ' + _RESTART[name])]
    since = runtime.get('active_since')
    changed = runtime.get('config_files') or {}
    newest = max(changed, key=changed.get) if changed else None
    # A second of slack: the restart handler runs right after the write.
    if since is not None and newest is not None and changed[newest] > since + 1:
        return [finding('runtime-not-reloaded', 'error', '%s changed after %s started: the running %s may not have the %s runtime'
                        % (newest, runtime['unit'], name, runtime_name),
                        ['%s modified %s' % (newest, utc(changed[newest])), '%s active since %s' % (runtime['unit'], utc(since))],
                        'restart it: ' + _RESTART[name])]
    return []


# --- cluster checks: per Node -----------------------------------------------------------------

def label_findings(node_name, node, expected):
    """Labels the gpu_node_labels role would set (`expected`) that the Node lacks or has with another value."""
    if node is None:
        return [finding('node-not-registered', 'error', 'no Node named %s in the API' % node_name, [],
                        'join the node to the cluster, or set gpu_node_labels_node_name to its Node name')]
    if expected is None:
        return []
    metadata = node.get('metadata') or {}
    current = metadata.get('labels') or {}
    plan = nfd_node_labels.reconcile(current, nfd_node_labels.owned_labels(metadata.get('annotations')), expected)
    found = []
    if plan['added']:
        found.append(finding('labels-missing', 'error', 'the Node lacks %d GPU label(s), so the operands are not scheduled there' % len(plan['added']),
                             ['%s=%s' % (key, plan['labels'][key]) for key in plan['added']],
                             'label it again (node labels stage): ' + SITE))
    changed = plan['updated'] + [key for key in plan['removed'] if key in current]
    if changed:
        found.append(finding('labels-outdated', 'warning', '%d GPU label(s) do not describe the node as it is now' % len(changed),
                             ['%s: Node has %r, expected %r' % (key, current.get(key), plan['labels'].get(key)) for key in changed],
                             'label it again (node labels stage): ' + SITE))
    return found


def device_plugin_findings(node, sockets, resource=device_plugin_check.DEFAULT_RESOURCE):
    """Whether the device plugin advertised the GPUs on the Node (status.capacity / allocatable)."""
    capacity, allocatable, labels = device_plugin_check.node_resources(node, resource)
    if labels.get(contract.PRESENT) != 'true':
        return []
    name = node['metadata']['name']
    sockets = sockets or {}
    try:
        capacity, allocatable = device_plugin_check.quantity(capacity), device_plugin_check.quantity(allocatable)
    except device_plugin_check.CheckError as exc:
        return [finding('gpu-capacity-zero', 'error', str(exc), [], 'kubectl describe node %s' % name)]
    if capacity is None:
        return [finding('device-plugin-not-registered', 'error', 'the device plugin has not registered %s on this Node' % resource,
                        ['Node %s has no status.capacity[%s]' % (name, resource)] + device_plugin_check.socket_problems(sockets, resource),
                        'the device plugin Pod must run on the node: see the operand and runtime findings; '
                        'kubectl -n <namespace> get pods -o wide --field-selector spec.nodeName=%s' % name)]
    if not capacity or not allocatable:
        return [finding('gpu-capacity-zero', 'error', 'the Node advertises no usable %s (capacity %s, allocatable %s)' % (resource, capacity, allocatable),
                        ['status.capacity[%s]=%s' % (resource, capacity), 'status.allocatable[%s]=%s' % (resource, allocatable)],
                        'the device plugin found no healthy GPU: see the driver and Xid findings; its log says which GPU it marked unhealthy')]
    try:
        want = device_plugin_check.expected(resource, labels, name)
    except device_plugin_check.CheckError:
        return []
    problems = device_plugin_check.problems(name, resource, {}, capacity, allocatable, want)
    if problems:
        return [finding('gpu-capacity-mismatch', 'warning', 'the Node advertises another number of %s than its labels describe' % resource, problems,
                        'check the device plugin config (sharing replicas, MIG strategy) and the unhealthy GPUs in its log')]
    return []


def _plugin_config(labels, policy, config_maps):
    """(the config the node's device plugin runs (None: none), where it comes from, problem finding or None)."""
    config = ((policy.get('spec') or {}).get('devicePlugin') or {}).get('config') or {}
    chosen = contract.selected_config(config, labels.get(contract.DEVICE_PLUGIN_CONFIG, ''))
    if not config.get('name') or not chosen:
        return None, 'no device plugin config', None
    picked_by = 'label %s' % contract.DEVICE_PLUGIN_CONFIG if labels.get(contract.DEVICE_PLUGIN_CONFIG) else 'devicePlugin.config.default'
    source = 'config %s of ConfigMap %s (%s)' % (chosen, config['name'], picked_by)
    data = next((item.get('data') or {} for item in config_maps if item['metadata']['name'] == config['name']), None)
    if data is None or chosen not in data:
        found = 'has %s' % ', '.join(sorted(data)) if data is not None else 'not found in the operator namespace'
        return None, source, finding(
            'device-plugin-config-missing', 'error',
            'the device plugin config %s the node runs does not exist: config-manager cannot start the plugin there' % chosen,
            ['ConfigMap %s %s' % (config['name'], found)],
            'give it in gpu_cluster_operands_policy.devicePlugin.config.data, or set gpu_node_labels_device_plugin_config for <node> '
            'to a config it has, then ' + SITE)
    try:
        return plugin_config.load(data[chosen], source), source, None
    except GpuOpsError as exc:
        return None, source, finding('device-plugin-config-invalid', 'error', 'the device plugin config the node runs cannot be read',
                                     [str(exc)], 'fix it in gpu_cluster_operands_policy.devicePlugin.config.data and run the site playbook')


def plugin_config_findings(node, policies, config_maps):
    """Whether a GPU Node's MIG and sharing labels say what its device plugin config makes the plugin advertise.

    The config is the one config-manager picks (the node's nvidia.com/device-plugin.config label, else the ClusterPolicy's
    devicePlugin.config.default) from the ConfigMap the ClusterPolicy names; only labels the Node has are compared (missing
    ones are labels-missing).
    """
    labels = (node.get('metadata') or {}).get('labels') or {}
    policy = next(iter(policies or []), None)
    if labels.get(contract.PRESENT) != 'true' or policy is None or config_maps is None:
        return []
    config, source, problem = _plugin_config(labels, policy, config_maps)
    if problem:
        return [problem]
    mig = ((policy.get('spec') or {}).get('mig') or {}).get('strategy') or 'none'
    want, shared = contract.sharing_labels(contract.config_sharing(config), mig)
    replicas, product_label = contract.resource_label(contract.GPU_RESOURCE, 'replicas'), contract.resource_label(contract.GPU_RESOURCE, 'product')
    mig_enabled = labels.get(replicas) == '0'  # MIG-enabled GPUs, which are not shared
    if mig_enabled:
        del want[replicas]
    lines = ['%s: Node has %s, %s makes it %s' % (key, labels[key], source, value if value is not None else '(no label)')
             for key, value in sorted(want.items()) if key in labels and labels[key] != value]
    product = labels.get(product_label, '')
    if product and not mig_enabled and product.endswith(contract.SHARED_PRODUCT_SUFFIX) != shared:
        lines.append('%s: Node has %s, %s makes it %s the %s suffix'
                     % (product_label, product, source, 'with' if shared else 'without', contract.SHARED_PRODUCT_SUFFIX))
    if not lines:
        return []
    return [finding('labels-disagree-with-plugin-config', 'error',
                    'the Node\'s MIG or sharing labels disagree with what its device plugin advertises (%s)' % source, lines,
                    'label it from the same settings: set gpu_node_labels_device_plugin_config for <node> to the config it runs (or remove '
                    'the %s label someone set), then %s' % (contract.DEVICE_PLUGIN_CONFIG, SITE))]


# Taints the DaemonSet controller tolerates for every DaemonSet Pod by itself.
DAEMONSET_TOLERATED = ('node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable', 'node.kubernetes.io/disk-pressure',
                       'node.kubernetes.io/memory-pressure', 'node.kubernetes.io/pid-pressure', 'node.kubernetes.io/unschedulable',
                       'node.kubernetes.io/network-unavailable')


def tolerates(toleration, taint):
    """Kubernetes' matching of one toleration against one taint."""
    if toleration.get('effect') and toleration['effect'] != taint.get('effect'):
        return False
    if toleration.get('operator') == 'Exists':
        return not toleration.get('key') or toleration['key'] == taint.get('key')
    return toleration.get('key') == taint.get('key') and (toleration.get('value') or '') == (taint.get('value') or '')


def selects(daemonset, labels):
    """Whether the DaemonSet's nodeSelector matches `labels`."""
    selector = ((((daemonset.get('spec') or {}).get('template') or {}).get('spec') or {}).get('nodeSelector')) or {}
    return all(labels.get(key) == value for key, value in selector.items())


def taint_findings(node, daemonsets, expected=None):
    """NoSchedule / NoExecute taints of the Node that an operand meant for it does not tolerate."""
    labels = dict((node.get('metadata') or {}).get('labels') or {}, **(expected or {}))
    blocked = []
    for taint in (node.get('spec') or {}).get('taints') or []:
        if taint.get('effect') not in ('NoSchedule', 'NoExecute') or taint.get('key') in DAEMONSET_TOLERATED:
            continue
        names = [ds['metadata']['name'] for ds in daemonsets if selects(ds, labels) and not any(
            tolerates(toleration, taint) for toleration in ds['spec']['template']['spec'].get('tolerations') or [])]
        if names:
            blocked.append((taint, names))
    if not blocked:
        return []
    spelled = ['%s%s:%s' % (taint['key'], '=' + taint['value'] if taint.get('value') else '', taint['effect']) for taint, _names in blocked]
    return [finding('taint-not-tolerated', 'error', 'taints keep operands off this Node: %s' % ', '.join(spelled),
                    ['%s blocks %s' % (text, ', '.join(names)) for text, (_taint, names) in zip(spelled, blocked)],
                    'add tolerations for them to gpu_cluster_operands_policy.daemonsets.tolerations (keep the nvidia.com/gpu one) and run '
                    'the operands stage of site.yml, or remove the taint: kubectl taint nodes %s %s-'
                    % (node['metadata']['name'], spelled[0]))]


# --- cluster checks: operands -----------------------------------------------------------------

def pod_ready(pod):
    status = pod.get('status') or {}
    if status.get('phase') == 'Succeeded':
        return True
    return any(cond.get('type') == 'Ready' and cond.get('status') == 'True' for cond in status.get('conditions') or [])


def _container_problems(status):
    """(evidence lines, reasons) of the Pod's containers that wait, ended or restarted."""
    lines, reasons = [], []
    for container in (status.get('initContainerStatuses') or []) + (status.get('containerStatuses') or []):
        state = container.get('state') or {}
        for kind in ('waiting', 'terminated'):
            detail = state.get(kind)
            if detail:
                reasons.append(detail.get('reason') or kind)
                exit_code = ' (exit %s)' % detail['exitCode'] if 'exitCode' in detail else ''
                lines.append('container %s %s: %s%s%s' % (container.get('name'), kind, detail.get('reason') or '', exit_code,
                                                          ': ' + detail['message'] if detail.get('message') else ''))
        last = (container.get('lastState') or {}).get('terminated')
        if last and container.get('restartCount'):
            lines.append('container %s restarted %d time(s), last exit: %s (exit %s)' % (container.get('name'), container['restartCount'],
                                                                                         last.get('reason') or '', last.get('exitCode')))
    return lines, reasons


# Ordered: the first pattern found in the Pod's status, events and log picks the fix.
POD_FIXES = (
    (re.compile(r'no runtime for|RuntimeHandler|runtime handler|nvidia-container-(?:runtime|cli)'),
     'the nvidia runtime cannot start containers on <node>: fix the node\'s runtime and driver findings (' + SITE + ')'),
    (re.compile(r'ImagePullBackOff|ErrImagePull|pull access denied|manifest unknown'),
     'the image cannot be pulled: check gpu_cluster_operands_registry or the operand\'s repository and version, and the pull secrets '
     '(gpu_cluster_base_registry_credentials)'),
    (re.compile(r'violates PodSecurity'), 'Pod Security Admission refuses the Pod: see the namespace findings'),
    (re.compile(r'forbidden', re.I), 'the operand\'s ServiceAccount lacks a permission: see the RBAC findings'),
    (re.compile(r'Unschedulable|FailedScheduling|untolerated taint'), 'the Pod cannot be scheduled: see the taint findings and the event'),
    (re.compile(r'CrashLoopBackOff|OOMKilled|Error'), 'the container exits: its log (evidence) and the node\'s driver findings say why'),
)


def pod_finding(pod, events, log):
    """The finding for one operand Pod that is not ready; None when it is."""
    if pod_ready(pod):
        return None
    metadata = pod['metadata']
    status = pod.get('status') or {}
    containers, reasons = _container_problems(status)
    evidence = ['phase %s' % status.get('phase', 'unknown')] + containers
    evidence += ['condition %s=%s %s: %s' % (cond.get('type'), cond.get('status'), cond.get('reason') or '', cond.get('message') or '')
                 for cond in status.get('conditions') or [] if cond.get('status') != 'True' and cond.get('reason')]
    evidence += ['event %s %s: %s' % (event.get('type') or '', event.get('reason') or '', event.get('message') or '') for event in events]
    evidence += ['log: %s' % line for line in (log or '').strip().splitlines()[-5:]]
    text = '\n'.join(evidence)
    fix = next((fix for pattern, fix in POD_FIXES if pattern.search(text)),
               'kubectl -n %s describe pod %s' % (metadata.get('namespace'), metadata['name']))
    reason = ', '.join(reasons) or status.get('phase', 'unknown')
    return finding('operand-pod-not-ready', 'error', 'Pod %s/%s is not ready (%s)' % (metadata.get('namespace'), metadata['name'], reason), evidence, fix)


def pod_events(pod, events):
    name = pod['metadata']['name']
    return [event for event in events if (event.get('involvedObject') or {}).get('kind') == 'Pod' and event['involvedObject'].get('name') == name]


def daemonset_findings(daemonsets):
    """Operand DaemonSets that schedule no Pod or whose Pods are not all ready."""
    lines = []
    for ds in daemonsets:
        status = ds.get('status') or {}
        name = ds['metadata']['name']
        desired = status.get('desiredNumberScheduled')
        selector = ', '.join('%s=%s' % item for item in sorted(ds['spec']['template']['spec'].get('nodeSelector', {}).items()))
        if desired is None:
            lines.append('%s: no status yet (no controller has rolled it out)' % name)
        elif desired == 0:
            lines.append('%s: schedules no Pod: no Node matches %s' % (name, selector))
        elif status.get('numberReady', 0) < desired:
            lines.append('%s: %d/%d Pods ready' % (name, status.get('numberReady', 0), desired))
    if not lines:
        return []
    return [finding('operands-not-rolled-out', 'warning', '%d operand DaemonSet(s) are not fully rolled out' % len(lines), lines,
                    'see the operand Pod findings of the nodes; a DaemonSet that schedules no Pod needs Nodes with its deploy label (node labels stage)')]


def namespace_findings(namespace, namespace_object, events, logs):
    """The operator namespace: it exists, Pod Security Admission lets the operands run, nothing was refused by RBAC."""
    if namespace_object is None:
        return [finding('namespace-missing', 'error', 'the operator namespace %s does not exist' % namespace, [],
                        'create the cluster prerequisites: ansible-playbook -i <inventory> gpuops.gpu_operator.site')]
    found = []
    labels = (namespace_object.get('metadata') or {}).get('labels') or {}
    enforce = labels.get('pod-security.kubernetes.io/enforce')
    psa_fix = ('kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite (gpu_cluster_base sets it: the operands '
               'use host paths and privileged containers)' % namespace)
    if enforce != 'privileged':
        found.append(finding('namespace-psa-restricted', 'error' if enforce else 'warning',
                             'namespace %s %s' % (namespace, 'enforces the %s Pod Security level' % enforce if enforce else
                                                  'has no Pod Security label: the cluster\'s default level applies'),
                             ['label pod-security.kubernetes.io/enforce=%s' % (enforce or '(unset)')], psa_fix))
    texts = ['%s/%s %s: %s' % ((event.get('involvedObject') or {}).get('kind'), (event.get('involvedObject') or {}).get('name'),
                               event.get('reason') or '', event.get('message') or '') for event in events]
    psa = [text for text in texts if 'violates PodSecurity' in text]
    if psa:
        found.append(finding('psa-refused', 'error', 'Pod Security Admission refused operand Pods', psa, psa_fix))
    forbidden = [text for text in texts if 'forbidden' in text and 'violates PodSecurity' not in text]
    forbidden += ['%s log: %s' % (pod, line) for pod, log in sorted((logs or {}).items())
                  for line in (log or '').splitlines() if re.search(r'\bforbidden\b', line)]
    if forbidden:
        found.append(finding('rbac-forbidden', 'error', 'the API refused requests of the operands (RBAC)', forbidden,
                             'apply the RBAC again (cluster prerequisites stage): ansible-playbook -i <inventory> gpuops.gpu_operator.site; '
                             'check one with kubectl auth can-i --as system:serviceaccount:%s:<serviceaccount> <verb> <resource>' % namespace))
    return found


def cluster_policy_findings(policies):
    """The ClusterPolicy exists and its status (written by the validation stage) says ready."""
    if not policies:
        return [finding('clusterpolicy-missing', 'error', 'no ClusterPolicy in the cluster', [],
                        'apply the operands and the ClusterPolicy: ansible-playbook -i <inventory> gpuops.gpu_operator.site')]
    found = []
    for policy in policies:
        status = policy.get('status') or {}
        if status.get('state') == 'ready':
            continue
        evidence = ['status.state: %s' % status.get('state', '(none: validation has not run)')]
        evidence += ['condition %s=%s %s: %s' % (cond.get('type'), cond.get('status'), cond.get('reason') or '', cond.get('message') or '')
                     for cond in status.get('conditions') or []]
        found.append(finding('clusterpolicy-not-ready', 'warning', 'ClusterPolicy %s is not ready' % policy['metadata']['name'], evidence,
                             'run the validation stage on a cluster that runs Pods: ansible-playbook -i <inventory> gpuops.gpu_operator.site '
                             '--tags validation; the other findings say what keeps it from passing'))
    return found


VALIDATION_FIXES = {
    'driver': 'the driver does not work on <node>, or the validator Pod did not start there: see the driver and operand Pod findings; '
              'run the driver stage again: ' + SITE,
    'toolkit': 'containers started through the node\'s NVIDIA runtime do not see the GPUs: see the container runtime findings; '
               'run the container toolkit stage again: ' + SITE,
    'cuda': 'vectorAdd failed on the node: its log (evidence) says why; see the driver and Xid findings',
    'plugin': 'the Node does not advertise its GPUs as its labels describe them, or a Pod requesting them did not run: see the device plugin '
              'findings and check the device plugin config (sharing replicas, MIG strategy)',
}
REVALIDATE = 'ansible-playbook -i <inventory> gpuops.gpu_operator.site --tags validation'


def validation_findings(result, pod_findings=()):
    """The validation stage's result of one node (ConfigMap gpu-validation-results): a finding when it failed.

    pod_findings: the operand-pod-not-ready findings of the node's validation Pods (the validator's, its vectorAdd Pod, the
    Pods requesting the GPU resources). Where the node's validation failed they tell the same failure again: what they show
    now goes into the evidence of gpu-validation-failed instead. Otherwise (no result, or one that passed before the Pods
    broke) they are the findings.
    """
    if not result or result.get('state') != 'failed':
        return list(pod_findings)
    component = result.get('component')
    fix = VALIDATION_FIXES.get(component, 'register the node with the cluster: ' + SITE)
    evidence = list(result.get('evidence') or [])
    for item in pod_findings:
        evidence += ['now: ' + item['summary']] + ['now: ' + line for line in item['evidence']]
    return [finding('gpu-validation-failed', 'error', 'GPU validation failed: %s' % result.get('summary', ''),
                    evidence, '%s; then validate again: %s' % (fix, REVALIDATE))]


def api_findings(errors):
    """Reads of the API the doctor could not make."""
    return [finding('api-read-failed', 'error', 'the doctor could not read %s' % what, [message],
                    'give the credentials of the kube_api host (K8S_AUTH_KUBECONFIG) get and list on it') for what, message in errors]
