# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The validation Pods of a node read into its result (pure functions), on the host that waits for them.

The validator's Pod (the DaemonSet nvidia-operator-validator, one init container per component in the GPU
Operator's order), the cuda component's vectorAdd Pod and the Pods requesting a GPU resource: `validator_state()`
and `plugin_state()` say where a node is, `pod_evidence()` and `node_evidence()` what shows why. The objects
themselves are rendered on the controller (plugin_utils/cluster/validation.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract

VALIDATOR = 'nvidia-operator-validator'  # the DaemonSet, its Pods' app label, its ServiceAccount, Role and ClusterRole
DEPLOY_COMPONENT = 'operator-validator'
DEPLOY_LABEL = contract.deploy_label(DEPLOY_COMPONENT)
CUDA_APP = 'nvidia-cuda-validator'  # the vectorAdd Pod the cuda component creates
PLUGIN_APP = 'nvidia-device-plugin-validator'  # the Pods requesting a GPU resource (created by this collection)
RESOURCE_ANNOTATION = 'gpuops.gpu_operator/gpu-resource'
# What a node advertises is named nvidia.com/gpu*, or nvidia.com/mig-* under the mixed strategy (the validator's prefixes).
GPU_RESOURCE_PREFIXES = (contract.GPU_RESOURCE, contract.MIG_RESOURCE_PREFIX)


# --- a node's Pods --------------------------------------------------------------------------

def _ready(pod):
    return any(c.get('type') == 'Ready' and c.get('status') == 'True' for c in (pod.get('status') or {}).get('conditions') or [])


def _container_lines(pod, names=None):
    """Evidence lines for the containers of a Pod (those in `names` when given) that wait, end or restarted."""
    status = pod.get('status') or {}
    lines = []
    for container in (status.get('initContainerStatuses') or []) + (status.get('containerStatuses') or []):
        if names is not None and container.get('name') not in names:
            continue
        for kind, detail in sorted((container.get('state') or {}).items()):
            if kind == 'running' or not detail or (kind == 'terminated' and detail.get('exitCode') == 0):
                continue
            exit_code = ' (exit %s)' % detail['exitCode'] if 'exitCode' in detail else ''
            lines.append('container %s %s: %s%s%s' % (container.get('name'), kind, detail.get('reason') or '', exit_code,
                                                      ': ' + detail['message'] if detail.get('message') else ''))
        last = (container.get('lastState') or {}).get('terminated')
        if last and container.get('restartCount'):
            lines.append('container %s restarted %d time(s), last exit %s%s' % (
                container.get('name'), container['restartCount'], last.get('exitCode'), ' (%s)' % last['reason'] if last.get('reason') else ''))
    return lines


def pod_evidence(pod, events, log=None, log_lines=10, containers=None):
    """What a Pod shows: phase, containers, conditions not met, its events and its log tail."""
    meta, status = pod['metadata'], pod.get('status') or {}
    lines = ['Pod %s/%s phase %s%s' % (meta.get('namespace'), meta['name'], status.get('phase') or 'unknown',
                                       ' (%s: %s)' % (status.get('reason'), status.get('message') or '') if status.get('reason') else '')]
    lines += _container_lines(pod, containers)
    lines += ['condition %s=%s %s%s' % (c.get('type'), c.get('status'), c.get('reason'), ': ' + c['message'] if c.get('message') else '')
              for c in status.get('conditions') or [] if c.get('status') != 'True' and c.get('reason')]
    lines += ['event %s %s: %s' % (e.get('type') or '', e.get('reason') or '', e.get('message') or '') for e in pod_events(pod, events)]
    tail = [line for line in (log or '').splitlines() if line.strip()][-log_lines:] if log_lines else []
    lines += ['log: %s' % line for line in tail]
    return lines


def pod_events(pod, events):
    name = pod['metadata']['name']
    return [e for e in events or [] if (e.get('involvedObject') or {}).get('kind') == 'Pod' and e['involvedObject'].get('name') == name]


def _pending(component, summary, container=None):
    return {'state': 'pending', 'component': component, 'summary': summary, 'container': container}


def validator_state(pod):
    """Where a node's validator Pod is: passed (Ready), or pending with the first component that has not passed.

    The Pod restarts a failed init container (restartPolicy Always, as the Operator's), so only the end of
    the wait turns a pending node into a failed one; `summary` then says whether that component failed
    (exited non-zero), is still running or did not run.
    """
    if pod is None:
        return _pending('driver', 'driver validation did not run: no %s Pod on the Node' % VALIDATOR)
    if _ready(pod):
        checked = [c['name'][:-len('-validation')] for c in (pod.get('spec') or {}).get('initContainers') or [] if c['name'].endswith('-validation')]
        return {'state': 'passed', 'component': None, 'summary': '%s validation passed' % ', '.join(checked), 'container': None}
    statuses = {c.get('name'): c for c in (pod.get('status') or {}).get('initContainerStatuses') or []}
    started = False
    for container in (pod.get('spec') or {}).get('initContainers') or []:
        name = container['name']
        component = name[:-len('-validation')] if name.endswith('-validation') else name
        status = statuses.get(name) or {}
        state = status.get('state') or {}
        terminated, last = state.get('terminated'), (status.get('lastState') or {}).get('terminated')
        if terminated and terminated.get('exitCode') == 0:
            started = True
            continue
        if terminated or last:
            detail = terminated or last
            return _pending(component, '%s validation failed: %s exited %s%s' % (
                component, name, detail.get('exitCode'), ' (%s)' % detail['reason'] if detail.get('reason') else ''), name)
        if 'running' in state:
            return _pending(component, '%s validation did not finish: %s is still running' % (component, name), name)
        waiting = state.get('waiting') or {}
        why = '%s%s' % (waiting.get('reason') or 'not started', ': ' + waiting['message'] if waiting.get('message') else '')
        where = 'the Pod did not start' if not started else '%s did not start' % name
        return _pending(component, '%s validation did not run: %s (%s)' % (component, where, why), name)
    return _pending(None, 'every validation passed but the %s container is not ready' % VALIDATOR, VALIDATOR)


def plugin_state(pods):
    """The plugin Pods of one node: passed when every one Succeeded, failed when one Failed, else pending."""
    if not pods:
        return _pending('plugin', 'plugin validation did not run: no %s Pod on the Node' % PLUGIN_APP)
    for pod in pods:
        phase = (pod.get('status') or {}).get('phase')
        resource = (pod['metadata'].get('annotations') or {}).get(RESOURCE_ANNOTATION, '?')
        if phase == 'Failed':
            return {'state': 'failed', 'component': 'plugin', 'container': 'plugin-validation',
                    'summary': 'plugin validation failed: the Pod requesting %s failed on the Node' % resource, 'pod': pod['metadata']['name']}
    waiting = [pod for pod in pods if (pod.get('status') or {}).get('phase') != 'Succeeded']
    if not waiting:
        resources = sorted((p['metadata'].get('annotations') or {}).get(RESOURCE_ANNOTATION, '?') for p in pods)
        return {'state': 'passed', 'component': None, 'summary': 'a Pod requesting %s ran vectorAdd' % ', '.join(resources), 'container': None}
    pod = waiting[0]
    resource = (pod['metadata'].get('annotations') or {}).get(RESOURCE_ANNOTATION, '?')
    return dict(_pending('plugin', 'plugin validation did not finish: the Pod requesting %s is %s' % (
        resource, (pod.get('status') or {}).get('phase') or 'not scheduled'), 'plugin-validation'), pod=pod['metadata']['name'])


def node_evidence(node):
    """The Node's side: the validator's deploy label, the GPU resources it advertises and its taints."""
    if node is None:
        return ['no Node object: the kubelet has not registered the node']
    labels = node['metadata'].get('labels') or {}
    status = node.get('status') or {}
    capacity = status.get('capacity') or {}
    allocatable = status.get('allocatable') or {}
    gpus = ['%s capacity %s allocatable %s' % (name, capacity[name], allocatable.get(name, '-'))
            for name in sorted(capacity) if name.startswith(GPU_RESOURCE_PREFIXES)]
    lines = ['Node label %s=%s' % (DEPLOY_LABEL, labels[DEPLOY_LABEL]) if DEPLOY_LABEL in labels else 'Node has no label %s' % DEPLOY_LABEL,
             'Node advertises %s' % ('; '.join(gpus) if gpus else 'no nvidia.com/gpu or nvidia.com/mig-* resource')]
    lines += ['Node taint %s%s:%s' % (t.get('key'), '=' + t['value'] if t.get('value') else '', t.get('effect'))
              for t in (node.get('spec') or {}).get('taints') or []]
    return lines


def result(node, state, component=None, summary='', evidence=()):
    return {'node': node, 'state': state, 'component': component, 'summary': summary, 'evidence': list(evidence)}
