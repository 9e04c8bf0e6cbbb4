# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The node labels NFD, GPU Feature Discovery and the GPU Operator would set, computed from gathered facts.

Pure functions of the dict `gpu_discovery.gather()` returns. The formats follow the upstream
projects (facts, not code): NFD's kernel, system and pci sources with the Operator's NFD
configuration (`pci-10de.present`) plus NFD's default class-qualified form (`pci-0302_10de.present`);
GFD's label manager (product sanitising, SHARED suffix, MIG strategies, family from the compute
capability); the Operator's state labels (`nvidia.com/gpu.deploy.*`, mig-manager on MIG-capable nodes).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import (
    CHOICES, CONTAINER, DEPLOY, GPU_RESOURCE, KUBEVIRT, MIG_CAPABLE, MIG_CONFIG, MIG_RESOURCE_PREFIX, MIG_STRATEGIES, MIG_STRATEGY,
    MPS_CAPABLE, PRESENT, SANDBOX_DEFAULTS, SHARED_PRODUCT_SUFFIX, SHARING_STRATEGIES, STATE_COMPONENTS, is_state_label, resource_label,
    sharing_labels, sharing_view, workload_components, workload_config)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpudirect.plan import FEATURES, capable_labels

NFD = 'feature.node.kubernetes.io/'
GPU = resource_label(GPU_RESOURCE, '')
# GFD's family names by compute capability major version (7.x and 8.x split at a minor).
FAMILIES = {1: 'tesla', 2: 'fermi', 3: 'kepler', 5: 'maxwell', 6: 'pascal', 9: 'hopper'}
# nvidia-smi's product_architecture names of the families GFD knows, for GPUs whose capture has no compute capability.
ARCHITECTURE_FAMILIES = {'Tesla': 'tesla', 'Fermi': 'fermi', 'Kepler': 'kepler', 'Maxwell': 'maxwell', 'Pascal': 'pascal',
                         'Volta': 'volta', 'Turing': 'turing', 'Ampere': 'ampere', 'Ada Lovelace': 'ada-lovelace', 'Hopper': 'hopper'}
GPU_MODES = {'0x030000': 'graphics', '0x030200': 'compute'}
MIG_ENGINES = ('copy', 'decoder', 'encoder', 'jpeg', 'ofa')
LABEL_NAME = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')
LABEL_VALUE = re.compile(r'^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$')
DNS_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
MIG_PROFILE = re.compile(r'^(?:(\d+)c\.)?(\d+)g\.\d+gb')
# The labels of the chart's NodeFeatureRule nvidia-kernel-modules (NFD with nfd.nodefeaturerules): NFD's to set where it runs.
KERNEL_MODULE_LABELS = frozenset(item['label'] for item in FEATURES)


class LabelError(GpuOpsError):
    """Options or facts that cannot give a valid label set."""


def label_key_error(key):
    """Why `key` is not a valid label key, or None."""
    prefix, sep, name = key.rpartition('/')
    if sep and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return 'prefix %r is not a DNS subdomain' % prefix
    if not LABEL_NAME.match(name):
        return 'name %r must be 1-63 characters [A-Za-z0-9-_.], beginning and ending with a letter or digit' % name
    return None


def valid_value(value):
    return len(value) <= 63 and bool(LABEL_VALUE.match(value))


def sanitise(text):
    """GFD's sanitising: drop characters other than [A-Za-z0-9-_. ], then join the words with '-'."""
    return '-'.join(re.sub(r'[^A-Za-z0-9_. -]', '', text).split())


def kernel_labels(release):
    """NFD kernel source: kernel-version.full (forbidden characters -> '_'), major, minor, revision."""
    full = re.sub(r'[^-A-Za-z0-9_.]', '_', release).strip('-_.')
    labels = {NFD + 'kernel-version.full': full}
    match = re.match(r'^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-.*)?$', full)
    for name, value in zip(('major', 'minor', 'revision'), match.groups() if match else ()):
        if value is not None:
            labels[NFD + 'kernel-version.' + name] = value
    return labels


