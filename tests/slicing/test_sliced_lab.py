"""AWX job slicing on the lab: site.yml, doctor.yml and uninstall.yml run on three disjoint slices of the lab inventory,
the slices at the same time as AWX runs them, and end where one unsliced run ends.

The slices are made as AWX makes them (awx_slices). Only the first slice holds the kube_api host; the others reach the
API from the controller (playbooks/kube_api_host.yml). The runs, in order, from fresh lab nodes:
1. site.yml sliced, then a snapshot of the nodes (their containerd config, its undo record, their packages) and of
   every API object this collection writes;
2. doctor.yml sliced: each slice's report holds its own nodes, with the findings of one unsliced doctor run;
3. uninstall.yml sliced: the snapshot equals the one taken before anything ran (byte for byte on the nodes);
4. site.yml unsliced: the snapshot equals the sliced run's.
The validation play is skipped (--skip-tags validation): the stand-in runs no Pods (tests/cluster/test_gpu_validation.py
runs sliced validation with a test kubelet). A lab test like `make demo`: lab nodes (podman, named gpuops-slice-<distro>,
removed afterwards) from the lab images (`make images`) and a stand-in of its own. The seconds each run took are
printed and kept in .build/slicing/timings.json.
"""
import concurrent.futures
import copy
import json
import subprocess
import time

import pytest
import yaml

from tests.cluster.helpers import REPO, raw
from tests.lab.labtest import ANSIBLE_PLAYBOOK, lab_inventory, lab_nodes, playbook_environment, run

PREFIX = 'gpuops-slice-'
DISTROS = ('bookworm', 'trixie', 'sid')
SLICES = 3
NAMESPACE = 'gpu-operator'
RESULTS = REPO / '.build' / 'slicing'
NODE_FILES = ('/etc/containerd/config.toml', '/etc/containerd/config.toml.gpuops-nvidia-runtime.json')
# Every object this collection writes, by its list path; a Node is compared by its labels and annotations only (its
# status is the kubelet's).
API_LISTS = ('/api/v1/namespaces', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', '/apis/node.k8s.io/v1/runtimeclasses',
             '/apis/rbac.authorization.k8s.io/v1/clusterroles', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
             f'/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets', f'/api/v1/namespaces/{NAMESPACE}/configmaps',
             f'/api/v1/namespaces/{NAMESPACE}/serviceaccounts', f'/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/roles',
             f'/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/rolebindings', '/apis/nvidia.com/v1/clusterpolicies')
# What the API server sets on every write: not part of what a run leaves.
SERVER_FIELDS = ('resourceVersion', 'uid', 'creationTimestamp', 'managedFields', 'generation', 'selfLink')
# The support matrix rows this module proves (tools/support_matrix.py collects them into the README).
SUPPORT_MATRIX = [
    {'os': 'Debian bookworm', 'runtime': 'containerd 1.6', 'distribution': 'none (containerd.service)', 'evidence': 'proven on real parts',
     'how': "lab node, the OS's own containerd: site.yml, doctor.yml, uninstall.yml byte for byte",
     'test': 'tests/slicing/test_sliced_lab.py::test_sliced_runs_end_as_one_unsliced_run'},
    {'os': 'Debian trixie', 'runtime': 'containerd 1.7', 'distribution': 'none (containerd.service)', 'evidence': 'proven on real parts',
     'how': "lab node, the OS's own containerd: site.yml, doctor.yml, uninstall.yml byte for byte",
     'test': 'tests/slicing/test_sliced_lab.py::test_sliced_runs_end_as_one_unsliced_run'},
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'none (containerd.service)', 'evidence': 'proven on real parts',
     'how': "lab node, the OS's own containerd: site.yml, doctor.yml, uninstall.yml byte for byte",
     'test': 'tests/slicing/test_sliced_lab.py::test_sliced_runs_end_as_one_unsliced_run'},
]


def awx_slices(inventory, count):
    """The inventory (YAML inventory form) as AWX hands it to each of `count` slice jobs.

    SOURCE: ansible/awx awx/main/models/inventory.py, Inventory.get_script_data and get_sliced_hosts (commit
    e21dd0a0933fd544d1fe2513c54fe41203775eb5): the hosts are ordered by name and slice i (1-based) gets hosts[i-1::count];
    a group lists only that slice's hosts, keeps its variables and its children, and stays when it is left empty.
    """
    hostvars = {}

    def collect(group):
        hostvars.update(group.get('hosts') or {})
        for child in (group.get('children') or {}).values():
            collect(child or {})

    collect(inventory['all'])
    names = sorted(hostvars)

    def keep(group, chosen):
        kept = {key: copy.deepcopy(value) for key, value in group.items() if key == 'vars'}
        kept['hosts'] = {name: copy.deepcopy(hostvars[name]) for name in group.get('hosts') or {} if name in chosen}
        kept['children'] = {name: keep(child or {}, chosen) for name, child in (group.get('children') or {}).items()}
        return kept

    return [{'all': keep(inventory['all'], set(names[number::count]))} for number in range(count)]


