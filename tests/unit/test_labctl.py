# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""labctl.py molecule-platforms: which lab nodes a scenario gets, and which fixture each one is served."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
import yaml

from tests.lab import labctl

RECIPE = {'distro': {'bookworm': {'run': ['--systemd=always']}, 'trixie': {'run': ['--systemd=always']},
                     'sid': {'run': ['--systemd=false']}}}


def platforms(recipe, scenario='s'):
    text = labctl.molecule_platforms(recipe, scenario)
    return {item['name']: item['extra_opts'] for item in yaml.safe_load(text)}


@pytest.mark.parametrize('settings, expected', [
    ({}, {'s-bookworm': None, 's-trixie': None, 's-sid': None}),
    ({'fixtures': {'sid': 'h200-x1'}}, {'s-bookworm': None, 's-trixie': None, 's-sid': 'h200-x1'}),
    ({'distros': ['bookworm', 'sid'], 'fixtures': {'bookworm': 'h100-sxm5-80gb-x1'}}, {'s-bookworm': 'h100-sxm5-80gb-x1', 's-sid': None}),
])
def test_platforms(settings, expected):
    found = platforms(dict(RECIPE, molecule={'s': settings}))
    assert sorted(found) == sorted(expected)
    for name, fixture in expected.items():
        mounts = [opt for opt in found[name] if opt.startswith('--volume=${MOLECULE_PROJECT_DIRECTORY}/tests/fixtures/gpus/')]
        if fixture is None:
            assert mounts == []
        else:
            assert mounts[0].startswith('--volume=${MOLECULE_PROJECT_DIRECTORY}/tests/fixtures/gpus/%s:' % fixture)


def test_unknown_distro_is_refused():
    with pytest.raises(labctl.LabError, match='no such distro in the recipe: jessie'):
        platforms(dict(RECIPE, molecule={'s': {'distros': ['jessie', 'sid']}}))


# ---------------------------------------------------------------- the host's Debian mirror
# The formats of sources.list(5): deb822 .sources files (the default of Debian 12's installer onwards, laid out as here)
# and one-line .list files. Mirror names are example ones.
SUITES = ['bookworm', 'trixie', 'sid']
DEB822 = '''Types: deb
# a snapshot of the archive can stand here
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
'''


def sources(tmp_path, files, sources_list=None):
    """A sources.list (None: no such file) and sources.list.d/ with `files` {name: text}."""
    listing, folder = tmp_path / 'sources.list', tmp_path / 'sources.list.d'
    folder.mkdir()
    if sources_list is not None:
        listing.write_text(sources_list)
    for name, text in files.items():
        (folder / name).write_text(text)
    return listing, folder


@pytest.mark.parametrize('files, sources_list, mirror', [
    # deb822 only, no sources.list at all (a Debian 12 host as installed).
    ({'debian.sources': DEB822}, None, 'http://mirror.example/debian'),
    # One-line format with options, a comment and a deb-src line first.
    ({}, '# the archive\ndeb-src http://src.example/debian bookworm main\n'
         'deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] https://mirror.example/debian bookworm main contrib\n'
         'deb https://mirror.example/debian-security bookworm-security main\n', 'https://mirror.example/debian'),
    ({}, 'deb [ arch=amd64 ] http://spaced.example/debian sid main non-free  # spaced options\n', 'http://spaced.example/debian'),
    # sources.list comes first, as apt reads it.
    ({'debian.sources': DEB822}, 'deb http://first.example/debian trixie main\n', 'http://first.example/debian'),
    # A third-party source and a disabled one before the Debian one; a continuation line; stable counts as a release.
    ({'a-vendor.list': 'deb https://vendor.example/apt nodistro main\n',
      'b-off.sources': 'Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nComponents: main\nEnabled: no\n',
      'c-debian.sources': 'Types: deb deb-src\nURIs: file:/srv/debian\n  http://second.example/debian\nSuites: stable\nComponents: main\n'},
     None, 'file:/srv/debian'),
    # A URI apt can use but debootstrap cannot (mirror+file:) is passed over for the next one.
    ({'debian.sources': 'Types: deb\nURIs: mirror+file:/etc/apt/mirrors.txt http://next.example/debian\nSuites: sid\nComponents: main\n'},
     None, 'http://next.example/debian'),
    # Files of other suffixes are not apt's.
    ({'old.list.save': 'deb http://saved.example/debian bookworm main\n', 'debian.sources': DEB822}, None, 'http://mirror.example/debian'),
])
def test_debian_mirror(tmp_path, files, sources_list, mirror):
    assert labctl.debian_mirror(SUITES, *sources(tmp_path, files, sources_list)) == mirror


@pytest.mark.parametrize('files, sources_list', [
    ({}, None),  # neither sources.list nor anything in sources.list.d
    # Only the security archive, updates, a contrib-only source, another distribution's archive, deb-src.
    ({'debian.sources': DEB822.replace('Suites: bookworm bookworm-updates', 'Suites: bookworm-updates')}, None),
    ({}, 'deb http://mirror.example/debian bookworm contrib non-free\n'),
    ({'ubuntu.sources': 'Types: deb\nURIs: http://archive.example/ubuntu\nSuites: noble noble-updates\nComponents: main universe\n'}, None),
    ({}, 'deb-src http://mirror.example/debian bookworm main\n'),
])
def test_no_usable_source_is_a_clear_error(tmp_path, files, sources_list):
    with pytest.raises(labctl.LabError, match='no Debian mirror in the host\'s apt sources .*an enabled "deb" source with component main'):
        labctl.debian_mirror(SUITES, *sources(tmp_path, files, sources_list))


def test_missing_sources_folder(tmp_path):
    listing = tmp_path / 'sources.list'
    listing.write_text('deb http://mirror.example/debian trixie main\n')
    assert labctl.debian_mirror(SUITES, listing, tmp_path / 'no-such-folder') == 'http://mirror.example/debian'


@pytest.mark.parametrize('name, text, message', [
    ('bad.sources', 'Types: deb\nthis line has no colon\n', r'bad.sources:2: not a "Field: value" line'),
    ('bad.sources', '  URIs: http://mirror.example/debian\n', r'bad.sources:1: a continuation line without a field'),
    ('bad.list', 'deb [arch=amd64 http://mirror.example/debian bookworm main\n', r'bad.list:1: options opened with \[ are not closed'),
    ('bad.list', 'deb http://mirror.example/debian\n', r'bad.list:1: not "deb URI SUITE \[COMPONENT...\]"'),
    ('bad.list', b'deb http://mirror.example/debian bookworm main \xff\n', r'cannot read the apt sources .*bad.list'),
])
def test_odd_source_files_are_named(tmp_path, name, text, message):
    files = {} if isinstance(text, bytes) else {name: text}
    listing, folder = sources(tmp_path, files)
    if isinstance(text, bytes):
        (folder / name).write_bytes(text)
    with pytest.raises(labctl.LabError, match=message):
        labctl.debian_mirror(SUITES, listing, folder)


def test_unreadable_sources_file(tmp_path):
    listing, folder = sources(tmp_path, {})
    listing.mkdir()  # a directory where the file should be: reading it fails as an unreadable file does, also as root
    with pytest.raises(labctl.LabError, match='cannot read the apt sources .*sources.list'):
        labctl.debian_mirror(SUITES, listing, folder)


def test_recipe_names_no_mirror():
    """The mirror comes from the host; the recipe's [image] has none to hash or to use."""
    assert 'mirror' not in labctl.load_recipe()['image']
