# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's report: node results and cluster objects in, one report per node plus the cluster's out (pure).

`build()` runs the cluster checks (doctor_cluster_checks.py) over what the kube_api host read and joins them with
what gpu_node_doctor found on each node; `text()` renders the report for people.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import checks
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import validation_pods
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import doctor_cluster_checks as cluster_checks
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import validation as gpu_validation

REPORT_FORMAT = 1
# The text shows this many evidence lines of a finding; the JSON report has them all.
TEXT_EVIDENCE_LINES = 12
# The Pods of the validation stage: their findings go with the node's validation result (cluster_checks.validation_findings).
VALIDATION_APPS = (validation_pods.VALIDATOR, validation_pods.CUDA_APP, validation_pods.PLUGIN_APP)


def _placed(findings, host, inventory, namespace):
    """Findings sorted by severity, with <node>, <inventory> and <namespace> in the fixes spelled out."""
    return [dict(item, fix=item['fix'].replace('<node>', host).replace('<inventory>', inventory).replace('<namespace>', namespace))
            for item in checks.by_severity(findings)]


def _node_findings(host, data, cluster, api_nodes, pod_findings, validation, validation_pods):
    name = data.get('node_name') or host
    result = data.get('result')
    # A node whose GPUs go to virtual machines runs no container runtime hook, device plugin or its config.
    containers = ((result or {}).get('facts') or {}).get('workload_config', contract.CONTAINER) == contract.CONTAINER
    found = []
    if result is None and not data:
        found.append(checks.finding('node-unreachable', 'error', 'the node checks did not run on this host',
                                    ['unreachable, or it failed before the checks (see the play output)'],
                                    'check the connection: ansible -i <inventory> <node> -m ansible.builtin.ping'))
    elif result is None:
        # The node answered: one of its check tasks failed, and the checks after it did not run.
        found.append(checks.finding('node-check-failed', 'error',
                                    "the check task '%s' failed on the node; the checks after it did not run" % (data.get('failed_task') or '?'),
                                    [data.get('error') or 'failed'],
                                    "fix what the task's message says on the node (a command or file it needs, a setting that names "
                                    'the wrong path), then run the doctor again: ansible-playbook -i <inventory> gpuops.gpu_operator.doctor'))
    else:
        found.extend(_with_runtime_error(result['findings'], data.get('runtime_error') if containers else None))
    if cluster.get('nodes') is not None:
        node = api_nodes.get(name)
        # Without its Node the labels cannot be compared; node-not-registered says why.
        if data.get('labels_error') and node is not None:
            found.append(checks.finding('labels-not-computed', 'warning', 'the labels this node should have could not be computed',
                                        [data['labels_error']], 'run the node labels stage to see the error: ' + checks.SITE))
        found.extend(cluster_checks.label_findings(name, node, data.get('expected_labels')))
        if node is not None and containers:
            found.extend(cluster_checks.device_plugin_findings(node, (result or {}).get('facts', {}).get('device_plugin_sockets')))
            found.extend(cluster_checks.plugin_config_findings(node, cluster.get('cluster_policies'), cluster.get('config_maps')))
        if node is not None:
            found.extend(cluster_checks.taint_findings(node, cluster.get('daemonsets') or [], data.get('expected_labels')))
    found.extend(pod_findings.pop(name, []))
    found.extend(cluster_checks.validation_findings(validation.pop(name, None), validation_pods.pop(name, [])))
    return name, found


def _with_runtime_error(findings, error):
    """The node's findings, the container toolkit stage's reason for finding no runtime added to runtime-not-found (a
    finding of its own when the doctor module did find one)."""
    if not error:
        return list(findings)
    if any(item['check'] == 'runtime-not-found' for item in findings):
        return [dict(item, evidence=item['evidence'] + [error]) if item['check'] == 'runtime-not-found' else item for item in findings]
    return list(findings) + [checks.finding('runtime-detection-failed', 'warning', "the container toolkit stage's runtime detection failed",
                                            [error], 'set container_toolkit_runtime for this node, or fix what the message says')]


def _validation_results(config_maps):
    """{Node name: result} from the ConfigMap gpu-validation-results of the operator namespace (one JSON document per Node)."""
    data = next((item.get('data') for item in config_maps or [] if item['metadata']['name'] == gpu_validation.RESULTS_CONFIG_MAP), None)
    results = {}
    for name, text in (data or {}).items():
        try:
            results[name] = json.loads(text)
        except (TypeError, ValueError):
            results[name] = {'state': 'failed', 'component': None, 'summary': 'its result in ConfigMap gpu-validation-results is not JSON',
                             'evidence': [str(text)[:200]]}
    return results


