"""GDRCopy (ClusterPolicy gdrcopy.enabled) through role nvidia_driver on a lab node, from a repository the user names.

The package is one this test makes with dpkg-deb: gdrdrv-dkms 2.5-1, with no kernel module inside (NVIDIA's builds one
with DKMS; a container cannot load modules anyway). Its APT repository is a directory on the node with a Packages index
the test writes, named by `nvidia_driver_repository` as a user names NVIDIA's or a mirror ([trusted=yes]: the test's
repository is unsigned). One bookworm node served the h100-x1 capture (a pre-installed driver: the driver stage only
validates it); no stand-in registration is needed (the role reads no Node). What the runs took is printed.

The install: the package installed and held, /etc/modules-load.d/gpuops-gpudirect.conf naming gdrdrv, the load failing
softly (a warning, reboot_required) and the check reporting gdrdrv not loaded (the captured /proc/modules). Uninstall:
the node's package list, holds and files as they were before, byte for byte. (Check mode is the module test's,
tests/unit/plugins/modules/test_gpudirect.py: a run here costs about 40 s.)
"""
import difflib
import hashlib
import subprocess
import sys
import time

import yaml

from tests.cluster.helpers import REPO
from tests.lab.labtest import ANSIBLE_PLAYBOOK, lab_inventory, named_lab_nodes, playbook_environment

PREFIX = 'gpuops-gd-'
NODE = PREFIX + 'bookworm'
REPO_DIR = '/srv/gpuops-test-repo'
PACKAGE = 'gdrdrv-dkms'
PLAYBOOK = """- name: The driver stage, as site.yml runs it
  hosts: gpu_nodes
  roles:
    - role: gpuops.gpu_operator.nvidia_driver
"""


def on_node(*argv):
    return subprocess.run(['podman', 'exec', NODE, *argv], capture_output=True, text=True, check=False)


def build_repository(tmp_path):
    """The test's package and its Packages index, in tmp_path/repo."""
    root = tmp_path / 'pkg'
    (root / 'DEBIAN').mkdir(parents=True)
    (root / 'DEBIAN' / 'control').write_text(f'Package: {PACKAGE}\nVersion: 2.5-1\nArchitecture: all\nMaintainer: gpuops tests <gpuops@localhost>\n'
                                             'Description: test package of tests/lab/test_gpudirect_lab.py (no kernel module)\n')
    (root / 'usr' / 'share' / 'doc' / PACKAGE).mkdir(parents=True)
    (root / 'usr' / 'share' / 'doc' / PACKAGE / 'README').write_text('made by tests/lab/test_gpudirect_lab.py\n')
    repo = tmp_path / 'repo'
    repo.mkdir()
    deb = repo / f'{PACKAGE}_2.5-1_all.deb'
    subprocess.run(['dpkg-deb', '--root-owner-group', '--build', str(root), str(deb)], check=True, capture_output=True)
    data = deb.read_bytes()
    control = (root / 'DEBIAN' / 'control').read_text()
    (repo / 'Packages').write_text(control + f'Filename: ./{deb.name}\nSize: {len(data)}\nSHA256: {hashlib.sha256(data).hexdigest()}\n\n')
    return repo


def state():
    """What uninstall must give back: the installed packages and their holds, the module lists, the package sources and the
    records' directory. (/run/nvidia/validations is left out: the driver stage's driver-ready goes, its directory stays.)"""
    listing = on_node('sh', '-c', "dpkg-query -W -f='${Package} ${Version}\\n'; apt-mark showhold; "
                      'ls -A /etc/modules-load.d /etc/apt/sources.list.d; sha256sum /etc/modules-load.d/* /etc/apt/sources.list.d/*; '
                      'ls -A /var/lib/gpuops 2>&1; true')
    assert listing.returncode == 0, listing.stderr
    return listing.stdout


def playbook(tmp_path, inventory, *args):
    (tmp_path / 'play.yml').write_text(PLAYBOOK)
    start = time.monotonic()
    result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), str(tmp_path / 'play.yml'), *args], capture_output=True, text=True,
                            check=False, cwd=REPO, env=playbook_environment(tmp_path / 'kubeconfig'), timeout=300)
    print(f'{args or "(install)"}: {time.monotonic() - start:.1f} s', file=sys.stderr)
    (tmp_path / ('play-%s.log' % '_'.join(args).replace('/', '').replace('-', '') or 'install')).write_text(result.stdout + result.stderr)
    return result.returncode, result.stdout + result.stderr


def test_gdrcopy_from_the_users_repository_is_installed_held_listed_and_uninstalled_byte_for_byte(tmp_path):
    repo = build_repository(tmp_path)
    with named_lab_nodes(tmp_path, {NODE: ('bookworm', 'h100-x1')}, register=False):
        assert subprocess.run(['podman', 'cp', str(repo), f'{NODE}:{REPO_DIR}'], check=False).returncode == 0
        inventory = lab_inventory(PREFIX)
        hosts = inventory['all']['children']['gpu_nodes']['hosts']
        inventory['all']['children']['gpu_nodes']['hosts'] = {NODE: dict(hosts[NODE], gpuops_lab_fixture='h100-x1')}
        # As a user writes them: the ClusterPolicy section and the repository the packages come from.
        inventory['all']['vars'] = {'gpu_operator_policy': {'gdrcopy': {'enabled': True}},
                                    'nvidia_driver_repository': f'deb [trusted=yes] file:{REPO_DIR} ./'}
        path = tmp_path / 'hosts.yml'
        path.write_text(yaml.safe_dump(inventory))
        before = state()

        rc, out = playbook(tmp_path, path)
        assert rc == 0, out
        installed = on_node('dpkg-query', '-W', '-f=${Version}', PACKAGE)
        assert installed.stdout == '2.5-1', out
        assert PACKAGE in on_node('apt-mark', 'showhold').stdout.split()
        assert on_node('cat', '/etc/modules-load.d/gpuops-gpudirect.conf').stdout.splitlines()[1:] == ['gdrdrv']
        assert 'modprobe gdrdrv failed' in out  # a container cannot load kernel modules: a warning, not a failure
        assert on_node('test', '-e', '/run/nvidia/validations/gdrcopy-ready').returncode == 1  # gdrdrv is not loaded

        rc, out = playbook(tmp_path, path, '-e', 'nvidia_driver_state=absent')
        assert rc == 0, out
        after = state()
        assert after == before, ''.join(difflib.unified_diff(before.splitlines(True), after.splitlines(True)))
