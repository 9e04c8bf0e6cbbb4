"""The tarball `ansible-galaxy collection build` writes: the collection without what only its development needs, and
documentation whose links work from an installed copy."""
import posixpath
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GALAXY = yaml.safe_load((REPO / 'galaxy.yml').read_text())

# What only the collection's development needs: its tests, lab, benchmark, tools and build settings. A new top-level
# file or folder is either shipped (then it needs no entry) or named here and in galaxy.yml's build_ignore.
DEVELOPMENT = ('tests/', 'molecule/', 'bench/', 'tools/', '.ci/', 'inventory/lab/', 'changelogs/fragments/',
               '.gitignore', 'Makefile', 'requirements.txt', 'ansible.cfg', 'pytest.ini',
               # ansible-builder's definition for an EE built from a checkout (docs/awx.md): it names the tarball under
               # .build/. The collection's own EE requirements are meta/execution-environment.yml.
               'execution-environment.yml')
LINK = re.compile(r'!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
FENCE = re.compile(r'^```.*?^```', re.M | re.S)


def development(path):
    return any(path == prefix or path.startswith(prefix) for prefix in DEVELOPMENT)


@pytest.fixture(name='members', scope='module')
def fixture_members(tmp_path_factory):
    """{member name: is a directory} of a fresh build of the working tree."""
    out = tmp_path_factory.mktemp('dist')
    subprocess.run([str(Path(sys.executable).parent / 'ansible-galaxy'), 'collection', 'build', '--output-path', str(out), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=120)
    with tarfile.open(out / f'{GALAXY["namespace"]}-{GALAXY["name"]}-{GALAXY["version"]}.tar.gz') as archive:
        return {member.name.rstrip('/'): member.isdir() for member in archive.getmembers()}


def repository_files():
    """The files a build of this working tree sees: git's, tracked or new (not the ignored ones)."""
    out = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z'], cwd=REPO, check=True, capture_output=True).stdout
    return {name for name in out.decode().split('\0') if name and (REPO / name).is_file()}


def test_the_tarball_is_the_collection_without_its_development(members):
    files = {name for name, is_dir in members.items() if not is_dir}
    assert not {name for name in files if development(name)}, 'development files in the tarball'
    expected = {name for name in repository_files() if not development(name)} - {'galaxy.yml'} | {'MANIFEST.json', 'FILES.json'}
    assert files == expected, f'missing: {sorted(expected - files)}; unexpected: {sorted(files - expected)}'
    assert {'playbooks/site.yml', 'meta/runtime.yml', 'roles/container_toolkit/tasks/main.yml', 'README.md'} <= files


def markdown_links(text):
    """The targets of the inline links and images of a Markdown text, code blocks left out."""
    return LINK.findall(FENCE.sub('', text))


@pytest.mark.parametrize('text, links', [
    ('See [the doc](docs/a.md#part) and ![plot](bench/p.png "title").', ['docs/a.md#part', 'bench/p.png']),
    ('```sh\n[x](not/a/link)\n```\n[y](<b.md>)', ['b.md']),
])
def test_markdown_links(text, links):
    assert markdown_links(text) == links


def test_every_documentation_link_works_from_an_installed_copy(members):
    """A relative link names a file or folder of the tarball; a link into what stays out of it (the tests, the bench)
    goes to the project's repository (galaxy.yml) and names a file there."""
    repository = GALAXY['repository'].rstrip('/')
    in_repository = repository_files()
    documents = sorted(name for name, is_dir in members.items() if not is_dir and name.endswith('.md'))
    assert 'README.md' in documents and 'docs/operations.md' in documents
    broken = []
    for document in documents:
        for target in markdown_links((REPO / document).read_text()):
            path = target.split('#', 1)[0]
            if target.startswith(repository + '/'):
                # <repository>/<blob|raw|tree>/<branch>/<path>
                kind, _branch, named = (path[len(repository) + 1:].split('/', 2) + ['', ''])[:3]
                if kind not in ('blob', 'raw', 'tree') or not any(name == named or name.startswith(named + '/') for name in in_repository):
                    broken.append(f'{document}: {target} (no such file in the repository)')
            elif path and not re.match(r'^[a-z][a-z0-9+.-]*:', path):
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(document), path))
                if resolved not in members:
                    broken.append(f'{document}: {target} (not in the tarball)')
    assert not broken, '\n'.join(broken)
