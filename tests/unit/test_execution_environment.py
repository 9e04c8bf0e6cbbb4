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


@pytest.fixture(name='context', scope='module')
def fixture_context(tmp_path_factory):
    """The build context `ansible-builder create` writes, from a copy of the repository's definition.

    The definition names the collection tarball under .build/dist beside it, so the copy gets a fresh build there.
    """
    work = tmp_path_factory.mktemp('ee')
    shutil.copy(EE_FILE, work / EE_FILE.name)
    subprocess.run([str(BIN / 'ansible-galaxy'), 'collection', 'build', '--output-path', str(work / '.build' / 'dist'), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=120, env=dict(os.environ, ANSIBLE_NOCOLOR='1'))
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
