# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The cluster's Nodes as this collection sees them, for the k8s_nodes inventory and event source plugins.

Pure: which Nodes are GPU nodes, which this collection has not examined yet, the inventory they make (groups by
OS image, kernel and container runtime) and what changed between two looks at a Node (`observe`). Reading: one
list of the Nodes, and a watch of their changes that `follow` turns into events, listing again when the watch
expires or the API fails for a while.

A Node is examined once the node labels stage labelled it: nfd_labels then records what it set in the annotation
gpuops.io/nfd-labels, as {} where it set nothing (labels/node_api.py).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import logging
import re
import time

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import DEPLOY, MIG_CONFIG, MIG_CONFIG_APPLIED, MIG_CONFIG_STATE, PRESENT
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels.node_api import OWNED_ANNOTATION, owned_labels

# The NFD labels that make a GPU node for the Operator, any of them "true" (gpu-operator v26.7.0,
# controllers/state_manager.go hasGPULabels; /work/notes/operator-facts/operands.yaml node_labels).
NFD_GPU_LABELS = ('feature.node.kubernetes.io/pci-10de.present', 'feature.node.kubernetes.io/pci-0302_10de.present',
                  'feature.node.kubernetes.io/pci-0300_10de.present')
API_GROUP = 'kube_api'
GPU_GROUP = 'gpu_nodes'
JOINED, READY, LABELS, MIG = 'joined', 'ready', 'labels', 'mig'
NODES = k8s_client.ObjectRef('Node', '', 'nodes')
WATCH_SECONDS = 60  # the server ends each watch after this long; the next starts where it stopped
RETRY_DELAYS = (1, 2, 5, 10, 30)  # seconds before listing again after the API failed, the last one repeated
FATAL_STATUSES = (401, 403)  # credentials the API refuses: retrying cannot help
LOG = logging.getLogger(__name__)


class WatchExpired(k8s_client.ApiError):
    """The watch's resourceVersion is too old (410 Gone): list again."""


def examined(node):
    """Whether this collection has examined the Node (its node labels stage labelled it)."""
    return OWNED_ANNOTATION in ((node.get('metadata') or {}).get('annotations') or {})


def nvidia(node):
    """Labelled NVIDIA: by NFD (any of the Operator's GPU labels), by this collection (gpu.present=true), or recorded so
    by this collection although someone removed the label."""
    metadata = node.get('metadata') or {}
    labels = metadata.get('labels') or {}
    return (any(labels.get(key) == 'true' for key in NFD_GPU_LABELS + (PRESENT,))
            or owned_labels(metadata.get('annotations')).get(PRESENT) == 'true')


def selected(node):
    """A node the playbooks are for: labelled NVIDIA, or not examined yet (examined once, a node without a GPU is left out)."""
    return nvidia(node) or not examined(node)


def summary(node):
    """What the inventory and the events say of a Node: name, address (InternalIP), nodeInfo, examined, nvidia, labels."""
    metadata = node.get('metadata') or {}
    status = node.get('status') or {}
    info = status.get('nodeInfo') or {}
    runtime, _sep, version = (info.get('containerRuntimeVersion') or '').partition('://')
    addresses = [item.get('address') for item in status.get('addresses') or [] if item.get('type') == 'InternalIP']
    return dict(
        name=metadata.get('name'),
        address=addresses[0] if addresses else None,
        os_image=info.get('osImage') or None,
        kernel_version=info.get('kernelVersion') or None,
        container_runtime=runtime or None,
        container_runtime_version=version or None,
        examined=examined(node),
        nvidia=nvidia(node),
        labels=dict(metadata.get('labels') or {}),
    )


def group_name(prefix, value):
    """A group name Ansible accepts: prefix_value with every run of other characters than [a-z0-9] made one '_'."""
    return '%s_%s' % (prefix, re.sub('[^a-z0-9]+', '_', value.lower()).strip('_'))


def groups_of(node_summary):
    """The groups a GPU node goes in besides gpu_nodes: os_<OS image>, kernel_<kernel>, runtime_<container runtime>."""
    return [group_name(prefix, node_summary[key]) for prefix, key in
            (('os', 'os_image'), ('kernel', 'kernel_version'), ('runtime', 'container_runtime')) if node_summary[key]]