def os_release_labels(release):
    """NFD system source: os_release.ID, VERSION_ID and VERSION_ID.major/.minor."""
    labels = {}
    for key in ('ID', 'VERSION_ID'):
        if release.get(key):
            labels[NFD + 'system-os_release.' + key] = release[key]
    match = re.match(r'^(\d+)(?:\.(\d+))?', release.get('VERSION_ID', ''))
    for name, value in zip(('major', 'minor'), match.groups() if match else ()):
        if value is not None:
            labels[NFD + 'system-os_release.VERSION_ID.' + name] = value
    return labels


def pci_labels(pci_gpus):
    """NFD pci source: the vendor-only form the Operator configures NFD with, and NFD's default class_vendor form."""
    labels = {}
    for dev in pci_gpus:
        labels[NFD + 'pci-10de.present'] = 'true'
        labels[NFD + 'pci-%s_10de.present' % dev['pci_class'][2:6]] = 'true'
    return labels


def family(gpu):
    capability = gpu.get('compute_capability')
    if capability:
        major, minor = capability
        if major == 7:
            return 'volta' if minor < 5 else 'turing'
        if major == 8:
            return 'ampere' if minor < 9 else 'ada-lovelace'
        return FAMILIES.get(major, 'undefined')
    return ARCHITECTURE_FAMILIES.get(gpu.get('architecture'))


def product(parts, shared):
    name = '-'.join(sanitise(part) for part in parts if part)
    return name + SHARED_PRODUCT_SUFFIX if name and shared else name


def full_gpu_labels(gpus, shared_view, warnings):
    """GFD's full-GPU labels for the node's (main) model; MIG-enabled GPUs of a model count without sharing.

    shared_view: contract.sharing_labels() of the node's sharing."""
    models = []
    for gpu in gpus:
        if gpu['name'] and gpu['name'] not in models:
            models.append(gpu['name'])
    if not models:
        return {}
    if len(models) > 1:
        warnings.append('several GPU models on one node (%s): labelled as %s, like GFD labels one model' % (', '.join(models), models[0]))
    same = [gpu for gpu in gpus if gpu['name'] == models[0]]
    first = same[0]
    view, shared = shared_view
    if all(gpu['mig_enabled'] for gpu in same):
        view, shared = {GPU + 'replicas': '0', GPU + 'sharing-strategy': 'none'}, False
    labels = {GPU + 'product': product([first['name']], shared), GPU + 'count': str(len(same)),
              GPU + 'replicas': view[GPU + 'replicas'], GPU + 'sharing-strategy': view[GPU + 'sharing-strategy']}
    if first.get('memory'):
        labels[GPU + 'memory'] = str(first['memory'])
    if family(first):
        labels[GPU + 'family'] = family(first)
    if first.get('compute_capability'):
        labels[GPU + 'compute.major'], labels[GPU + 'compute.minor'] = (str(part) for part in first['compute_capability'])
    return labels


def mig_instances(gpu):
    """[(profile, attributes)] of a MIG-enabled GPU; profile None where `nvidia-smi -L` did not name it."""
    profiles = gpu.get('mig_profiles')
    devices = gpu.get('mig_devices') or []
    count = len(profiles) if profiles is not None else len(devices)
    instances = []
    for position in range(count):
        profile = profiles[position].replace('+', '.') if profiles is not None else None
        device = devices[position] if position < len(devices) else {}
        attrs = {}
        if device.get('memory') is not None:
            attrs['memory'] = device['memory']
        if device.get('multiprocessors') is not None:
            attrs['multiprocessors'] = device['multiprocessors']
        match = MIG_PROFILE.match(profile or '')
        if match:
            attrs['slices.gi'] = int(match.group(2))
            attrs['slices.ci'] = int(match.group(1) or match.group(2))
        for engine in MIG_ENGINES:
            if device.get('engines', {}).get(engine) is not None:
                attrs['engines.' + engine] = device['engines'][engine]
        instances.append((profile, attrs))
    return instances


