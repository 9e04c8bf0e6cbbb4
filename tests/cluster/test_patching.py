"""Patch semantics of the stand-in (pure functions, no server)."""
import pytest

from tests.standin import patching

POD = {'spec': {
    'containers': [{'name': 'a', 'image': 'a:1', 'ports': [{'containerPort': 80, 'name': 'http'}],
                    'env': [{'name': 'X', 'value': '1'}, {'name': 'Y', 'value': '2'}],
                    'volumeMounts': [{'name': 'v', 'mountPath': '/m'}]},
                   {'name': 'b', 'image': 'b:1'}],
    'initContainers': [{'name': 'i', 'image': 'i:1'}],
    'volumes': [{'name': 'v', 'emptyDir': {}}],
    'tolerations': [{'key': 't1', 'operator': 'Exists'}],
    'imagePullSecrets': [{'name': 's1'}],
}, 'metadata': {'finalizers': ['f1']}}

SMP_CASES = {
    'containers merge by name': ({'spec': {'containers': [{'name': 'b', 'image': 'b:2'}]}},
                                 lambda o: [(c['name'], c['image']) for c in o['spec']['containers']] == [('a', 'a:1'), ('b', 'b:2')]),
    'initContainers merge by name': ({'spec': {'initContainers': [{'name': 'j', 'image': 'j:1'}]}},
                                     lambda o: [c['name'] for c in o['spec']['initContainers']] == ['i', 'j']),
    'volumes merge by name': ({'spec': {'volumes': [{'name': 'w', 'hostPath': {'path': '/dev'}}]}},
                              lambda o: [v['name'] for v in o['spec']['volumes']] == ['v', 'w']),
    'env merges by name': ({'spec': {'containers': [{'name': 'a', 'env': [{'name': 'Y', 'value': '3'}]}]}},
                           lambda o: o['spec']['containers'][0]['env'] == [{'name': 'X', 'value': '1'}, {'name': 'Y', 'value': '3'}]),
    'container ports merge by containerPort': ({'spec': {'containers': [{'name': 'a', 'ports': [{'containerPort': 9090}]}]}},
                                               lambda o: [p['containerPort'] for p in o['spec']['containers'][0]['ports']] == [80, 9090]),
    'volumeMounts merge by mountPath': ({'spec': {'containers': [{'name': 'a', 'volumeMounts': [{'name': 'v', 'mountPath': '/n'}]}]}},
                                        lambda o: [m['mountPath'] for m in o['spec']['containers'][0]['volumeMounts']] == ['/m', '/n']),
    'tolerations are replaced (no merge key in k8s.io/api)': ({'spec': {'tolerations': [{'key': 't2', 'operator': 'Exists'}]}},
                                                              lambda o: o['spec']['tolerations'] == [{'key': 't2', 'operator': 'Exists'}]),
    'imagePullSecrets merge by name': ({'spec': {'imagePullSecrets': [{'name': 's2'}]}},
                                       lambda o: o['spec']['imagePullSecrets'] == [{'name': 's1'}, {'name': 's2'}]),
    '$patch: delete removes an item': ({'spec': {'containers': [{'name': 'a', '$patch': 'delete'}]}},
                                       lambda o: [c['name'] for c in o['spec']['containers']] == ['b']),
    '$patch: replace replaces the list': ({'spec': {'containers': [{'$patch': 'replace'}, {'name': 'c', 'image': 'c:1'}]}},
                                          lambda o: o['spec']['containers'] == [{'name': 'c', 'image': 'c:1'}]),
    '$setElementOrder reorders': ({'spec': {'$setElementOrder/containers': [{'name': 'b'}, {'name': 'a'}]}},
                                  lambda o: [c['name'] for c in o['spec']['containers']] == ['b', 'a']),
    'null deletes a key': ({'spec': {'volumes': None}}, lambda o: 'volumes' not in o['spec']),
    'finalizers merge as a set': ({'metadata': {'finalizers': ['f2', 'f1']}}, lambda o: o['metadata']['finalizers'] == ['f1', 'f2']),
    '$deleteFromPrimitiveList removes': ({'metadata': {'$deleteFromPrimitiveList/finalizers': ['f1']}}, lambda o: o['metadata']['finalizers'] == []),
}


@pytest.mark.parametrize('patch,check', list(SMP_CASES.values()), ids=list(SMP_CASES))
def test_strategic_merge(patch, check):
    before = repr(POD)
    assert check(patching.strategic_merge(POD, patch))
    assert repr(POD) == before, 'the original must not be mutated'


def test_strategic_merge_item_without_merge_key_is_rejected():
    with pytest.raises(patching.PatchError, match='merge key'):
        patching.strategic_merge(POD, {'spec': {'containers': [{'image': 'x'}]}})


MERGE_CASES = [
    ({'a': {'b': 1, 'c': 2}}, {'a': {'b': None, 'd': 3}}, {'a': {'c': 2, 'd': 3}}),
    ({'l': [1, 2]}, {'l': [3]}, {'l': [3]}),  # merge patch replaces lists
    ({'a': 1}, {'a': {'b': 1}}, {'a': {'b': 1}}),
]


@pytest.mark.parametrize('target,patch,expected', MERGE_CASES)
def test_merge_patch(target, patch, expected):
    assert patching.merge_patch(target, patch) == expected


def test_json_patch():
    result = patching.json_patch({'a': [1]}, [{'op': 'add', 'path': '/a/-', 'value': 2}, {'op': 'replace', 'path': '/b', 'value': 0}][:1])
    assert result == {'a': [1, 2]}
    with pytest.raises(patching.PatchError):
        patching.json_patch({'a': 1}, [{'op': 'test', 'path': '/a', 'value': 2}])
