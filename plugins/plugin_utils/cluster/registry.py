# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The operands, in the GPU Operator's state order, and everything derived from them.

Adding an operand is a file under operands/ (a skeleton.Operand), an entry here and its golden test
(tests/unit/plugins/plugin_utils/cluster/golden/): the ClusterPolicy schema, defaults and CRD, the images, the
accounts, the DaemonSets and the objects each role applies all come from this list.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import ref
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import policy
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.helm_values import from_values
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import (
    cc_manager, dcgm, dcgm_exporter, device_plugin, gpu_feature_discovery, kata_device_plugin, mig_manager, mps_control_daemon,
    node_feature_discovery, node_status_exporter, sandbox_device_plugin, sandbox_validator, validator, vfio_manager, vgpu_device_manager)
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import CONFIG_OF, Context

OPERANDS = (
    validator.OPERAND,
    device_plugin.OPERAND,
    mps_control_daemon.OPERAND,
    dcgm.OPERAND,
    dcgm_exporter.OPERAND,
    gpu_feature_discovery.OPERAND,
    mig_manager.OPERAND,
    node_status_exporter.OPERAND,
    # the sandbox workloads' (sandboxWorkloads.enabled), in the Operator's order (the vGPU manager's is the host's: fields.py)
    vgpu_device_manager.OPERAND,
    sandbox_validator.OPERAND,
    vfio_manager.OPERAND,
    sandbox_device_plugin.OPERAND,
    kata_device_plugin.OPERAND,
    cc_manager.OPERAND,
)


# Node Feature Discovery, which the chart installs beside the Operator (nfd.enabled): not a ClusterPolicy operand, applied by
# gpu_cluster_base before the node stages (node_feature_discovery.plan).
NFD = node_feature_discovery


def resolution(spec=None, registry='', nodes=None, helm_values=None, nfd=None):
    """The ClusterPolicy of a run, resolved once: {'spec': the full ClusterPolicy spec (policy.resolve), 'cdi_hook_path':
    where nvidia-cdi-hook is on the GPU nodes, '' without CDI, 'kept': the fields given that this collection does not act on
    (the CR holds them as given), 'notes': what of the given ClusterPolicy was left out, 'chart': the Helm chart's settings
    that are not ClusterPolicy fields (helm_values.chart_settings; {} without values), 'nfd': the NFD settings of the run
    (node_feature_discovery.settings), 'daemonsets': the DaemonSets of the operands these settings deploy (the node side
    asks it whether an operand runs, rather than restating the Operator's rule)}.

    `spec`: a ClusterPolicy spec or the whole object (policy.accept); `helm_values`: the chart's values, which render the
    ClusterPolicy `spec` is then laid over, field by field (helm_values.from_values); `registry` mirrors the default images;
    `nodes` are the GPU nodes' container toolkit settings; `nfd`: the chart's `nfd` values (enabled, nodefeaturerules), laid
    over those of `helm_values`.
    """
    chart = from_values(helm_values) if helm_values is not None else {'spec': None, 'chart': {}}
    accepted = policy.accept(spec, chart['spec'])
    resolved = policy.resolve(accepted['honoured'], registry, nodes, OPERANDS)
    return {'spec': resolved, 'cdi_hook_path': policy.cdi_hook_path(nodes, resolved) if resolved['cdi']['enabled'] else '',
            'kept': accepted['kept'], 'notes': accepted['notes'], 'chart': chart['chart'],
            'daemonsets': [operand.daemonset for operand in OPERANDS if operand.is_enabled(resolved)],
            'nfd': NFD.settings(policy.merge(chart['chart'].get('nfd') or {}, nfd) if isinstance(nfd, (dict, type(None))) else nfd, registry)}


def nfd(resolved, namespace, crd=None, daemonsets=None, state='present'):
    """What gpu_cluster_base does about NFD (node_feature_discovery.plan). `resolved`: resolution()."""
    return NFD.plan(resolved['nfd'], namespace, crd, daemonsets, state)


def context(resolved, namespace, service_monitor_crd=False):
    return Context(namespace, service_monitor_crd, resolved['cdi_hook_path'])


def render(resolved, namespace, stage='operands', service_monitor_crd=False):
    """{'present': objects of the stage's enabled operands, 'absent': identities of the objects of its disabled ones and of
    those its enabled ones do not want (unused defaults)}. `resolved`: resolution()."""
    spec, where = resolved['spec'], context(resolved, namespace, service_monitor_crd)
    present, absent = [], []
    for operand in OPERANDS:
        if operand.stage != stage:
            continue
        objects = operand.objects(spec, where)
        if operand.is_enabled(spec):
            present.extend(objects)
        else:
            absent.extend(ref(obj) for obj in objects)
        for item in operand.unwanted(spec, where):
            if item not in absent:
                absent.append(item)
    return {'present': present, 'absent': absent}


def stale_config_maps(present, found):
    """Identities of the ConfigMaps an earlier run made from a config section's data (`found`: those k8s_info read with
    the label CONFIG_OF) that the objects `present` neither make nor mount: the settings stopped naming them. A ConfigMap
    without the label is its user's and never among them."""
    kept = set()
    for obj in present:
        if obj['kind'] == 'ConfigMap':
            kept.add(obj['metadata']['name'])
        pod = ((obj.get('spec') or {}).get('template') or {}).get('spec') or {}
        kept.update(volume['configMap']['name'] for volume in pod.get('volumes') or [] if 'configMap' in volume)
    return [ref(dict(item, apiVersion='v1', kind='ConfigMap')) for item in found or []
            if CONFIG_OF in (item['metadata'].get('labels') or {}) and item['metadata']['name'] not in kept]


def cluster_policy(resolved):
    """The ClusterPolicy CR of the resolution."""
    return policy.cluster_policy(resolved['spec'], OPERANDS, resolved.get('kept'))
