"""k3s, RKE2, k0s and MicroK8s nodes: site.yml configures the NVIDIA runtime the way each distribution keeps its
containerd's configuration, real containerd loads it (with the default), the distribution's restart (its config
written anew) keeps it, the drift check finds the one node that lost it, and uninstall.yml gives every file back byte
for byte. One run of each playbook over the four nodes at once.

What is real: systemd, Debian's containerd (2.1 on sid for k3s, RKE2 and k0s, whose releases with these layouts ship
containerd 2; 1.7 on trixie for MicroK8s, as its v1.33 ships 1.7.27), every playbook and module, the configs' contents
(tests/fixtures/distributions/SOURCE.md says where each comes from). What is laid out to look like the distribution
(tests/lab/distributions/layout.sh): the paths, the socket, the program path (a link to Debian's containerd), a unit of
the distribution's name (k3s.service, rke2-agent.service, k0sworker.service, snap.microk8s.daemon-containerd.service)
whose start writes the config anew (k3s and RKE2 from their base, with the nvidia runtime they find at start; k0s while
it manages the file; MicroK8s's sed of its template) and then runs that containerd. No k3s, RKE2, k0s or MicroK8s
program runs. The second part, cheap: each distribution's config as the collection leaves it, loaded by real containerd
1.7 and 2.1 in `podman run --rm` of the lab images.

The nodes are served the H200 capture (driver pre-installed: the driver stage only validates); the validation play is
skipped (the stand-in runs no Pods). What each run took is printed and kept in .build/distributions/timings.json.
"""
import json
import subprocess
import time

import pytest
import yaml

from tests.cluster.helpers import REPO
from tests.lab.labtest import ANSIBLE_PLAYBOOK, LAB_INVENTORY, named_lab_nodes, playbook_environment, run

PREFIX = 'gpuops-dist-'
FIXTURES = REPO / 'tests' / 'fixtures' / 'distributions'
LIB = '/usr/local/lib/gpuops-lab/distributions'
RESULTS = REPO / '.build' / 'distributions'
RUNTIME = '/usr/bin/nvidia-container-runtime'
# distribution -> (lab image, the unit that runs its containerd, the config it is started with, its program, the files
# the collection may write or regenerate there).
NODES = {
    'k3s': ('sid', 'k3s.service', '/var/lib/rancher/k3s/agent/etc/containerd/config.toml',
            '/var/lib/rancher/k3s/data/current/bin/containerd', '/var/lib/rancher/k3s/agent/etc/containerd'),
    'rke2': ('sid', 'rke2-agent.service', '/var/lib/rancher/rke2/agent/etc/containerd/config.toml',
             '/var/lib/rancher/rke2/bin/containerd', '/var/lib/rancher/rke2/agent/etc/containerd'),
    'k0s': ('sid', 'k0sworker.service', '/etc/k0s/containerd.toml', '/var/lib/k0s/bin/containerd', '/etc/k0s'),
    'microk8s': ('trixie', 'snap.microk8s.daemon-containerd.service', '/var/snap/microk8s/current/args/containerd.toml',
                 '/snap/microk8s/current/bin/containerd', '/var/snap/microk8s/current/args'),
}
DRIFTED = PREFIX + 'k0s'
K0S_DROP_IN = '/etc/k0s/containerd.d/99-nvidia.toml'

