# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The doctor's cluster checks: pure functions from the objects kubernetes.core.k8s_info returned to findings.

They run on the controller (doctor_report.py), beside the node checks of module_utils/doctor/checks.py, whose
findings they are shaped like (checks.finding).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor.checks import SITE, finding
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import device_plugin as device_plugin_check
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels import node_api as nfd_node_labels
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config


# --- per Node -----------------------------------------------------------------

def label_findings(node_name, node, expected):
    """Labels the gpu_node_labels role would set (`expected`) that the Node lacks or has with another value."""
    if node is None:
        return [finding('node-not-registered', 'error', 'no Node named %s in the API' % node_name, [],
                        'join the node to the cluster, or set gpu_node_labels_node_name to its Node name')]
    if expected is None:
        return []
    metadata = node.get('metadata') or {}
    current = metadata.get('labels') or {}
    plan = nfd_node_labels.reconcile(current, nfd_node_labels.owned_labels(metadata.get('annotations')), expected)
    found = []
    if plan['added']:
        found.append(finding('labels-missing', 'error', 'the Node lacks %d GPU label(s), so the operands are not scheduled there' % len(plan['added']),
                             ['%s=%s' % (key, plan['labels'][key]) for key in plan['added']],
                             'label it again (node labels stage): ' + SITE))
    changed = plan['updated'] + [key for key in plan['removed'] if key in current]
    if changed:
        found.append(finding('labels-outdated', 'warning', '%d GPU label(s) do not describe the node as it is now' % len(changed),
                             ['%s: Node has %r, expected %r' % (key, current.get(key), plan['labels'].get(key)) for key in changed],
                             'label it again (node labels stage): ' + SITE))
    return found


def device_plugin_findings(node, sockets, resource=device_plugin_check.DEFAULT_RESOURCE):
    """Whether the device plugin advertised the GPUs on the Node (status.capacity / allocatable)."""
    capacity, allocatable, labels = device_plugin_check.node_resources(node, resource)
    if labels.get(contract.PRESENT) != 'true':
        return []
    name = node['metadata']['name']
    sockets = sockets or {}
    try:
        capacity, allocatable = device_plugin_check.quantity(capacity), device_plugin_check.quantity(allocatable)
    except device_plugin_check.CheckError as exc:
        return [finding('gpu-capacity-zero', 'error', str(exc), [], 'kubectl describe node %s' % name)]
    if capacity is None:
        return [finding('device-plugin-not-registered', 'error', 'the device plugin has not registered %s on this Node' % resource,
                        ['Node %s has no status.capacity[%s]' % (name, resource)] + device_plugin_check.socket_problems(sockets, resource),
                        'the device plugin Pod must run on the node: see the operand and runtime findings; '
                        'kubectl -n <namespace> get pods -o wide --field-selector spec.nodeName=%s' % name)]
    if not capacity or not allocatable:
        return [finding('gpu-capacity-zero', 'error', 'the Node advertises no usable %s (capacity %s, allocatable %s)' % (resource, capacity, allocatable),
                        ['status.capacity[%s]=%s' % (resource, capacity), 'status.allocatable[%s]=%s' % (resource, allocatable)],
                        'the device plugin found no healthy GPU: see the driver and Xid findings; its log says which GPU it marked unhealthy')]
    try:
        want = device_plugin_check.expected(resource, labels, name)
    except device_plugin_check.CheckError:
        return []
    problems = device_plugin_check.problems(name, resource, {}, capacity, allocatable, want)
    if problems:
        return [finding('gpu-capacity-mismatch', 'warning', 'the Node advertises another number of %s than its labels describe' % resource, problems,
                        'check the device plugin config (sharing replicas, MIG strategy) and the unhealthy GPUs in its log')]
    return []


