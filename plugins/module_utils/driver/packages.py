# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Which packages make up the NVIDIA driver on a distribution (pure), and reading what a package manager has installed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.state import VERSION, DriverError, branch_of

RHEL_LIKE = ('rhel', 'centos', 'rocky', 'almalinux', 'ol')
RHEL_MAJORS = ('8', '9')


def distro_family(os_release):
    """debian | ubuntu | rhel | None from the os-release pairs."""
    ids = [os_release.get('ID', '')] + os_release.get('ID_LIKE', '').split()
    if 'ubuntu' in ids:
        return 'ubuntu'
    if 'debian' in ids:
        return 'debian'
    if any(name in RHEL_LIKE or name == 'fedora' for name in ids):
        return 'rhel'
    return None


def manager_of(family):
    return {'debian': 'apt', 'ubuntu': 'apt', 'rhel': 'dnf'}.get(family)


def package_name(spec):
    """The package name of an install spec: 'nvidia-driver=550.*' and dnf's module '@nvidia-driver:550-dkms' -> 'nvidia-driver'."""
    return spec.split('=', 1)[0].lstrip('@').split(':', 1)[0]


def _apt_pin(name, version):
    """apt's version glob: a branch matches 550.*, a full version its Debian revisions (550.163.01-*)."""
    if not version:
        return name
    return '%s=%s%s' % (name, version, '.*' if '.' not in version else '-*')


# Ubuntu's server (ERD) driver packages, one set per branch, and Canonical's precompiled kernel modules, one package per
# branch, kernel module type and kernel release (linux-restricted-modules): "NVIDIA drivers installation", Ubuntu Server
# documentation, https://ubuntu.com/server/docs/nvidia-drivers-installation ("Installing the pre-compiled NVIDIA modules
# for your kernel": linux-modules-nvidia-${DRIVER_BRANCH}${SERVER}-$(uname -r)); the open flavour as published, for
# example https://packages.ubuntu.com/resolute/kernel/linux-modules-nvidia-595-server-7.0.0-30-generic and its sibling
# linux-modules-nvidia-580-server-open-7.0.0-30-generic.
def ubuntu_modules_package(branch, kernel_module_type, kernel_release):
    """linux-modules-nvidia-<branch>-server[-open]-<kernel release>."""
    return 'linux-modules-nvidia-%s-server%s-%s' % (branch, '-open' if kernel_module_type == 'open' else '', kernel_release)


def precompiled_modules(os_release, version, kernel_release):
    """The precompiled module packages whose presence in the package lists decides how the driver is installed: on Ubuntu,
    for a driver branch, both kernel module types (the type is resolved later); [] elsewhere or with a full version (a
    precompiled package brings the module of whatever driver version Canonical built it from; a full version is built by DKMS).
    """
    branch = branch_of(version)
    if distro_family(os_release) != 'ubuntu' or not branch or '.' in version or not kernel_release:
        return []
    return [ubuntu_modules_package(branch, kind, kernel_release) for kind in ('proprietary', 'open')]


def apt_candidates(text):
    """The package names `apt-cache policy NAME...` offers a candidate version for (unknown names print nothing; a known
    name without an installable version says "Candidate: (none)")."""
    names = set()
    name = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(':'):
            name = line.rstrip()[:-1]
        elif name and line.strip().startswith('Candidate:'):
            if line.split(':', 1)[1].strip() not in ('', '(none)'):
                names.add(name)
            name = None
    return names