def mig_resource_labels(resource, parent, profile, count, attrs, sharing):
    replicas, strategy, shared = sharing_view(sharing) if sharing is not None else (1, 'none', False)
    labels = {resource + '.product': product([parent, 'MIG', profile], shared), resource + '.count': str(count),
              resource + '.replicas': str(replicas), resource + '.sharing-strategy': strategy}
    labels.update({'%s.%s' % (resource, key): str(value) for key, value in attrs.items()})
    return labels


def mig_known(gpu):
    return gpu.get('mig_profiles') is not None or gpu.get('mig_devices_known')


def single_strategy_labels(gpus, sharing, warnings):
    enabled = [gpu for gpu in gpus if gpu['mig_enabled']]
    if not enabled:
        return {}
    invalid = {GPU + 'product': product([enabled[0]['name'], 'MIG', 'INVALID'], False),
               GPU + 'count': '0', GPU + 'replicas': '0', GPU + 'memory': '0'}
    if any(mig_known(gpu) and not mig_instances(gpu) for gpu in enabled):
        warnings.append('mig-strategy=single: a MIG-enabled GPU has no MIG devices')
        return invalid
    if len(enabled) != len(gpus):
        warnings.append('mig-strategy=single: GPUs with MIG enabled and disabled on one node')
        return invalid
    if any(gpu.get('mig_profiles') is None for gpu in enabled):
        warnings.append('mig-strategy=single: MIG profile names are unknown (nvidia-smi -L did not answer); the MIG device labels are left out')
        return {}
    instances = [instance for gpu in enabled for instance in mig_instances(gpu)]
    profiles = sorted(set(profile for profile, attrs in instances))
    if len(profiles) != 1:
        warnings.append('mig-strategy=single: more than one MIG profile on the node (%s)' % ', '.join(profiles))
        return invalid
    return mig_resource_labels(GPU_RESOURCE, enabled[0]['name'], profiles[0], len(instances), instances[0][1], sharing)


def mixed_strategy_labels(gpus, warnings):
    labels = {}
    resources = {}
    for gpu in gpus:
        if not gpu['mig_enabled']:
            continue
        if gpu.get('mig_profiles') is None:
            warnings.append('mig-strategy=mixed: MIG profile names of GPU %s are unknown (nvidia-smi -L did not answer); '
                            'its MIG device labels are left out' % gpu['index'])
            continue
        for profile, attrs in mig_instances(gpu):
            entry = resources.setdefault(profile, dict(parent=gpu['name'], count=0, attrs=attrs))
            entry['count'] += 1
    for profile, entry in resources.items():
        # Sharing options apply to nvidia.com/gpu; the mig-<profile> resources are not shared.
        labels.update(mig_resource_labels(MIG_RESOURCE_PREFIX + profile, entry['parent'], profile, entry['count'], entry['attrs'], None))
    return labels


def version_labels(driver_version, cuda_version, warnings):
    labels = {}
    parts = (driver_version or '').split('.')
    if driver_version and 2 <= len(parts) <= 3:
        major, minor, rev = parts[0], parts[1], parts[2] if len(parts) == 3 else ''
        for old, new, value in (('major', 'major', major), ('minor', 'minor', minor), ('rev', 'revision', rev)):
            labels['nvidia.com/cuda.driver.' + old] = value
            labels['nvidia.com/cuda.driver-version.' + new] = value
        labels['nvidia.com/cuda.driver-version.full'] = driver_version
    elif driver_version:
        warnings.append('driver version %r is not X.Y[.Z]; the cuda.driver labels are left out' % driver_version)
    match = re.match(r'^(\d+)\.(\d+)$', cuda_version or '')
    if match:
        for prefix in ('nvidia.com/cuda.runtime.', 'nvidia.com/cuda.runtime-version.'):
            labels[prefix + 'major'], labels[prefix + 'minor'] = match.group(1), match.group(2)
        labels['nvidia.com/cuda.runtime-version.full'] = cuda_version
    return labels