def _plugin_config(labels, policy, config_maps):
    """(the config the node's device plugin runs (None: none), where it comes from, problem finding or None)."""
    config = ((policy.get('spec') or {}).get('devicePlugin') or {}).get('config') or {}
    chosen = contract.selected_config(config, labels.get(contract.DEVICE_PLUGIN_CONFIG, ''))
    if not config.get('name') or not chosen:
        return None, 'no device plugin config', None
    picked_by = 'label %s' % contract.DEVICE_PLUGIN_CONFIG if labels.get(contract.DEVICE_PLUGIN_CONFIG) else 'devicePlugin.config.default'
    source = 'config %s of ConfigMap %s (%s)' % (chosen, config['name'], picked_by)
    data = next((item.get('data') or {} for item in config_maps if item['metadata']['name'] == config['name']), None)
    if data is None or chosen not in data:
        found = 'has %s' % ', '.join(sorted(data)) if data is not None else 'not found in the operator namespace'
        return None, source, finding(
            'device-plugin-config-missing', 'error',
            'the device plugin config %s the node runs does not exist: config-manager cannot start the plugin there' % chosen,
            ['ConfigMap %s %s' % (config['name'], found)],
            'give it in gpu_operator_policy.devicePlugin.config.data, or set gpu_node_labels_device_plugin_config for <node> '
            'to a config it has, then ' + SITE)
    try:
        return plugin_config.load(data[chosen], source), source, None
    except GpuOpsError as exc:
        return None, source, finding('device-plugin-config-invalid', 'error', 'the device plugin config the node runs cannot be read',
                                     [str(exc)], 'fix it in gpu_operator_policy.devicePlugin.config.data and run the site playbook')


def plugin_config_findings(node, policies, config_maps):
    """Whether a GPU Node's MIG and sharing labels say what its device plugin config makes the plugin advertise.

    The config is the one config-manager picks (the node's nvidia.com/device-plugin.config label, else the ClusterPolicy's
    devicePlugin.config.default) from the ConfigMap the ClusterPolicy names; only labels the Node has are compared (missing
    ones are labels-missing).
    """
    labels = (node.get('metadata') or {}).get('labels') or {}
    policy = next(iter(policies or []), None)
    if labels.get(contract.PRESENT) != 'true' or policy is None or config_maps is None:
        return []
    config, source, problem = _plugin_config(labels, policy, config_maps)
    if problem:
        return [problem]
    mig = ((policy.get('spec') or {}).get('mig') or {}).get('strategy') or 'none'
    want, shared = contract.sharing_labels(contract.config_sharing(config), mig)
    replicas, product_label = contract.resource_label(contract.GPU_RESOURCE, 'replicas'), contract.resource_label(contract.GPU_RESOURCE, 'product')
    mig_enabled = labels.get(replicas) == '0'  # MIG-enabled GPUs, which are not shared
    if mig_enabled:
        del want[replicas]
    lines = ['%s: Node has %s, %s makes it %s' % (key, labels[key], source, value if value is not None else '(no label)')
             for key, value in sorted(want.items()) if key in labels and labels[key] != value]
    product = labels.get(product_label, '')
    if product and not mig_enabled and product.endswith(contract.SHARED_PRODUCT_SUFFIX) != shared:
        lines.append('%s: Node has %s, %s makes it %s the %s suffix'
                     % (product_label, product, source, 'with' if shared else 'without', contract.SHARED_PRODUCT_SUFFIX))
    if not lines:
        return []
    return [finding('labels-disagree-with-plugin-config', 'error',
                    'the Node\'s MIG or sharing labels disagree with what its device plugin advertises (%s)' % source, lines,
                    'label it from the same settings: set gpu_node_labels_device_plugin_config for <node> to the config it runs (or remove '
                    'the %s label someone set), then %s' % (contract.DEVICE_PLUGIN_CONFIG, SITE))]


# Taints the DaemonSet controller tolerates for every DaemonSet Pod by itself.
DAEMONSET_TOLERATED = ('node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable', 'node.kubernetes.io/disk-pressure',
                       'node.kubernetes.io/memory-pressure', 'node.kubernetes.io/pid-pressure', 'node.kubernetes.io/unschedulable',
                       'node.kubernetes.io/network-unavailable')


def tolerates(toleration, taint):
    """Kubernetes' matching of one toleration against one taint."""
    if toleration.get('effect') and toleration['effect'] != taint.get('effect'):
        return False
    if toleration.get('operator') == 'Exists':
        return not toleration.get('key') or toleration['key'] == taint.get('key')
    return toleration.get('key') == taint.get('key') and (toleration.get('value') or '') == (taint.get('value') or '')


