# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters that render the cluster side's objects (see module_utils/k8s/manifests.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import manifests as cluster_manifests
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.plain_data import PlainDataError, plain

# The container_toolkit settings of a GPU node that the cluster side follows, by the name policy.resolve() gives them.
TOOLKIT_VARIABLES = {'runtime_name': 'container_toolkit_runtime_name', 'cdi_enabled': 'container_toolkit_cdi_enabled',
                     'install_dir': 'container_toolkit_install_dir'}


def _checked(function):
    """Plain data in (ansible-core 2.19 hands filters tagged, lazy types), a settings error out as a filter error naming the setting."""
    def wrapper(*args, **kwargs):
        try:
            return function(*plain(list(args), 'argument'), **plain(kwargs, 'option'))
        except (GpuOpsError, PlainDataError) as exc:
            raise AnsibleFilterError('gpuops.gpu_operator: %s' % exc) from None
    wrapper.__doc__ = function.__doc__
    return wrapper


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
    """cluster_prerequisites, cluster_operands, cluster_policy, cluster_validator_pod, node_label_settings, unused_runtime_classes, gpu_node_toolkit."""

    def filters(self):
        return {
            'cluster_prerequisites': _checked(cluster_manifests.prerequisites),
            'cluster_operands': _checked(cluster_manifests.operands),
            'cluster_policy': _checked(cluster_manifests.cluster_policy),
            'cluster_validator_pod': _checked(cluster_manifests.validator_pod),
            'node_label_settings': _checked(cluster_manifests.node_label_settings),
            'unused_runtime_classes': _checked(cluster_manifests.unused_runtime_classes),
            'gpu_node_toolkit': gpu_node_toolkit,
        }
