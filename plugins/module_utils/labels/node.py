# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The nfd_labels module's work: discover the node, compute its labels, write NFD's feature file, apply them to the Node
(or the labels computed on many nodes to their Nodes)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import platform

from ansible.module_utils.common.text.converters import to_bytes
from ansible.module_utils.facts.system.distribution import Distribution

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract, files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels import node_api as nfd_node_labels
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels import rules as nfd_label_rules


def argument_spec():
    """The module's options."""
    spec = dict(
        node_name=dict(type='str'),
        apply=dict(type='bool', default=True),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        labels=dict(type='dict'),
        nodes=dict(type='list', elements='dict', options=dict(
            name=dict(type='str', required=True),
            labels=dict(type='dict', default={}),
        )),
        continue_on_error=dict(type='bool', default=False),
        os_release_path=dict(type='path', default='/etc/os-release'),
        mig_strategy=dict(type='str', default='none', choices=list(nfd_label_rules.MIG_STRATEGIES)),
        sharing=dict(type='dict', options=dict(
            strategy=dict(type='str', default='none', choices=list(nfd_label_rules.SHARING_STRATEGIES)),
            replicas=dict(type='int', default=1),
            rename_by_default=dict(type='bool', default=False),
        )),
        deploy=dict(type='dict'),
        sandbox_workloads=dict(type='dict', options=dict(
            enabled=dict(type='bool', default=False),
            defaultWorkload=dict(type='str', default=contract.CONTAINER, choices=list(contract.WORKLOADS)),
            mode=dict(type='str', default=contract.KUBEVIRT, choices=list(contract.SANDBOX_MODES)),
        )),
        driver_record_file=dict(type='path', default=driver_state.RECORD_FILE),
        extra_labels=dict(type='dict'),
        mig_config=dict(type='str', default=''),
        features_d=dict(type='path'),
    )
    spec.update(gpu_discovery.DISCOVERY_ARG_SPEC)
    spec.update(k8s_client.AUTH_ARG_SPEC)
    return spec


def discover(module):
    params = module.params
    binary = gpu_discovery.find_nvidia_smi(params['nvidia_smi'], module.get_bin_path)
    return gpu_discovery.gather(gpu_discovery.runner(module), params['sysfs_root'], params['procfs_root'], params['os_release_path'], binary,
                                configured=bool(params['nvidia_smi']))


def driver_label(params, facts):
    """nvidia.com/gpu.deploy.driver for a GPU node: pre-installed, else true (the driver stage deploys it)."""
    record = driver_state.load_record(params['driver_record_file'])
    source = driver_state.driver_source(facts['proc_driver_version'] is not None, record)
    return 'pre-installed' if source == 'pre-installed' else 'true'


def label_value(value):
    """YAML gives true/false as booleans; labels spell them lower case."""
    return ('true' if value else 'false') if isinstance(value, bool) else str(value)


def given_labels(labels):
    for key, value in labels.items():
        error = nfd_label_rules.label_key_error(key) or (None if isinstance(value, str) and nfd_label_rules.valid_value(value) else
                                                         'value %r is not a valid label value' % (value,))
        if error:
            raise nfd_label_rules.LabelError('labels: %s: %s' % (key, error))
    return dict(labels)


def sync_features_file(module, path, labels, diff):
    """Write or remove the NFD feature file; True when it changed (or would)."""
    wanted = nfd_label_rules.local_feature_text(labels) if module.params['state'] == 'present' else None
    before = files.read_bytes(path)
    after = to_bytes(wanted) if wanted is not None else None
    if before == after:
        return False
    diff.append(files.diff_entry(path, before, after))
    # Check mode fails where the write would (a missing directory, a read-only file).
    files.check_writable(path)
    if not module.check_mode:
        if after is None:
            files.remove(module, path)
        else:
            files.write_atomic(module, path, after, mode=0o644)
    return True


def host_facts(module):
    """The node's facts a play reports (named and valued as the setup module gives them), so that it need not gather them."""
    facts = dict(kernel=platform.release(), nodename=platform.node())
    distribution = Distribution(module).get_distribution_facts()
    facts.update((key, distribution.get(key)) for key in ('distribution', 'distribution_version', 'distribution_major_version', 'os_family'))
    return facts


def empty_result(params):
    """Every RETURN key, before anything is known."""
    return dict(changed=False, labels={}, added=[], updated=[], removed=[], workload=None, node_name=params['node_name'], discovery=None,
                gpu_present=None, features_d=None, nodes={}, failed_nodes=[])


