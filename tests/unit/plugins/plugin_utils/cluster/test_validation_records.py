"""The records of the ConfigMap gpu-validation-results, the scope of a run and the Pods it replaces (pure functions)."""
import json

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import validation


def node(name, **labels):
    return {'metadata': {'name': name, 'labels': dict({'feature.node.kubernetes.io/pci-10de.present': 'true', 'nvidia.com/gpu.present': 'true'}, **labels)}}


NODES = [node('gpu-a'), node('gpu-b'), node('gpu-c')]
PASSED = validation.result('gpu-a', 'passed')
FAILED = validation.result('gpu-b', 'failed', 'plugin', 'plugin validation failed: x')
STOPPED = {'node': 'gpu-c', 'stage': 'nvidia_driver', 'failure': 'no kernel headers'}


@pytest.mark.parametrize('scope, run_nodes, expected', [
    ('cluster', ['gpu-a'], ['gpu-a', 'gpu-b', 'gpu-c']),
    ('inventory', ['gpu-a'], ['gpu-a']),
    ('inventory', [], []),
])
def test_targets_scope(scope, run_nodes, expected):
    assert [t['node'] for t in validation.targets(NODES, run_nodes, scope=scope)] == expected


def test_targets_unknown_scope():
    with pytest.raises(validation.ValidationError, match='scope must be one of cluster, inventory'):
        validation.targets(NODES, [], scope='slice')


def test_pods_on_only_the_nodes_given():
    pods = [{'metadata': {'name': n, 'namespace': 'ns'}, 'spec': {'nodeName': where}} for n, where in
            [('v-1', 'gpu-a'), ('v-2', 'gpu-b'), ('cuda-1', 'gpu-a'), ('pending', None)]]
    assert [p['metadata']['name'] for p in validation.pods_on(pods, ['gpu-a'])] == ['v-1', 'cuda-1']
    assert validation.pods_on(pods, []) == []


def test_records_write_own_keys_stopped_and_drop_gone_nodes():
    recorded = {'gpu-b': '{}', 'gone': '{}'}
    data = validation.records([PASSED, validation.result('gpu-c', 'passed')], [STOPPED], recorded, NODES)
    assert set(data) == {'gpu-a', 'gpu-c', 'gone'}  # gpu-b is another run's: left as it is
    assert data['gone'] is None
    stopped = json.loads(data['gpu-c'])  # the stopped record wins over a result
    assert stopped['state'] == 'stopped' and stopped['stage'] == 'nvidia_driver' and stopped['failure'] == 'no kernel headers'
    assert validation.records([], [], None, NODES) == {}


@pytest.mark.parametrize('records, state, reason, named', [
    ([PASSED], 'ready', 'Reconciled', None),
    ([PASSED, FAILED], 'notReady', 'OperandNotReady', 'gpu-b'),
    # The Operator's order: a state that failed to reconcile before states not ready.
    ([PASSED, FAILED], 'notReady', 'ReconcileFailed', 'gpu-c'),
    ([], 'ready', 'Reconciled', None),
])
def test_recorded_outcome(records, state, reason, named):
    stopped = [STOPPED] if reason == 'ReconcileFailed' else []
    data = validation.records(records, stopped, None, NODES)
    found = validation.recorded_outcome(NODES, data)
    assert (found['state'], found['reason']) == (state, reason)
    if named:
        assert named in found['message']


def test_recorded_outcome_reads_a_broken_record_as_failed():
    found = validation.recorded_outcome(NODES, {'gpu-a': 'not json'})
    assert found['reason'] == 'OperandNotReady' and 'gpu-a' in found['message']
