"""execution-environment.yml: `ansible-builder create` writes a build context with our pins and this collection."""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EE_FILE = REPO / 'execution-environment.yml'


def pins(text):
    """name -> version of the `name==version` lines of a pip requirements text (names normalised)."""
    found = {}
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            name, sep, version = line.partition('==')
            assert sep, f'not pinned: {line!r}'
            found[re.sub(r'[-_.]+', '-', name).lower()] = version
    return found


@pytest.fixture(name='tarball', scope='module')
def fixture_tarball(tmp_path_factory):
    """A fresh build of the collection, under .build/dist where the repository's definition names it."""
    work = tmp_path_factory.mktemp('ee')
    subprocess.run([str(BIN / 'ansible-galaxy'), 'collection', 'build', '--output-path', str(work / '.build' / 'dist'), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=120, env=dict(os.environ, ANSIBLE_NOCOLOR='1'))
    [built] = (work / '.build' / 'dist').iterdir()
    return built


@pytest.fixture(name='context', scope='module')
def fixture_context(tarball):
    """The build context `ansible-builder create` writes, from a copy of the repository's definition beside the tarball."""
    work = tarball.parents[2]
    shutil.copy(EE_FILE, work / EE_FILE.name)
    result = subprocess.run([str(BIN / 'ansible-builder'), 'create', '--file', str(work / EE_FILE.name), '--context', str(work / 'context'),
                             '--output-filename', 'Containerfile'],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return work / 'context'


def test_definition_schema_3():
    definition = yaml.safe_load(EE_FILE.read_text())
    assert definition['version'] == 3
    assert definition['images']['base_image']['name']


def test_python_requirements_pinned_as_tested(context):
    tested = pins((REPO / 'requirements.txt').read_text())
    wanted = pins((context / '_build' / 'requirements.txt').read_text())
    assert {'kubernetes', 'jsonpatch', 'tomlkit'} <= set(wanted)
    assert {name: tested.get(name) for name in wanted} == wanted, 'the EE pins what requirements.txt tests'


def test_ansible_core_and_runner_pinned(context):
    containerfile = (context / 'Containerfile').read_text()
    refs = re.search(r'^ARG ANSIBLE_INSTALL_REFS="([^"]*)"$', containerfile, re.M).group(1).split()
    core = [ref for ref in refs if ref.startswith('ansible-core==')]
    assert core == [f'ansible-core=={pins((REPO / "requirements.txt").read_text())["ansible-core"]}']
    assert any(re.fullmatch(r'ansible-runner==\d+\.\d+\.\d+', ref) for ref in refs), refs
    assert re.search(r'^ARG PYCMD="/usr/bin/python3\.1[1-9]"$', containerfile, re.M), 'ansible-core 2.19 needs Python 3.11+'
    base = yaml.safe_load(EE_FILE.read_text())['images']['base_image']['name']
    assert f'ARG EE_BASE_IMAGE="{base}"' in containerfile


def test_collections(context):
    requirements = yaml.safe_load((context / '_build' / 'requirements.yml').read_text())
    manifest = json.loads((REPO / '.build' / 'collections' / 'ansible_collections' / 'kubernetes' / 'core' / 'MANIFEST.json').read_text())
    assert requirements['collections'] == [{'name': 'kubernetes.core', 'version': manifest['collection_info']['version']}], \
        'the EE carries the kubernetes.core the tests run with'

    galaxy = yaml.safe_load((REPO / 'galaxy.yml').read_text())
    tarball = f'{galaxy["namespace"]}-{galaxy["name"]}-{galaxy["version"]}.tar.gz'
    copied = context / '_build' / 'collections' / tarball
    assert copied.is_file(), f'{tarball} (galaxy.yml version) is not in the context'
    with tarfile.open(copied) as archive:
        info = json.load(archive.extractfile('MANIFEST.json'))['collection_info']
        assert 'playbooks/upgrade.yml' in archive.getnames()
    assert (info['namespace'], info['name'], info['version']) == (galaxy['namespace'], galaxy['name'], galaxy['version'])
    containerfile = (context / 'Containerfile').read_text()
    assert f'RUN ansible-galaxy collection install /build/collections/{tarball} --collections-path /usr/share/ansible/collections' in containerfile
    # Installed in the galaxy stage, whose /usr/share/ansible the final image copies.
    galaxy_stage = containerfile.split('FROM base AS galaxy', 1)[1].split('FROM base AS builder', 1)[0]
    assert tarball in galaxy_stage


def test_introspection_finds_the_requirements_in_the_tarball_alone(tarball, tmp_path):
    """What an EE build runs over the collections it installed (`ansible-builder introspect`, the step that feeds pip and
    bindep), on an installed copy of the tarball and nothing else: the collection's Python requirements, which admit
    the versions the tests run, and its system requirements."""
    installed = tmp_path / 'collections'
    # Only this path: ansible-galaxy would find the checkout in the configured one and install nothing.
    subprocess.run([str(BIN / 'ansible-galaxy'), 'collection', 'install', '--no-deps', '-p', str(installed), str(tarball)],
                   check=True, capture_output=True, text=True, timeout=120,
                   env=dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_COLLECTIONS_PATH=str(installed)))
    assert (installed / 'ansible_collections' / 'gpuops' / 'gpu_operator' / 'MANIFEST.json').is_file()
    result = subprocess.run([str(BIN / 'ansible-builder'), 'introspect', str(installed)], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    found = yaml.safe_load(result.stdout.split('---', 1)[1])
    python = {Requirement(line.split('#', 1)[0]): line for line in found['python']}
    assert all(line.endswith('# from collection gpuops.gpu_operator') for line in python.values()), python
    tested = pins((REPO / 'requirements.txt').read_text())
    assert {req.name for req in python} == {'kubernetes', 'tomlkit'}
    for req in python:
        assert req.specifier.contains(tested[req.name]), f'{req} does not admit {req.name} {tested[req.name]}, which the tests run'
    # tomlkit runs on the nodes too: the oldest there is Debian bookworm's python3-tomlkit, on the lab's bookworm nodes.
    assert next(req for req in python if req.name == 'tomlkit').specifier.contains('0.11.7')
    # The node plays reach the nodes over SSH: the EE needs the OpenSSH client, named as each package family names it.
    system = sorted(line.split('#', 1)[0].strip() for line in found['system'])
    assert system == ['openssh-client [platform:dpkg]', 'openssh-clients [platform:rpm]']