def selects(daemonset, labels):
    """Whether the DaemonSet's nodeSelector matches `labels`."""
    selector = ((((daemonset.get('spec') or {}).get('template') or {}).get('spec') or {}).get('nodeSelector')) or {}
    return all(labels.get(key) == value for key, value in selector.items())


def taint_findings(node, daemonsets, expected=None):
    """NoSchedule / NoExecute taints of the Node that an operand meant for it does not tolerate."""
    labels = dict((node.get('metadata') or {}).get('labels') or {}, **(expected or {}))
    blocked = []
    for taint in (node.get('spec') or {}).get('taints') or []:
        if taint.get('effect') not in ('NoSchedule', 'NoExecute') or taint.get('key') in DAEMONSET_TOLERATED:
            continue
        names = [ds['metadata']['name'] for ds in daemonsets if selects(ds, labels) and not any(
            tolerates(toleration, taint) for toleration in ds['spec']['template']['spec'].get('tolerations') or [])]
        if names:
            blocked.append((taint, names))
    if not blocked:
        return []
    spelled = ['%s%s:%s' % (taint['key'], '=' + taint['value'] if taint.get('value') else '', taint['effect']) for taint, _names in blocked]
    return [finding('taint-not-tolerated', 'error', 'taints keep operands off this Node: %s' % ', '.join(spelled),
                    ['%s blocks %s' % (text, ', '.join(names)) for text, (_taint, names) in zip(spelled, blocked)],
                    'add tolerations for them to gpu_operator_policy.daemonsets.tolerations (keep the nvidia.com/gpu one) and run '
                    'the operands stage of site.yml, or remove the taint: kubectl taint nodes %s %s-'
                    % (node['metadata']['name'], spelled[0]))]


# --- operands -----------------------------------------------------------------

def pod_ready(pod):
    status = pod.get('status') or {}
    if status.get('phase') == 'Succeeded':
        return True
    return any(cond.get('type') == 'Ready' and cond.get('status') == 'True' for cond in status.get('conditions') or [])


def _container_problems(status):
    """(evidence lines, reasons) of the Pod's containers that wait, ended or restarted."""
    lines, reasons = [], []
    for container in (status.get('initContainerStatuses') or []) + (status.get('containerStatuses') or []):
        state = container.get('state') or {}
        for kind in ('waiting', 'terminated'):
            detail = state.get(kind)
            if detail:
                reasons.append(detail.get('reason') or kind)
                exit_code = ' (exit %s)' % detail['exitCode'] if 'exitCode' in detail else ''
                lines.append('container %s %s: %s%s%s' % (container.get('name'), kind, detail.get('reason') or '', exit_code,
                                                          ': ' + detail['message'] if detail.get('message') else ''))
        last = (container.get('lastState') or {}).get('terminated')
        if last and container.get('restartCount'):
            lines.append('container %s restarted %d time(s), last exit: %s (exit %s)' % (container.get('name'), container['restartCount'],
                                                                                         last.get('reason') or '', last.get('exitCode')))
    return lines, reasons


# Ordered: the first pattern found in the Pod's status, events and log picks the fix.
POD_FIXES = (
    (re.compile(r'no runtime for|RuntimeHandler|runtime handler|nvidia-container-(?:runtime|cli)'),
     'the nvidia runtime cannot start containers on <node>: fix the node\'s runtime and driver findings (' + SITE + ')'),
    (re.compile(r'ImagePullBackOff|ErrImagePull|pull access denied|manifest unknown'),
     'the image cannot be pulled: check gpu_operator_registry or the operand\'s repository and version, and the pull secrets '
     '(gpu_cluster_base_registry_credentials)'),
    (re.compile(r'violates PodSecurity'), 'Pod Security Admission refuses the Pod: see the namespace findings'),
    (re.compile(r'forbidden', re.I), 'the operand\'s ServiceAccount lacks a permission: see the RBAC findings'),
    (re.compile(r'Unschedulable|FailedScheduling|untolerated taint'), 'the Pod cannot be scheduled: see the taint findings and the event'),
    (re.compile(r'CrashLoopBackOff|OOMKilled|Error'), 'the container exits: its log (evidence) and the node\'s driver findings say why'),
)


