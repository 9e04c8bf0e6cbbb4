"""The README's Requirements table says what the collection declares and what the tests run, from the files that pin it."""
import json
import re
from pathlib import Path

import yaml
from ansible_test._util.target.common.constants import CONTROLLER_PYTHON_VERSIONS, REMOTE_ONLY_PYTHON_VERSIONS
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]


def readme_table():
    """{first cell: (needs, tests run)} of the table in the README's Requirements section."""
    section = REPO.joinpath('README.md').read_text().split('\n## Requirements\n', 1)[1].split('\n## ', 1)[0]
    rows = [line.strip('|').split('|') for line in section.splitlines() if line.startswith('|')]
    return {cells[0].strip(): (cells[1].strip(), cells[2].strip()) for cells in rows[2:]}


def pinned():
    """name -> version of requirements.txt's pins."""
    pins = (line.split('==') for line in REPO.joinpath('requirements.txt').read_text().split() if '==' in line)
    return {name.lower(): version for name, version in pins}


def floors():
    """name -> the lowest version meta/ee-requirements.txt admits."""
    lines = REPO.joinpath('meta', 'ee-requirements.txt').read_text().splitlines()
    reqs = [Requirement(line) for line in lines if line and not line.startswith('#')]
    return {req.name: next(spec.version for spec in req.specifier if spec.operator == '>=') for req in reqs}


def row(table, starts):
    [(needs, runs)] = [cells for name, cells in table.items() if name.startswith(starts)]
    return needs, runs


def test_the_requirements_table_says_what_the_pins_say():
    table, pins, lowest = readme_table(), pinned(), floors()
    makefile = REPO.joinpath('Makefile').read_text()
    requires_ansible = yaml.safe_load(REPO.joinpath('meta', 'runtime.yml').read_text())['requires_ansible']
    needs, runs = row(table, 'ansible-core')
    assert needs.startswith(requires_ansible.removeprefix('>=') + ' or later') and runs == pins['ansible-core']

    needs, runs = row(table, 'Python on the controller')
    assert needs.startswith(f'{CONTROLLER_PYTHON_VERSIONS[0]} to {CONTROLLER_PYTHON_VERSIONS[-1]} ')
    assert runs == re.search(r'python(3\.\d+) -m venv', makefile).group(1)

    needs, runs = row(table, 'Python on the GPU nodes')
    assert f'({REMOTE_ONLY_PYTHON_VERSIONS[0]} to {CONTROLLER_PYTHON_VERSIONS[-1]})' in needs

    dependency = yaml.safe_load(REPO.joinpath('galaxy.yml').read_text())['dependencies']['kubernetes.core']
    manifest = REPO / '.build' / 'collections' / 'ansible_collections' / 'kubernetes' / 'core' / 'MANIFEST.json'
    needs, runs = row(table, 'kubernetes.core')
    assert needs.startswith(dependency.removeprefix('>=') + ' or later')
    ansible_version = re.search(r'^ANSIBLE_VERSION := (\S+)$', makefile, re.M).group(1)
    assert runs == f'{json.loads(manifest.read_text())["collection_info"]["version"]}, from `ansible` {ansible_version}'

    for package in ('kubernetes', 'tomlkit'):
        needs, runs = row(table, f'Python package `{package}`')
        assert needs.startswith(f'{lowest[package]} or later') and pins[package] in runs, (package, needs, runs)
    assert set(lowest) == {'kubernetes', 'tomlkit'}
    assert row(table, 'Python package `grpcio`')[1] == pins['grpcio']
