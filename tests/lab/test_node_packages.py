"""The container toolkit role installs its packages with APT and dnf, and uninstall.yml removes what it installed there.

What is real and what is not: each node is a bookworm lab container (PID 1 `sleep infinity`, no systemd) dressed as
another distribution (package_managers/SOURCE.md): the release files of Rocky Linux 8.3, Fedora 31 or openSUSE Leap 15.1
(ansible's own distribution fixtures) and that distribution's package manager program where it has it (a stub that is
never run), so that ansible's own fact gathering (the role's `setup`, the uninstall playbook's) finds dnf, dnf5 or
zypper; the test checks the node's facts first. The role's tasks, the repository file ansible.builtin.yum_repository
writes, the role's record and uninstall.yml are real; the dnf and dnf5 modules that ansible.builtin.package hands the
work to are test doubles that record what they were asked to install or remove. No package is downloaded or installed.

One node is the bookworm lab container as it is (Debian, APT), without python3-debian, as minimal images are: the role
writes NVIDIA's APT source and key as plain files, with the key from a file:// URL the test lays out on the node (the
apt module is the double, so APT never reads that key: its content is a stand-in, not NVIDIA's key).

The nodes lack the toolkit and python3-tomlkit, as the role's detect step (container_runtime_info) reports them: Rocky
gets NVIDIA's repository (the role's default), Fedora a mirror its inventory names, Debian a mirror with its key,
openSUSE stops the role with the packages to install another way.
"""
import concurrent.futures
import configparser
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cluster.helpers import REPO
from tests.lab import labctl
from tests.lab.labtest import ANSIBLE_PLAYBOOK, playbook_environment

HERE = REPO / 'tests' / 'lab' / 'package_managers'
REPO_FILE = '/etc/yum.repos.d/nvidia-container-toolkit.repo'
APT_SOURCES = '/etc/apt/sources.list.d/nvidia-container-toolkit.sources'
APT_KEY = '/usr/share/keyrings/nvidia-container-toolkit.asc'
APT_MIRROR = 'file:///srv/mirror/nvidia-container-toolkit/deb/$(ARCH)'
KEY_SOURCE = '/srv/mirror/nvidia-container-toolkit/gpgkey'
KEY = 'a stand-in for the repository key: the apt module is a test double here and APT never reads it\n'
RECORD = '/var/lib/gpuops/container_toolkit-python3-tomlkit'
CALLS = '/var/lib/gpuops-lab/package-calls.jsonl'
MIRROR = 'file:///srv/mirror/nvidia-container-toolkit/rpm/$basearch'
# The support matrix rows this module proves (tools/support_matrix.py collects them into the README): the container
# toolkit's package install and its removal only; no runtime is configured here.
SUPPORT_MATRIX = [
    {'os': 'Debian (APT), without python3-debian', 'runtime': 'any', 'distribution': 'any', 'evidence': 'tested with captured or simulated parts',
     'how': "toolkit packages, NVIDIA's APT source and its key installed and removed; a bookworm lab container, apt a test double",
     'test': ('tests/lab/test_node_packages.py::'
              'test_the_role_installs_with_apt_and_dnf_and_uninstall_removes_what_it_installed')},
    {'os': 'RHEL family 8 (dnf)', 'runtime': 'any', 'distribution': 'any', 'evidence': 'tested with captured or simulated parts',
     'how': 'toolkit packages and repository installed and removed; a lab container dressed as Rocky 8.3, dnf a test double',
     'test': ('tests/lab/test_node_packages.py::'
              'test_the_role_installs_with_apt_and_dnf_and_uninstall_removes_what_it_installed')},
    {'os': 'Fedora (dnf5)', 'runtime': 'any', 'distribution': 'any', 'evidence': 'tested with captured or simulated parts',
     'how': 'toolkit packages from a mirror installed and removed; a lab container dressed as Fedora, dnf5 a test double',
     'test': ('tests/lab/test_node_packages.py::'
              'test_the_role_installs_with_apt_and_dnf_and_uninstall_removes_what_it_installed')},
    {'os': 'openSUSE (zypper)', 'runtime': 'any', 'distribution': 'any', 'evidence': 'not supported',
     'how': 'the role fails naming the packages to install another way, writing nothing',
     'test': ('tests/lab/test_node_packages.py::'
              'test_the_role_installs_with_apt_and_dnf_and_uninstall_removes_what_it_installed')},
]
# node -> (ansible's distribution fixture, the package manager the node has: path -> a link's target, or None for the
# stub program, the pkg_mgr fact that makes)
NODES = {
    'gpuops-pm-rocky': ('rockylinux_8_3.json', {'/usr/bin/dnf-3': None, '/usr/bin/dnf': 'dnf-3'}, 'dnf'),
    'gpuops-pm-fedora': ('fedora_31.json', {'/usr/bin/dnf5': None, '/usr/bin/dnf': 'dnf5'}, 'dnf5'),
    'gpuops-pm-leap': ('opensuse_leap_15.1.json', {'/usr/bin/zypper': None}, 'zypper'),
    'gpuops-pm-debian': (None, {}, 'apt'),  # not dressed: the lab's bookworm
}
STUB = '#!/bin/sh\necho "$0: a lab node dressed as another distribution; its package manager is never run" >&2\nexit 1\n'
INSTALL = [{'hosts': 'gpu_nodes', 'gather_facts': False, 'tasks': [{
    'name': "Install the toolkit's packages as the role does on a containerd node that lacks them",
    'ansible.builtin.include_role': {'name': 'gpuops.gpu_operator.container_toolkit', 'tasks_from': 'packages'},
    'vars': {'container_toolkit_node_runtime': 'containerd',
             'container_toolkit_runtime_info': {'packages': {'nvidia-container-toolkit': None, 'python3-tomlkit': None}}}}]}]


