# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the validation stage (see module_utils/k8s/validation.py and policy_status.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import policy_status
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import validation
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.filters import checked
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.plain_data import plain


def plugin_validation_pods(capacity_results, namespace, rendered):
    """The plugin validation Pods of the nodes whose every capacity check passed: no Pod is made before that."""
    checks = validation.capacity_checks(capacity_results)
    failed = {check['node'] for check in checks if not check['passed']}
    return validation.plugin_pods(namespace, rendered, [check for check in checks if check['node'] not in failed])


def gpu_node_name(host, hostvars):
    """The Node name of an inventory host, as the node labels stage names it (gpu_node_labels_node_name, else its nodename)."""
    facts = hostvars[host]
    return facts.get('gpu_node_labels_node_name') or (facts.get('ansible_facts') or {}).get('nodename') or host.split('.')[0]


def stopped_gpu_nodes(hosts, hostvars):
    """[{node, stage, failure}] of the hosts whose node stages did not all finish in this run (site.yml records them)."""
    stopped = []
    for host in hosts or []:
        facts = hostvars[host]
        if facts.get('site_node_stage') != 'done':
            # site.yml sets site_node_stage from the second stage on: a failure before it is the labels stage's.
            stage = facts.get('site_node_stage') or ('gpu_node_labels' if facts.get('site_node_failure') else 'setup')
            stopped.append({'node': gpu_node_name(host, hostvars), 'stage': stage,
                            'failure': facts.get('site_node_failure') or 'unreachable'})
    return stopped


def nodes_not_ended(hosts, hostvars):
    """The hosts but those site.yml ended early (site_node_end: a node without an NVIDIA GPU), in their order."""
    return [host for host in hosts or [] if 'site_node_end' not in hostvars[host]]


def validation_failures(results, hosts, hostvars):
    """What the run fails with, per inventory host of the GPU nodes, and for the failed GPU Nodes outside the inventory.

    Only the Node names are read from hostvars: made plain as a whole, hostvars would be templated everywhere, also the
    results a stopped node registered, whose templates name role variables no longer in scope.
    """
    return checked(validation.failures)(results, {host: gpu_node_name(host, hostvars) for host in hosts or []})


def computed_node_labels(hosts, hostvars):
    """{Node name: the labels the node labels stage computed for the host (gpu_node_labels_computed)} of the hosts that have them."""
    return dict((gpu_node_name(host, hostvars), plain(hostvars[host]['gpu_node_labels_computed'], 'gpu_node_labels_computed'))
                for host in hosts or [] if 'gpu_node_labels_computed' in hostvars[host])


class FilterModule(object):
    """cluster_validator, validation_targets, plugin_validation_pods, validation_report, cluster_policy_outcome,
    validation_pods_on, validation_records, recorded_cluster_policy_outcome,
    gpu_node_name, stopped_gpu_nodes, nodes_not_ended, computed_node_labels and validation_failures."""

    def filters(self):
        return {
            'cluster_validator': checked(validation.validator),
            'validation_targets': checked(validation.targets),
            'plugin_validation_pods': checked(plugin_validation_pods),
            'validation_report': checked(validation.report),
            'cluster_policy_outcome': checked(policy_status.outcome),
            'validation_pods_on': checked(validation.pods_on),
            'validation_records': checked(validation.records),
            'recorded_cluster_policy_outcome': checked(validation.recorded_outcome),
            'gpu_node_name': gpu_node_name,
            'stopped_gpu_nodes': stopped_gpu_nodes,
            'nodes_not_ended': nodes_not_ended,
            'computed_node_labels': computed_node_labels,
            'validation_failures': validation_failures,
        }
