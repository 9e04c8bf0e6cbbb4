# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Per-node GPU validation as the GPU Operator does it, and the result of each node (pure functions).

The objects follow NVIDIA/gpu-operator v26.7.0 (assets/state-operator-validation, TransformValidator in
controllers/object_controls.go, cmd/nvidia-validator): the DaemonSet `nvidia-operator-validator` runs
NVIDIA's validator image on every node labelled nvidia.com/gpu.deploy.operator-validator=true, one init
container per component in the Operator's order (driver, toolkit, cuda, plugin), each writing its
/run/nvidia/validations/<component>-ready file; its Pod is Ready only when all of them passed. The cuda
component runs a vectorAdd Pod pinned to the node; the plugin component checks that the Node advertises a
GPU resource. After that, the validation stage checks what the Operator's default leaves out: the Node
advertises each resource it should with GPUs x replicas (module gpu_resource_capacity), and a Pod
requesting one of each runs vectorAdd on the node (`plugin_pods()`).

module_utils/k8s/validation_pods.py reads a node's Pods into a result on the API host; `report()` joins the
results of every step into one per node: {node, state (passed | failed | skipped), component, summary, evidence}.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import hashlib
import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import policy_status
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import meta
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.validation_pods import (
    DEPLOY_LABEL, PLUGIN_APP, RESOURCE_ANNOTATION, result)
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config, registry
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands import validator as validator_operand

RESULTS_CONFIG_MAP = 'gpu-validation-results'


class ValidationError(GpuOpsError):
    """A validation setting that is not one of its choices."""


# --- the objects ----------------------------------------------------------------------------------

def validator(namespace='gpu-operator', resolved=None):
    """Everything the validation stage applies and needs to know, rendered (and so checked) before anything is applied.

    resolved: the ClusterPolicy of the run (registry.resolution), as the operands are rendered from it: its `validator`
    section is the image here and in the operands' validation init containers; daemonsets (tolerations,
    priorityClassName, labels, ...), mig.strategy, devicePlugin.enabled and devicePlugin.config shape the validation, and
    the GPU nodes' container toolkit settings decided the runtime class.
    """
    resolved = resolved or registry.resolution()
    spec = resolved['spec']
    return {
        'objects': registry.render(resolved, namespace, stage='validation')['present'],
        'image': validator_operand.image_settings(spec['validator']), 'runtime_class': spec['operator']['runtimeClass'],
        'tolerations': spec['daemonsets']['tolerations'], 'mig_strategy': spec['mig']['strategy'],
        'plugin': bool(spec['devicePlugin']['enabled']), 'device_plugin_config': spec['devicePlugin']['config'],
    }


# --- which nodes, which resources -------------------------------------------------------------------

SCOPES = ('cluster', 'inventory')
SANDBOX_VALIDATOR = 'sandbox-validator'  # the deploy label component of the VM workloads' validator (contract.WORKLOAD_COMPONENTS)
STOPPED = 'stopped'  # the state of a record of a node whose stage failed (it was not validated)


def targets(nodes, run_nodes=None, selector=None, mig_strategy='single', device_plugin_config=None, scope='cluster', node_labels=None):
    """The nodes to validate: with scope `cluster`, every Node matching `selector` (default nvidia.com/gpu.present=true)
    and every node of the run; with scope `inventory`, the nodes of the run only (a slice of an AWX sliced job leaves the
    other slices' nodes to them).

    Each is {node, exists, skip (why it is not validated, or ''), resources, computed ({resource: {gpu_count, replicas}} from
    `node_labels` where the Node lacks the labels)}. A node labelled
    nvidia.com/gpu.deploy.operator-validator=false or nvidia.com/gpu.deploy.operands=false is skipped, as the Operator's
    DaemonSet skips it, and so is a VM node (sandbox-validator's label, not operator-validator's).
    device_plugin_config: the ClusterPolicy's devicePlugin.config ({name, default, data}); each node runs the config its
    label nvidia.com/device-plugin.config names, else the default, as config-manager picks it (contract.selected_config).
    node_labels: {Node name: the labels the node labels stage computed for it}; a label the Node does not carry yet is taken
    from there (GFD's, which the stage leaves to GFD's Pods where NFD runs: they may not have published them yet), the
    Node's own win.
    """
    selector = selector if selector is not None else {contract.PRESENT: 'true'}
    spec = device_plugin_config or {}
    available = plugin_config.configs(spec, mig_strategy)
    if scope not in SCOPES:
        raise ValidationError('scope must be one of %s, not %r' % (', '.join(SCOPES), scope))
    by_name = {node['metadata']['name']: node for node in nodes or []}
    chosen = [name for name, node in sorted(by_name.items()) if scope == 'cluster'
              and all(((node['metadata'].get('labels') or {}).get(key)) == value for key, value in selector.items())]
    chosen += sorted(set(run_nodes or []) - set(chosen))
    found = []
    for name in chosen:
        node = by_name.get(name)
        own = ((node or {}).get('metadata') or {}).get('labels') or {}
        computed = (node_labels or {}).get(name) or {}
        labels = dict(computed, **own)
        skip = ''
        # what is deployed on the Node is what it is labelled with (its deploy labels), not what the run computed
        if own.get(DEPLOY_LABEL) == 'false':
            skip = 'the Node is labelled %s=false' % DEPLOY_LABEL
        elif contract.operands_disabled(own):
            skip = 'the Node is labelled %s=false' % contract.OPERANDS
        elif DEPLOY_LABEL not in own and contract.deploy_label(SANDBOX_VALIDATOR) in own:
            # a VM node (sandboxWorkloads): the Operator's validator does not run there, the sandbox validator does
            skip = 'the Node runs VMs (workload %s): the sandbox validator validates it' % own.get(contract.WORKLOAD_CONFIG, 'default')
        resources = contract.gpu_resources(labels, mig_strategy, available.get(
            contract.selected_config(spec, labels.get(contract.DEVICE_PLUGIN_CONFIG)))) if node is not None else []
        found.append({'node': name, 'exists': node is not None, 'skip': skip, 'resources': resources,
                      'computed': dict((resource, _computed_counts(resource, computed, own)) for resource in resources)})
    return found


