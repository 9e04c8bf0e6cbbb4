"""A test-only kubelet (with the DaemonSet controller's part) for the API stand-in, which runs no Pods.

It runs beside a test in a thread and writes into the API what nodes would write, as told per node:

- the device plugin's part: the Node's status.capacity / allocatable of its GPU resources (`capacity`);
- the DaemonSet controller's part: one Pod of the nvidia-operator-validator DaemonSet on each of its Nodes that the
  DaemonSet selects (a deleted Pod comes back as a new one), and the DaemonSet's status;
- the kubelet's and NVIDIA's validator's part: each validator Pod's init containers pass, or the one named by
  `fail` does not ('driver' keeps running, as its WITH_WAIT loop does; 'toolkit' and 'cuda' exit 1 and restart;
  'pod': the Pod never starts, its image cannot be pulled); the plugin component passes only when the Node advertises
  an nvidia.com/gpu* or nvidia.com/mig-* resource, as cmd/nvidia-validator checks it. The cuda component's vectorAdd
  Pod is created as the validator creates it, and Succeeds or (fail='cuda') fails;
- the kubelet's part for the Pods that request a GPU resource (app=nvidia-device-plugin-validator): rejected when the
  Node does not have the resource (phase Failed, as the kubelet's admission does), failed ('plugin-pod'), left Pending
  ('plugin-pod-pending': a Pod that never starts), else Succeeded;
- events for what failed, and the log of the container that failed (the stand-in's pods/log text).

The texts are not captured from nodes; where they follow a source it is named: NVIDIA/gpu-operator v26.7.0
cmd/nvidia-validator/main.go ("toolkit is not ready", "GPU resources are not discovered by the node", "gave up waiting
for pod %s to be available", "running command %s with args %v"); nvidia-smi's message without a driver (as in
tests/fixtures/gpus/cpu-only/SOURCE.md); NVIDIA/cuda-samples Samples/0_Introduction/vectorAdd/vectorAdd.cu
("Failed to allocate device vector A (error code %s)!", "Test PASSED") with the error of cudaMalloc where no GPU is
visible, as measured on an H100 host (CUDA 13.0 runtime, driver 580.159.04, CUDA_VISIBLE_DEVICES empty: error 100,
"no CUDA-capable device is detected"); kubernetes pkg/kubelet/lifecycle/predicate.go (InsufficientResourceError, "Node didn't have enough
resource: %s, requested: %d, used: %d, capacity: %d"; the kubelet's rejection reason OutOf<resource>).
"""
from __future__ import annotations

import copy
import dataclasses
import datetime
import threading
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

VALIDATOR = 'nvidia-operator-validator'
CUDA_APP = 'nvidia-cuda-validator'
PLUGIN_APP = 'nvidia-device-plugin-validator'
GPU_PREFIXES = ('nvidia.com/gpu', 'nvidia.com/mig-')
FAILURES = (None, 'driver', 'toolkit', 'cuda', 'pod', 'plugin-pod', 'plugin-pod-pending')


@dataclasses.dataclass
class NodeScenario:
    capacity: dict[str, int]  # the GPU resources the device plugin advertises on the Node
    fail: str | None = None  # one of FAILURES

    def __post_init__(self) -> None:
        if self.fail not in FAILURES:
            raise ValueError(f'fail must be one of {FAILURES}, not {self.fail!r}')


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


def _done(name: str, image: str) -> dict[str, Any]:
    return {'name': name, 'image': image, 'imageID': '', 'ready': False, 'restartCount': 0,
            'state': {'terminated': {'exitCode': 0, 'reason': 'Completed', 'startedAt': _now(), 'finishedAt': _now()}}}


def _crashing(name: str, image: str, restarts: int = 3) -> dict[str, Any]:
    return {'name': name, 'image': image, 'imageID': '', 'ready': False, 'restartCount': restarts,
            'state': {'waiting': {'reason': 'CrashLoopBackOff', 'message': f'back-off 40s restarting failed container={name}'}},
            'lastState': {'terminated': {'exitCode': 1, 'reason': 'Error', 'startedAt': _now(), 'finishedAt': _now()}}}