def pod_finding(pod, events, log):
    """The finding for one operand Pod that is not ready; None when it is."""
    if pod_ready(pod):
        return None
    metadata = pod['metadata']
    status = pod.get('status') or {}
    containers, reasons = _container_problems(status)
    evidence = ['phase %s' % status.get('phase', 'unknown')] + containers
    evidence += ['condition %s=%s %s: %s' % (cond.get('type'), cond.get('status'), cond.get('reason') or '', cond.get('message') or '')
                 for cond in status.get('conditions') or [] if cond.get('status') != 'True' and cond.get('reason')]
    evidence += ['event %s %s: %s' % (event.get('type') or '', event.get('reason') or '', event.get('message') or '') for event in events]
    evidence += ['log: %s' % line for line in (log or '').strip().splitlines()[-5:]]
    text = '\n'.join(evidence)
    fix = next((fix for pattern, fix in POD_FIXES if pattern.search(text)),
               'kubectl -n %s describe pod %s' % (metadata.get('namespace'), metadata['name']))
    reason = ', '.join(reasons) or status.get('phase', 'unknown')
    return finding('operand-pod-not-ready', 'error', 'Pod %s/%s is not ready (%s)' % (metadata.get('namespace'), metadata['name'], reason), evidence, fix)


def pod_events(pod, events):
    name = pod['metadata']['name']
    return [event for event in events if (event.get('involvedObject') or {}).get('kind') == 'Pod' and event['involvedObject'].get('name') == name]


def daemonset_findings(daemonsets):
    """Operand DaemonSets that schedule no Pod or whose Pods are not all ready."""
    lines = []
    for ds in daemonsets:
        status = ds.get('status') or {}
        name = ds['metadata']['name']
        desired = status.get('desiredNumberScheduled')
        selector = ', '.join('%s=%s' % item for item in sorted(ds['spec']['template']['spec'].get('nodeSelector', {}).items()))
        if desired is None:
            lines.append('%s: no status yet (no controller has rolled it out)' % name)
        elif desired == 0:
            lines.append('%s: schedules no Pod: no Node matches %s' % (name, selector))
        elif status.get('numberReady', 0) < desired:
            lines.append('%s: %d/%d Pods ready' % (name, status.get('numberReady', 0), desired))
    if not lines:
        return []
    return [finding('operands-not-rolled-out', 'warning', '%d operand DaemonSet(s) are not fully rolled out' % len(lines), lines,
                    'see the operand Pod findings of the nodes; a DaemonSet that schedules no Pod needs Nodes with its deploy label (node labels stage)')]


def namespace_findings(namespace, namespace_object, events, logs):
    """The operator namespace: it exists, Pod Security Admission lets the operands run, nothing was refused by RBAC."""
    if namespace_object is None:
        return [finding('namespace-missing', 'error', 'the operator namespace %s does not exist' % namespace, [],
                        'create the cluster prerequisites: ansible-playbook -i <inventory> gpuops.gpu_operator.site')]
    found = []
    labels = (namespace_object.get('metadata') or {}).get('labels') or {}
    enforce = labels.get('pod-security.kubernetes.io/enforce')
    psa_fix = ('kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite (gpu_cluster_base sets it: the operands '
               'use host paths and privileged containers)' % namespace)
    if enforce != 'privileged':
        found.append(finding('namespace-psa-restricted', 'error' if enforce else 'warning',
                             'namespace %s %s' % (namespace, 'enforces the %s Pod Security level' % enforce if enforce else
                                                  'has no Pod Security label: the cluster\'s default level applies'),
                             ['label pod-security.kubernetes.io/enforce=%s' % (enforce or '(unset)')], psa_fix))
    texts = ['%s/%s %s: %s' % ((event.get('involvedObject') or {}).get('kind'), (event.get('involvedObject') or {}).get('name'),
                               event.get('reason') or '', event.get('message') or '') for event in events]
    psa = [text for text in texts if 'violates PodSecurity' in text]
    if psa:
        found.append(finding('psa-refused', 'error', 'Pod Security Admission refused operand Pods', psa, psa_fix))
    forbidden = [text for text in texts if 'forbidden' in text and 'violates PodSecurity' not in text]
    forbidden += ['%s log: %s' % (pod, line) for pod, log in sorted((logs or {}).items())
                  for line in (log or '').splitlines() if re.search(r'\bforbidden\b', line)]
    if forbidden:
        found.append(finding('rbac-forbidden', 'error', 'the API refused requests of the operands (RBAC)', forbidden,
                             'apply the RBAC again (cluster prerequisites stage): ansible-playbook -i <inventory> gpuops.gpu_operator.site; '
                             'check one with kubectl auth can-i --as system:serviceaccount:%s:<serviceaccount> <verb> <resource>' % namespace))
    return found