# The support matrix rows this module proves (tools/support_matrix.py collects them into the README).
SUPPORT_MATRIX = [
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'k3s', 'evidence': 'tested with captured or simulated parts',
     'how': 'laid-out node, real containerd: site.yml, restart, drift check, uninstall.yml byte for byte',
     'test': 'tests/lab/test_distributions_lab.py::test_each_distribution_keeps_the_runtime_through_its_restart_and_uninstall'},
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'RKE2', 'evidence': 'tested with captured or simulated parts',
     'how': 'laid-out node, real containerd: site.yml, restart, drift check, uninstall.yml byte for byte',
     'test': 'tests/lab/test_distributions_lab.py::test_each_distribution_keeps_the_runtime_through_its_restart_and_uninstall'},
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'k0s', 'evidence': 'tested with captured or simulated parts',
     'how': 'laid-out node, real containerd: site.yml, restart, drift check, uninstall.yml byte for byte',
     'test': 'tests/lab/test_distributions_lab.py::test_each_distribution_keeps_the_runtime_through_its_restart_and_uninstall'},
    {'os': 'Debian trixie', 'runtime': 'containerd 1.7', 'distribution': 'MicroK8s', 'evidence': 'tested with captured or simulated parts',
     'how': 'laid-out node, real containerd: site.yml, restart, drift check, uninstall.yml byte for byte',
     'test': 'tests/lab/test_distributions_lab.py::test_each_distribution_keeps_the_runtime_through_its_restart_and_uninstall'},
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'k3s', 'evidence': 'tested with captured or simulated parts',
     'how': "its config with the collection's drop-in or template edit, loaded by real containerd",
     'test': 'tests/lab/test_distributions_lab.py::test_real_containerd_loads_each_distribution_s_config'},
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'RKE2', 'evidence': 'tested with captured or simulated parts',
     'how': "its config with the collection's drop-in or template edit, loaded by real containerd",
     'test': 'tests/lab/test_distributions_lab.py::test_real_containerd_loads_each_distribution_s_config'},
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'k0s', 'evidence': 'tested with captured or simulated parts',
     'how': "its config with the collection's drop-in or template edit, loaded by real containerd",
     'test': 'tests/lab/test_distributions_lab.py::test_real_containerd_loads_each_distribution_s_config'},
    {'os': 'Debian trixie', 'runtime': 'containerd 1.7', 'distribution': 'MicroK8s', 'evidence': 'tested with captured or simulated parts',
     'how': "its config with the collection's drop-in or template edit, loaded by real containerd",
     'test': 'tests/lab/test_distributions_lab.py::test_real_containerd_loads_each_distribution_s_config'},
    {'os': 'Debian sid', 'runtime': 'containerd 2.1', 'distribution': 'MicroK8s', 'evidence': 'tested with captured or simulated parts',
     'how': "its config with the collection's drop-in or template edit, loaded by real containerd",
     'test': 'tests/lab/test_distributions_lab.py::test_real_containerd_loads_each_distribution_s_config'},
]


def on(name, *argv, check=True):
    result = subprocess.run(['podman', 'exec', name, *argv], capture_output=True, text=True, check=False, timeout=120)
    assert not check or result.returncode == 0, f'{name}: {argv}: {result.stdout}{result.stderr}'
    return result


def files(name, directory):
    """Every file under the distribution's directory and its bytes' hash (directories too), as the node has them."""
    out = on(name, 'sh', '-c', f'cd {directory} && find . | sort | while read f; do if [ -f "$f" ]; then echo "$f $(sha256sum < "$f")"; '
                               f'else echo "$f dir"; fi; done').stdout
    return out.splitlines()


def dump(name, distribution):
    """containerd's own reading of the config the distribution's containerd is started with: (runtimes, default)."""
    _image, _unit, config, program, _directory = NODES[distribution]
    text = on(name, program, '--config', config, 'config', 'dump').stdout
    return runtimes_of(text)


def runtimes_of(text):
    import tomllib  # pylint: disable=import-outside-toplevel
    doc = tomllib.loads(text)
    plugins = doc['plugins']
    cri = plugins.get('io.containerd.cri.v1.runtime') or plugins['io.containerd.grpc.v1.cri']
    runtimes = cri['containerd']['runtimes']
    return ({runtime: (table.get('options') or {}).get('BinaryName') for runtime, table in runtimes.items()},
            cri['containerd'].get('default_runtime_name'))


def main_pid(name, unit):
    return on(name, 'systemctl', 'show', '--property=MainPID', '--value', unit).stdout.strip()


def playbook(kubeconfig, inventory, name, *args, **env):
    result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), f'playbooks/{name}', *args], capture_output=True, text=True,
                            check=False, cwd=REPO, env=playbook_environment(kubeconfig, **env), timeout=900)
    return result.returncode, result.stdout + result.stderr