def build(nodes, cluster, generated='', inventory='<inventory>'):
    """The report.

    nodes: {inventory host: dict(node_name, result (gpu_node_doctor's return, None when it did not run), failed_task and
    error (the check task that failed on the node, its message), expected_labels, labels_error, runtime_error) or None (the host never
    got to the end of the node checks: unreachable)}. cluster: dict(namespace, nodes, namespaces (the operator namespace, when it
    exists), daemonsets, pods, events, logs ({pod name: log text}), cluster_policies, config_maps (of the operator namespace:
    the device plugin configs and the validation stage's gpu-validation-results, {Node name: JSON of its result}), errors
    ([what, message] of reads that failed)); a list that could not be read is None.
    """
    events = cluster.get('events') or []
    namespace = cluster.get('namespace') or '<namespace>'
    api_nodes = dict((node['metadata']['name'], node) for node in cluster.get('nodes') or [])
    pod_findings, validation_pods = {}, {}
    cluster_findings = cluster_checks.api_findings(cluster.get('errors') or [])
    for pod in cluster.get('pods') or []:
        found = cluster_checks.pod_finding(pod, cluster_checks.pod_events(pod, events), (cluster.get('logs') or {}).get(pod['metadata']['name']))
        if found:
            kind = validation_pods if (pod['metadata'].get('labels') or {}).get('app') in VALIDATION_APPS else pod_findings
            kind.setdefault((pod.get('spec') or {}).get('nodeName'), []).append(found)
    if cluster.get('namespaces') is not None:
        found_namespace = (cluster['namespaces'] + [None])[0]
        cluster_findings += cluster_checks.namespace_findings(namespace, found_namespace, events, cluster.get('logs'))
    if cluster.get('cluster_policies') is not None:
        cluster_findings += cluster_checks.cluster_policy_findings(cluster['cluster_policies'])
    cluster_findings += cluster_checks.daemonset_findings(cluster.get('daemonsets') or [])
    validation = _validation_results(cluster.get('config_maps'))
    report_nodes = {}
    for host in sorted(nodes):
        name, found = _node_findings(host, nodes[host] or {}, cluster, api_nodes, pod_findings, validation, validation_pods)
        result = (nodes[host] or {}).get('result') or {}
        report_nodes[host] = dict(node_name=name, facts=result.get('facts', {}), findings=_placed(found, host, inventory, namespace))
    # Pods on Nodes outside the inventory (or not scheduled) are the cluster's, and so are their validation results.
    for found in pod_findings.values():
        cluster_findings.extend(found)
    for name in sorted(set(validation) | set(validation_pods), key=str):
        found = cluster_checks.validation_findings(validation.get(name), validation_pods.get(name, []))
        cluster_findings.extend(dict(item, summary='Node %s: %s' % (name, item['summary'])) if item['check'] == 'gpu-validation-failed' else item
                                for item in found)
    cluster_findings = _placed(cluster_findings, '<node>', inventory, namespace)
    everything = cluster_findings + [item for node in report_nodes.values() for item in node['findings']]
    counts = dict((severity, sum(1 for item in everything if item['severity'] == severity)) for severity in checks.SEVERITIES)
    summary = dict(
        nodes=len(report_nodes),
        errors=counts['error'],
        warnings=counts['warning'],
        info=counts['info'],
        nodes_with_errors=[host for host, node in sorted(report_nodes.items()) if any(item['severity'] == 'error' for item in node['findings'])],
        checks=sorted(set(item['check'] for item in everything)),
    )
    return dict(format=REPORT_FORMAT, generated=generated, namespace=cluster.get('namespace'), summary=summary,
                cluster=dict(findings=cluster_findings), nodes=report_nodes)


def _facts_line(facts):
    if not facts:
        return 'not checked'
    parts = []
    if facts.get('pci_gpus') is not None:
        parts.append('%d GPU(s) on PCI' % facts['pci_gpus'])
    if facts.get('gpu_names'):
        parts.append(', '.join(facts['gpu_names']))
    parts.append('driver %s' % (facts.get('driver_version') or 'none'))
    runtime = facts.get('runtime')
    parts.append('runtime %s' % (runtime or 'not found'))
    return ', '.join(parts)


def _finding_lines(findings):
    if not findings:
        return ['  no findings']
    lines = []
    for item in findings:
        lines.append('  %-7s %s: %s' % (item['severity'].upper(), item['check'], item['summary']))
        evidence = item['evidence']
        if len(evidence) > TEXT_EVIDENCE_LINES:
            evidence = evidence[:TEXT_EVIDENCE_LINES] + ['... and %d more (see the JSON report)' % (len(evidence) - TEXT_EVIDENCE_LINES)]
        lines.extend('          | %s' % line for line in evidence)
        lines.append('          fix: %s' % item['fix'])
    return lines


def text(report):
    """The report as lines of text for people (one section for the cluster, one per node)."""
    summary = report['summary']
    lines = ['GPU doctor report %s' % report.get('generated', ''),
             '%d node(s): %d error(s), %d warning(s), %d info; errors on: %s' % (
                 summary['nodes'], summary['errors'], summary['warnings'], summary['info'], ', '.join(summary['nodes_with_errors']) or 'none'),
             '',
             'Cluster (operator namespace %s)' % report.get('namespace')]
    lines += _finding_lines(report['cluster']['findings'])
    for host, node in sorted(report['nodes'].items()):
        lines += ['', 'Node %s (Node object %s): %s' % (host, node['node_name'], _facts_line(node['facts']))]
        lines += _finding_lines(node['findings'])
    return lines
