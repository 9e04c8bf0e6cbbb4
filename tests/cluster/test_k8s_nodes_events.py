"""The k8s_nodes event source against the API: the events for a Node that joins, is Ready after a reboot, loses or
changes its labels, and none for what needs no run.

The plugin file is run as ansible-rulebook runs it (runpy, by its path), its main() in an event loop of its own; the
Nodes are throw-away ones registered as kubelets would (tests/cluster/helpers.py). On a real cluster (KUBECONFIG set)
the events of its own Nodes are ignored. A change that must give no event is followed by one that must: the next
event is then that one.
"""
import asyncio
import json
import queue
import runpy
import threading
import uuid

import pytest

from tests.cluster.helpers import REPO, delete_node, raw, register_node, set_node_status, unique

SOURCE = REPO / 'extensions' / 'eda' / 'plugins' / 'event_source' / 'k8s_nodes.py'
ANNOTATION = 'gpuops.io/nfd-labels'
OURS = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'NVIDIA-H200', 'nvidia.com/gpu.deploy.device-plugin': 'true'}
GPU = {'labels': OURS, 'annotations': {ANNOTATION: json.dumps(OURS)}}
WAIT = 20  # seconds for one event


class Source:
    """The event source's main() in a thread with its own event loop; the events of the Nodes named prefix-* in a queue."""

    def __init__(self, prefix, args):
        self.prefix, self.args = prefix, args
        self.events, self.error = queue.Queue(), None
        self._loop = self._task = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        events, prefix = self.events, self.prefix

        class Collect(asyncio.Queue):
            async def put(self, item):
                if item['node'].startswith(prefix):
                    events.put(item)

        async def run():
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            self._started.set()
            await runpy.run_path(str(SOURCE))['main'](Collect(), self.args)

        try:
            asyncio.run(run())
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the test asserts on it
            self.error = exc
        finally:
            self._started.set()

    def __enter__(self):
        self._thread.start()
        self._started.wait(WAIT)
        return self

    def __exit__(self, *_exc):
        if self._task is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(WAIT)

    def next(self):
        try:
            return self.events.get(timeout=WAIT)
        except queue.Empty:
            pytest.fail(f'no event within {WAIT}s (source error: {self.error!r})')

    def ended(self):
        self._thread.join(WAIT)
        return not self._thread.is_alive()


def relabel(kube_api, name, labels):
    code, body = raw(kube_api, 'PATCH', f'/api/v1/nodes/{name}', {'metadata': {'labels': labels}}, 'application/merge-patch+json')
    assert code == 200, body


def summary(event):
    return event['node'], event['reasons']


@pytest.fixture(name='names')
def fixture_names(kube_api):
    prefix = unique('gpuops-eda')
    names = []
    yield prefix, names
    for name in names:
        delete_node(kube_api, name)


def test_events_of_joins_reboots_and_labels(kube_api, names):
    prefix, created = names

    def node(role, **kwargs):
        name = f'{prefix}-{role}'
        created.append(name)
        register_node(kube_api, name, **kwargs)
        return name

    boot = str(uuid.uuid4())
    pre = node('a-pre')  # registered before the source starts, never examined
    drifted = node('b-drifted', labels={'nvidia.com/gpu.present': 'true'}, annotations=GPU['annotations'])
    gpu = node('c-gpu', info={'bootID': boot}, **GPU)
    cpu = node('d-cpu', annotations={ANNOTATION: '{}'}, info={'bootID': boot})

    with Source(prefix, {'kubeconfig': kube_api.kubeconfig}) as source:
        # At start-up: the node never examined, the GPU node that lost labels meanwhile.
        first = source.next()
        assert summary(first) == (pre, ['joined']) and first['meta']['hosts'] == [pre, 'kube_api']
        second = source.next()
        assert summary(second) == (drifted, ['labels'])
        assert second['labels_lost'] == ['nvidia.com/gpu.deploy.device-plugin', 'nvidia.com/gpu.product']

        new = node('e-new')
        assert summary(source.next()) == (new, ['joined'])

        # Not Ready and back with the same boot: no reboot. A reboot of the node without GPU: nothing. Then the GPU
        # node's reboot is the next event.
        set_node_status(kube_api, gpu, ready=False)
        set_node_status(kube_api, gpu, ready=True)
        set_node_status(kube_api, cpu, info={'bootID': str(uuid.uuid4())})
        rebooted = str(uuid.uuid4())
        set_node_status(kube_api, gpu, info={'bootID': rebooted})
        event = source.next()
        assert summary(event) == (gpu, ['ready']) and event['boot_id'] == rebooted

        relabel(kube_api, gpu, {'nvidia.com/gpu.product': None})
        event = source.next()
        assert summary(event) == (gpu, ['labels']) and event['labels_lost'] == ['nvidia.com/gpu.product'] and event['labels_changed'] == []
        relabel(kube_api, gpu, {'nvidia.com/gpu.product': 'Tesla-T4'})
        event = source.next()
        assert summary(event) == (gpu, ['labels']) and event['labels_changed'] == ['nvidia.com/gpu.product'] and event['labels_lost'] == []

        # Restored, then a deploy label turned off on purpose (the Operator keeps such a value), then the new node
        # examined without GPU, then a Node deleted: none of that needs a run. The next Node registered is the next event.
        relabel(kube_api, gpu, {'nvidia.com/gpu.product': 'NVIDIA-H200', 'nvidia.com/gpu.deploy.device-plugin': 'false'})
        code, body = raw(kube_api, 'PATCH', f'/api/v1/nodes/{new}', {'metadata': {'annotations': {ANNOTATION: '{}'}}}, 'application/merge-patch+json')
        assert code == 200, body
        delete_node(kube_api, drifted)
        last = node('f-last')
        assert summary(source.next()) == (last, ['joined'])
    assert source.error is None


def test_a_failing_api_is_listed_again(kube_api, kube_faults, names):
    """Two 503 answers to the list: the source's calls retry and the events come."""
    prefix, created = names
    name = f'{prefix}-new'
    created.append(name)
    register_node(kube_api, name)
    fault = kube_faults.inject('GET', '/api/v1/nodes', status=503, times=2)
    with Source(prefix, {'kubeconfig': kube_api.kubeconfig}) as source:
        assert summary(source.next()) == (name, ['joined'])
    assert fault.injected == 2 and source.error is None


def test_refused_credentials_stop_the_source(kube_api, kube_faults, names):
    prefix, _created = names
    kube_faults.inject('GET', '/api/v1/nodes', status=403)
    with Source(prefix, {'kubeconfig': kube_api.kubeconfig}) as source:
        assert source.ended()
    assert 'cannot list Node : API answered 403' in str(source.error)
    assert 'apiGroups [""], resources ["nodes"], verbs ["list"]' in str(source.error)


@pytest.mark.parametrize('args, message', [
    ({'kubeconfig': '/nonexistent/kubeconfig'}, 'cannot load kubeconfig /nonexistent/kubeconfig'),
    ({'kubeconfig': '/dev/null', 'no_such_option': 1}, 'no_such_option'),
    ({'validate_certs': 'maybe'}, 'validate_certs'),
])
def test_bad_options_stop_the_source_with_a_message(kube_api, names, args, message):
    prefix, _created = names
    with Source(prefix, args) as source:
        assert source.ended()
    assert message in str(source.error)
