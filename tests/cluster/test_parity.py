"""Parity with the GPU Operator: what the cluster roles put in the cluster, held against the Operator's facts.

Each scenario under parity/scenarios/ is an inventory as a user writes it (hosts.yml, group_vars YAML): shipped (the
chart's values), configured (a user's settings), dgx (the hostengine on the host). The real
roles (gpu_cluster_base, gpu_cluster_operands, gpu_cluster_validator) run in ansible-playbook with it, so the settings
reach the filters as ansible-core hands them (tagged, lazy types); the objects are then read back from the API and every
fact of parity/facts/*.yml (each naming its Operator release, commit and file) is compared with them. The validator role
is given no Node to validate (that needs Nodes that run Pods: test_gpu_validation.py); its objects are what is compared.

A fact marked `deviation: <id>` is a deliberate difference: ours must match `ours` (and not the Operator's value,
or the deviation is stale), and docs/coming-from-gpu-operator.md must explain it under that id.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from tests.cluster.helpers import REPO, delete_namespace, unique

PARITY = Path(__file__).parent / 'parity'
DOCS = REPO / 'docs' / 'coming-from-gpu-operator.md'
MANAGED_BY = 'app.kubernetes.io/managed-by=gpuops.gpu_operator'
# kind -> (apiVersion, namespaced)
KINDS = {
    'DaemonSet': ('apps/v1', True), 'Deployment': ('apps/v1', True), 'ConfigMap': ('v1', True), 'Service': ('v1', True), 'ServiceAccount': ('v1', True),
    'Role': ('rbac.authorization.k8s.io/v1', True), 'RoleBinding': ('rbac.authorization.k8s.io/v1', True),
    'ClusterRole': ('rbac.authorization.k8s.io/v1', False), 'ClusterRoleBinding': ('rbac.authorization.k8s.io/v1', False),
    'RuntimeClass': ('node.k8s.io/v1', False), 'CustomResourceDefinition': ('apiextensions.k8s.io/v1', False),
    'ClusterPolicy': ('nvidia.com/v1', False), 'Namespace': ('v1', False), 'NodeFeatureRule': ('nfd.k8s-sigs.io/v1alpha1', False),
}
ABSENT = '$absent'


def fact_files():
    return sorted((PARITY / 'facts').glob('*.yml'))


def all_facts():
    for path in fact_files():
        document = yaml.safe_load(path.read_text())
        for fact in document['facts']:
            yield path.stem, document['source'], fact


# --- matching -------------------------------------------------------------------------------------

def env_map(items):
    """A container's env as {name: value}; a field reference reads 'fieldRef:<path>'."""
    found = {}
    for item in items or []:
        ref = ((item.get('valueFrom') or {}).get('fieldRef') or {}).get('fieldPath')
        found[item['name']] = 'fieldRef:' + ref if ref else item.get('value', '')
    return found


def named(items):
    return isinstance(items, list) and bool(items) and all(isinstance(item, dict) and 'name' in item for item in items)


ORDERED = ('initContainers', 'containers')  # their order is behaviour: init containers run in turn


def match(expected, actual, where, namespace, key=''):
    """The differences between an expected fact and what the API holds (empty when it matches)."""
    if expected == '$namespace':
        expected = namespace
    if isinstance(expected, dict) and len(expected) == 1 and next(iter(expected)).startswith('$'):
        operator, operand = next(iter(expected.items()))
        if operator == ABSENT:
            return [] if actual is None else ['%s: expected absent, found %r' % (where, actual)]
        if actual is None:
            return ['%s: missing' % where]
        if operator == '$contains':
            return ['%s: %r does not contain %r' % (where, actual, part) for part in ([operand] if isinstance(operand, str) else operand)
                    if part not in actual]
        if operator in ('$yaml', '$yaml_keys'):
            loaded = yaml.safe_load(actual)
            if operator == '$yaml_keys':
                loaded = dict((name, list(loaded.get(name) or {})) for name in operand)
            return match(operand, loaded, where, namespace)
        if operator == '$entries':
            found = env_map(actual)
            return match(operand, dict((name, found.get(name)) for name in operand), where, namespace)
        raise AssertionError('%s: unknown matcher %s' % (where, operator))
    if actual is None:
        return ['%s: missing (expected %r)' % (where, expected)]
    if key == 'env' and isinstance(expected, dict):
        found = env_map(actual)
        if found != expected:
            return ['%s: env differs: missing %s, extra %s, other values %s' % (
                where, sorted(set(expected) - set(found)), sorted(set(found) - set(expected)),
                dict((name, (expected[name], found[name])) for name in set(expected) & set(found) if expected[name] != found[name]))]
        return []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return ['%s: expected a mapping, found %r' % (where, actual)]
        problems = []
        for name, value in expected.items():
            problems += match(value, actual.get(name), '%s.%s' % (where, name), namespace, name)
        return problems
    if named(expected):
        if not named(actual):
            return ['%s: expected items %s, found %r' % (where, [item['name'] for item in expected], actual)]
        names, found = [item['name'] for item in expected], [item['name'] for item in actual]
        if (names != found) if key in ORDERED else (sorted(names) != sorted(found)):
            return ['%s: items %s, expected %s' % (where, found, names)]
        by_name = dict((item['name'], item) for item in actual)
        problems = []
        for item in expected:
            problems += match(item, by_name[item['name']], '%s[%s]' % (where, item['name']), namespace)
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            return ['%s: expected %r, found %r' % (where, expected, actual)]
        problems = []
        for index, (want, got) in enumerate(zip(expected, actual)):
            problems += match(want, got, '%s[%d]' % (where, index), namespace)
        return problems
    return [] if expected == actual else ['%s: expected %r, found %r' % (where, expected, actual)]


