# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Pod steps of the GPU Operator's driver upgrade on one node: waiting for the jobs (wait-for-jobs-required) and
deleting the Pods that use a GPU (pod-deletion-required).

The rules are the Operator's (facts, not code): NVIDIA/gpu-operator v26.7.0 cmd/gpu-operator/main.go gpuPodSpecFilter (a
Running or Pending Pod one of whose containers requests or limits a resource named nvidia.com/gpu... or nvidia.com/mig-...);
NVIDIA/k8s-operator-libs pkg/upgrade/pod_manager.go (ScheduleCheckOnPodCompletion: the node waits while a Pod its
waitForCompletion.podSelector matches is Running or Pending, until timeoutSeconds, 0 for ever, then goes on;
SchedulePodEviction: the GPU Pods are deleted through kubectl's drain helper - DaemonSet Pods ignored, a Pod without a
controller only with force, one with emptyDir only with deleteEmptyDir, evicted and waited for within timeoutSeconds, 0
for ever - and when it cannot delete them all the node goes to drain (drain.enable) or fails). The pure rules are
functions of Pod objects; the API calls go through client.Api.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client

GPU_RESOURCE_PREFIXES = ('nvidia.com/gpu', 'nvidia.com/mig-')
ACTIVE = ('Running', 'Pending')
MIRROR_ANNOTATION = 'kubernetes.io/config.mirror'
TOO_MANY_REQUESTS = 429  # the Eviction API's answer while a PodDisruptionBudget does not allow it


def name_of(pod):
    return '%s/%s' % (pod['metadata'].get('namespace'), pod['metadata'].get('name'))


def active(pod):
    return (pod.get('status') or {}).get('phase') in ACTIVE


def uses_gpu(pod):
    """A Running or Pending Pod one of whose containers requests or limits an NVIDIA GPU or MIG device."""
    if not active(pod):
        return False
    for container in (pod.get('spec') or {}).get('containers') or []:
        resources = container.get('resources') or {}
        for part in ('limits', 'requests'):
            if any(str(name).startswith(GPU_RESOURCE_PREFIXES) for name in resources.get(part) or {}):
                return True
    return False


def _controller(pod):
    return next((owner for owner in pod['metadata'].get('ownerReferences') or [] if owner.get('controller')), None)


def deletion(pods, force=False, delete_empty_dir=False):
    """What the GPU Pod deletion does with the node's `pods`: {gpu: the GPU Pods, delete: those it deletes, problems: why
    it cannot delete the others} - when problems is not empty it deletes nothing (the drain, or the node fails)."""
    gpu = [pod for pod in pods or [] if uses_gpu(pod)]
    delete, problems = [], []
    for pod in gpu:
        controller = _controller(pod) or {}
        if controller.get('kind') == 'DaemonSet':
            problems.append('%s is a DaemonSet Pod (not deleted)' % name_of(pod))
        elif MIRROR_ANNOTATION in (pod['metadata'].get('annotations') or {}):
            problems.append('%s is a static Pod (the kubelet\'s own)' % name_of(pod))
        elif any('emptyDir' in volume for volume in (pod.get('spec') or {}).get('volumes') or []) and not delete_empty_dir:
            problems.append('%s has an emptyDir volume (podDeletion.deleteEmptyDir)' % name_of(pod))
        elif not controller and not force:
            problems.append('%s has no controller (podDeletion.force)' % name_of(pod))
        else:
            delete.append(pod)
    return {'gpu': [name_of(pod) for pod in gpu], 'delete': [] if problems else delete, 'problems': problems}


def running(pods):
    """The names of the Pods that are Running or Pending (a job still at work)."""
    return [name_of(pod) for pod in pods or [] if active(pod)]


# --- the API ------------------------------------------------------------------------------------------------------

def _core(api):
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel  # needed only where the API is called
    return CoreV1Api(api.client)


def node_pods(api, node, selector=''):
    """The Pods bound to `node` in every namespace (matching the label `selector`)."""
    kwargs = {'field_selector': 'spec.nodeName=%s' % node}
    if selector:
        kwargs['label_selector'] = selector
    return api.list_items(k8s_client.ObjectRef('Pod', '', 'pods'), _core(api).list_pod_for_all_namespaces, **kwargs)


def wait_for_completion(api, node, selector, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """Wait until no Pod of `node` that `selector` matches is Running or Pending, at most `timeout` seconds (0: no limit).
    Returns {running: those still at work, timed_out, waited}."""
    start = clock()
    while True:
        left = running(node_pods(api, node, selector))
        waited = clock() - start
        if not left or (timeout and waited >= timeout):
            return {'running': left, 'timed_out': bool(left), 'waited': round(waited, 1)}
        sleep(interval)


def _evict(api, pod):
    from kubernetes.client import V1Eviction, V1ObjectMeta  # pylint: disable=import-outside-toplevel
    metadata = pod['metadata']
    body = V1Eviction(metadata=V1ObjectMeta(name=metadata['name'], namespace=metadata['namespace']))
    ref = k8s_client.ObjectRef('Pod', metadata['name'], 'pods', namespace=metadata['namespace'], subresource='eviction')
    api.call('create', ref, _core(api).create_namespaced_pod_eviction, metadata['name'], metadata['namespace'], body)


def _gone(api, pod):
    """Whether the Pod is deleted (or replaced by another of its name, another uid)."""
    metadata = pod['metadata']
    ref = k8s_client.ObjectRef('Pod', metadata['name'], 'pods', namespace=metadata['namespace'])
    try:
        found = api.read('get', ref, _core(api).read_namespaced_pod, metadata['name'], metadata['namespace'])
    except k8s_client.ApiError as exc:
        if exc.status == k8s_client.NOT_FOUND:
            return True
        raise
    return found['metadata'].get('uid') != metadata.get('uid')


def delete_pods(api, pods, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """Evict `pods` (the Eviction API: a PodDisruptionBudget that does not allow it yet is asked again) and wait until they
    are gone, at most `timeout` seconds (0: no limit). Returns {left: the Pods still there, timed_out}."""
    start = clock()
    pending = list(pods)
    while pending:
        refused = []
        for pod in pending:
            try:
                _evict(api, pod)
            except k8s_client.ApiError as exc:
                if exc.status == TOO_MANY_REQUESTS:
                    refused.append(pod)
                elif exc.status != k8s_client.NOT_FOUND:
                    raise
        pending = refused
        if pending and timeout and clock() - start >= timeout:
            return {'left': [name_of(pod) for pod in pending], 'timed_out': True}
        if pending:
            sleep(interval)
    left = list(pods)
    while True:
        left = [pod for pod in left if not _gone(api, pod)]
        if not left or (timeout and clock() - start >= timeout):
            return {'left': [name_of(pod) for pod in left], 'timed_out': bool(left)}
        sleep(interval)
