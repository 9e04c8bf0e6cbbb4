# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What a node says about its NVIDIA GPUs: sysfs, procfs, os-release, DMI and nvidia-smi.

Readers take the roots as arguments so tests point them at captured fixtures; the nvidia-smi
parsers are pure functions of the command's text. `gather()` runs nvidia-smi through a runner
callable (argv list -> (rc, stdout, stderr)) and merges the three views it gives:
`-q -x` (richest: CUDA version, MIG devices), `--query-gpu` (compute capability) and `-L`
(MIG profile names).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import xml.etree.ElementTree as ET

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

NVIDIA_VENDOR = '0x10de'
# The PCI classes that make an NVIDIA function a GPU for the GPU Operator: VGA (0300) and 3D controller (0302). NFD
# labels those (pci-10de.present with the chart's worker config, pci-0300_10de / pci-0302_10de.present with NFD's
# defaults) and the Operator counts a node with any of the three as a GPU node (gpu-operator v26.7.0,
# deployments/gpu-operator/values.yaml node-feature-discovery.worker.config.sources.pci, controllers/state_manager.go
# gpuNodeLabels; tests/unit/plugins/module_utils/discovery/test_gpu_discovery.py holds the table).
GPU_CLASSES = ('0300', '0302')
NVSWITCH_CLASS = '0x0680'
SEARCH_DIRS = ['/usr/bin', '/usr/sbin', '/bin', '/sbin', '/opt/bin']
QUERY_FIELDS = ('index', 'uuid', 'pci.bus_id', 'name', 'memory.total', 'compute_cap', 'driver_version', 'mig.mode.current')
QUERY_GPU_ARGS = ['--query-gpu=' + ','.join(QUERY_FIELDS), '--format=csv,noheader,nounits']
NVRM_LINE = re.compile(r'^NVRM version:.*?Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+){1,2})\b', re.M)
LIST_GPU_LINE = re.compile(r'^GPU (\d+): (.+?) \(UUID: ([^)]+)\)\s*$')
LIST_MIG_LINE = re.compile(r'^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)\s*$')
MIB = re.compile(r'^([0-9]+) MiB$')
NUMBER = re.compile(r'^[0-9]+$')
SURROGATE = re.compile('[\ud800-\udfff]')
# nvidia-smi's bus id: domain (4 or 8 hex digits), bus, device, function.
BUS_ID = re.compile(r'^([0-9a-f]{4,8}):([0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$')
# Drivers that take a GPU from the host's NVIDIA driver on purpose, so that nvidia-smi does not list it: VFIO (passed
# through to a VM; the GPU Operator's vfio-manager binds vfio-pci, Grace Hopper nvgrace_gpu_vfio_pci) and pci-stub.
SET_ASIDE_DRIVERS = re.compile(r'vfio|^pci-stub$')
# Seconds each nvidia-smi run may take: one waiting on a wedged GPU (or a hung driver) is stopped, and the run reports
# it like any failing nvidia-smi. A healthy one answers in seconds, also with eight GPUs. Tests lower it.
NVIDIA_SMI_TIMEOUT = 60


class DiscoveryError(GpuOpsError):
    """Input that cannot be understood (malformed nvidia-smi output, unreadable files)."""


def read_text(path):
    """Stripped text of a small file, or None when it does not exist or cannot be read."""
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            return handle.read().strip()
    except OSError:
        return None


def pci_devices(sysfs_root):
    """Every PCI function under <sysfs_root>/bus/pci/devices, sorted by address.

    A root without that directory is no sysfs (a mistyped sysfs_root): DiscoveryError, rather than a node that seems
    to have no GPU.
    """
    base = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    try:
        names = sorted(os.listdir(base))
    except OSError as exc:
        if not os.path.isdir(sysfs_root):
            why = '%s %s' % (sysfs_root, 'does not exist' if not os.path.lexists(sysfs_root) else 'is not a directory')
        elif not os.path.isdir(base):
            why = '%s has no bus/pci/devices, so it is no sysfs tree' % sysfs_root
        else:
            why = 'cannot read %s: %s' % (base, exc.strerror)
        raise DiscoveryError('sysfs_root: %s; point sysfs_root at the node\'s sysfs (default /sys)' % why)
    devices = []
    for name in names:
        attrs = {key: read_text(os.path.join(base, name, key)) for key in ('vendor', 'device', 'class')}
        if attrs['vendor'] and attrs['class']:
            devices.append(dict(address=name.lower(), vendor=attrs['vendor'].lower(), device=(attrs['device'] or '').lower(),
                                pci_class=attrs['class'].lower(), driver=bound_driver(os.path.join(base, name)),
                                virtual_function=os.path.lexists(os.path.join(base, name, 'physfn'))))
    return devices


