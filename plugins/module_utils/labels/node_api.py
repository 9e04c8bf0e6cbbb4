# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Applying a computed label set to a Node: ownership, the Operator's rules for deploy labels, one merge patch.

`reconcile()` is pure (current labels + what we own + desired set -> plan); `apply()` reads the
Node, reconciles and sends one JSON merge patch guarded by the resourceVersion it read, through
k8s_client.Api (retries, re-read on conflict, clear errors). `apply_many()` does the same for many
Nodes with one client and one list of the Nodes (`plan_nodes()`, pure, plans each from that list):
a Node that cannot be labelled is reported in its own result, the others go on.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.rules import DEPLOY, MIG_CONFIG, PRESENT, workload_labels

# The Node annotation recording the labels this module set and the value it set each to (a JSON
# object; a JSON list of keys from earlier releases still reads), so that stale ones and
# state=absent remove exactly ours, and a value someone changed since is theirs. Every Node the
# module labelled carries it, as {} when it set no label there (a node without a GPU whose NFD
# labels are NFD's): it marks a Node this collection has examined (the k8s_nodes plugins read it).
OWNED_ANNOTATION = 'gpuops.io/nfd-labels'


class NodeLabelsError(GpuOpsError):
    """Some Nodes could not be labelled."""


def owned_labels(annotations):
    """{key: the value we set} from the ownership annotation ({} when absent or unreadable; value None when the
    annotation is an earlier release's list of keys). What a reader takes of a damaged one (see damage())."""
    try:
        recorded = json.loads((annotations or {}).get(OWNED_ANNOTATION) or '{}')
    except ValueError:
        return {}
    if isinstance(recorded, list):
        return dict((key, None) for key in recorded if isinstance(key, str))
    if isinstance(recorded, dict):
        return dict((key, value) for key, value in recorded.items() if isinstance(key, str) and isinstance(value, str))
    return {}


def damage(annotations):
    """What is wrong with the ownership annotation, or None when it is absent or as this module writes it."""
    text = (annotations or {}).get(OWNED_ANNOTATION)
    if text is None:
        return None
    try:
        recorded = json.loads(text)
    except ValueError as exc:
        return 'it is not JSON (%s)' % exc
    if isinstance(recorded, list) and all(isinstance(key, str) for key in recorded):
        return None
    if isinstance(recorded, dict) and all(isinstance(value, str) for value in recorded.values()):
        return None
    return 'it is not a JSON object of label values (nor a list of label keys)'


def checked_owned_labels(node_name, annotations):
    """owned_labels() for a change to the Node: a damaged record means nothing is touched (NodeLabelsError).

    Without the record, absent would remove none of our labels and drop the record, and present would take only
    the labels it sets now: every other label we set would stay on the Node for good.
    """
    problem = damage(annotations)
    if problem:
        raise NodeLabelsError('Node %s: annotation %s is damaged: %s: %r. It records the labels this collection set there, so '
                              'nothing is changed on this Node. Restore it, or remove it (kubectl annotate node %s %s-): '
                              'state=present then records the labels it sets anew, and the labels recorded before stay'
                              % (node_name, OWNED_ANNOTATION, problem, annotations[OWNED_ANNOTATION][:200], node_name, OWNED_ANNOTATION))
    return owned_labels(annotations)


