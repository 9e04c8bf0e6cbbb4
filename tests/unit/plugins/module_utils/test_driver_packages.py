# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""driver_packages: package naming per distribution, version and kernel module type; package manager listings."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils import driver_packages as pkgs
from ansible_collections.gpuops.gpu_operator.plugins.module_utils import gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver_state import DriverError
from tests.unit.plugins.module_utils.nfd_labels_fixtures import GPUS

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
    (NOBLE, '570', 'open', ['nvidia-driver-570-server-open'], ['nvidia-driver-570-server-open'], 'linux-headers-' + KERNEL),
    (NOBLE, '570.195.03', 'proprietary', ['nvidia-driver-570-server=570.195.03-*'], ['nvidia-driver-570-server'],
     'linux-headers-' + KERNEL),
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
    # Constructed `dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n'` lines: installed, held, removed with config, multiarch.
    text = 'ii  nvidia-smi\nhi  nvidia-driver\nrc  nvidia-kernel-dkms\nii  libc6:amd64\nun  nouveau\n'
    assert pkgs.parse_dpkg_status(text) == {'nvidia-smi', 'nvidia-driver', 'libc6'}


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