def _computed_counts(resource, computed, own):
    """{gpu_count, replicas} of `resource` from the computed labels where the Node lacks its own (None otherwise): the
    capacity check takes them as options, else it reads the Node's labels."""
    found = {}
    for option, attribute in (('gpu_count', 'count'), ('replicas', 'replicas')):
        key = contract.resource_label(contract.unshared(resource), attribute)
        found[option] = int(computed[key]) if key in computed and key not in own else None
    return found


def pods_on(pods, nodes):
    """The validation Pods (`pods`: the validator's, the vectorAdd Pods, the Pods requesting a GPU resource) that run on
    `nodes`, as definitions to delete: a run replaces only the Pods of the nodes it validates, never another run's."""
    wanted = set(nodes or [])
    return [{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': pod['metadata']['name'], 'namespace': pod['metadata']['namespace']}}
            for pod in pods or [] if (pod.get('spec') or {}).get('nodeName') in wanted]


def plugin_pod_name(node, resource):
    return '%s-%s' % (PLUGIN_APP, hashlib.sha256(('%s/%s' % (node, resource)).encode('utf-8')).hexdigest()[:10])


def plugin_pods(namespace, rendered, checks):
    """One Pod per (node, resource) that passed its capacity check: vectorAdd on one unit of that resource, pinned to the node.

    The Operator's plugin-workload-validation Pod (validator/manifests), as cmd/nvidia-validator fills it in, except
    restartPolicy Never: a failed vectorAdd ends the Pod (phase Failed) instead of restarting it until the wait ends.
    """
    pods = []
    image_settings = rendered['image']
    for check in checks:
        node, resource = check['node'], check['resource']
        quantity = {resource: '1'}  # a quantity, as the API returns it
        spec = {
            'nodeName': node, 'restartPolicy': 'Never', 'serviceAccountName': validator_operand.OPERAND.account,
            'tolerations': copy.deepcopy(rendered['tolerations']),
            'initContainers': [{'name': 'plugin-validation', 'image': image_settings['reference'], 'imagePullPolicy': image_settings['pull_policy'],
                                'command': ['sh', '-c'], 'args': ['vectorAdd'], 'securityContext': {'allowPrivilegeEscalation': False},
                                'resources': {'limits': quantity, 'requests': dict(quantity)}}],
            'containers': [{'name': PLUGIN_APP, 'image': image_settings['reference'], 'imagePullPolicy': image_settings['pull_policy'],
                            'command': ['sh', '-c'], 'args': ['echo device-plugin workload validation is successful'],
                            'securityContext': {'allowPrivilegeEscalation': False, 'readOnlyRootFilesystem': True}}],
        }
        if rendered['runtime_class']:
            spec['runtimeClassName'] = rendered['runtime_class']
        if image_settings['pull_secrets']:
            spec['imagePullSecrets'] = [{'name': name} for name in image_settings['pull_secrets']]
        metadata = meta(plugin_pod_name(node, resource), namespace, {'app': PLUGIN_APP})
        metadata['annotations'] = {RESOURCE_ANNOTATION: resource}
        pods.append({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': metadata, 'spec': spec})
    return pods


# --- one result per node ----------------------------------------------------------------------------

def report(targets_found, validator_results, capacity_results=(), plugin_results=None, plugin_enabled=True):
    """One result per target node, in the Operator's component order: the first step a node did not pass decides.

    validator_results, plugin_results: {node: result} of module gpu_validation_results (plugin_results None when
    the plugin Pods were not made). capacity_results: the async_status results of the gpu_resource_capacity jobs.
    """
    failed_capacity = {}
    for check in capacity_checks(capacity_results):
        if not check.get('passed'):
            failed_capacity.setdefault(check['node'], []).append(check)
    found = []
    for target in targets_found:
        name = target['node']
        if target['skip']:
            found.append(result(name, 'skipped', None, 'not validated: %s' % target['skip']))
            continue
        if not target['exists']:
            found.append(result(name, 'failed', None, 'no Node object %s: the kubelet has not registered the node' % name))
            continue
        step = (validator_results or {}).get(name) or result(name, 'failed', 'driver', 'driver validation did not run: the validator was not waited for')
        if step['state'] != 'passed' or not plugin_enabled:
            found.append(dict(step, node=name))
            continue
        if name in failed_capacity:
            checks = failed_capacity[name]
            found.append(result(name, 'failed', 'plugin', 'plugin validation failed: ' + '; '.join(c['message'] for c in checks),
                                [c['message'] for c in checks]))
            continue
        step = (plugin_results or {}).get(name)
        if step is None:
            found.append(result(name, 'failed', 'plugin', 'plugin validation did not run: no Pod requested the GPU resources'))
        elif step['state'] == 'passed':
            found.append(result(name, 'passed', None, 'driver, toolkit, cuda and plugin validation passed; ' + step['summary']))
        else:
            found.append(dict(step, node=name))
    return found


def failures(results, node_of_host):
    """What the run fails with, per inventory host: {'hosts': {host: message}, 'outside': message} for the nodes whose
    validation failed (node_of_host maps each inventory host to its Node); 'outside' names the failed GPU Nodes that no
    inventory host is (empty when none)."""
    failed = [item for item in results or [] if item.get('state') == 'failed']
    hosts = {host: _failure_message([item for item in failed if item['node'] == node]) for host, node in node_of_host.items()}
    return {'hosts': {host: message for host, message in hosts.items() if message},
            'outside': _failure_message([item for item in failed if item['node'] not in node_of_host.values()])}


def _failure_message(failed):
    return 'GPU validation failed on ' + '; '.join('%s: %s' % (item['node'], item.get('summary') or '') for item in failed) if failed else ''


def capacity_checks(async_results):
    """[{node, resource, passed, message}] from the async_status results of the gpu_resource_capacity jobs.

    Each result carries, as `item`, the registered job whose `item` is the [target, resource] pair it was started with.
    """
    checks = []
    for entry in async_results or []:
        job = entry.get('item') or {}
        pair = job.get('item') or [{}, None]
        if 'ansible_job_id' not in job:  # a loop item that was skipped started no job
            continue
        passed = bool(entry.get('finished')) and bool(entry.get('registered')) and not entry.get('failed')
        message = entry.get('msg') or ('%s registered' % pair[1] if passed else 'gpu_resource_capacity did not finish')
        checks.append({'node': pair[0]['node'], 'resource': pair[1], 'passed': passed, 'message': message})
    return checks


# --- the records (ConfigMap gpu-validation-results) ----------------------------------------------------------------

def stopped_record(stopped):
    """The record of a node whose stage failed in the run ({node, stage, failure}): it was not validated."""
    summary = 'stopped in %s: %s' % (stopped.get('stage') or 'setup', stopped.get('failure') or '')
    return dict(result(stopped['node'], STOPPED, None, summary), stage=stopped.get('stage') or 'setup', failure=stopped.get('failure') or '')


def records(results, stopped=None, recorded=None, nodes=None):
    """The data to merge into the ConfigMap: {Node name: JSON of its record} for the run's results and stopped nodes (a
    stopped node's record wins), and None (the key goes) for each recorded name that is no Node any more.

    Each run writes only its own nodes' keys, so runs over disjoint nodes (the slices of an AWX sliced job) keep each
    other's records. recorded: the ConfigMap's current data (None when it does not exist); nodes: the Node objects.
    """
    data = {item['node']: item for item in results or []}
    data.update((item['node'], stopped_record(item)) for item in stopped or [])
    names = {node['metadata']['name'] for node in nodes or []}
    written = {name: json.dumps(item, sort_keys=True) for name, item in data.items()}
    written.update((name, None) for name in (recorded or {}) if name not in names and name not in written)
    return written


def recorded_outcome(nodes, data):
    """The ClusterPolicy status decided from every record of the ConfigMap (`data` as the write returned it): the run that
    writes last reports the whole cluster, as the Operator's status does, whichever nodes it validated itself."""
    validation, stopped = [], []
    for name, text in sorted((data or {}).items()):
        try:
            item = json.loads(text)
        except (TypeError, ValueError):
            item = result(name, 'failed', None, 'its result in ConfigMap %s is not JSON' % RESULTS_CONFIG_MAP)
        if item.get('state') == STOPPED:
            stopped.append({'node': name, 'stage': item.get('stage'), 'failure': item.get('failure')})
        else:
            validation.append(dict(item, node=name))
    return policy_status.outcome(nodes, validation, stopped)
