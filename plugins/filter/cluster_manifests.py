# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters that render the cluster side's objects (see module_utils/k8s/manifests.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import objects as cluster_objects
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import prerequisites as cluster_manifests
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


class FilterModule(object):
    """cluster_prerequisites, cluster_operands, cluster_policy, node_label_settings, unused_runtime_classes, gpu_node_toolkit,
    check_mode_preview."""

    def filters(self):
        return {
            'cluster_prerequisites': checked(cluster_manifests.prerequisites),
            'cluster_operands': checked(cluster_manifests.operands),
            'cluster_policy': checked(cluster_manifests.cluster_policy),
            'node_label_settings': checked(cluster_manifests.node_label_settings),
            'unused_runtime_classes': checked(cluster_manifests.unused_runtime_classes),
            'gpu_node_toolkit': gpu_node_toolkit,
            'check_mode_preview': checked(cluster_objects.check_mode_preview),
        }