def reconcile(current, owned, desired, state='present', sandbox=None):
    """Plan the label change: {state, labels (after), desired (the labels wanted on the Node: `desired` as the workload
    and nvidia.com/gpu.deploy.operands make it; {} for absent), owned (keys, after), owned_values ({key: value}, after),
    added, updated, removed, workload, warning}; `owned` is owned_labels() of the Node.

    The deploy labels desired are a container node's; with `sandbox` (the ClusterPolicy's sandboxWorkloads) enabled, those
    of the workload the Node's nvidia.com/gpu.workload.config names (rules.workload_labels) instead, and the state labels
    of ours that workload does not have are removed; `warning` says why a label value was not taken.

    present: set `desired`, except that a deploy label desired as 'true' keeps a non-empty value already on the Node
    (pre-installed, paused-for-driver-upgrade, false: the Operator honours it) and is no longer counted as ours,
    unless that value is the one we set; nvidia.com/mig.config (a default, as the Operator sets it) likewise; a node that
    had gpu.present=true and no longer has a GPU gets
    gpu.present=false and loses its deploy labels; a Node labelled nvidia.com/gpu.deploy.operands=false (on the Node or in
    `desired`) gets no deploy label and loses ours, as the Operator takes them off there; owned labels no longer desired
    are removed. absent: remove the owned labels. A label whose value someone changed since we set it is theirs: neither
    removed nor counted as ours.
    """
    current = dict(current or {})
    after = dict(current)
    owned = dict(owned or {})

    def still_ours(key):
        return key in owned and owned[key] in (None, current.get(key))

    new_owned = {}
    workload, warning = contract.workload_config(current, sandbox)
    if state == 'absent':
        desired = {}
        for key in owned:
            if still_ours(key):
                after.pop(key, None)
    else:
        desired, warning = workload_labels(desired, current, sandbox)
        if PRESENT not in desired and current.get(PRESENT) == 'true':
            desired[PRESENT] = 'false'
            for key in current:
                if key.startswith(DEPLOY):
                    after.pop(key)
        if contract.operands_disabled(current) or contract.operands_disabled(desired):
            desired = dict((key, value) for key, value in desired.items() if not contract.is_state_label(key))
        for key, value in desired.items():
            found = current.get(key)
            defaulted = (key.startswith(DEPLOY) and value == 'true') or key == MIG_CONFIG
            if defaulted and found not in (None, '', value) and owned.get(key) != found:
                # Kept as found; whoever set that value owns the label from now on.
                continue
            after[key] = value
            new_owned[key] = value
        for key in set(owned) - set(desired):
            if still_ours(key):
                after.pop(key, None)
    return dict(
        state=state,
        labels=after,
        desired=desired,
        owned=sorted(new_owned),
        owned_values=new_owned,
        added=sorted(key for key in after if key not in current),
        updated=sorted(key for key in after if key in current and after[key] != current[key]),
        removed=sorted(key for key in current if key not in after),
        workload=workload,
        warning=warning,
    )


def merge_patch(annotations, plan, resource_version):
    """The JSON merge patch taking the Node from its current labels/annotation to the plan; None when nothing changes.

    annotations are the Node's as read. With state=present the annotation is kept (also as {}), with absent removed.
    """
    labels = dict((key, plan['labels'].get(key)) for key in plan['added'] + plan['updated'] + plan['removed'])
    recorded = OWNED_ANNOTATION in (annotations or {})
    keep = plan['state'] == 'present'
    changes = {}
    if plan['owned_values'] != owned_labels(annotations) or keep != recorded:
        changes[OWNED_ANNOTATION] = json.dumps(plan['owned_values'], sort_keys=True, separators=(',', ':')) if keep else None
    if not labels and not changes:
        return None
    metadata = {'resourceVersion': resource_version}
    if labels:
        metadata['labels'] = labels
    if changes:
        metadata['annotations'] = changes
    return {'metadata': metadata}


def node_ref(node_name):
    return k8s_client.ObjectRef('Node', node_name, 'nodes')


def read_node(api, node_name):
    """The Node as decoded JSON (k8s_client.Api.read)."""
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel  # needed only where the API is called
    return api.read('get', node_ref(node_name), CoreV1Api(api.client).read_node, node_name)


def apply(api, node_name, desired, state='present', check_mode=False, sandbox=None):
    """Read the Node, reconcile and patch it (k8s_client.Api); returns (plan, before_labels, changed).

    The patch carries the resourceVersion read: when the Node changed in between (409 Conflict),
    it is read and reconciled again, so labels set by others in the meantime are kept.
    """
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel
    core = CoreV1Api(api.client)

    def attempt():
        metadata = read_node(api, node_name)['metadata']
        current = dict(metadata.get('labels') or {})
        plan = reconcile(current, checked_owned_labels(node_name, metadata.get('annotations')), desired, state, sandbox)
        patch = merge_patch(metadata.get('annotations'), plan, metadata.get('resourceVersion'))
        if patch is None:
            return (plan, current), None
        # The answer is not decoded, as in read_node.
        return (plan, current), lambda: api.call('patch', node_ref(node_name), core.patch_node, node_name, patch,
                                                 _content_type='application/merge-patch+json', _preload_content=False)

    (plan, current), changed = api.read_modify_write(attempt, check_mode)
    return plan, current, changed