def _waiting(name: str, image: str, reason: str, message: str = '') -> dict[str, Any]:
    waiting = {'reason': reason}
    if message:
        waiting['message'] = message
    return {'name': name, 'image': image, 'imageID': '', 'ready': False, 'restartCount': 0, 'state': {'waiting': waiting}}


def _running(name: str, image: str, ready: bool = False) -> dict[str, Any]:
    return {'name': name, 'image': image, 'imageID': '', 'ready': ready, 'restartCount': 0, 'started': True, 'state': {'running': {'startedAt': _now()}}}


def _conditions(initialized: bool, ready: bool, reason: str = '') -> list[dict[str, Any]]:
    def condition(kind: str, status: bool) -> dict[str, Any]:
        found = {'type': kind, 'status': 'True' if status else 'False', 'lastTransitionTime': _now()}
        if not status and reason:
            found['reason'] = reason
        return found
    return [condition('PodScheduled', True), condition('Initialized', initialized), condition('ContainersReady', ready),
            condition('Ready', ready)]


class KubeletDouble:
    """Writes what the kubelets of `scenarios`' Nodes would write into the API, every `interval` seconds, in a thread."""

    def __init__(self, kubeconfig: str, namespace: str, scenarios: dict[str, NodeScenario], pod_logs: dict | None, interval: float = 0.2):
        self.api_client = kubernetes.config.new_client_from_config(config_file=kubeconfig)
        self.core = kubernetes.client.CoreV1Api(self.api_client)
        self.apps = kubernetes.client.AppsV1Api(self.api_client)
        self.namespace, self.scenarios, self.pod_logs, self.interval = namespace, scenarios, pod_logs, interval
        self.handled: set[str] = set()  # uids of the Pods whose status was written
        self.actions: list[str] = []  # what it did, for the tests to show that it ran
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='kubelet-double', daemon=True)

    # ---- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> KubeletDouble:
        self.advertise()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.api_client.close()
        if self.errors:
            raise AssertionError(f'the kubelet double failed: {self.errors[0]!r}') from self.errors[0]

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception as exc:  # pylint: disable=broad-exception-caught  # reported by __exit__ in the test's thread
                self.errors.append(exc)
                return
            self._stop.wait(self.interval)

    # ---- the device plugin's part ---------------------------------------------------------------

    def advertise(self) -> None:
        """Set each Node's GPU resources to its scenario's (others are removed, as a kubelet does with None)."""
        for name, scenario in self.scenarios.items():
            status = self.core.read_node(name).status
            current = (status.capacity if status else None) or {}
            resources = {key: None for key in current if key.startswith(GPU_PREFIXES)}
            resources.update({key: str(value) for key, value in scenario.capacity.items()})
            self.core.patch_node_status(name, {'status': {'capacity': resources, 'allocatable': resources}})
            self.actions.append(f'advertise {name} {scenario.capacity}')

    # ---- one round ------------------------------------------------------------------------------

    def step(self) -> None:
        pods = self.core.list_namespaced_pod(self.namespace).items
        self._daemonset(pods)
        for pod in self.core.list_namespaced_pod(self.namespace).items:
            node = pod.spec.node_name
            if node not in self.scenarios or pod.metadata.uid in self.handled or pod.metadata.deletion_timestamp:
                continue
            app = (pod.metadata.labels or {}).get('app')
            if app == VALIDATOR:
                self._validator(pod, self.scenarios[node])
            elif app == PLUGIN_APP:
                self._plugin_pod(pod, self.scenarios[node])
            else:
                continue
            self.handled.add(pod.metadata.uid)

    def _daemonset(self, pods: list) -> None:
        """The DaemonSet controller: a validator Pod on every selected Node of the scenarios, and the DaemonSet's status."""
        try:
            ds = self.apps.read_namespaced_daemon_set(VALIDATOR, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        template = self.api_client.sanitize_for_serialization(ds.spec.template)
        selector = template['spec'].get('nodeSelector') or {}
        selected = [name for name in self.scenarios if all((self.core.read_node(name).metadata.labels or {}).get(k) == v for k, v in selector.items())]
        live = {pod.spec.node_name: pod for pod in pods
                if (pod.metadata.labels or {}).get('app') == VALIDATOR and not pod.metadata.deletion_timestamp}
        for name in selected:
            if name not in live:
                spec = dict(copy.deepcopy(template['spec']), nodeName=name)
                metadata = {'generateName': VALIDATOR + '-', 'labels': template['metadata'].get('labels') or {},
                            'ownerReferences': [{'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'name': VALIDATOR, 'uid': ds.metadata.uid,
                                                 'controller': True}]}
                created = self.core.create_namespaced_pod(self.namespace, {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': metadata, 'spec': spec})
                self.actions.append(f'create {created.metadata.name} on {name}')
        ready = sum(1 for name in selected if name in live and any(
            c.type == 'Ready' and c.status == 'True' for c in (live[name].status.conditions or [])))
        status = {'desiredNumberScheduled': len(selected), 'currentNumberScheduled': len(selected), 'updatedNumberScheduled': len(selected),
                  'numberReady': ready, 'numberAvailable': ready, 'numberUnavailable': len(selected) - ready, 'numberMisscheduled': 0,
                  'observedGeneration': ds.metadata.generation}
        current = self.api_client.sanitize_for_serialization(ds.status) or {}
        if any(current.get(key) != value for key, value in status.items()):
            self.apps.patch_namespaced_daemon_set_status(VALIDATOR, self.namespace, {'status': status})

    # ---- the kubelet's part ---------------------------------------------------------------------

    def _status(self, pod: Any, phase: str, init: list, main: list, conditions: list, reason: str = '', message: str = '') -> None:
        status = {'phase': phase, 'hostIP': '192.0.2.10', 'startTime': _now(), 'initContainerStatuses': init, 'containerStatuses': main,
                  'conditions': conditions}
        if reason:
            status.update(reason=reason, message=message)
        self.core.patch_namespaced_pod_status(pod.metadata.name, self.namespace, {'status': status})
        self.actions.append(f'status {pod.metadata.name} {phase}')

    def _event(self, pod: Any, kind: str, reason: str, message: str) -> None:
        self.core.create_namespaced_event(self.namespace, {
            'metadata': {'generateName': pod.metadata.name + '.'},
            'involvedObject': {'kind': 'Pod', 'name': pod.metadata.name, 'namespace': self.namespace, 'uid': pod.metadata.uid},
            'type': kind, 'reason': reason, 'message': message, 'count': 1,
            'firstTimestamp': _now(), 'lastTimestamp': _now(), 'source': {'component': 'kubelet', 'host': pod.spec.node_name}})

    def _log(self, pod: Any, text: str) -> None:
        if self.pod_logs is not None:
            self.pod_logs[(self.namespace, pod.metadata.name)] = text

    def _validator(self, pod: Any, scenario: NodeScenario) -> None:
        image = pod.spec.containers[0].image
        names = [c.name for c in pod.spec.init_containers]
        node = pod.spec.node_name
        if scenario.fail == 'pod':
            init = [_waiting(names[0], image, 'ImagePullBackOff', f'Back-off pulling image "{image}"')]
            init += [_waiting(name, image, 'PodInitializing') for name in names[1:]]
            self._status(pod, 'Pending', init, [_waiting(VALIDATOR, image, 'PodInitializing')], _conditions(False, False, 'ContainersNotInitialized'))
            self._event(pod, 'Warning', 'Failed', f'Failed to pull image "{image}": not found')
            self._event(pod, 'Warning', 'BackOff', f'Back-off pulling image "{image}"')
            return
        has_gpu = any(key.startswith(GPU_PREFIXES) and value > 0 for key, value in scenario.capacity.items())
        failing = {'driver': 'driver-validation', 'toolkit': 'toolkit-validation', 'cuda': 'cuda-validation'}.get(scenario.fail)
        if failing is None and not has_gpu and 'plugin-validation' in names:
            failing = 'plugin-validation'
        if failing != 'driver-validation':
            self._cuda_pod(pod, image, failed=failing == 'cuda-validation')
        if failing is None:
            self._status(pod, 'Running', [_done(name, image) for name in names], [_running(VALIDATOR, image, ready=True)], _conditions(True, True))
            self._log(pod, 'all validations are successful')
            return
        index = names.index(failing)
        init = [_done(name, image) for name in names[:index]]
        init.append(_running(failing, image) if failing == 'driver-validation' else _crashing(failing, image))
        init += [_waiting(name, image, 'PodInitializing') for name in names[index + 1:]]
        self._status(pod, 'Pending', init, [_waiting(VALIDATOR, image, 'PodInitializing')], _conditions(False, False, 'ContainersNotInitialized'))
        if failing != 'driver-validation':
            self._event(pod, 'Warning', 'BackOff', f'Back-off restarting failed container {failing} in pod {pod.metadata.name}')
        self._log(pod, {
            'driver-validation': 'running command chroot with args [/host /usr/bin/nvidia-smi]\n'
                                 "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                                 'Make sure that the latest NVIDIA driver is installed and running.\n',
            'toolkit-validation': 'exec: "nvidia-smi": executable file not found in $PATH\ntoolkit is not ready\n',
            'cuda-validation': f'gave up waiting for pod {CUDA_APP}-{node[:5]} to be available\n',
            'plugin-validation': 'GPU resources are not discovered by the node\n',
        }[failing])

    def _cuda_pod(self, validator: Any, image: str, failed: bool) -> None:
        """The vectorAdd Pod the cuda component creates on its node (cmd/nvidia-validator CUDA.runWorkload)."""
        node = validator.spec.node_name
        pod = self.core.create_namespaced_pod(self.namespace, {
            'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'generateName': CUDA_APP + '-', 'labels': {'app': CUDA_APP}},
            'spec': {'nodeName': node, 'restartPolicy': 'OnFailure', 'tolerations': self.api_client.sanitize_for_serialization(validator.spec.tolerations),
                     'initContainers': [{'name': 'cuda-validation', 'image': image, 'command': ['sh', '-c'], 'args': ['vectorAdd']}],
                     'containers': [{'name': CUDA_APP, 'image': image, 'command': ['sh', '-c'], 'args': ['echo cuda workload validation is successful']}]}})
        self.handled.add(pod.metadata.uid)
        if failed:
            self._status(pod, 'Pending', [_crashing('cuda-validation', image)], [_waiting(CUDA_APP, image, 'PodInitializing')],
                         _conditions(False, False, 'ContainersNotInitialized'))
            self._event(pod, 'Warning', 'BackOff', f'Back-off restarting failed container cuda-validation in pod {pod.metadata.name}')
            self._log(pod, 'Failed to allocate device vector A (error code no CUDA-capable device is detected)!\n')
        else:
            self._status(pod, 'Succeeded', [_done('cuda-validation', image)],
                         [{'name': CUDA_APP, 'image': image, 'imageID': '', 'ready': False, 'restartCount': 0,
                           'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}}], _conditions(True, False, 'PodCompleted'))
            self._log(pod, 'Test PASSED\ncuda workload validation is successful\n')

    def _plugin_pod(self, pod: Any, scenario: NodeScenario) -> None:
        image = pod.spec.containers[0].image
        requested = next(iter((pod.spec.init_containers[0].resources.limits or {}).items()))
        resource, quantity = requested[0], int(requested[1])
        if scenario.fail == 'plugin-pod-pending':
            return  # never started: the kubelet never got to it
        have = scenario.capacity.get(resource, 0)
        if have < quantity:
            message = f"Pod was rejected: Node didn't have enough resource: {resource}, requested: {quantity}, used: 0, capacity: {have}"
            self._status(pod, 'Failed', [], [], [], reason=f'OutOf{resource}', message=message)
            self._event(pod, 'Warning', f'OutOf{resource}', message[len('Pod was rejected: '):])
            return
        if scenario.fail == 'plugin-pod':
            init = [{'name': 'plugin-validation', 'image': image, 'imageID': '', 'ready': False, 'restartCount': 0,
                     'state': {'terminated': {'exitCode': 1, 'reason': 'Error'}}}]
            self._status(pod, 'Failed', init, [_waiting(PLUGIN_APP, image, 'PodInitializing')], _conditions(False, False, 'PodFailed'))
            self._log(pod, 'Failed to allocate device vector A (error code no CUDA-capable device is detected)!\n')
            return
        main = [{'name': PLUGIN_APP, 'image': image, 'imageID': '', 'ready': False, 'restartCount': 0,
                 'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}}]
        self._status(pod, 'Succeeded', [_done('plugin-validation', image)], main, _conditions(True, False, 'PodCompleted'))
        self._log(pod, 'Test PASSED\ndevice-plugin workload validation is successful\n')
