# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Waiting for the validation Pods of many nodes at once, each with its own time limit, and gathering their evidence.

`wait()` polls the Pods of every node together (one list call per round) until each node passed or its
time ran out, then reads, for the nodes that did not pass, what shows why: the Pod's status and events,
the log tail of the container that did not pass, the cuda component's vectorAdd Pod, and the Node. The
reading of each Pod into a state is validation.py's (pure); this module only calls the API.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import validation_pods as validation

KINDS = ('validator', 'plugin')


def _core(api):
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel  # needed only where the API is called
    return CoreV1Api(api.client)


def _list(api, what, method, *args, **kwargs):
    """The items of a list call, as decoded JSON (raw: the client's models reject objects that lack fields they require)."""
    return api.read('list', k8s_client.ObjectRef(what, '', what.lower() + 's', namespace=args[0] if args else None), method,
                    *args, **kwargs).get('items') or []


def list_pods(api, namespace, kind):
    apps = (validation.VALIDATOR, validation.CUDA_APP) if kind == 'validator' else (validation.PLUGIN_APP,)
    return _list(api, 'Pod', _core(api).list_namespaced_pod, namespace, label_selector='app in (%s)' % ', '.join(apps))


def _newest(pods):
    """The newest Pod that is not being deleted (a re-run's Pod, not the one it replaced); None when there is none."""
    alive = [pod for pod in pods if not pod['metadata'].get('deletionTimestamp')]
    return max(alive, key=lambda pod: pod['metadata'].get('creationTimestamp') or '') if alive else None


def by_node(pods, app):
    found = {}
    for pod in pods:
        if (pod['metadata'].get('labels') or {}).get('app') == app:
            found.setdefault((pod.get('spec') or {}).get('nodeName'), []).append(pod)
    return found


def states(pods, nodes, kind):
    """{node: state} of each node from its Pods (validation.validator_state / plugin_state)."""
    if kind == 'validator':
        validators = by_node(pods, validation.VALIDATOR)
        return {node: validation.validator_state(_newest(validators.get(node, []))) for node in nodes}
    plugin = by_node(pods, validation.PLUGIN_APP)
    return {node: validation.plugin_state([pod for pod in plugin.get(node, []) if not pod['metadata'].get('deletionTimestamp')])
            for node in nodes}


def read_log(api, namespace, pod, container, lines):
    """The log tail of one container; the evidence says why when there is none."""
    ref = k8s_client.ObjectRef('Pod', pod, 'pods', namespace=namespace, subresource='log')
    try:
        return api.call('get', ref, _core(api).read_namespaced_pod_log, pod, namespace, container=container, tail_lines=lines), None
    except k8s_client.ApiError as exc:
        if exc.status != 400:
            return '', 'no log of container %s: %s' % (container, exc)
        # 400: the container waits to start again; its last run has the log that says why.
        try:
            return api.call('get', ref, _core(api).read_namespaced_pod_log, pod, namespace, container=container, tail_lines=lines,
                            previous=True), None
        except k8s_client.ApiError as again:
            return '', 'no log of container %s: %s' % (container, again)


def evidence(api, namespace, kind, node_name, state, pods, events, nodes, log_lines):
    """What shows why a node did not pass: its Pods (status, events, log tail) and its Node."""
    lines = []
    if kind == 'validator':
        pod = _newest(by_node(pods, validation.VALIDATOR).get(node_name, []))
        shown = [(pod, state.get('container'))] if pod else []
        if state.get('component') == 'cuda':
            cuda = _newest(by_node(pods, validation.CUDA_APP).get(node_name, []))
            shown += [(cuda, 'cuda-validation')] if cuda else []
            lines += [] if cuda else ['no %s Pod on the Node: the cuda component did not create its vectorAdd Pod' % validation.CUDA_APP]
    else:
        mine = [pod for pod in by_node(pods, validation.PLUGIN_APP).get(node_name, []) if pod['metadata']['name'] == state.get('pod')]
        shown = [(pod, 'plugin-validation') for pod in mine]
    for pod, container in shown:
        log, missing = read_log(api, namespace, pod['metadata']['name'], container, log_lines) if container else ('', None)
        lines += validation.pod_evidence(pod, events, log, log_lines)
        lines += [missing] if missing else []
    if kind == 'plugin' or state.get('component') in ('driver', 'plugin') or not shown:
        lines += validation.node_evidence(nodes.get(node_name))
    return lines


def wait(api, namespace, nodes, kind, timeout, poll_interval, log_lines=10, clock=time.monotonic, sleep=time.sleep):
    """({node: result}, progress, elapsed): each node passed, or failed with its evidence once its `timeout` ran out.

    Every node gets `timeout` seconds from the start; they are watched together, so the wait lasts at most
    `timeout` however many nodes there are.
    """
    start = clock()
    progress, last = [], None
    while True:
        pods = list_pods(api, namespace, kind)
        found = states(pods, nodes, kind)
        pending = sorted(node for node, state in found.items() if state['state'] == 'pending')
        failed = sorted(node for node, state in found.items() if state['state'] == 'failed')
        seen = '%d passed, %d failed, %d waiting%s' % (len(found) - len(pending) - len(failed), len(failed), len(pending),
                                                       ' (%s)' % ', '.join(pending) if pending else '')
        if seen != last:
            progress.append('%.1fs: %s' % (clock() - start, seen))
            last = seen
        if not pending or clock() - start + poll_interval > timeout:
            break
        sleep(poll_interval)
    results = {}
    if pending or failed:
        events = _list(api, 'Event', _core(api).list_namespaced_event, namespace)
        node_objects = {node['metadata']['name']: node for node in _list(api, 'Node', _core(api).list_node)}
    for node, state in sorted(found.items()):
        if state['state'] == 'passed':
            results[node] = validation.result(node, 'passed', None, state['summary'])
            continue
        summary = state['summary']
        if state['state'] == 'pending':
            summary += ' (after %ds)' % timeout
        results[node] = validation.result(node, 'failed', state['component'], summary,
                                          evidence(api, namespace, kind, node, state, pods, events, node_objects, log_lines))
    return results, progress, round(clock() - start, 1)
