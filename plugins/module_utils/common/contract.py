# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the node side and the cluster side agree on, written once and imported by both.

The node side (the container runtime modules, nfd_labels, the doctor's node checks) writes what the
cluster side (the RuntimeClasses, the operands, the validator, the doctor's cluster checks) reads:
the names the NVIDIA runtime is registered under, the labels the operands select on (the GPU
Operator's nvidia.com/gpu.deploy.*), and the labels that say how a node's GPUs are shared and split,
as GPU feature discovery writes them and the device plugin advertises them. Pure data and functions.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

# --- the NVIDIA runtime on the node -------------------------------------------------------------

# What the container_toolkit role does when a GPU node does not say otherwise (its defaults/main.yml); the runtime
# name is also the ClusterPolicy's operator.runtimeClass default.
DEFAULT_RUNTIME_NAME = 'nvidia'
TOOLKIT_DEFAULTS = {'runtime_name': DEFAULT_RUNTIME_NAME, 'cdi_enabled': False, 'install_dir': '/usr/bin'}
# nvidia-container-runtime.cdi and .legacy, each registered as <runtime name>-<variant>.
RUNTIME_VARIANTS = ('cdi', 'legacy')
# The files the node stages write (driver-ready, toolkit-ready) and the operands wait for.
VALIDATIONS_DIR = '/run/nvidia/validations'


def runtime_variants(cdi_enabled):
    """The variants registered beside the runtime: with CDI all of them (as the Operator's toolkit does), else none."""
    return list(RUNTIME_VARIANTS) if cdi_enabled else []


def runtime_names(runtime_name, variants):
    """The names the node registers the runtime under, the main one first; the RuntimeClasses' handlers are these."""
    return [runtime_name] + ['%s-%s' % (runtime_name, variant) for variant in RUNTIME_VARIANTS if variant in variants]


# --- labels the operands select on --------------------------------------------------------------

PRESENT = 'nvidia.com/gpu.present'
DEPLOY = 'nvidia.com/gpu.deploy.'
# The Operator's state labels of every GPU node, and the one only MIG-capable nodes get. `client` selects no operand: GPU
# clients of other vendors select on it, and the MIG manager (and NVIDIA's driver manager) set it to paused-for-... while
# they change the node's GPUs, so that those clients leave first.
DEPLOY_COMPONENTS = ('driver', 'gpu-feature-discovery', 'container-toolkit', 'device-plugin', 'dcgm', 'dcgm-exporter',
                     'node-status-exporter', 'operator-validator', 'client')
MIG_MANAGER_COMPONENT = 'mig-manager'
# The admin's switch for a whole node: with nvidia.com/gpu.deploy.operands=false the Operator takes every state label off
# the Node (and puts them back once it is no longer false); it is the admin's, never written here.
OPERANDS = DEPLOY + 'operands'
# The MIG profile mig-manager applies; the Operator labels a MIG-capable node with migManager.config.default when it has none.
MIG_CONFIG = 'nvidia.com/mig.config'
# Where the MIG manager says how applying the node's mig.config went: pending (rebooting) while it works, success once the
# layout is applied, failed (NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go, migConfigStateLabel). GFD relabels
# such a node on its next periodic look; the k8s_nodes event source on the change to success.
MIG_CONFIG_STATE = 'nvidia.com/mig.config.state'
MIG_CONFIG_APPLIED = 'success'
# The device plugin config a node runs (config-manager picks it from the ConfigMap by this label).
DEVICE_PLUGIN_CONFIG = 'nvidia.com/device-plugin.config'
# Labels that choose a config for the node: the Operator (or the admin) changes them on the Node.
CHOICES = (MIG_CONFIG, DEVICE_PLUGIN_CONFIG)


# --- the node's workload (the ClusterPolicy's sandboxWorkloads) --------------------------------------

# The Node label that says what a GPU node runs when sandboxWorkloads.enabled: containers, VMs with whole GPUs (vfio-pci) or
# VMs with vGPUs; without it (or with another value) a node runs sandboxWorkloads.defaultWorkload. The admin's, never written
# here (GPU Operator v26.7.0 controllers/state_manager.go, gpuWorkloadConfigLabelKey).
WORKLOAD_CONFIG = 'nvidia.com/gpu.workload.config'
CONTAINER, VM_PASSTHROUGH, VM_VGPU = 'container', 'vm-passthrough', 'vm-vgpu'
WORKLOADS = (CONTAINER, VM_PASSTHROUGH, VM_VGPU)
# sandboxWorkloads.mode: KubeVirt's device plugin, or Kata's on vm-passthrough nodes.
KUBEVIRT, KATA = 'kubevirt', 'kata'
SANDBOX_MODES = (KUBEVIRT, KATA)
SANDBOX_DEVICE_PLUGIN_COMPONENT = 'sandbox-device-plugin'
KATA_DEVICE_PLUGIN_COMPONENT = 'kata-sandbox-device-plugin'
# The state labels of each workload (the Operator's gpuStateLabels); the container ones are DEPLOY_COMPONENTS.
WORKLOAD_COMPONENTS = {
    CONTAINER: DEPLOY_COMPONENTS,
    VM_PASSTHROUGH: (SANDBOX_DEVICE_PLUGIN_COMPONENT, 'sandbox-validator', 'vfio-manager', 'kata-manager', 'cc-manager', 'client'),
    VM_VGPU: (SANDBOX_DEVICE_PLUGIN_COMPONENT, 'vgpu-manager', 'vgpu-device-manager', 'sandbox-validator', 'cc-manager', 'client'),
}
# Every state label a workload may give a node (a node of another workload loses those it had of ours).
STATE_COMPONENTS = tuple(sorted(set(sum(WORKLOAD_COMPONENTS.values(), ())) | {MIG_MANAGER_COMPONENT, KATA_DEVICE_PLUGIN_COMPONENT}))
SANDBOX_DEFAULTS = {'enabled': False, 'defaultWorkload': CONTAINER, 'mode': KUBEVIRT}


def workload_config(labels, sandbox=None):
    """(the node's workload, why not the one its label names or None), as the Operator's getWorkloadConfig reads it: container
    unless `sandbox` (the ClusterPolicy's sandboxWorkloads) is enabled; then the Node's WORKLOAD_CONFIG label, else (none, or
    not one of WORKLOADS) sandboxWorkloads.defaultWorkload (container when that is not one of them either)."""
    sandbox = dict(SANDBOX_DEFAULTS, **(sandbox or {}))
    if not sandbox['enabled']:
        return CONTAINER, None
    default = sandbox['defaultWorkload'] if sandbox['defaultWorkload'] in WORKLOADS else CONTAINER
    found = (labels or {}).get(WORKLOAD_CONFIG)
    if found in WORKLOADS:
        return found, None
    if found is None:
        return default, None
    return default, 'the Node label %s=%s is not one of %s: the node runs the default workload %s' % (
        WORKLOAD_CONFIG, found, ', '.join(WORKLOADS), default)


def workload_components(workload, mode=KUBEVIRT, mig_capable=False):
    """The components whose state labels a node of `workload` gets (getEffectiveStateLabels, addGPUStateLabels): with
    sandboxWorkloads.mode kata a vm-passthrough node gets Kata's device plugin instead of KubeVirt's; the MIG manager's only a
    MIG-capable container node."""
    components = list(WORKLOAD_COMPONENTS[workload])
    if workload == VM_PASSTHROUGH and mode == KATA:
        components[components.index(SANDBOX_DEVICE_PLUGIN_COMPONENT)] = KATA_DEVICE_PLUGIN_COMPONENT
    if workload == CONTAINER and mig_capable:
        components.append(MIG_MANAGER_COMPONENT)
    return components


def deploy_label(component):
    """nvidia.com/gpu.deploy.<component> (one of STATE_COMPONENTS)."""
    return DEPLOY + component


def is_state_label(key):
    """One of the Operator's state labels (nvidia.com/gpu.deploy.*, not the admin's OPERANDS switch)."""
    return key.startswith(DEPLOY) and key != OPERANDS


def operands_disabled(labels):
    """Whether the Node's labels turn every operand off there (OPERANDS=false, as the Operator reads it)."""
    return (labels or {}).get(OPERANDS) == 'false'


# --- sharing and MIG, as GFD labels them and the device plugin advertises them -------------------

MIG_STRATEGIES = ('none', 'single', 'mixed')
SHARING_STRATEGIES = ('none', 'time-slicing', 'mps')
# The device plugin config's sharing kinds and the strategy GFD labels each with.
SHARING_KINDS = {'timeSlicing': 'time-slicing', 'mps': 'mps'}
GPU_RESOURCE = 'nvidia.com/gpu'
MIG_RESOURCE_PREFIX = 'nvidia.com/mig-'
# Shared with renameByDefault, a resource is advertised as <resource>.shared; its labels keep the plain name.
SHARED_SUFFIX = '.shared'
# Without renameByDefault, GFD marks a shared GPU in its product name.
SHARED_PRODUCT_SUFFIX = '-SHARED'
MPS_CAPABLE = 'nvidia.com/mps.capable'
MIG_CAPABLE = 'nvidia.com/mig.capable'
MIG_STRATEGY = 'nvidia.com/mig.strategy'
_MIG_COUNT_LABEL = re.compile(r'^nvidia\.com/(mig-.+)\.count$')


def resource_label(resource, attribute):
    """GFD's label of a resource's attribute: nvidia.com/gpu.count, nvidia.com/mig-1g.10gb.replicas, ..."""
    return '%s.%s' % (resource, attribute)


def unshared(resource):
    """The resource a <resource>.shared name stands for (its labels carry the plain name)."""
    return resource[:-len(SHARED_SUFFIX)] if resource.endswith(SHARED_SUFFIX) else resource


def selected_config(config, node_config=''):
    """The device plugin config name a node runs (`config`: the ClusterPolicy's devicePlugin.config): its
    nvidia.com/device-plugin.config label, else devicePlugin.config.default, else none ('': config-manager's fallback
    "empty", no config file)."""
    return node_config or (config or {}).get('default') or ''


def config_sharing(config):
    """The sharing of nvidia.com/gpu a device plugin config gives, in the node labels' terms: {strategy, replicas,
    rename_by_default}."""
    for kind, strategy in SHARING_KINDS.items():
        shared = ((config or {}).get('sharing') or {}).get(kind)
        if not shared:
            continue
        replicas = next((item['replicas'] for item in shared['resources'] if item['name'] == GPU_RESOURCE), 1)
        if replicas > 1:
            return {'strategy': strategy, 'replicas': replicas, 'rename_by_default': bool(shared.get('renameByDefault'))}
    return {'strategy': 'none', 'replicas': 1, 'rename_by_default': False}


def renamed_resources(config):
    """The resources a device plugin config advertises as <name>.shared (sharing with renameByDefault)."""
    for sharing in ((config or {}).get('sharing') or {}).values():
        if (sharing or {}).get('renameByDefault'):
            return {(resource or {}).get('name') for resource in sharing.get('resources') or []}
    return set()


def sharing_view(sharing):
    """(replicas, strategy label, shared suffix) of the nvidia.com/gpu resource under the sharing options."""
    strategy = sharing.get('strategy') or 'none'
    replicas = sharing.get('replicas') or 1
    if strategy == 'none' or replicas <= 1:
        return replicas if strategy != 'none' else 1, 'none', False
    return replicas, strategy, not sharing.get('rename_by_default')


def sharing_labels(sharing, mig_strategy):
    """The labels GFD gives a node for its sharing and MIG strategy ({key: value, or None for no label}) and whether a
    shared GPU's product name takes -SHARED. gpu.replicas and gpu.sharing-strategy are those of GPUs without MIG."""
    replicas, strategy, shared = sharing_view(sharing)
    return {resource_label(GPU_RESOURCE, 'replicas'): str(replicas), resource_label(GPU_RESOURCE, 'sharing-strategy'): strategy,
            MPS_CAPABLE: 'true' if (sharing.get('strategy') or 'none') == 'mps' else 'false',
            MIG_STRATEGY: mig_strategy if mig_strategy != 'none' else None}, shared


def _positive(labels, key):
    try:
        return int(labels.get(key, '0')) > 0
    except ValueError:
        return True  # a malformed count is gpu_resource_capacity's to report


def gpu_resources(labels, mig_strategy='single', config=None):
    """The GPU resources a Node should advertise, from its GFD labels and the device plugin config it runs.

    nvidia.com/gpu for full GPUs (and MIG devices under the single strategy), nvidia.com/mig-<profile> for
    each profile under the mixed strategy; <name>.shared where sharing renames the resource. A GPU node
    whose labels describe nothing gets nvidia.com/gpu, so that its check says which label is missing.
    """
    renamed = renamed_resources(config)
    names = []
    if _positive(labels, resource_label(GPU_RESOURCE, 'count')) and labels.get(resource_label(GPU_RESOURCE, 'replicas')) != '0':
        names.append(GPU_RESOURCE)
    if mig_strategy == 'mixed':
        names += ['nvidia.com/' + match.group(1) for match in sorted(filter(None, map(_MIG_COUNT_LABEL.match, labels)), key=lambda m: m.group(1))
                  if _positive(labels, match.group(0))]
    return [name + SHARED_SUFFIX if name in renamed else name for name in names or [GPU_RESOURCE]]