def pick(obj, path):
    """The part of an object at a dotted path; `list[name]` picks the item of that name."""
    value = obj
    for part in path.split('.') if path else []:
        found = re.match(r'^(.*)\[(.+)\]$', part)
        key, name = (found.group(1), found.group(2)) if found else (part, None)
        value = (value or {}).get(key)
        if name is not None:
            value = next((item for item in value or [] if item.get('name') == name), None)
    return value


def test_match_finds_differences():
    """The matcher itself: it must see a missing, an extra and a changed item, or the suite could not fail."""
    pod = {'containers': [{'name': 'a', 'env': [{'name': 'X', 'value': '1'}, {'name': 'N', 'valueFrom': {'fieldRef': {'fieldPath': 'spec.nodeName'}}}]}],
           'volumes': [{'name': 'v', 'hostPath': {'path': '/x'}}]}
    assert match({'containers': [{'name': 'a', 'env': {'X': '1', 'N': 'fieldRef:spec.nodeName'}}]}, pod, 'pod', 'ns') == []
    assert match({'containers': [{'name': 'a', 'env': {'X': '2', 'N': 'fieldRef:spec.nodeName'}}]}, pod, 'pod', 'ns')
    assert match({'containers': [{'name': 'a', 'env': {'X': '1'}}]}, pod, 'pod', 'ns'), 'an extra env var is a difference'
    assert match({'volumes': [{'name': 'v'}, {'name': 'w'}]}, pod, 'pod', 'ns'), 'a missing volume is a difference'
    assert match({'volumes': [{'name': 'v', 'hostPath': {'type': 'Directory'}}]}, pod, 'pod', 'ns')
    assert match({'hostPID': {'$absent': True}}, pod, 'pod', 'ns') == [] and match({'volumes': {'$absent': True}}, pod, 'pod', 'ns')
    assert match({'containers': [{'name': 'b'}]}, pod, 'pod', 'ns') and match({'x': {'$contains': 'b'}}, {'x': 'abc'}, 'o', 'ns') == []
    assert pick(pod, 'containers[a].env') == pod['containers'][0]['env']


# --- running a scenario ---------------------------------------------------------------------------