def node_metadata(node):
    """What planning needs of a Node object: its labels, annotations and resourceVersion."""
    metadata = node.get('metadata') or {}
    return dict(labels=dict(metadata.get('labels') or {}), annotations=dict(metadata.get('annotations') or {}),
                resource_version=metadata.get('resourceVersion'))


def plan_node(name, metadata, desired, state='present', sandbox=None):
    """(plan, patch) for Node `name` from node_metadata(): the reconcile() plan and its merge patch (None: nothing to
    write); NodeLabelsError for a damaged ownership annotation."""
    plan = reconcile(metadata['labels'], checked_owned_labels(name, metadata['annotations']), desired, state, sandbox)
    return plan, merge_patch(metadata['annotations'], plan, metadata['resource_version'])


def missing_node_message(node_name):
    return 'cannot label Node %s: the API lists no Node of that name (is the node registered, and is its Node name %s?)' % (
        node_name, node_name)


def plan_nodes(listed, requested, state='present', sandbox=None):
    """Plan every requested Node from one list of the Nodes; pure.

    listed: {name: node_metadata()}; requested: [(name, desired labels)]. Returns {name: {current, plan, patch,
    error}}: error is the message for a Node the list does not hold or whose ownership annotation is damaged (plan
    and patch are then None).
    """
    planned = {}
    for name, desired in requested:
        if name not in listed:
            planned[name] = dict(current=None, plan=None, patch=None, error=missing_node_message(name))
            continue
        try:
            plan, patch = plan_node(name, listed[name], desired, state, sandbox)
        except NodeLabelsError as exc:
            planned[name] = dict(current=listed[name]['labels'], plan=None, patch=None, error=str(exc))
            continue
        planned[name] = dict(current=listed[name]['labels'], plan=plan, patch=patch, error=None)
    return planned


def list_nodes(api):
    """{name: node_metadata()} of every Node, read page by page (k8s_client.Api.list_items)."""
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel
    ref = k8s_client.ObjectRef('Node', '(all)', 'nodes')
    listed = {}
    for node in api.list_items(ref, CoreV1Api(api.client).list_node):
        name = (node.get('metadata') or {}).get('name')
        if not isinstance(name, str):
            raise k8s_client.ApiError('cannot list %s: the API listed a Node without metadata.name: %r' % (ref, str(node)[:200]))
        listed[name] = node_metadata(node)
    return listed


def _node_attempt(api, core, name, first, desired, state, sandbox):
    """read_modify_write's step for one Node: the plan made from the list first, the Node read again on a retry."""
    rounds = []

    def attempt():
        if rounds:
            metadata = node_metadata(read_node(api, name))
            current = metadata['labels']
            plan, patch = plan_node(name, metadata, desired, state, sandbox)
        else:
            current, plan, patch = first['current'], first['plan'], first['patch']
        rounds.append(1)
        if patch is None:
            return (plan, current), None
        return (plan, current), lambda: api.call('patch', node_ref(name), core.patch_node, name, patch,
                                                 _content_type='application/merge-patch+json', _preload_content=False)
    return attempt


def apply_many(api, requested, state='present', check_mode=False, sandbox=None):
    """Label many Nodes: one list, then per Node one merge patch guarded by the resourceVersion listed.

    A 409 Conflict re-reads that Node and plans it again (k8s_client.Api.read_modify_write). Returns {name: {plan,
    before, changed, error}}: error is the message of a Node that could not be labelled (missing, refused, ...);
    plan and before are then what was known, or None.
    """
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel
    core = CoreV1Api(api.client)
    desired = dict(requested)
    planned = plan_nodes(list_nodes(api), requested, state, sandbox)
    results = {}
    for name, _labels in requested:
        first = planned[name]
        if first['error']:
            results[name] = dict(plan=None, before=None, changed=False, error=first['error'])
            continue
        try:
            (plan, current), changed = api.read_modify_write(_node_attempt(api, core, name, first, desired[name], state, sandbox), check_mode)
        except (k8s_client.ApiError, NodeLabelsError) as exc:  # NodeLabelsError: damaged since the list (read again on a 409)
            results[name] = dict(plan=first['plan'], before=first['current'], changed=False, error=str(exc))
            continue
        results[name] = dict(plan=plan, before=current, changed=changed, error=None)
    return results