def gfd_labels(facts, mig_strategy, sharing, warnings):
    """GPU Feature Discovery's labels (needs nvidia-smi's view of the GPUs)."""
    gpus = facts['gpus']
    enabled = any(gpu['mig_enabled'] for gpu in gpus)
    view, shared = sharing_labels(sharing, mig_strategy)
    if view[MPS_CAPABLE] == 'true' and enabled:
        raise LabelError('sharing.strategy=mps is not supported on GPUs with MIG enabled (GFD refuses it too)')
    labels = {GPU + 'machine': sanitise(facts.get('dmi_product_name') or '') or 'unknown',
              MIG_CAPABLE: 'true' if any(gpu['mig_capable'] for gpu in gpus) else 'false', MPS_CAPABLE: view[MPS_CAPABLE]}
    labels.update(version_labels(facts.get('driver_version'), facts.get('cuda_version'), warnings))
    pci_class = next((gpu['pci_class'] for gpu in gpus if gpu.get('pci_class')), None)
    if pci_class:
        labels[GPU + 'mode'] = GPU_MODES.get(pci_class, 'unknown')
    labels.update(full_gpu_labels(gpus, (view, shared), warnings))
    if view[MIG_STRATEGY]:
        labels[MIG_STRATEGY] = view[MIG_STRATEGY]
        labels.update(single_strategy_labels(gpus, sharing, warnings) if mig_strategy == 'single' else mixed_strategy_labels(gpus, warnings))
    return labels


def gpu_present(facts):
    """nvidia.com/gpu.present: an NVIDIA GPU on the PCI bus (the classes the Operator counts, discovery's GPU_CLASSES), or
    one nvidia-smi lists. Without one the Operator deploys nothing on the node, and site.yml ends it after its labels."""
    return bool(facts['pci_gpus'] or facts['gpus'])


def deploy_labels(mig_capable, overrides, workload=CONTAINER, mode=KUBEVIRT):
    """The Operator's state labels of a node of `workload` (container by default); `overrides` maps component -> value. An
    override of a component only another workload has is left out on a VM node (the driver record, ...)."""
    components = workload_components(workload, mode, mig_capable)
    labels = {DEPLOY + component: 'true' for component in components}
    for component, value in (overrides or {}).items():
        if workload == CONTAINER or component in components or component not in STATE_COMPONENTS:
            labels[DEPLOY + component] = value
    return labels


def workload_labels(labels, node_labels, sandbox=None):
    """(labels, warning or None): `labels` (compute_labels', a container node's) with the state labels of the node's workload
    instead, read from its Node's labels `node_labels` and the ClusterPolicy's sandboxWorkloads `sandbox`
    (contract.workload_config); the values compute_labels gave that are not 'true' are overrides and stay. Labels without
    state labels (no GPU) are returned as they are."""
    if not any(is_state_label(key) for key in labels):
        return dict(labels), None
    workload, warning = workload_config(node_labels, sandbox)
    if workload == CONTAINER:
        return dict(labels), warning
    overrides = dict((key[len(DEPLOY):], value) for key, value in labels.items() if is_state_label(key) and value != 'true')
    found = dict((key, value) for key, value in labels.items() if not is_state_label(key))
    found.update(deploy_labels(False, overrides, workload, dict(SANDBOX_DEFAULTS, **(sandbox or {}))['mode']))
    return dict(sorted(found.items())), warning