def run_scenario(kube_api, tmp_path, scenario, namespace):
    playbook = tmp_path / 'cluster.yml'
    playbook.write_text(yaml.safe_dump([{'hosts': 'kube_api', 'gather_facts': False,
                                         'roles': ['gpuops.gpu_operator.gpu_cluster_base', 'gpuops.gpu_operator.gpu_cluster_operands',
                                                   'gpuops.gpu_operator.gpu_cluster_validator']}]))
    env = kube_api.env()
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    env.update(ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_NOCOLOR='1')
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    # Only the namespace (a throw-away one) and the validator's choice of Nodes (none: no Pod runs here) come from the
    # command line; every setting under test is the scenario's YAML.
    names = json.dumps({'gpu_cluster_base_namespace': namespace, 'gpu_cluster_operands_namespace': namespace,
                        'gpu_cluster_validator_namespace': namespace, 'gpu_cluster_validator_node_selector': {'gpuops.test/parity': namespace},
                        'gpu_cluster_validator_write_status': False, 'ansible_python_interpreter': sys.executable})
    result = subprocess.run([ansible, '-i', str(PARITY / 'scenarios' / scenario / 'hosts.yml'), str(playbook), '-e', names],
                            env=env, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def read(dyn, kind, name, namespace):
    """The object as the API holds it, None when there is none; the name `$namespace` is the scenario's namespace."""
    api_version, namespaced = KINDS[kind]
    name = namespace if name == '$namespace' else name
    try:
        return dyn.resources.get(api_version=api_version, kind=kind).get(name=name, namespace=namespace if namespaced else None).to_dict()
    except (NotFoundError, ApiException) as exc:
        if getattr(exc, 'status', 404) != 404:
            raise
        return None


def cleanup(kube_api, namespace):
    """The scenario's namespace and our cluster-scoped objects (ClusterRoles, bindings, RuntimeClasses, NFD's CRDs) go."""
    dyn = DynamicClient(kube_api.api_client)
    for kind in ('ClusterRoleBinding', 'ClusterRole', 'RuntimeClass', 'CustomResourceDefinition'):
        resource = dyn.resources.get(api_version=KINDS[kind][0], kind=kind)
        for item in resource.get(label_selector=MANAGED_BY).items:
            if kind != 'CustomResourceDefinition' or item.metadata.name.endswith('.nfd.k8s-sigs.io'):
                resource.delete(name=item.metadata.name)
    delete_namespace(kube_api, namespace)


@pytest.fixture(name='rendered', scope='module')
def fixture_rendered(kube_api, tmp_path_factory):
    """{scenario: {(kind, name): object or None}} of every object the facts name, read after that scenario's run."""
    wanted = {}
    for _file, _source, fact in all_facts():
        wanted.setdefault(fact['scenario'], set()).add((fact['object']['kind'], fact['object']['name']))
    found = {}
    for scenario in sorted(wanted):
        namespace = unique('gpuops-parity')
        try:
            run_scenario(kube_api, tmp_path_factory.mktemp(scenario), scenario, namespace)
            dyn = DynamicClient(kube_api.api_client)  # discovered after the run: it created the ClusterPolicy CRD
            found[scenario] = dict((key, read(dyn, key[0], key[1], namespace)) for key in sorted(wanted[scenario]))
            found[scenario]['namespace'] = namespace
        finally:
            cleanup(kube_api, namespace)
    return found


def fact_id(item):
    return '%s: %s' % (item[0], item[2]['fact'])


@pytest.mark.parametrize('item', list(all_facts()), ids=fact_id)
def test_fact(rendered, item):
    _file, _source, fact = item
    objects = rendered[fact['scenario']]
    namespace = objects['namespace']
    obj = objects[(fact['object']['kind'], fact['object']['name'])]
    where = '%s %s' % (fact['object']['kind'], fact['object']['name'])

    def check(expected):
        if expected == ABSENT:
            return [] if obj is None else ['%s exists' % where]
        if obj is None:
            return ['%s does not exist' % where]
        return match(expected, pick(obj, fact.get('at', '')), where + ('.' + fact['at'] if fact.get('at') else ''), namespace,
                     fact.get('at', '').rsplit('.', 1)[-1])

    if 'deviation' in fact:
        assert check(fact['ours']) == [], 'deviation %s: ours is not as the fact file says' % fact['deviation']
        assert check(fact['expect']), 'deviation %s is stale: we now match the Operator; remove it' % fact['deviation']
    else:
        assert check(fact['expect']) == []


def test_every_fact_names_its_source():
    for path in fact_files():
        document = yaml.safe_load(path.read_text())
        assert document['source']['release'] == 'v26.7.0' and re.match(r'^[0-9a-f]{40}$', document['source']['commit']), path.name
        assert 'SOURCE:' in path.read_text().split('\nsource:')[0], '%s: the header says where its facts come from' % path.name
        for fact in document['facts']:
            assert fact.get('source') and (PARITY / 'scenarios' / fact.get('scenario', '?') / 'hosts.yml').is_file() and fact.get('fact'), (path.name, fact)


def test_every_deviation_is_explained_in_the_docs():
    """docs/coming-from-gpu-operator.md has a line naming each deviation id (as `deviation: <id>`)."""
    text = DOCS.read_text()
    deviations = sorted(set(fact['deviation'] for _file, _source, fact in all_facts() if 'deviation' in fact))
    assert deviations
    assert [item for item in deviations if 'deviation: %s' % item not in text] == []