def test_awx_slices_like_awx():
    """Hosts by name, every count-th one; groups keep their variables, empty ones stay; each host in one slice only."""
    inventory = {'all': {'vars': {'a': 1}, 'children': {
        'kube_api': {'hosts': {'localhost': {'ansible_connection': 'local'}}, 'vars': {'k': 2}},
        'gpu_nodes': {'vars': {'g': 3}, 'hosts': {'n3': None, 'n1': {'x': 1}, 'n2': None}}}}}
    slices = awx_slices(inventory, 3)
    hosts = [{name: sorted(group['hosts']) for name, group in one['all']['children'].items()} for one in slices]
    # By name: localhost, n1, n2, n3.
    assert hosts == [{'kube_api': ['localhost'], 'gpu_nodes': ['n3']}, {'kube_api': [], 'gpu_nodes': ['n1']},
                     {'kube_api': [], 'gpu_nodes': ['n2']}]
    assert all(one['all']['vars'] == {'a': 1} and one['all']['children']['kube_api']['vars'] == {'k': 2}
               and one['all']['children']['gpu_nodes']['vars'] == {'g': 3} for one in slices)
    assert slices[1]['all']['children']['gpu_nodes']['hosts'] == {'n1': {'x': 1}}


def playbook(kubeconfig, inventory, name, *args):
    """ansible-playbook NAME on the inventory file; (return code, output)."""
    result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), f'playbooks/{name}', '--skip-tags', 'validation', *args],
                            capture_output=True, text=True, check=False, cwd=REPO, env=playbook_environment(kubeconfig), timeout=900)
    return result.returncode, result.stdout + result.stderr


def sliced(kubeconfig, slices, name, *args):
    """The playbook on every slice at the same time, as AWX runs a sliced job; the outputs, each run passed."""
    with concurrent.futures.ThreadPoolExecutor(len(slices)) as pool:
        results = list(pool.map(lambda inventory: playbook(kubeconfig, inventory, name, *args), slices))
    for number, (code, out) in enumerate(results, 1):
        assert code == 0, f'slice {number} of {name}: {out[-6000:]}'
    return [out for _code, out in results]


def node_state(name):
    """The node's files this collection writes (None: absent) and its package list."""
    files = {path: run('podman', 'exec', name, 'sh', '-c', f'test -e {path} && sha256sum {path} || echo absent').split()[0] for path in NODE_FILES}
    packages = run('podman', 'exec', name, 'dpkg-query', '-W', '-f', '${Package}=${Version} ${Status}\\n')
    return {'files': files, 'packages': sorted(packages.splitlines())}


def api_state(kube):
    """Every object this collection writes, without what the API server sets; each Node's labels and annotations."""
    found = {}
    for path in API_LISTS:
        code, body = raw(kube, 'GET', path)
        assert code in (200, 404), (path, body)
        items = body.get('items', []) if code == 200 else []
        for item in items:
            for field in SERVER_FIELDS:
                item['metadata'].pop(field, None)
            for condition in (item.get('status') or {}).get('conditions') or []:
                condition.pop('lastTransitionTime', None)
        found[path] = sorted(items, key=lambda item: item['metadata']['name'])
    code, nodes = raw(kube, 'GET', '/api/v1/nodes')
    assert code == 200, nodes
    found['nodes'] = {node['metadata']['name']: {'labels': node['metadata'].get('labels') or {},
                                                 'annotations': node['metadata'].get('annotations') or {}} for node in nodes['items']}
    return found


def snapshot(kube, names):
    return {'nodes': {name: node_state(name) for name in names}, 'api': api_state(kube)}


def differences(got, expected):
    """What differs, readably: per node its files and the packages added or gone; per API list or Node, both sides."""
    found = {}
    for name in set(expected['nodes']) | set(got['nodes']):
        mine, theirs = got['nodes'].get(name, {}), expected['nodes'].get(name, {})
        if mine.get('files') != theirs.get('files'):
            found[f'{name} files'] = {'got': mine.get('files'), 'expected': theirs.get('files')}
        added = sorted(set(mine.get('packages', [])) - set(theirs.get('packages', [])))
        gone = sorted(set(theirs.get('packages', [])) - set(mine.get('packages', [])))
        if added or gone:
            found[f'{name} packages'] = {'added': added, 'gone': gone}
    for key in set(expected['api']) | set(got['api']):
        if got['api'].get(key) != expected['api'].get(key):
            found[f'api {key}'] = {'got': got['api'].get(key), 'expected': expected['api'].get(key)}
    return found