def node_diff(node_name, before, after):
    return dict(before_header='Node %s labels' % node_name, after_header='Node %s labels' % node_name, before=before, after=after)


def apply_many(module, result):
    """Apply the labels computed on many nodes to their Nodes: one client, one list, a patch per Node that changes.

    A Node that cannot be labelled is named in failed_nodes with its message in nodes; the module fails at the end
    unless continue_on_error.
    """
    params = module.params
    requested = [(entry['name'], given_labels(entry['labels']) if params['state'] == 'present' else {}) for entry in params['nodes']]
    names = [name for name, _labels in requested]
    duplicates = sorted(set(name for name in names if names.count(name) > 1))
    if duplicates:
        raise nfd_label_rules.LabelError('nodes: each Node once; given more than once: %s' % ', '.join(duplicates))
    diff = []
    applied = nfd_node_labels.apply_many(k8s_client.connect(module), requested, params['state'], module.check_mode, params['sandbox_workloads'])
    for name, _labels in requested:
        outcome = applied[name]
        plan = outcome['plan']
        entry = dict(changed=outcome['changed'], labels=plan['desired'] if plan else dict(requested)[name], added=plan['added'] if plan else [],
                     updated=plan['updated'] if plan else [], removed=plan['removed'] if plan else [], failed=outcome['error'] is not None,
                     workload=plan['workload'] if plan else None)
        if plan and plan['warning']:
            module.warn('Node %s: %s' % (name, plan['warning']))
        if outcome['error']:
            entry['msg'] = outcome['error']
            result['failed_nodes'].append(name)
        elif outcome['changed']:
            diff.append(node_diff(name, outcome['before'], plan['labels']))
            if module._diff:
                entry['diff'] = diff[-1]
        result['nodes'][name] = entry
    result['changed'] = any(entry['changed'] for entry in result['nodes'].values())
    if module._diff:
        result['diff'] = diff
    if result['failed_nodes'] and not params['continue_on_error']:
        raise nfd_node_labels.NodeLabelsError('cannot label %d of %d Nodes: %s' % (
            len(result['failed_nodes']), len(requested), '; '.join(result['nodes'][name]['msg'] for name in result['failed_nodes'])))


def run(module, result):
    """Compute, write and apply the labels, filling `result` as it goes (so a failure still returns what was found)."""
    params = module.params
    if params['nodes'] is not None:
        apply_many(module, result)
        return
    diff = []
    if params['labels'] is not None:
        result['labels'] = given_labels(params['labels'])
    elif params['state'] == 'present':
        facts = discover(module)
        missing = gpu_discovery.unlisted_message(facts['unlisted'], facts['gpus'])
        if missing:
            # gpu.count and the rest would describe only the GPUs that work: nothing is labelled rather than that.
            result['discovery'] = facts
            raise nfd_label_rules.LabelError('the labels are not computed: ' + missing)
        deploy = dict((k, label_value(v)) for k, v in (params['deploy'] or {}).items())
        deploy.setdefault('driver', driver_label(params, facts))
        labels, warnings = nfd_label_rules.compute_labels(
            facts, params['mig_strategy'], params['sharing'], deploy, {k: label_value(v) for k, v in (params['extra_labels'] or {}).items()},
            params['mig_config'], driver_state.loaded_modules(params['procfs_root']))
        for warning in warnings + ([facts['disagreement']] if facts['disagreement'] else []):
            module.warn(warning)
        result.update(labels=labels, discovery=facts, gpu_present=nfd_label_rules.gpu_present(facts), ansible_facts=host_facts(module))
    if params['features_d'] and params['labels'] is None:
        result['features_d'] = params['features_d']
        result['changed'] = sync_features_file(module, params['features_d'], result['labels'], diff)
    if params['apply']:
        plan, before, changed = nfd_node_labels.apply(k8s_client.connect(module), params['node_name'], result['labels'],
                                                      params['state'], module.check_mode, params['sandbox_workloads'])
        result.update(labels=plan['desired'], added=plan['added'], updated=plan['updated'], removed=plan['removed'], workload=plan['workload'])
        if plan['warning']:
            module.warn(plan['warning'])
        result['changed'] = result['changed'] or changed
        diff.insert(0, node_diff(params['node_name'], before, plan['labels']))
    if module._diff:
        result['diff'] = diff
