"""Parity with the GPU Operator: what the cluster roles put in the cluster, held against the Operator's facts.

Each scenario under parity/scenarios/ is an inventory as a user writes it (hosts.yml, group_vars YAML), run in
ansible-playbook, so the settings reach the filters as ansible-core hands them (tagged, lazy types); the objects are then
read back from the API and every fact of parity/facts/*.yml (each naming its Operator release, commit and file) is compared
with them. `shipped` (the chart's values.yaml as gpu_operator_helm_values) and `sample` (the Operator's sample
ClusterPolicy as gpu_operator_policy), both NVIDIA's files unchanged, go through playbooks/site.yml with one GPU node: this
machine reached locally, its stages pointed at a captured H200 (tests/fixtures/gpus/h200-x1) and at a Node of the test's
own, the driver validated (not installed) and the container toolkit left alone, its validator Pods played by the kubelet
double (kubelet_double.py), as tests/cluster/test_h100_host_findings.py and test_gpu_validation.py run them; those two need
the stand-in. `configured` runs the cluster roles (gpu_cluster_base, gpu_cluster_operands, gpu_cluster_validator), the
validator with no Node to validate; so do `dgx` (the DCGM hostengine on the host) and `kata` (sandbox workloads in Kata
mode).

A fact marked `deviation: <id>` is a deliberate difference: ours must match `ours` (and not the Operator's value,
or the deviation is stale), and docs/coming-from-gpu-operator.md must explain it under that id.
"""
import contextlib
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

from tests.cluster.helpers import GPUS, REPO, delete_namespace, delete_node, nvidia_smi_simulator, register_node, unique
from tests.cluster.kubelet_double import KubeletDouble, NodeScenario

PARITY = Path(__file__).parent / 'parity'
DOCS = REPO / 'docs' / 'coming-from-gpu-operator.md'
MANAGED_BY = 'app.kubernetes.io/managed-by=gpuops.gpu_operator'
# kind -> (apiVersion, namespaced)
KINDS = {
    'DaemonSet': ('apps/v1', True), 'Deployment': ('apps/v1', True), 'ConfigMap': ('v1', True), 'Service': ('v1', True), 'ServiceAccount': ('v1', True),
    'Role': ('rbac.authorization.k8s.io/v1', True), 'RoleBinding': ('rbac.authorization.k8s.io/v1', True),
    'ClusterRole': ('rbac.authorization.k8s.io/v1', False), 'ClusterRoleBinding': ('rbac.authorization.k8s.io/v1', False),
    'RuntimeClass': ('node.k8s.io/v1', False), 'CustomResourceDefinition': ('apiextensions.k8s.io/v1', False),
    'ClusterPolicy': ('nvidia.com/v1', False), 'Namespace': ('v1', False),
    'NodeFeatureRule': ('nfd.k8s-sigs.io/v1alpha1', False),
}
ABSENT = '$absent'
# The scenarios that go through site.yml, with a GPU node (the others run the cluster roles).
SITE = ('shipped', 'sample')
H200 = GPUS / 'h200-x1'


def fact_files():
    return sorted((PARITY / 'facts').glob('*.yml'))


def all_facts():
    """(file, source, fact) of every fact; a fact of `shipped` holds for `sample` too (the sample renders what the chart's
    defaults render but where it sets otherwise: those facts say `sample: false`)."""
    for path in fact_files():
        document = yaml.safe_load(path.read_text())
        for fact in document['facts']:
            yield path.stem, document['source'], fact
            if fact['scenario'] == 'shipped' and fact.get('sample', True):
                yield path.stem, document['source'], dict(fact, scenario='sample')


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

def gpu_node(tmp_path, node):
    """What points the GPU node's stages at the captured H200 and the test's Node, and keeps them off this machine: the
    driver is validated from the capture, the container toolkit stage does nothing (container_toolkit_enabled false)."""
    smi = nvidia_smi_simulator(tmp_path / 'nvidia-smi', H200)
    return {'gpu_node_labels_node_name': node, 'gpu_node_labels_sysfs_root': str(H200 / 'sys'), 'gpu_node_labels_procfs_root': str(H200 / 'proc'),
            'gpu_node_labels_nvidia_smi': smi, 'nvidia_driver_enabled': False, 'nvidia_driver_sysfs_root': str(H200 / 'sys'),
            'nvidia_driver_procfs_root': str(H200 / 'proc'), 'nvidia_driver_nvidia_smi': smi,
            'nvidia_driver_validations_dir': str(tmp_path / 'validations'), 'container_toolkit_enabled': False,
            'gpu_cluster_validator_timeout': 30, 'gpu_cluster_validator_plugin_timeout': 30, 'gpu_cluster_validator_poll': 0.5}