@pytest.fixture(name='lab')
def fixture_lab(tmp_path):
    """(kubeconfig, inventory): the four nodes laid out as their distributions, their Nodes on a stand-in of its own."""
    names = {PREFIX + distribution: (image, 'h200-x1') for distribution, (image, *_rest) in NODES.items()}
    with named_lab_nodes(tmp_path, names) as (kubeconfig, _kube):
        def lay_out(distribution):
            name = PREFIX + distribution
            on(name, 'mkdir', '-p', LIB)
            for path in sorted(FIXTURES.glob('*.toml')) + [REPO / 'tests' / 'lab' / 'distributions' / 'layout.sh']:
                run('podman', 'cp', str(path), f'{name}:{LIB}/')
            # The toolkit's packages are out of the lab's reach: a program at the runtime's path (k3s and RKE2 find it at start).
            on(name, 'sh', '-c', f"printf '#!/bin/sh\\nexit 1\\n' > {RUNTIME} && chmod 755 {RUNTIME}")
            on(name, 'sh', f'{LIB}/layout.sh', distribution)
        import concurrent.futures  # pylint: disable=import-outside-toplevel
        with concurrent.futures.ThreadPoolExecutor(len(NODES)) as pool:
            list(pool.map(lay_out, NODES))
        inventory = yaml.safe_load(LAB_INVENTORY.read_text())
        gpu_nodes = inventory['all']['children']['gpu_nodes']
        sid = [hostvars for hostvars in gpu_nodes['hosts'].values() if hostvars['gpuops_lab_distro'] == 'sid'][0]
        gpu_nodes['hosts'] = {name: dict(sid, gpuops_lab_distro=image) for name, (image, _fixture) in names.items()}
        path = tmp_path / 'hosts.yml'
        path.write_text(yaml.safe_dump(inventory))
        yield kubeconfig, path


def test_each_distribution_keeps_the_runtime_through_its_restart_and_uninstall(lab, tmp_path):
    kubeconfig, inventory = lab
    took = {}
    before = {distribution: files(PREFIX + distribution, NODES[distribution][4]) for distribution in NODES}
    # k3s and RKE2 found the program at start: the runtime is theirs already, not the default.
    for distribution in ('k3s', 'rke2'):
        assert dump(PREFIX + distribution, distribution) == ({'runc': '', 'nvidia': RUNTIME}, 'runc')
    pids = {distribution: main_pid(PREFIX + distribution, NODES[distribution][1]) for distribution in NODES}

    started = time.monotonic()
    rc, out = playbook(kubeconfig, inventory, 'site.yml', '--skip-tags', 'validation')
    took['site_s'] = round(time.monotonic() - started)
    assert rc == 0, out[-8000:]
    for distribution, (_image, unit, config, _program, directory) in NODES.items():
        name = PREFIX + distribution
        runtimes, default = dump(name, distribution)
        assert (runtimes.get('nvidia'), default) == (RUNTIME, 'nvidia'), (distribution, runtimes, default)
        assert main_pid(name, unit) != pids[distribution], f'{unit} was restarted'
        assert on(name, 'cat', '/run/nvidia/validations/toolkit-ready').stdout.startswith('runtime=containerd\n')
        if distribution != 'microk8s':
            # The generated config is the distribution's own: the runtime is in the drop-in it imports.
            assert [line for line in files(name, directory) if line.startswith('./' + config.rsplit('/', 1)[1] + ' ')] == [
                line for line in before[distribution] if line.startswith('./' + config.rsplit('/', 1)[1] + ' ')], distribution

    # The distribution's restart writes its config anew: the runtime and the default stay.
    for distribution, (_image, unit, *_rest) in NODES.items():
        on(PREFIX + distribution, 'systemctl', 'restart', unit)
        assert dump(PREFIX + distribution, distribution)[1] == 'nvidia', distribution

    # The drift check: k0s lost its drop-in (someone removed it); only that node drifts, in the container toolkit stage.
    on(DRIFTED, 'rm', K0S_DROP_IN)
    report = tmp_path / 'drift.json'
    started = time.monotonic()
    rc, out = playbook(kubeconfig, inventory, 'site.yml', '--skip-tags', 'validation', '--check', '--diff',
                       ANSIBLE_CALLBACKS_ENABLED='gpuops.gpu_operator.drift_report', GPUOPS_DRIFT_REPORT_PATH=str(report))
    took['drift_check_s'] = round(time.monotonic() - started)
    assert rc == 0, out[-8000:]
    hosts = json.loads(report.read_text())['hosts']
    assert {host: entry['status'] for host, entry in hosts.items()} == dict(
        {'localhost': 'no drift', DRIFTED: 'drift'}, **{PREFIX + d: 'no drift' for d in NODES if PREFIX + d != DRIFTED}), hosts
    assert list(hosts[DRIFTED]['stages']) == ['container_toolkit'], hosts[DRIFTED]
    assert on(DRIFTED, 'test', '-e', K0S_DROP_IN, check=False).returncode == 1, 'the check run repairs nothing'

    started = time.monotonic()
    rc, out = playbook(kubeconfig, inventory, 'uninstall.yml')
    took['uninstall_s'] = round(time.monotonic() - started)
    assert rc == 0, out[-8000:]
    for distribution, (_image, unit, *rest) in NODES.items():
        name = PREFIX + distribution
        assert files(name, rest[2]) == before[distribution], distribution
        on(name, 'systemctl', 'restart', unit)
        assert files(name, rest[2]) == before[distribution], f'{distribution}, written anew'
        assert dump(name, distribution)[1] in (None, 'runc'), distribution

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / 'timings.json').write_text(json.dumps(took, indent=2) + '\n')
    print(f'\ndistribution lab runs: {took}')