def inventory(nodes, api_host='localhost'):
    """{hosts: {name: host variables}, groups: {group: [hosts]}, children: {gpu_nodes: [groups]}} from the Nodes.

    The selected Nodes are the hosts of gpu_nodes, each with ansible_host (its InternalIP, when it has one),
    gpu_node_labels_node_name and k8s_node (its summary); api_host is the host of kube_api, reached locally when it
    is localhost.
    """
    hosts, groups = {}, {API_GROUP: [api_host], GPU_GROUP: []}
    if api_host == 'localhost':
        hosts[api_host] = dict(ansible_connection='local', ansible_python_interpreter='{{ ansible_playbook_python }}')
    children = set()
    for node in sorted((node for node in nodes if selected(node)), key=lambda node: node['metadata']['name']):
        found = summary(node)
        variables = dict(gpu_node_labels_node_name=found['name'], k8s_node=found)
        if found['address']:
            variables['ansible_host'] = found['address']
        hosts[found['name']] = variables
        groups[GPU_GROUP].append(found['name'])
        for group in groups_of(found):
            groups.setdefault(group, []).append(found['name'])
            children.add(group)
    return dict(hosts=hosts, groups=groups, children={GPU_GROUP: sorted(children)})


# ---- events ------------------------------------------------------------------------------------------------

def ready(node):
    conditions = (node.get('status') or {}).get('conditions') or []
    return any(item.get('type') == 'Ready' and item.get('status') == 'True' for item in conditions)


def drift(node):
    """(lost, changed): the labels this collection recorded setting that the Node no longer has, or has with another
    value. A deploy label someone set to another non-empty value is theirs (the Operator keeps it too) and no drift."""
    metadata = node.get('metadata') or {}
    labels = metadata.get('labels') or {}
    lost, changed = [], []
    for key, value in sorted(owned_labels(metadata.get('annotations')).items()):
        if key not in labels:
            lost.append(key)
        elif value is not None and labels[key] != value and not (key.startswith(DEPLOY) and labels[key]):
            changed.append(key)
    return lost, changed


def observe(before, node):
    """(state, reasons, details) of one look at a Node; `before` is the state of the last look (None: the first).

    reasons, for a selected Node only: joined (not examined yet, at the first look or since someone removed the
    annotation), ready (Ready again after a reboot: the boot ID changed since it was last Ready; without boot IDs,
    Ready after not Ready), labels (labels this collection set were lost or changed, unlike at the last look), mig (the
    MIG manager applied a layout since the last look: nvidia.com/mig.config.state became success, so the GPUs' MIG
    labels are to be computed again, as GFD's periodic refresh does in the Operator).
    details: labels_lost, labels_changed, boot_id, mig_config (the layout the Node asks for).
    """
    boot_id = ((node.get('status') or {}).get('nodeInfo') or {}).get('bootID') or None
    labels = (node.get('metadata') or {}).get('labels') or {}
    is_ready = ready(node)
    lost, changed = drift(node)
    state = dict(examined=examined(node), ready=is_ready, drift=[lost, changed], mig_state=labels.get(MIG_CONFIG_STATE),
                 ready_boot_id=boot_id if is_ready else (before or {}).get('ready_boot_id'),
                 ever_ready=is_ready or bool((before or {}).get('ever_ready')))
    reasons = []
    if selected(node):
        if not state['examined'] and (before is None or before['examined']):
            reasons.append(JOINED)
        if is_ready and before is not None and before['ever_ready']:
            if boot_id and before['ready_boot_id']:
                rebooted = boot_id != before['ready_boot_id']
            else:
                rebooted = not before['ready']
            if rebooted:
                reasons.append(READY)
        if (lost or changed) and (before is None or before['drift'] != [lost, changed]):
            reasons.append(LABELS)
        # Not at the first look: a layout applied before the source watched is one the last run may have labelled.
        if state['mig_state'] == MIG_CONFIG_APPLIED and before is not None and before['mig_state'] != MIG_CONFIG_APPLIED:
            reasons.append(MIG)
    return state, reasons, dict(labels_lost=lost, labels_changed=changed, boot_id=boot_id, mig_config=labels.get(MIG_CONFIG))