def run_scenario(kube_api, tmp_path, scenario, namespace):
    """ansible-playbook with the scenario's inventory: site.yml for SITE (its output returned), else the cluster roles."""
    playbook = tmp_path / 'cluster.yml'
    playbook.write_text(yaml.safe_dump([{'hosts': 'kube_api', 'gather_facts': False,
                                         'roles': ['gpuops.gpu_operator.gpu_cluster_base', 'gpuops.gpu_operator.gpu_cluster_operands',
                                                   'gpuops.gpu_operator.gpu_cluster_validator']}]))
    env = kube_api.env()
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    env.update(ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_NOCOLOR='1')
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    # Only the namespace (a throw-away one), the validator's choice of Nodes (none but the run's) and the GPU node's
    # plumbing come from the command line; every setting under test is the scenario's YAML.
    names = {'gpu_cluster_base_namespace': namespace, 'gpu_cluster_operands_namespace': namespace,
             'gpu_cluster_validator_namespace': namespace, 'gpu_cluster_validator_node_selector': {'gpuops.test/parity': namespace},
             'gpu_cluster_validator_write_status': scenario in SITE, 'ansible_python_interpreter': sys.executable}
    command, double, node = [str(playbook)], contextlib.nullcontext(), None
    if scenario in SITE:
        node = unique('gpu-parity')
        names.update(gpu_node(tmp_path, node))
        command = [str(REPO / 'playbooks' / 'site.yml')]
        register_node(kube_api, node)
        double = KubeletDouble(kube_api.kubeconfig, namespace, {node: NodeScenario({'nvidia.com/gpu': 1})}, kube_api.standin.pod_logs)
    try:
        with double:
            result = subprocess.run([ansible, '-i', str(PARITY / 'scenarios' / scenario / 'hosts.yml'), *command, '-e', json.dumps(names)],
                                    env=env, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    finally:
        if node:
            delete_node(kube_api, node)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    return result.stdout


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
    """The scenario's namespace and our cluster-scoped objects (ClusterRoles, bindings, RuntimeClasses, the ClusterPolicy, NFD's
    CRDs) go."""
    dyn = DynamicClient(kube_api.api_client)
    for kind in ('ClusterRoleBinding', 'ClusterRole', 'RuntimeClass', 'ClusterPolicy', 'CustomResourceDefinition'):
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
        if scenario in SITE and kube_api.standin is None:
            continue  # its GPU node is this machine and its validator Pods the kubelet double's: the stand-in only
        namespace = unique('gpuops-parity')
        try:
            output = run_scenario(kube_api, tmp_path_factory.mktemp(scenario), scenario, namespace)
            dyn = DynamicClient(kube_api.api_client)  # discovered after the run: it created the ClusterPolicy CRD
            found[scenario] = dict((key, read(dyn, key[0], key[1].replace('$namespace', namespace), namespace)) for key in sorted(wanted[scenario]))
            found[scenario].update(namespace=namespace, output=output)
        finally:
            cleanup(kube_api, namespace)
    return found


def fact_id(item):
    return '%s: %s%s' % (item[0], item[2]['fact'], ' (sample)' if item[2]['scenario'] == 'sample' else '')


@pytest.mark.parametrize('item', list(all_facts()), ids=fact_id)
def test_fact(rendered, item):
    _file, _source, fact = item
    if fact['scenario'] not in rendered:
        pytest.skip('scenario %s goes through site.yml with a GPU node of the stand-in (KUBECONFIG names a real cluster)' % fact['scenario'])
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


def test_nvidias_inputs_go_through_site_yml(rendered):
    """The chart's values.yaml and the Operator's sample ClusterPolicy, unchanged: site.yml ends with nothing refused and
    nothing failed, the GPU node labelled, its driver validated and the node validated, the ClusterPolicy ready; the
    sample's metadata is said to be ignored."""
    for scenario in SITE:
        if scenario not in rendered:
            pytest.skip('the site.yml scenarios run on the stand-in only')
        words = ' '.join(rendered[scenario]['output'].split())
        assert re.search(r'localhost\s*: ok=\d+ changed=\d+ unreachable=0 failed=0', words), words[-3000:]
        assert re.search(r'gpu-a\s*: ok=\d+ changed=\d+ unreachable=0 failed=0', words), words[-3000:]
        assert re.search(r'gpu-a: .* Node gpu-parity-\w+ labelled, GPUs 1 x NVIDIA-H200, driver \S+ \(pre-installed\).*validation passed', words), words[-3000:]
        assert rendered[scenario][('ClusterPolicy', 'cluster-policy')]['status']['state'] == 'ready'
        assert ('metadata (name gpu-cluster-policy) is ignored' in words) is (scenario == 'sample'), scenario


def test_every_fact_names_its_source():
    for path in fact_files():
        document = yaml.safe_load(path.read_text())
        assert document['source']['release'] == 'v26.7.0' and re.match(r'^[0-9a-f]{40}$', document['source']['commit']), path.name
        assert 'SOURCE:' in path.read_text().split('\nsource:')[0], '%s: the header says where its facts come from' % path.name
        for fact in document['facts']:
            assert fact.get('source') and (PARITY / 'scenarios' / fact.get('scenario', '?') / 'hosts.yml').is_file() and fact.get('fact'), (path.name, fact)


def listed_deviations():
    """{id: its text} of the deviations docs/coming-from-gpu-operator.md lists (`- **deviation: <id>** - ...`)."""
    text = DOCS.read_text()
    return dict(re.findall(r'^- \*\*deviation: ([a-z-]+)\*\* - (.*?)(?=^- |^#|\Z)', text, re.M | re.S))


def test_every_deviation_is_explained_in_the_docs():
    """docs/coming-from-gpu-operator.md lists each deviation id a fact names."""
    deviations = sorted(set(fact['deviation'] for _file, _source, fact in all_facts() if 'deviation' in fact))
    assert deviations
    assert [item for item in deviations if item not in listed_deviations()] == []


def test_every_listed_deviation_is_checked():
    """A deviation the docs list is shown by a fact (which fails once it is stale), or, where no object shows it, its text
    names the test that checks it (`tests/...::test_name`, which exists)."""
    facts = set(fact['deviation'] for _file, _source, fact in all_facts() if 'deviation' in fact)
    listed = listed_deviations()
    assert len(listed) >= 14
    unchecked = []
    for name, text in listed.items():
        tests = re.findall(r'`(tests/[\w/]+\.py)::(\w+)`', text)
        if name not in facts and not [path for path, test in tests if 'def %s(' % test in (REPO / path).read_text()]:
            unchecked.append(name)
    assert unchecked == []