def collection_output(distribution, cdi):
    """{path on the node: bytes}: the distribution's config (or template, rendered as the distribution renders it) and
    what the collection's containerd module writes for it (present, default and, with `cdi`, the CDI runtimes), planned
    in memory from the fixtures as a run on that node would."""
    # pylint: disable=import-outside-toplevel
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_runtime, distributions
    from tests.unit.plugins.module_utils.toolkit.containerd_node import MemoryNode
    layout = distributions.LAYOUTS[distribution]
    source = (FIXTURES / {'microk8s': 'microk8s-containerd-template.toml', 'k0s': 'k0s-containerd.toml'}.get(
        distribution, f'{distribution}-config.toml')).read_bytes()
    found = distributions.facts(distribution, {}, source.decode(), systemd=False)
    params = dict(path=found['path'], drop_in=found['drop_in'], generated=found['generated'], config_source='file', state='present',
                  runtime_name='nvidia', runtime_binary=RUNTIME, variants=['cdi', 'legacy'] if cdi else [], set_as_default=True,
                  enable_cdi=cdi, backup=False, containerd='containerd', verify_path=None)
    current = {found['path']: source, found['drop_in']: None} if found['drop_in'] else {found['path']: source}
    plan = containerd_runtime.plan(params, current, MemoryNode(files=current, containerd_version=(2, 1)))
    written = {path: data for path, data in plan.desired.items() if data is not None and not path.endswith('.json')}
    if distribution == 'microk8s':
        # run-containerd-with-args' sed, as the layout's stand-in does it.
        text = written.pop(layout['template']).decode()
        for key, value in (('${SNAP}', '/snap/microk8s/current'), ('${SNAP_DATA}', '/var/snap/microk8s/current'),
                           ('${SNAPSHOTTER}', 'overlayfs'), ('${RUNTIME}', 'runc'), ('${RUNTIME_TYPE}', 'io.containerd.runc.v2')):
            text = text.replace(key, value)
        written[layout['config']] = text.encode()
    return written


@pytest.mark.parametrize('distribution, image', [('k3s', 'sid'), ('rke2', 'sid'), ('k0s', 'sid'), ('microk8s', 'trixie'), ('microk8s', 'sid')])
@pytest.mark.parametrize('cdi', [False, True])
def test_real_containerd_loads_each_distribution_s_config(tmp_path, distribution, image, cdi):
    """`containerd --config <the config the distribution starts it with> config dump` in `podman run --rm` of a lab
    image, with the collection's drop-in (or template edit) mounted where the distribution has it: the nvidia runtime(s)
    with their programs, and nvidia the default."""
    # pylint: disable=import-outside-toplevel
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import distributions
    mounts = []
    for number, (path, data) in enumerate(sorted(collection_output(distribution, cdi).items())):
        (tmp_path / str(number)).write_bytes(data)
        mounts.append(f'--volume={tmp_path / str(number)}:{path}:ro')
    config = distributions.LAYOUTS[distribution]['config']
    text = run('podman', 'run', '--rm', *mounts, f'localhost/gpuops-lab:{image}', 'containerd', '--config', config, 'config', 'dump')
    runtimes, default = runtimes_of(text)
    expected = {'nvidia': RUNTIME, **({'nvidia-cdi': RUNTIME + '.cdi', 'nvidia-legacy': RUNTIME + '.legacy'} if cdi else {})}
    assert {name: runtimes.get(name) for name in expected} == expected and default == 'nvidia', (runtimes, default)
