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
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import (
    dcgm, dcgm_exporter, device_plugin, gpu_feature_discovery, mig_manager, mps_control_daemon, node_feature_discovery, node_status_exporter,
    validator)
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import Context

OPERANDS = (
    validator.OPERAND,
    device_plugin.OPERAND,
    mps_control_daemon.OPERAND,
    dcgm.OPERAND,
    dcgm_exporter.OPERAND,
    gpu_feature_discovery.OPERAND,
    mig_manager.OPERAND,
    node_status_exporter.OPERAND,
)


# Node Feature Discovery, which the chart installs beside the Operator (nfd.enabled): not a ClusterPolicy operand, applied by
# gpu_cluster_base before the node stages (node_feature_discovery.plan).
NFD = node_feature_discovery


def resolution(spec=None, registry='', nodes=None, nfd=None):
    """The ClusterPolicy of a run, resolved once: {'spec': the full ClusterPolicy spec (policy.resolve), 'cdi_hook_path':
    where nvidia-cdi-hook is on the GPU nodes, '' without CDI, 'nfd': the chart's NFD settings (node_feature_discovery.settings)}.

    `registry` mirrors the default images; `nodes` are the GPU nodes' container toolkit settings; `nfd` the chart's `nfd`
    values (enabled, nodefeaturerules).
    """
    resolved = policy.resolve(spec, registry, nodes, OPERANDS)
    return {'spec': resolved, 'cdi_hook_path': policy.cdi_hook_path(nodes) if resolved['cdi']['enabled'] else '',
            'nfd': NFD.settings(nfd, registry)}


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


def cluster_policy(resolved):
    """The ClusterPolicy CR of the resolution."""
    return policy.cluster_policy(resolved['spec'], OPERANDS)