def event(node, reasons, details, limit_with):
    """The event for a Node with reasons to run the playbooks: meta.hosts limits the run to the node and limit_with."""
    return dict(details, node=node['metadata']['name'], reasons=reasons,
                meta=dict(hosts=[node['metadata']['name']] + [host for host in limit_with if host != node['metadata']['name']]))


class Observer(object):
    """The states of the Nodes seen so far; turns a listing or a watch event into events."""

    def __init__(self, limit_with):
        self.limit_with = list(limit_with)
        self.states = {}

    def look(self, node):
        name = node['metadata']['name']
        self.states[name], reasons, details = observe(self.states.get(name), node)
        if not reasons:
            return None
        LOG.info('Node %s: %s %s', name, ', '.join(reasons), details)
        return event(node, reasons, details, self.limit_with)

    def listed(self, nodes):
        """Events of a full listing; Nodes gone since the last one are forgotten."""
        names = set(node['metadata']['name'] for node in nodes)
        for name in set(self.states) - names:
            del self.states[name]
        return [found for found in (self.look(node) for node in sorted(nodes, key=lambda node: node['metadata']['name'])) if found]

    def watched(self, kind, node):
        if kind == 'DELETED':
            self.states.pop(node['metadata']['name'], None)
            return None
        return self.look(node)


# ---- the API -----------------------------------------------------------------------------------------------

def read_nodes(api):
    """(Nodes as decoded JSON, resourceVersion of the list), in one list call (retried by the Api)."""
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel  # needed only where the API is called
    data = api.read('list', NODES, CoreV1Api(api.client).list_node)
    return data.get('items') or [], (data.get('metadata') or {}).get('resourceVersion')


def watch_nodes(api, resource_version, seconds=WATCH_SECONDS):
    """(type, Node) for each change after resource_version until the server ends the watch; BOOKMARK events carry
    only the resourceVersion. Raises WatchExpired when resource_version is too old (410)."""
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel
    from kubernetes.watch.watch import iter_resp_lines  # pylint: disable=import-outside-toplevel
    watcher = k8s_client.Api(api.client, timeout=(api.timeout[0], seconds + 10))  # the server closes the stream first
    response = watcher.call('watch', NODES, CoreV1Api(api.client).list_node, watch=True, resource_version=resource_version,
                            timeout_seconds=seconds, allow_watch_bookmarks=True, _preload_content=False)
    try:
        for line in iter_resp_lines(response):
            change = k8s_client.json_object(line, 'watch', NODES, api.client.configuration.host)
            if change.get('type') == 'ERROR':
                status = change.get('object') or {}
                if status.get('code') == 410:
                    raise WatchExpired('the watch of the Nodes expired: %s' % status.get('message'), 410)
                raise k8s_client.ApiError('cannot watch the Nodes: API answered %s %s' % (status.get('code'), status.get('message')),
                                          status.get('code'))
            yield change.get('type'), change.get('object') or {}
    finally:
        response.release_conn()


def follow(api, observer, emit, stopped, sleep=time.sleep):
    """List the Nodes, then watch them, emitting the observer's events, until stopped() is true.

    A watch that expired lists again; after an API or network fault (a stream cut, an apiserver restarting) the Nodes
    are listed again after RETRY_DELAYS, for as long as it takes; refused credentials (401, 403) and other errors raise.
    """
    failures = 0
    while not stopped():
        try:
            nodes, version = read_nodes(api)
            LOG.info('listed %d Nodes; watching them from resourceVersion %s', len(nodes), version)
            for found in observer.listed(nodes):
                emit(found)
            failures = 0
            while not stopped():
                for kind, node in watch_nodes(api, version):
                    version = (node.get('metadata') or {}).get('resourceVersion') or version
                    found = None if kind == 'BOOKMARK' else observer.watched(kind, node)
                    if found:
                        emit(found)
                    if stopped():
                        return
        except WatchExpired:
            continue
        except Exception as exc:  # pylint: disable=broad-exception-caught  # only API and network faults are retried
            refused = isinstance(exc, k8s_client.ApiError) and exc.status in FATAL_STATUSES
            if refused or not (isinstance(exc, k8s_client.ApiError) or k8s_client.classify(exc)):
                raise
            delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS) - 1)]
            LOG.warning('listing the Nodes again in %ss: %s', delay, exc)
            sleep(delay)
            failures += 1