def on_node(node, *argv):
    return subprocess.run(['podman', 'exec', node, *argv], capture_output=True, text=True, check=False, timeout=60)


def dress(node, fixture, programs, _pkg_mgr):
    """Start `node` from the bookworm lab image and lay out the distribution's release files and package manager (none
    for the Debian node: it gets the key its inventory's mirror names)."""
    subprocess.run(['podman', 'run', '--detach', '--rm', '--name', node, '--hostname', node, '--label', f'{labctl.LABEL}=1',
                    '--systemd=false', labctl.alias_tag('bookworm'), *labctl.NO_SYSTEMD_INIT], check=True, capture_output=True, timeout=120)
    if fixture is None:
        subprocess.run(['podman', 'exec', '-i', node, 'sh', '-ec', f'mkdir -p {KEY_SOURCE.rsplit("/", 1)[0]}; cat > {KEY_SOURCE}'],
                       input=KEY, text=True, check=True, capture_output=True, timeout=60)
        return
    files = json.loads((HERE / fixture).read_text())['input']
    files.update((path, STUB) for path, target in programs.items() if target is None)
    script = ['rm -f /etc/os-release /usr/lib/os-release /etc/debian_version', 'mkdir -p /etc/yum.repos.d']
    script += [f'ln -s {target} {path}' for path, target in programs.items() if target]
    subprocess.run(['podman', 'exec', node, 'sh', '-ec', '\n'.join(script)], check=True, capture_output=True, timeout=60)
    for path, content in files.items():
        subprocess.run(['podman', 'exec', '-i', node, 'sh', '-ec', f'cat > {path}; chmod {755 if path in programs else 644} {path}'],
                       input=content, text=True, check=True, capture_output=True, timeout=60)


@pytest.fixture(name='nodes')
def fixture_nodes(tmp_path):
    """The inventory of the dressed nodes, running; gone afterwards."""
    def down():
        subprocess.run(['podman', 'rm', '--force', '--time', '0', *NODES], capture_output=True, check=False, timeout=120)

    down()
    try:
        with concurrent.futures.ThreadPoolExecutor(len(NODES)) as pool:
            list(pool.map(lambda item: dress(item[0], *item[1]), NODES.items()))
        inventory = {'all': {'children': {'gpu_nodes': {
            'vars': {'ansible_connection': 'containers.podman.podman', 'ansible_python_interpreter': '/usr/bin/python3',
                     'ansible_remote_tmp': '/root/.ansible/tmp'},
            'hosts': {'gpuops-pm-rocky': {}, 'gpuops-pm-leap': {},
                      'gpuops-pm-debian': {'container_toolkit_repository_url': APT_MIRROR,
                                           'container_toolkit_repository_key_url': 'file://' + KEY_SOURCE},
                      # A mirror of NVIDIA's repository without the metadata's signature.
                      'gpuops-pm-fedora': {'container_toolkit_yum_repository': {'baseurl': MIRROR, 'repo_gpgcheck': False}}}}}}}
        (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
        yield tmp_path / 'hosts.yml'
    finally:
        down()


def playbook(tmp_path, inventory, path, *args):
    env = playbook_environment(tmp_path / 'no-kubeconfig', ANSIBLE_LIBRARY=str(HERE / 'library'),
                               ANSIBLE_MODULE_UTILS=str(HERE / 'module_utils'))
    result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), str(path), *args], capture_output=True, text=True, check=False,
                            cwd=REPO, env=env, timeout=600)
    return result.returncode, result.stdout + result.stderr


def calls(node):
    """What the package manager double was asked on `node`, in order."""
    out = on_node(node, 'cat', CALLS)
    return [json.loads(line) for line in out.stdout.splitlines()] if out.returncode == 0 else []


def repository(node):
    """The sections of the node's repository file, as dnf reads it (None: no file)."""
    out = on_node(node, 'cat', REPO_FILE)
    if out.returncode:
        return None
    parser = configparser.RawConfigParser()
    parser.read_string(out.stdout)
    return {name: dict(parser[name]) for name in parser.sections()}