def bound_driver(device_dir):
    """The name of the kernel driver bound to the PCI function (its `driver` link), or None when none is."""
    try:
        return os.path.basename(os.readlink(os.path.join(device_dir, 'driver')))
    except OSError:
        return None


def nvidia_display_devices(devices):
    """The NVIDIA GPUs among `devices`: NVIDIA functions of a GPU_CLASSES class."""
    return [dev for dev in devices if dev['vendor'] == NVIDIA_VENDOR and dev['pci_class'][2:6] in GPU_CLASSES]


def nvswitch_devices(devices):
    """The NVIDIA NVSwitches among `devices` (PCI class 0x0680, bridge): their nodes need the fabric manager."""
    return [dev for dev in devices if dev['vendor'] == NVIDIA_VENDOR and dev['pci_class'][:6] == NVSWITCH_CLASS]


def os_release(path):
    """KEY=value pairs of an os-release file (quotes removed); {} when it is missing."""
    text = read_text(path)
    result = {}
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#') or '=' not in line:
            continue
        key, value = line.split('=', 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
            value = value[1:-1]
        result[key.strip()] = value
    return result


def kernel_release(procfs_root):
    """The running kernel's release (uname -r) from <procfs_root>/sys/kernel/osrelease, or None."""
    return read_text(os.path.join(procfs_root, 'sys', 'kernel', 'osrelease')) or None


def dmi_product_name(sysfs_root):
    """The DMI product name (what GFD labels gpu.machine with), or None."""
    return read_text(os.path.join(sysfs_root, 'class', 'dmi', 'id', 'product_name')) or None


def proc_driver_version(procfs_root):
    """The loaded kernel module's version from the NVRM line of /proc/driver/nvidia/version, or None."""
    match = NVRM_LINE.search(read_text(os.path.join(procfs_root, 'driver', 'nvidia', 'version')) or '')
    return match.group(1) if match else None


def sysfs_address(bus_id):
    """nvidia-smi's bus id (00000000:01:00.0) as sysfs names the device (0000:01:00.0); None for text that is no bus id
    (nvidia-smi prints NVML's error for a GPU it cannot query, such as [Unknown Error])."""
    match = BUS_ID.match((bus_id or '').strip().lower())
    return '%04x:%s' % (int(match.group(1), 16), match.group(2)) if match else None


def _text(element, path):
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in ('', 'N/A', 'None') else value


def _mib(value, what):
    if value is None:
        return None
    match = MIB.match(value)
    if not match:
        raise DiscoveryError('%s is %r, expected "<number> MiB"' % (what, value))
    return int(match.group(1))


def _int(value):
    # ASCII digits only: str.isdigit() also takes superscripts, which int() refuses.
    return int(value) if value is not None and NUMBER.match(value) else None


def parse_smi_xml(text):
    """Parse `nvidia-smi -q -x` into {driver_version, cuda_version, gpus: [...]} (pure).

    Errors say what is wrong with the text; query_nvidia_smi() puts the command in front.
    """
    if not text.strip():
        raise DiscoveryError('printed nothing')
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise DiscoveryError('printed malformed XML: %s' % exc)
    if root.tag != 'nvidia_smi_log':
        raise DiscoveryError('root element is <%s>, expected <nvidia_smi_log>' % root.tag)
    gpus = []
    for index, gpu in enumerate(root.findall('gpu')):
        bus_id = gpu.get('id') or _text(gpu, 'pci/pci_bus_id')
        if not bus_id:
            raise DiscoveryError('GPU %d has no PCI bus id' % index)
        mig_mode = _text(gpu, 'mig_mode/current_mig')
        mig_devices = []
        for mig in gpu.findall('mig_devices/mig_device'):
            shared = 'device_attributes/shared/'
            mig_devices.append(dict(
                index=_int(_text(mig, 'index')),
                memory=_mib(_text(mig, 'fb_memory_usage/total'), 'MIG device fb_memory_usage/total'),
                multiprocessors=_int(_text(mig, shared + 'multiprocessor_count')),
                engines={name: _int(_text(mig, shared + tag)) for name, tag in (
                    ('copy', 'copy_engine_count'), ('decoder', 'decoder_count'), ('encoder', 'encoder_count'),
                    ('jpeg', 'jpg_count'), ('ofa', 'ofa_count'))},
            ))
        gpus.append(dict(
            index=index,
            uuid=_text(gpu, 'uuid'),
            address=sysfs_address(bus_id),
            name=_text(gpu, 'product_name'),
            architecture=_text(gpu, 'product_architecture'),
            memory=_mib(_text(gpu, 'fb_memory_usage/total'), 'fb_memory_usage/total'),
            compute_capability=None,
            # NVML reports a MIG mode only for MIG-capable GPUs (N/A otherwise, no element before Ampere drivers).
            mig_capable=mig_mode is not None,
            mig_enabled=mig_mode == 'Enabled',
            mig_devices=mig_devices,
            mig_devices_known=True,
        ))
    return dict(driver_version=_text(root, 'driver_version'), cuda_version=_text(root, 'cuda_version'),
                attached_gpus=_int(_text(root, 'attached_gpus')), gpus=gpus)


def parse_query_gpu(text, fields=QUERY_FIELDS):
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` rows into dicts (pure)."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(', ')]
        if len(cells) != len(fields):
            raise DiscoveryError('line %d has %d fields, expected %d: %r' % (number, len(cells), len(fields), line))
        # A value nvidia-smi could not read is NVML's error in brackets: [N/A], [Not Supported], [Unknown Error], ...
        row = {field: (None if cell in ('N/A', '') or cell[:1] + cell[-1:] == '[]' else cell) for field, cell in zip(fields, cells)}
        if row.get('index') is not None and not NUMBER.match(row['index']):
            raise DiscoveryError('line %d: index is %r, not a GPU index' % (number, row['index']))
        rows.append(row)
    return rows


def parse_list_gpus(text):
    """Parse `nvidia-smi -L` into [{index, name, uuid, mig_profiles: [...]}, ...] (pure)."""
    gpus = []
    for line in text.splitlines():
        gpu = LIST_GPU_LINE.match(line)
        mig = LIST_MIG_LINE.match(line)
        if gpu:
            gpus.append(dict(index=int(gpu.group(1)), name=gpu.group(2), uuid=gpu.group(3), mig_profiles=[]))
        elif mig and gpus:
            gpus[-1]['mig_profiles'].append(mig.group(1))
        elif line.strip():
            raise DiscoveryError('printed a line nvidia-smi does not document: %r' % line)
    return gpus


def compute_capability(value):
    """'9.0' -> (9, 0); None when absent or not in that form."""
    match = re.match(r'^(\d+)\.(\d+)$', value or '')
    return (int(match.group(1)), int(match.group(2))) if match else None


def _query_gpu_view(rows):
    gpus = []
    for position, row in enumerate(rows):
        gpus.append(dict(
            index=_int(row.get('index')) if row.get('index') is not None else position,
            uuid=row.get('uuid'),
            address=sysfs_address(row.get('pci.bus_id')),
            name=row.get('name'),
            architecture=None,
            memory=_int(row.get('memory.total')),
            compute_capability=compute_capability(row.get('compute_cap')),
            mig_capable=row.get('mig.mode.current') is not None,
            mig_enabled=row.get('mig.mode.current') == 'Enabled',
            mig_devices=[],
            mig_devices_known=False,
        ))
    return gpus


def merge_views(xml_report, query_rows, listing):
    """One GPU list from the views that answered, matched by UUID (else by index); first non-empty value wins."""
    views = []
    if xml_report is not None:
        views.append(xml_report['gpus'])
    if query_rows is not None:
        views.append(_query_gpu_view(query_rows))
    merged = []
    for view in views:
        for gpu in view:
            match = next((known for known in merged if gpu['uuid'] and known['uuid'] == gpu['uuid']), None)
            if match is None:
                match = next((known for known in merged if known['index'] == gpu['index']), None)
            if match is None:
                merged.append(dict(gpu, mig_profiles=None))
                continue
            for key, value in gpu.items():
                if match.get(key) in (None, [], False) and value not in (None, [], False):
                    match[key] = value
    for entry in listing or []:
        gpu = next((known for known in merged if entry['uuid'] == known['uuid']), None)
        if gpu is None and not views:
            # Only -L answered: it still names the GPUs and their MIG devices.
            gpu = dict(index=entry['index'], uuid=entry['uuid'], address=None, name=entry['name'], architecture=None, memory=None,
                       compute_capability=None, mig_capable=True if entry['mig_profiles'] else None,
                       mig_enabled=bool(entry['mig_profiles']), mig_devices=[], mig_devices_known=False, mig_profiles=None)
            merged.append(gpu)
        if gpu is not None:
            gpu['mig_profiles'] = list(entry['mig_profiles'])
    return sorted(merged, key=lambda gpu: gpu['index'])


def find_nvidia_smi(configured, get_bin_path):
    """The nvidia-smi to run: the configured path, else the first found in SEARCH_DIRS, then PATH."""
    if configured:
        return configured
    for directory in SEARCH_DIRS:
        candidate = os.path.join(directory, 'nvidia-smi')
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return get_bin_path('nvidia-smi')


def runner(module):
    """The command runner for nvidia-smi: commands.run with NVIDIA_SMI_TIMEOUT."""
    return commands.runner(module, timeout=NVIDIA_SMI_TIMEOUT)


def _run(run, argv, what):
    """(stdout, None, rc) on success, (None, message, rc) when the command failed."""
    try:
        rc, out, err = run(argv)
    except OSError as exc:
        return None, '%s could not be run: %s' % (what, exc), None
    if rc != 0:
        detail = ' '.join((err or out or '').split()) or 'no output'
        return None, '%s failed (rc=%d): %s' % (what, rc, detail), rc
    return out, None, rc


def _parsed(parse, out, what):
    # A byte that is not UTF-8 (the runner keeps it as a surrogate escape) is read as U+FFFD, as a terminal shows it.
    out = SURROGATE.sub('\ufffd', out)
    try:
        return parse(out)
    except DiscoveryError as exc:
        raise DiscoveryError('%s: %s' % (what, exc))


def smi_problem(binary, configured):
    """What is wrong with the nvidia-smi path `binary` (naming the nvidia_smi option when `configured`), or None."""
    problem = commands.path_problem(binary) if binary and os.path.isabs(binary) else None
    return ('nvidia_smi: %s' if configured else '%s') % problem if problem else None


def query_nvidia_smi(run, binary, configured=False):
    """Run the three nvidia-smi queries; returns (xml_report, query_rows, listing, errors).

    A query that fails leaves its view None and adds a message to `errors`; a path that cannot be run gives one
    message saying what is wrong with it (naming the nvidia_smi option when `configured`), and a query that ran out
    of time the others are not tried after. Malformed or empty output raises DiscoveryError naming the command (a
    broken nvidia-smi must not pass for a missing one).
    """
    if not binary:
        return None, None, None, ['nvidia-smi was not found (searched %s and PATH)' % ', '.join(SEARCH_DIRS)]
    problem = smi_problem(binary, configured)
    if problem:
        return None, None, None, [problem]
    views = []
    errors = []
    timed_out = False
    for what, args, parse in (('-q -x', ['-q', '-x'], parse_smi_xml), ('--query-gpu', QUERY_GPU_ARGS, parse_query_gpu),
                              ('-L', ['-L'], parse_list_gpus)):
        if timed_out:
            # A hung GPU hangs the next query too: one wait is enough.
            views.append(None)
            continue
        out, error, rc = _run(run, [binary] + args, '%s %s' % (binary, what))
        timed_out = rc == commands.TIMED_OUT
        views.append(_parsed(parse, out, '%s %s' % (binary, what)) if out is not None else None)
        errors += [error] if error else []
    return views[0], views[1], views[2], errors


def disagreement(pci_gpus, gpus, sysfs_root):
    """What PCI and nvidia-smi disagree on (GPUs nvidia-smi lists that the PCI bus does not show), or None."""
    known = set(dev['address'] for dev in pci_gpus)
    unseen = [gpu['address'] or 'GPU %s' % gpu['index'] for gpu in gpus if gpu.get('address') not in known]
    if not unseen:
        return None
    return ('nvidia-smi lists %d GPU(s) that the PCI bus under %s does not show (%s): the PCI view (sysfs_root) and nvidia-smi '
            'disagree, check that sysfs_root is this node\'s sysfs' % (len(unseen), sysfs_root, ', '.join(unseen)))


def for_nvidia_smi(dev):
    """Whether nvidia-smi must list the PCI GPU `dev`: not when a driver set it aside for a VM (SET_ASIDE_DRIVERS) and
    not for an SR-IOV virtual function (a vGPU host's VFs: nvidia-smi lists the physical GPU). Bound to nvidia, to
    no driver (the NVIDIA driver failed to take it) or to nouveau, it must."""
    return not dev.get('virtual_function') and not SET_ASIDE_DRIVERS.search(dev.get('driver') or '')


def unlisted(pci_gpus, gpus):
    """The PCI GPUs nvidia-smi must list (for_nvidia_smi) and does not, sorted by address; [] while nvidia-smi lists
    no GPU (it failed or is missing, which is reported as such).

    A GPU nvidia-smi lists is matched by its bus id; one listed without a readable bus id (-L alone, or NVML's
    [Unknown Error]) may be any of the others: only more unmatched GPUs than such entries are missing, and then every
    unmatched one is named.
    """
    if not gpus:
        return []
    listed = set(gpu['address'] for gpu in gpus if gpu.get('address'))
    unmatched = [dev for dev in pci_gpus if for_nvidia_smi(dev) and dev['address'] not in listed]
    unaddressed = len([gpu for gpu in gpus if not gpu.get('address')])
    return sorted(unmatched, key=lambda dev: dev['address']) if len(unmatched) > unaddressed else []


def unlisted_message(missing, gpus):
    """What unlisted() found, for the driver validation, the labels and the doctor; None when nothing is missing."""
    if not missing:
        return None
    named = ', '.join('%s (%s)' % (dev['address'], 'bound to %s' % dev['driver'] if dev.get('driver') else 'no driver bound')
                      for dev in missing)
    unaddressed = len([gpu for gpu in gpus if not gpu.get('address')])
    return ('nvidia-smi lists %d GPU(s)%s but not every NVIDIA GPU on the PCI bus; missing: %s. The NVIDIA driver did not '
            'initialise them: look for NVRM and Xid lines in the kernel log (journalctl -k), then reboot; replace a GPU that stays missing'
            % (len(gpus), ' (%d without a readable PCI bus id)' % unaddressed if unaddressed else '', named))


def gather(run, sysfs_root='/sys', procfs_root='/proc', os_release_path='/etc/os-release', nvidia_smi=None, configured=False):
    """All facts the label rules need, from the roots and nvidia-smi (`nvidia_smi` None: not found; `configured`:
    the path is the nvidia_smi option's)."""
    devices = pci_devices(sysfs_root)
    xml_report, query_rows, listing, errors = query_nvidia_smi(run, nvidia_smi, configured)
    gpus = merge_views(xml_report, query_rows, listing)
    display = nvidia_display_devices(devices)
    classes = {dev['address']: dev['pci_class'] for dev in display}
    for gpu in gpus:
        gpu['pci_class'] = classes.get(gpu['address'])
    driver_version = (xml_report or {}).get('driver_version') or next(
        (row['driver_version'] for row in query_rows or [] if row.get('driver_version')), None)
    return dict(
        pci_gpus=display,
        gpus=gpus,
        nvidia_smi=nvidia_smi,
        nvidia_smi_errors=errors,
        nvidia_smi_problem=smi_problem(nvidia_smi, configured),
        disagreement=disagreement(display, gpus, sysfs_root),
        unlisted=unlisted(display, gpus),
        mig_listing_available=listing is not None,
        driver_version=driver_version,
        cuda_version=(xml_report or {}).get('cuda_version'),
        proc_driver_version=proc_driver_version(procfs_root),
        kernel_release=kernel_release(procfs_root),
        os_release=os_release(os_release_path),
        dmi_product_name=dmi_product_name(sysfs_root),
    )


# Options of the doc fragment gpuops.gpu_operator.discovery.
DISCOVERY_ARG_SPEC = dict(
    sysfs_root=dict(type='path', default='/sys'),
    procfs_root=dict(type='path', default='/proc'),
    nvidia_smi=dict(type='path'),
)
