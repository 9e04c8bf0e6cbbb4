# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters that resolve the ClusterPolicy once and render the cluster side's objects from it (see plugin_utils/cluster/)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import objects as cluster_objects
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config, prerequisites, registry
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.filters import checked
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.plain_data import plain

# The container_toolkit settings of a GPU node that the cluster side follows, by the name policy.resolve() gives them.
TOOLKIT_VARIABLES = {'runtime_name': 'container_toolkit_runtime_name', 'cdi_enabled': 'container_toolkit_cdi_enabled',
                     'install_dir': 'container_toolkit_install_dir'}


def gpu_node_toolkit(hosts, hostvars):
    """[{host, runtime_name, cdi_enabled, install_dir}] of the inventory hosts `hosts`, with what their variables set."""
    found = []
    for host in hosts or []:
        variables = hostvars[host]
        entry = {'host': host}
        for key, name in TOOLKIT_VARIABLES.items():
            if name in variables:
                entry[key] = variables[name]
        found.append(entry)
    return plain(found, 'hostvars')


def cluster_operands(resolved, namespace='gpu-operator', service_monitor_crd=False, config_maps=None):
    """The operands' objects: {'present': to apply, 'absent': identities to remove} (registry.render); `config_maps`: the
    ConfigMaps earlier runs made from config data (k8s_info's resources), those no longer named are removed too."""
    rendered = registry.render(resolved, namespace, service_monitor_crd=service_monitor_crd)
    rendered['absent'] += registry.stale_config_maps(rendered['present'], config_maps)
    return rendered


def cluster_nfd(resolved, namespace='gpu-operator', crds=None, daemonsets=None, state='present'):
    """registry.nfd from what kubernetes.core.k8s_info read: `crds` the NodeFeature CRD (its resources, [] or one),
    `daemonsets` the cluster's DaemonSets."""
    return registry.nfd(resolved, namespace, (crds or [None])[0], daemonsets, state)


class FilterModule(object):
    """resolve_cluster_policy, cluster_prerequisites, cluster_operands, cluster_nfd, cluster_policy, node_label_settings,
    with_device_plugin_config_map, unused_runtime_classes, gpu_node_toolkit, check_mode_preview."""

    def filters(self):
        return {
            'resolve_cluster_policy': checked(registry.resolution),
            'cluster_prerequisites': checked(prerequisites.prerequisites),
            'cluster_operands': checked(cluster_operands),
            'cluster_policy': checked(registry.cluster_policy),
            'node_label_settings': checked(plugin_config.node_label_settings),
            'with_device_plugin_config_map': checked(plugin_config.with_config_map),
            'cluster_nfd': checked(cluster_nfd),
            'unused_runtime_classes': checked(prerequisites.unused_runtime_classes),
            'gpu_node_toolkit': gpu_node_toolkit,
            'check_mode_preview': checked(cluster_objects.check_mode_preview),
        }