def driver_packages(os_release, version, kernel_module_type, kernel_release, persistence_mode=True, available=()):
    """The packages that install the driver: dict(manager, install, names, headers).

    `install` are the specs handed to the package manager, `names` the package names that are held and whose
    presence means "installed", `headers` the kernel headers package DKMS needs to build the module for
    `kernel_release` (None: precompiled modules need none). `available` are the package names the package manager can
    install (apt_candidates() of the names precompiled_modules() gives). Raises DriverError for a distribution without a
    known naming.
    """
    family = distro_family(os_release)
    branch = branch_of(version)
    if not kernel_release:
        raise DriverError('the running kernel release is unknown (procfs sys/kernel/osrelease): cannot name the kernel headers DKMS needs')
    if family == 'debian':
        # non-free: nvidia-driver depends on either kernel module flavour (the open one is in contrib);
        # nvidia-smi and nvidia-persistenced are only recommended, and nvidia-persistenced has its own version.
        # The GSP firmware needs no entry: firmware-nvidia-gsp (= driver version) is a Depends, not a Recommends, of
        # nvidia-kernel-dkms and nvidia-open-kernel-dkms in bookworm (535) and trixie (550), so --no-install-recommends
        # installs it (https://packages.debian.org/bookworm/nvidia-kernel-dkms, .../trixie/nvidia-kernel-dkms,
        # .../bookworm/nvidia-open-kernel-dkms, .../trixie/nvidia-open-kernel-dkms).
        dkms = 'nvidia-open-kernel-dkms' if kernel_module_type == 'open' else 'nvidia-kernel-dkms'
        install = [_apt_pin(name, version) for name in ('nvidia-driver', dkms, 'nvidia-smi')]
        install += ['nvidia-persistenced'] if persistence_mode else []
        return dict(manager='apt', install=install, names=[package_name(spec) for spec in install],
                    headers='linux-headers-%s' % kernel_release)
    if family == 'ubuntu':
        if not branch:
            raise DriverError('Ubuntu packages each driver branch on its own (nvidia-headless-<branch>-server); '
                              'set version to a branch, for example 570')
        flavour = '-open' if kernel_module_type == 'open' else ''
        pin = version if '.' in version else ''
        utils = _apt_pin('nvidia-utils-%s-server' % branch, pin)
        modules = ubuntu_modules_package(branch, kernel_module_type, kernel_release)
        if modules in available and not pin:
            # Canonical's precompiled, signed modules for the running kernel: no DKMS build, no kernel headers, and
            # Secure Boot accepts them. nvidia-headless-<branch>-server would pull nvidia-dkms-<branch>-server in,
            # so its no-dkms variant carries the user space (as the GPU Operator's precompiled Ubuntu driver image does).
            install = [_apt_pin('nvidia-headless-no-dkms-%s-server%s' % (branch, flavour), pin), utils, modules]
            headers = None
        else:
            install = [_apt_pin('nvidia-headless-%s-server%s' % (branch, flavour), pin), utils]
            headers = 'linux-headers-%s' % kernel_release
        return dict(manager='apt', install=install, names=[package_name(spec) for spec in install], headers=headers)
    if family == 'rhel':
        major = os_release.get('VERSION_ID', '').split('.')[0]
        if major not in RHEL_MAJORS:
            raise DriverError('no driver package naming for %s %s (RHEL 8 and 9 are known); give the package list in packages'
                              % (os_release.get('ID'), os_release.get('VERSION_ID')))
        # The CUDA repository's nvidia-driver module: one stream per branch and kernel module type.
        flavour = 'open' if kernel_module_type == 'open' else 'dkms'
        stream = '%s-%s' % (branch, flavour) if branch else ('open-dkms' if flavour == 'open' else 'latest-dkms')
        kmod = 'kmod-nvidia-open-dkms' if flavour == 'open' else 'kmod-nvidia-latest-dkms'
        names = ['nvidia-driver', 'nvidia-driver-cuda', kmod]
        install = ['@nvidia-driver:%s' % stream]
        if version and '.' in version:
            install += ['%s-%s' % (name, version) for name in names]
        return dict(manager='dnf', install=install, names=names, headers='kernel-devel-%s' % kernel_release)
    raise DriverError('no driver package naming for %s %s (Debian, Ubuntu, RHEL 8 and 9 are known); give the package list in packages'
                      % (os_release.get('ID') or 'an unknown distribution', os_release.get('VERSION_ID', '')))


def parse_dpkg_status(text):
    """{name: version} of the installed packages in `dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'`
    (ii / hi: installed)."""
    versions = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0][1:2] == 'i':
            versions[fields[1].split(':', 1)[0]] = fields[2]
    return versions


def upstream_version(text):
    """The driver version in a package version: `dpkg-query -f='${Version}'` 1:535.261.03-1~deb12u1 -> 535.261.03 (no epoch,
    no Debian revision), `rpm --qf '%{VERSION}'` as it is; None for anything that is not a driver version."""
    version = (text or '').strip().split(':', 1)[-1].rsplit('-', 1)[0]
    return version if VERSION.match(version) else None


def parse_rpm_packages(text):
    """{name: version-release} of `rpm -qa --qf '%{NAME} %{VERSION}-%{RELEASE}\\n'`."""
    return dict(line.split() for line in text.splitlines() if len(line.split()) == 2)


# apt-get -s (--simulate) lines: "Inst NAME [OLD] (NEW ARCHIVE [ARCH])" for a package installed, up- or downgraded,
# "Remv NAME [OLD]" and "Purg NAME [OLD]" for one removed.
_SIMULATED = re.compile(r'^(Inst|Remv|Purg) (\S+)(?: \[[^\]]*\])?(?: \((\S+))?')


def apt_simulation(text):
    """{name: version after (None: removed)} of what `apt-get -s install|purge ...` says it would do."""
    changes = {}
    for line in text.splitlines():
        match = _SIMULATED.match(line)
        if match:
            changes[match.group(2).split(':', 1)[0]] = match.group(3) if match.group(1) == 'Inst' else None
    return changes


def package_set_text(versions, held, names):
    """One side of the package diff: 'NAME VERSION' (and ' (held)') for each of `names` that is installed, by name."""
    return ''.join('%s %s%s\n' % (name, versions[name], ' (held)' if name in held else '') for name in sorted(names) if name in versions)


def parse_versionlock(text):
    """Package names from `dnf versionlock list` lines (name-[epoch:]version-release.*)."""
    names = set()
    for line in text.splitlines():
        parts = line.strip().rsplit('-', 2)
        if len(parts) == 3 and parts[1][:1].isdigit():
            names.add(parts[0])
    return names