def compute_labels(facts, mig_strategy='none', sharing=None, deploy=None, extra_labels=None, mig_config='', kernel_modules=None):
    """(labels, warnings): the label set for a node with these facts.

    Deploy labels are 'true' unless overridden; applying them keeps a non-empty value already on
    the Node (see nfd_node_labels), as it keeps the nvidia.com/mig.config a MIG-capable node gets
    (`mig_config`, migManager.config.default). Invalid computed values are left out with a
    warning; invalid option values raise LabelError. `kernel_modules` ({name: refcount} of /proc/modules) give the labels of the
    chart's NodeFeatureRule (nvidia.com/gds.capable, gdrcopy.capable, peermem.capable).
    """
    if mig_strategy not in MIG_STRATEGIES:
        raise LabelError('mig_strategy must be one of %s, got %r' % (', '.join(MIG_STRATEGIES), mig_strategy))
    sharing = dict(sharing or {})
    if (sharing.get('strategy') or 'none') not in SHARING_STRATEGIES:
        raise LabelError('sharing.strategy must be one of %s, got %r' % (', '.join(SHARING_STRATEGIES), sharing.get('strategy')))
    if sharing.get('replicas') is not None and sharing['replicas'] < 1:
        raise LabelError('sharing.replicas must be 1 or more, got %r' % sharing['replicas'])
    warnings = []
    labels = {}
    if facts.get('kernel_release'):
        labels.update(kernel_labels(facts['kernel_release']))
    labels.update(os_release_labels(facts.get('os_release') or {}))
    labels.update(pci_labels(facts['pci_gpus']))
    labels.update(capable_labels(kernel_modules or {}))
    if gpu_present(facts):
        labels[PRESENT] = 'true'
        if facts['gpus']:
            labels.update(gfd_labels(facts, mig_strategy, sharing, warnings))
        labels.update(deploy_labels(labels.get(MIG_CAPABLE) == 'true', deploy))
        if mig_config and labels.get(MIG_CAPABLE) == 'true':
            labels[MIG_CONFIG] = mig_config
        if facts.get('nvidia_smi_errors') and not facts['gpus']:
            warnings.append('the PCI bus shows %d NVIDIA GPU(s) but nvidia-smi gave no GPU data (%s); only the NFD and Operator labels are set'
                            % (len(facts['pci_gpus']), '; '.join(facts['nvidia_smi_errors'])))
    for key, value in (deploy or {}).items():
        if not valid_value(value) or label_key_error(DEPLOY + key):
            raise LabelError('deploy.%s=%r does not make a valid label %s' % (key, value, DEPLOY + key))
    for key, value in (extra_labels or {}).items():
        error = label_key_error(key) or (None if valid_value(value) else 'value %r is not a valid label value' % value)
        if error:
            raise LabelError('extra_labels: %s: %s' % (key, error))
        labels[key] = value
    for key in sorted(labels):
        if not valid_value(labels[key]):
            warnings.append('%s=%r is not a valid label value; left out' % (key, labels[key]))
            del labels[key]
    return dict(sorted(labels.items())), warnings


def local_feature_text(labels):
    """An NFD local-source feature file (features.d) with the GFD labels; None when there are none.

    gpu.present, the deploy labels and the config choices stay out: the Operator and admins change
    those on the Node (e.g. paused-for-driver-upgrade) and NFD would set them back. NFD computes its
    own feature.node labels.
    """
    lines = ['%s=%s' % (key, labels[key]) for key in sorted(labels)
             if key.startswith('nvidia.com/') and key != PRESENT and not key.startswith(DEPLOY) and key not in CHOICES
             and key not in KERNEL_MODULE_LABELS]
    if not lines:
        return None
    return '# Written by gpuops.gpu_operator.nfd_labels; changes are overwritten.\n' + '\n'.join(lines) + '\n'


def is_gfd_label(key):
    """A label GPU Feature Discovery sets: nvidia.com/gpu.* (but gpu.present and the Operator's deploy labels),
    cuda.*, mps.*, and the MIG labels (mig.*, and the mig-<profile>.* resources of the mixed strategy) but
    nvidia.com/mig.config, which the Operator sets for the MIG manager."""
    if key.startswith(GPU):
        return key != PRESENT and not key.startswith(DEPLOY)
    return key.startswith(('nvidia.com/cuda.', 'nvidia.com/mps.', 'nvidia.com/mig')) and key != MIG_CONFIG


def labels_to_apply(labels, nfd_enabled=False, gfd_labels=True):
    """The computed labels the gpu_node_labels role puts on the Node.

    With NFD running (the chart's nfd.enabled), its own feature.node.kubernetes.io labels and those of the chart's
    NodeFeatureRule (KERNEL_MODULE_LABELS: NFD sets them when nfd.nodefeaturerules is on, nobody when it is off) are left to it; without
    `gfd_labels` (GFD's Pods publish them: plugin_config.node_label_settings), GFD's labels are left out (gpu.present
    and the deploy labels stay: the Operator sets those).
    """
    return dict((key, value) for key, value in labels.items()
                if not (nfd_enabled and (key.startswith(NFD) or key in KERNEL_MODULE_LABELS)) and not (not gfd_labels and is_gfd_label(key)))
