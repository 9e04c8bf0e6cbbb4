# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""driver_packages: package naming per distribution, version and kernel module type; package manager listings."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import packages as pkgs
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.state import DriverError
from tests.unit.plugins.module_utils.discovery.nfd_labels_fixtures import GPUS

BOOKWORM = dict(ID='debian', VERSION_ID='12')
TRIXIE = dict(ID='debian', VERSION_ID='13')
# The real os-release of the h200 capture host (Ubuntu 24.04.3).
NOBLE = gpu_discovery.os_release(os.path.join(GPUS, 'h200-x1', 'host', 'os-release'))
ROCKY9 = dict(ID='rocky', ID_LIKE='rhel centos fedora', VERSION_ID='9.4')
RHEL8 = dict(ID='rhel', VERSION_ID='8.10')
KERNEL = '6.1.0-28-amd64'


@pytest.mark.parametrize('os_release, version, kind, install, names, headers', [
    (BOOKWORM, '', 'proprietary', ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced'],
     ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced'], 'linux-headers-' + KERNEL),
    (TRIXIE, '', 'open', ['nvidia-driver', 'nvidia-open-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced'],
     ['nvidia-driver', 'nvidia-open-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced'], 'linux-headers-' + KERNEL),
    (TRIXIE, '550', 'proprietary', ['nvidia-driver=550.*', 'nvidia-kernel-dkms=550.*', 'nvidia-smi=550.*', 'nvidia-persistenced'],
     ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced'], 'linux-headers-' + KERNEL),
    (BOOKWORM, '535.261.03', 'open',
     ['nvidia-driver=535.261.03-*', 'nvidia-open-kernel-dkms=535.261.03-*', 'nvidia-smi=535.261.03-*', 'nvidia-persistenced'],
     ['nvidia-driver', 'nvidia-open-kernel-dkms', 'nvidia-smi', 'nvidia-persistenced'], 'linux-headers-' + KERNEL),
    (NOBLE, '570', 'open', ['nvidia-headless-570-server-open', 'nvidia-utils-570-server'],
     ['nvidia-headless-570-server-open', 'nvidia-utils-570-server'], 'linux-headers-' + KERNEL),
    (NOBLE, '570.195.03', 'proprietary', ['nvidia-headless-570-server=570.195.03-*', 'nvidia-utils-570-server=570.195.03-*'],
     ['nvidia-headless-570-server', 'nvidia-utils-570-server'], 'linux-headers-' + KERNEL),
    (ROCKY9, '', 'proprietary', ['@nvidia-driver:latest-dkms'], ['nvidia-driver', 'nvidia-driver-cuda', 'kmod-nvidia-latest-dkms'],
     'kernel-devel-' + KERNEL),
    (ROCKY9, '', 'open', ['@nvidia-driver:open-dkms'], ['nvidia-driver', 'nvidia-driver-cuda', 'kmod-nvidia-open-dkms'],
     'kernel-devel-' + KERNEL),
    (RHEL8, '550', 'open', ['@nvidia-driver:550-open'], ['nvidia-driver', 'nvidia-driver-cuda', 'kmod-nvidia-open-dkms'],
     'kernel-devel-' + KERNEL),
    (RHEL8, '550.163.01', 'proprietary',
     ['@nvidia-driver:550-dkms', 'nvidia-driver-550.163.01', 'nvidia-driver-cuda-550.163.01', 'kmod-nvidia-latest-dkms-550.163.01'],
     ['nvidia-driver', 'nvidia-driver-cuda', 'kmod-nvidia-latest-dkms'], 'kernel-devel-' + KERNEL),
])
def test_driver_packages(os_release, version, kind, install, names, headers):
    result = pkgs.driver_packages(os_release, version, kind, KERNEL)
    assert result == dict(manager='dnf' if 'kernel-devel' in headers else 'apt', install=install, names=names, headers=headers)


UBUNTU_KERNEL = '6.8.0-60-generic'  # constructed, in Ubuntu 24.04's kernel ABI naming
MODULES = 'linux-modules-nvidia-570-server-%s' % UBUNTU_KERNEL
OPEN_MODULES = 'linux-modules-nvidia-570-server-open-%s' % UBUNTU_KERNEL


@pytest.mark.parametrize('version, kind, available, install, headers', [
    # The precompiled module of the resolved type exists: its no-dkms user space, no headers.
    ('570', 'proprietary', {MODULES, OPEN_MODULES}, ['nvidia-headless-no-dkms-570-server', 'nvidia-utils-570-server', MODULES], None),
    ('570', 'open', {OPEN_MODULES}, ['nvidia-headless-no-dkms-570-server-open', 'nvidia-utils-570-server', OPEN_MODULES], None),
    # Not for this type, or none for this kernel: DKMS with the headers.
    ('570', 'proprietary', {OPEN_MODULES}, ['nvidia-headless-570-server', 'nvidia-utils-570-server'], 'linux-headers-' + UBUNTU_KERNEL),
    ('570', 'open', set(), ['nvidia-headless-570-server-open', 'nvidia-utils-570-server'], 'linux-headers-' + UBUNTU_KERNEL),
    # A full version is built by DKMS: a precompiled package brings whatever version Canonical built it from.
    ('570.195.03', 'proprietary', {MODULES},
     ['nvidia-headless-570-server=570.195.03-*', 'nvidia-utils-570-server=570.195.03-*'], 'linux-headers-' + UBUNTU_KERNEL),
])
def test_ubuntu_precompiled_or_dkms(version, kind, available, install, headers):
    result = pkgs.driver_packages(NOBLE, version, kind, UBUNTU_KERNEL, available=available)
    assert result == dict(manager='apt', install=install, names=[pkgs.package_name(spec) for spec in install], headers=headers)


@pytest.mark.parametrize('os_release, version, names', [
    (NOBLE, '570', [MODULES, OPEN_MODULES]),
    (NOBLE, '570.195.03', []),
    (NOBLE, '', []),
    (BOOKWORM, '535', []),
    (ROCKY9, '550', []),
])
def test_precompiled_modules_probed(os_release, version, names):
    assert pkgs.precompiled_modules(os_release, version, UBUNTU_KERNEL) == names


def test_apt_candidates():
    # `LC_ALL=C apt-cache policy bash no-such-package-xyz` on a Debian 12 host (real output, the mirror's address
    # replaced by an example one; the unknown name prints nothing), then a constructed entry in the same format for a known name without an installable version.
    text = ('bash:\n  Installed: 5.2.15-2+b8\n  Candidate: 5.2.15-2+b13\n  Version table:\n     5.2.15-2+b13 500\n'
            '        500 http://mirror.example/debian bookworm/main amd64 Packages\n *** 5.2.15-2+b8 100\n'
            '        100 /var/lib/dpkg/status\n'
            'linux-modules-nvidia-570-server-open-6.8.0-60-generic:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n')
    assert pkgs.apt_candidates(text) == {'bash'}
    assert pkgs.apt_candidates('') == set()


def test_debian_without_persistence_mode():
    assert 'nvidia-persistenced' not in pkgs.driver_packages(BOOKWORM, '', 'proprietary', KERNEL, persistence_mode=False)['install']


@pytest.mark.parametrize('os_release, version, message', [
    (NOBLE, '', 'set version to a branch'),
    (dict(ID='rhel', VERSION_ID='10.0'), '', 'no driver package naming for rhel 10.0'),
    (dict(ID='opensuse-leap', ID_LIKE='suse opensuse', VERSION_ID='15.6'), '', 'no driver package naming for opensuse-leap'),
    ({}, '550', 'no driver package naming for an unknown distribution'),
])
def test_unknown_naming_fails_clearly(os_release, version, message):
    with pytest.raises(DriverError, match=message):
        pkgs.driver_packages(os_release, version, 'open', KERNEL)


@pytest.mark.parametrize('os_release, family', [
    (BOOKWORM, 'debian'), (NOBLE, 'ubuntu'), (ROCKY9, 'rhel'), (RHEL8, 'rhel'),
    (dict(ID='linuxmint', ID_LIKE='ubuntu debian'), 'ubuntu'), (dict(ID='raspbian', ID_LIKE='debian'), 'debian'), ({}, None)])
def test_distro_family(os_release, family):
    assert pkgs.distro_family(os_release) == family


def test_parse_dpkg_status():
    # `dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\n'` lines: installed, held, removed with config, multiarch,
    # not installed (constructed from bookworm's versions).
    text = ('ii  nvidia-smi 535.261.03-1\nhi  nvidia-driver 535.261.03-1\nrc  nvidia-kernel-dkms 535.261.03-1\n'
            'ii  libc6:amd64 2.36-9+deb12u10\nun  nouveau \n')
    assert pkgs.parse_dpkg_status(text) == {'nvidia-smi': '535.261.03-1', 'nvidia-driver': '535.261.03-1', 'libc6': '2.36-9+deb12u10'}


def test_parse_rpm_packages():
    # Constructed `rpm -qa --qf '%{NAME} %{VERSION}-%{RELEASE}\n'` lines.
    text = 'nvidia-driver 570.172.08-1.el9\nkmod-nvidia-open-dkms 570.172.08-1.el9\n\n'
    assert pkgs.parse_rpm_packages(text) == {'nvidia-driver': '570.172.08-1.el9', 'kmod-nvidia-open-dkms': '570.172.08-1.el9'}


DATA = os.path.join(os.path.dirname(__file__), 'driver_data')


def data(name):
    with open(os.path.join(DATA, name)) as handle:
        return handle.read()


@pytest.mark.parametrize('text, expected', [
    # Real (driver_data/README.md): what the lab's user-space driver install pulls in, dependencies included.
    ('apt-s-install-nvidia-smi-persistenced.txt', {
        'update-glx': '1.2.2', 'glx-alternative-mesa': '1.2.2', 'nvidia-installer-cleanup': '20220217+3~deb12u1', 'glx-diversions': '1.2.2',
        'glx-alternative-nvidia': '1.2.2', 'nvidia-legacy-check': '535.261.03-1', 'nvidia-alternative': '535.261.03-1',
        'libnvidia-cfg1': '535.261.03-1', 'nvidia-persistenced': '535.171.04-1~deb12u1', 'libnvidia-ml1': '535.261.03-1',
        'nvidia-smi': '535.261.03-1'}),
    ('apt-s-purge-held-libnvidia-ml1.txt', {'libnvidia-ml1': None}),
    # Constructed in apt's formats: an upgrade (the old version in brackets), a removal, a multiarch name.
    ('Inst nvidia-smi [535.261.03-1] (550.163.01-2 Debian:13 [amd64])\nRemv dkms [3.0.10-8]\nInst libc6:i386 (2.36-9 Debian:12 [i386])\n',
     {'nvidia-smi': '550.163.01-2', 'dkms': None, 'libc6': '2.36-9'}),
    ('', {}),
    ('E: Unable to locate package nvidia-smi\n', {}),
])
def test_apt_simulation(text, expected):
    assert pkgs.apt_simulation(data(text) if text.endswith('.txt') else text) == expected


def test_package_set_text():
    versions = {'nvidia-smi': '535.261.03-1', 'libnvidia-ml1': '535.261.03-1', 'bash': '5.2.15-2+b7'}
    assert pkgs.package_set_text(versions, {'nvidia-smi'}, ['nvidia-smi', 'libnvidia-ml1', 'gone']) == (
        'libnvidia-ml1 535.261.03-1\nnvidia-smi 535.261.03-1 (held)\n')
    assert pkgs.package_set_text(versions, set(), []) == ''


def test_parse_versionlock():
    # Constructed `dnf versionlock list` lines (name-epoch:version-release.*) and dnf's own chatter.
    text = 'Last metadata expiration check: 0:01:02 ago.\nnvidia-driver-3:550.163.01-1.el9.*\nkmod-nvidia-open-dkms-3:550.163.01-1.el9.*\n'
    assert pkgs.parse_versionlock(text) == {'nvidia-driver', 'kmod-nvidia-open-dkms'}


@pytest.mark.parametrize('spec, name', [
    ('nvidia-driver', 'nvidia-driver'), ('nvidia-driver=550.*', 'nvidia-driver'), ('nvidia-smi=535.261.03-*', 'nvidia-smi'),
    ('@nvidia-driver:550-dkms', 'nvidia-driver'), ('libnvidia-ml1:amd64', 'libnvidia-ml1'),
])
def test_package_name(spec, name):
    assert pkgs.package_name(spec) == name


@pytest.mark.parametrize('text, version', [
    ('535.261.03-1', '535.261.03'),              # bookworm's nvidia-smi (dpkg-query -W -f='${Version}', measured in the lab)
    ('535.171.04-1~deb12u1', '535.171.04'),      # bookworm's nvidia-persistenced
    ('550.163.01-2\n', '550.163.01'),            # trixie
    ('1:570.195.03-0ubuntu0.24.04.1', '570.195.03'),  # constructed: an epoch and an Ubuntu revision
    ('550.163.01', '550.163.01'),                # rpm -q --qf '%{VERSION}'
    ('', None),
    ('package nvidia-driver is not installed', None),
])
def test_upstream_version(text, version):
    assert pkgs.upstream_version(text) == version