def assert_same(got, expected, what):
    """Equal, or the test shows what differs."""
    if got != expected:
        pytest.fail(f'{what}: differs:\n{json.dumps(differences(got, expected), indent=1)[:6000]}')


def doctor_nodes(kubeconfig, inventories, tmp_path, tag):
    """Each doctor run's node entries (host -> its findings' checks and severities), run on the inventories at once."""
    reports = [tmp_path / f'doctor-{tag}-{number}.json' for number in range(len(inventories))]
    with concurrent.futures.ThreadPoolExecutor(len(inventories)) as pool:
        results = list(pool.map(lambda pair: playbook(kubeconfig, pair[0], 'doctor.yml', '-e', f'doctor_report_path={pair[1]}'),
                                zip(inventories, reports)))
    for (code, out) in results:
        assert code == 0, out[-6000:]
    found = []
    for report in reports:
        nodes = json.loads(report.read_text())['nodes']
        found.append({host: sorted((f['check'], f['severity']) for f in node['findings']) for host, node in nodes.items()})
    return found


@pytest.fixture(name='lab')
def fixture_lab(tmp_path):
    """(kubeconfig, Kube): a stand-in of its own with the nodes' Nodes, and the lab nodes running; all gone afterwards."""
    with lab_nodes(tmp_path, PREFIX, DISTROS) as lab:
        yield lab


def test_sliced_runs_end_as_one_unsliced_run(lab, tmp_path):
    kubeconfig, kube = lab
    names = sorted(PREFIX + distro for distro in DISTROS)
    whole = tmp_path / 'hosts.yml'
    whole.write_text(yaml.safe_dump(lab_inventory(PREFIX)))
    slices = []
    for number, inventory in enumerate(awx_slices(lab_inventory(PREFIX), SLICES), 1):
        slices.append(tmp_path / f'slice-{number}.yml')
        slices[-1].write_text(yaml.safe_dump(inventory))
    # Hosts by name: gpuops-slice-bookworm, -sid, -trixie, localhost; localhost (kube_api) falls in the first slice.
    assert [sorted(yaml.safe_load(path.read_text())['all']['children']['gpu_nodes']['hosts']) for path in slices] == [[name] for name in names]
    took = {}
    before = snapshot(kube, names)

    started = time.monotonic()
    outs = sliced(kubeconfig, slices, 'site.yml')
    took['site_sliced_s'] = round(time.monotonic() - started)
    # The slices without the kube_api host ran the cluster plays from the controller; the first used its own.
    assert 'kube-api-controller' not in outs[0] and all('ok: [kube-api-controller]' in out for out in outs[1:]), outs
    after_sliced_site = snapshot(kube, names)
    assert after_sliced_site != before
    for name in names:
        labels = after_sliced_site['api']['nodes'][name]['labels']
        assert labels.get('nvidia.com/gpu.present') == 'true', (name, labels)

    # The doctor, sliced: each slice reports its own node, with what one unsliced run finds there.
    started = time.monotonic()
    per_slice = doctor_nodes(kubeconfig, slices, tmp_path, 'sliced')
    took['doctor_sliced_s'] = round(time.monotonic() - started)
    assert [sorted(nodes) for nodes in per_slice] == [[name] for name in names], per_slice
    whole_report = doctor_nodes(kubeconfig, [whole], tmp_path, 'whole')[0]
    joined = {host: checks for nodes in per_slice for host, checks in nodes.items()}
    assert joined == whole_report, f'sliced: {joined}\nunsliced: {whole_report}'
    assert_same(snapshot(kube, names), after_sliced_site, 'after the doctor (it must change nothing)')

    # Uninstall, sliced: back to where the lab started, byte for byte on the nodes.
    started = time.monotonic()
    sliced(kubeconfig, slices, 'uninstall.yml')
    took['uninstall_sliced_s'] = round(time.monotonic() - started)
    assert_same(snapshot(kube, names), before, 'after the sliced uninstall, compared with before site.yml')

    # One unsliced run from there ends where the sliced run ended.
    started = time.monotonic()
    code, out = playbook(kubeconfig, whole, 'site.yml')
    took['site_unsliced_s'] = round(time.monotonic() - started)
    assert code == 0, out[-6000:]
    assert 'kube-api-controller' not in out
    assert_same(snapshot(kube, names), after_sliced_site, 'after one unsliced site.yml, compared with the sliced one')

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / 'timings.json').write_text(json.dumps(took, indent=2) + '\n')
    print(f'\nsliced lab runs: {took}')