def test_the_role_installs_with_apt_and_dnf_and_uninstall_removes_what_it_installed(nodes, tmp_path):
    # The dressed nodes are what ansible's fixtures expect of each distribution, with its package manager.
    facts = subprocess.run([str(Path(ANSIBLE_PLAYBOOK).with_name('ansible')), 'gpu_nodes', '-i', str(nodes), '-m', 'setup', '-a',
                            'gather_subset=!all,!min,distribution,pkg_mgr', '--one-line'], capture_output=True, text=True, check=False,
                           cwd=REPO, env=playbook_environment(tmp_path / 'no-kubeconfig'), timeout=300)
    assert facts.returncode == 0, facts.stdout + facts.stderr
    for line in facts.stdout.splitlines():
        node, found = line.split(' | SUCCESS => ', 1)
        found = json.loads(found)['ansible_facts']
        fixture, _programs, pkg_mgr = NODES[node]
        expected = json.loads((HERE / fixture).read_text())['result'] if fixture else {'distribution': 'Debian', 'os_family': 'Debian'}
        assert {key: found['ansible_' + key] for key in ('distribution', 'os_family', 'pkg_mgr')} == \
            {'distribution': expected['distribution'], 'os_family': expected['os_family'], 'pkg_mgr': pkg_mgr}, node

    (tmp_path / 'install.yml').write_text(yaml.safe_dump(INSTALL, sort_keys=False))
    rc, out = playbook(tmp_path, nodes, tmp_path / 'install.yml')
    words = ' '.join(out.split())
    assert rc == 2, out[-6000:]
    for node in set(NODES) - {'gpuops-pm-debian'}:
        assert on_node(node, 'test', '-e', APT_SOURCES).returncode == 1, f'{node}: an APT repository on a node without APT'

    # Rocky Linux 8: dnf, NVIDIA's repository as NVIDIA's own file describes it (only the description differs).
    nvidia = configparser.RawConfigParser()
    nvidia.read(HERE / 'nvidia-container-toolkit.repo')
    written = repository('gpuops-pm-rocky')
    assert list(written or {}) == ['nvidia-container-toolkit'], (written, out[-6000:])
    assert dict(written['nvidia-container-toolkit'], name=None) == dict(nvidia['nvidia-container-toolkit'], name=None)
    install = [{'manager': 'dnf', 'name': ['python3-tomlkit'], 'state': 'present', 'update_cache': True},
               {'manager': 'dnf', 'name': ['nvidia-container-toolkit'], 'state': 'present', 'update_cache': True}]
    assert calls('gpuops-pm-rocky') == install
    assert on_node('gpuops-pm-rocky', 'cat', RECORD).stdout == 'python3-tomlkit\n'

    # Debian without python3-debian: NVIDIA's source and its key as plain files, the packages through APT.
    assert on_node('gpuops-pm-debian', 'python3', '-c', 'import debian').returncode == 1, 'the node must lack python3-debian'
    assert on_node('gpuops-pm-debian', 'cat', APT_SOURCES).stdout == (
        f'Types: deb\nURIs: {APT_MIRROR}\nSuites: /\nSigned-By: {APT_KEY}\n'), out[-6000:]
    assert on_node('gpuops-pm-debian', 'cat', APT_KEY).stdout == KEY
    assert calls('gpuops-pm-debian') == [dict(call, manager='apt') for call in install]

    # Fedora with dnf5: the mirror the inventory names, as it says (no key, metadata unchecked), packages unchecked as by
    # default.
    written = repository('gpuops-pm-fedora')['nvidia-container-toolkit']
    assert (written['baseurl'], written['repo_gpgcheck'], written['gpgcheck'], written.get('gpgkey')) == (MIRROR, '0', '0', None)
    assert calls('gpuops-pm-fedora') == [dict(call, manager='dnf5') for call in install]

    # openSUSE: the node stops, naming what to install; nothing was written or asked of a package manager.
    assert ('gpuops-pm-leap needs nvidia-container-toolkit, python3-tomlkit, which the role installs with APT or dnf only; '
            "the node's package manager is zypper. Install them another way, then run again.") in words, out[-6000:]
    assert (repository('gpuops-pm-leap'), calls('gpuops-pm-leap')) == (None, [])
    assert on_node('gpuops-pm-leap', 'test', '-e', RECORD).returncode == 1

    # uninstall.yml (its toolkit stage): the packages and the repository where the role installed them, python3-tomlkit
    # where its record says so; nothing on the node where the role installed nothing.
    rc, out = playbook(tmp_path, nodes, 'playbooks/uninstall.yml', '--tags', 'toolkit')
    assert rc == 0, out[-6000:]
    for node, manager in (('gpuops-pm-rocky', 'dnf'), ('gpuops-pm-fedora', 'dnf5'), ('gpuops-pm-debian', 'apt')):
        assert calls(node)[2:] == [{'manager': manager, 'name': ['nvidia-container-toolkit'], 'state': 'absent', 'update_cache': False},
                                   {'manager': manager, 'name': ['python3-tomlkit'], 'state': 'absent', 'update_cache': False}]
        assert repository(node) is None and on_node(node, 'test', '-e', RECORD).returncode == 1
    assert [on_node('gpuops-pm-debian', 'test', '-e', path).returncode for path in (APT_SOURCES, APT_KEY)] == [1, 1]
    assert calls('gpuops-pm-leap') == []