def cluster_policy_findings(policies):
    """The ClusterPolicy exists and its status (written by the validation stage) says ready."""
    if not policies:
        return [finding('clusterpolicy-missing', 'error', 'no ClusterPolicy in the cluster', [],
                        'apply the operands and the ClusterPolicy: ansible-playbook -i <inventory> gpuops.gpu_operator.site')]
    found = []
    for policy in policies:
        status = policy.get('status') or {}
        if status.get('state') == 'ready':
            continue
        evidence = ['status.state: %s' % status.get('state', '(none: validation has not run)')]
        evidence += ['condition %s=%s %s: %s' % (cond.get('type'), cond.get('status'), cond.get('reason') or '', cond.get('message') or '')
                     for cond in status.get('conditions') or []]
        found.append(finding('clusterpolicy-not-ready', 'warning', 'ClusterPolicy %s is not ready' % policy['metadata']['name'], evidence,
                             'run the validation stage on a cluster that runs Pods: ansible-playbook -i <inventory> gpuops.gpu_operator.site '
                             '--tags validation; the other findings say what keeps it from passing'))
    return found


VALIDATION_FIXES = {
    'driver': 'the driver does not work on <node>, or the validator Pod did not start there: see the driver and operand Pod findings; '
              'run the driver stage again: ' + SITE,
    'toolkit': 'containers started through the node\'s NVIDIA runtime do not see the GPUs: see the container runtime findings; '
               'run the container toolkit stage again: ' + SITE,
    'cuda': 'vectorAdd failed on the node: its log (evidence) says why; see the driver and Xid findings',
    'plugin': 'the Node does not advertise its GPUs as its labels describe them, or a Pod requesting them did not run: see the device plugin '
              'findings and check the device plugin config (sharing replicas, MIG strategy)',
}
REVALIDATE = 'ansible-playbook -i <inventory> gpuops.gpu_operator.site --tags validation'


def validation_findings(result, pod_findings=()):
    """The validation stage's result of one node (ConfigMap gpu-validation-results): a finding when it failed.

    pod_findings: the operand-pod-not-ready findings of the node's validation Pods (the validator's, its vectorAdd Pod, the
    Pods requesting the GPU resources). Where the node's validation failed they tell the same failure again: what they show
    now goes into the evidence of gpu-validation-failed instead. Otherwise (no result, or one that passed before the Pods
    broke) they are the findings.
    """
    if not result or result.get('state') != 'failed':
        return list(pod_findings)
    component = result.get('component')
    fix = VALIDATION_FIXES.get(component, 'register the node with the cluster: ' + SITE)
    evidence = list(result.get('evidence') or [])
    for item in pod_findings:
        evidence += ['now: ' + item['summary']] + ['now: ' + line for line in item['evidence']]
    return [finding('gpu-validation-failed', 'error', 'GPU validation failed: %s' % result.get('summary', ''),
                    evidence, '%s; then validate again: %s' % (fix, REVALIDATE))]


def api_findings(errors):
    """Reads of the API the doctor could not make."""
    return [finding('api-read-failed', 'error', 'the doctor could not read %s' % what, [message],
                    'give the credentials of the kube_api host (K8S_AUTH_KUBECONFIG) get and list on it') for what, message in errors]
