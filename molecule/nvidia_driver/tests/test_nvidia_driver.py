# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""After converge: the node without a driver has Debian's real packages, held, and nouveau blacklisted, and the role
says honestly that the driver is not loaded; the pre-installed driver is only validated; the GPU-less node is untouched."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

import pytest
import testinfra

# molecule.yml's nvidia_driver_packages (user space only) and the branch bookworm packages them at.
PACKAGES = ['nvidia-smi', 'libnvidia-ml1', 'nvidia-persistenced']
BOOKWORM_BRANCH = '535'
BLACKLIST = '/etc/modprobe.d/blacklist-nouveau.conf'
RECORD = '/var/lib/gpuops/nvidia_driver.json'
DRIVER_READY = '/run/nvidia/validations/driver-ready'
# nvidia-smi(1): exit 9 when no NVIDIA kernel module answers.
NO_DRIVER_EXIT = 9
# tests/fixtures/gpus/h200-x1: proc/driver/nvidia/version and nvidia-smi/q-x.xml.
H200_DRIVER = dict(installed=True, loaded=True, version='580.159.04', branch='580', source='pre-installed', kernel_module_type='open')
EPHEMERAL = os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY', '')

NO_DRIVER = 'nvidia_driver-bookworm'
PRE_INSTALLED = 'nvidia_driver-trixie'
NO_GPU = 'nvidia_driver-sid'


def node(name):
    return testinfra.get_host('podman://%s' % name)


def name(host):
    return host.backend.get_hostname()


def converged(host):
    """The role's nvidia_driver_result and nvidia_driver_reboot_required after the first converge (converge.yml)."""
    with open(os.path.join(EPHEMERAL, 'result-%s.json' % name(host)), encoding='utf-8') as stream:
        return json.load(stream)


def nvidia_packages(host):
    """Installed packages whose name has nvidia in it."""
    out = host.check_output("dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n'")
    return sorted(line.split()[1] for line in out.splitlines() if line.startswith('ii') and 'nvidia' in line)


def apt_lists(host):
    """The package lists apt fetched (none: the role did not refresh them)."""
    return host.check_output('find /var/lib/apt/lists -name "*_Packages*"').split()


# ------------------------------------------------------------------ the node without a driver

@pytest.fixture(name='no_driver')
def fixture_no_driver():
    return node(NO_DRIVER)


def test_real_packages_installed_from_debian(no_driver):
    for package in PACKAGES:
        pkg = no_driver.package(package)
        assert pkg.is_installed, package
        assert pkg.version.startswith(BOOKWORM_BRANCH + '.'), (package, pkg.version)
    assert converged(no_driver)['result']['packages'] == PACKAGES


def test_packages_held(no_driver):
    assert sorted(no_driver.check_output('apt-mark showhold').split()) == sorted(PACKAGES)


def test_nouveau_blacklisted(no_driver):
    blacklist = no_driver.file(BLACKLIST)
    assert blacklist.mode == 0o644
    lines = [line for line in blacklist.content_string.splitlines() if not line.startswith('#')]
    assert lines == ['blacklist nouveau', 'blacklist nova_core', 'options nouveau modeset=0']


def test_undo_record_lists_what_was_installed(no_driver):
    record_file = no_driver.file(RECORD)
    assert record_file.mode == 0o600
    record = json.loads(record_file.content_string)
    assert set(PACKAGES) <= set(record['installed'])
    assert sorted(record['held']) == sorted(PACKAGES)
    assert list(record['files']) == [BLACKLIST]


def test_real_nvidia_smi_finds_no_kernel_module(no_driver):
    # The lab cannot load kernel modules: Debian's nvidia-smi says so itself.
    smi = no_driver.run('/usr/bin/nvidia-smi')
    assert smi.rc == NO_DRIVER_EXIT
    assert "couldn't communicate with the NVIDIA driver" in smi.stdout


def test_result_says_installed_not_loaded_reboot_required(no_driver):
    converge = converged(no_driver)
    result = converge['result']
    assert result['gpu_count'] == 1
    assert result['driver']['installed'] is True
    assert result['driver']['loaded'] is False
    assert result['driver']['source'] == 'package'
    # Not loaded, so the version is the installed package's.
    assert result['driver']['version'] == no_driver.package('nvidia-smi').version.rsplit('-', 1)[0]
    assert result['driver']['branch'] == BOOKWORM_BRANCH
    assert result['reboot_required'] is True
    assert converge['reboot_required'] is True
    assert result['deploy_driver_label'] == 'true'
    assert not no_driver.file(DRIVER_READY).exists


# ------------------------------------------------------------------ the pre-installed driver and the GPU-less node

@pytest.fixture(name='untouched', params=[PRE_INSTALLED, NO_GPU])
def fixture_untouched(request):
    return node(request.param)


def test_nothing_installed_nor_apt_lists_refreshed(untouched):
    assert nvidia_packages(untouched) == []
    assert apt_lists(untouched) == []
    assert untouched.check_output('apt-mark showhold') == ''
    assert not untouched.file(BLACKLIST).exists
    assert not untouched.file(RECORD).exists
    assert converged(untouched)['result']['packages'] == []


def test_pre_installed_driver_validated():
    pre_installed = node(PRE_INSTALLED)
    result = converged(pre_installed)['result']
    assert result['driver'] == H200_DRIVER
    assert result['deploy_driver_label'] == 'pre-installed'
    assert result['reboot_required'] is False
    assert pre_installed.file(DRIVER_READY).content_string == (
        'IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\nNVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n')


def test_gpu_less_node_left_alone():
    no_gpu = node(NO_GPU)
    result = converged(no_gpu)['result']
    assert result['gpu_count'] == 0
    assert result['driver']['source'] == 'none'
    assert result['deploy_driver_label'] == 'false'
    assert result['changed'] is False
    assert not no_gpu.file(DRIVER_READY).exists
