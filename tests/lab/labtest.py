"""What the lab tests (tests/drift, tests/eda, tests/slicing) share: commands that must succeed, an API client on the
stand-in, ansible-playbook's environment, the lab inventory with its nodes renamed, and lab nodes with a stand-in of
their own that are gone afterwards."""
import concurrent.futures
import contextlib
import os
import subprocess
import sys

import yaml

from tests.cluster.helpers import REPO
from tests.standin.runner import BackgroundStandin, write_kubeconfig

LABCTL = REPO / 'tests' / 'lab' / 'labctl.py'
LAB_INVENTORY = REPO / 'inventory' / 'lab' / 'hosts.yml'
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def run(*args, **kwargs):
    """The command's output; the test fails with its output when it does."""
    kwargs.setdefault('timeout', 300)
    result = subprocess.run(args, capture_output=True, text=True, check=False, cwd=REPO, **kwargs)
    assert result.returncode == 0, f'{args}: {result.stdout}{result.stderr}'
    return result.stdout


class Kube:
    """What tests.cluster.helpers.raw needs: an ApiClient on the stand-in."""

    def __init__(self, kubeconfig):
        import kubernetes  # pylint: disable=import-outside-toplevel
        self.api_client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))


def playbook_environment(kubeconfig, **extra):
    """ansible-playbook's environment in a lab test: the stand-in's kubeconfig, the repository's ansible.cfg and
    collections, the venv's commands first."""
    return dict(os.environ, K8S_AUTH_KUBECONFIG=str(kubeconfig), ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
                ANSIBLE_COLLECTIONS_PATH=os.environ.get('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections')),
                PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'], **extra)


def lab_fixtures():
    """distro -> the GPU fixture inventory/lab/hosts.yml serves its lab node (None: no capture)."""
    lab = yaml.safe_load(LAB_INVENTORY.read_text())['all']['children']['gpu_nodes']['hosts'].values()
    return {hostvars['gpuops_lab_distro']: hostvars.get('gpuops_lab_fixture') for hostvars in lab}


def lab_inventory(prefix):
    """inventory/lab/hosts.yml with its lab nodes renamed <prefix><distro>: the same groups and variables."""
    lab = yaml.safe_load(LAB_INVENTORY.read_text())
    nodes = lab['all']['children']['gpu_nodes']
    nodes['hosts'] = {prefix + hostvars['gpuops_lab_distro']: hostvars for hostvars in nodes['hosts'].values()}
    return lab


@contextlib.contextmanager
def lab_nodes(tmp_path, prefix, distros, register=True, systemd=True):
    """(kubeconfig, Kube): a stand-in of its own (with a Node per lab node when `register`) and the lab nodes
    <prefix><distro> running, each served its lab fixture (without `systemd`: PID 1 is not systemd, containerd runs as a
    plain process, labctl.py up --no-systemd); all gone afterwards."""
    fixtures = lab_fixtures()
    with named_lab_nodes(tmp_path, {prefix + distro: (distro, fixtures[distro]) for distro in distros}, register, systemd) as lab:
        yield lab


@contextlib.contextmanager
def named_lab_nodes(tmp_path, nodes, register=True, systemd=True):
    """lab_nodes() of `nodes`: name -> (distro, GPU fixture or None), started at once."""
    names = list(nodes)
    standin = BackgroundStandin(nodes=names if register else ())
    kubeconfig = tmp_path / 'kubeconfig'
    write_kubeconfig(str(kubeconfig), standin.start())

    def down():
        subprocess.run([sys.executable, str(LABCTL), 'down', *names], capture_output=True, check=False, cwd=REPO, timeout=120)

    down()
    try:
        with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(lambda name: run(sys.executable, str(LABCTL), 'up', name, '--distro', nodes[name][0],
                                           *(['--fixture', f'tests/fixtures/gpus/{nodes[name][1]}'] if nodes[name][1] else []),
                                           *([] if systemd else ['--no-systemd'])),
                          names))
        yield kubeconfig, Kube(kubeconfig)
    finally:
        down()
        standin.stop()
