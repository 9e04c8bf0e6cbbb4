# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""After converge: containerd itself reads the NVIDIA runtimes the role registered."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import tomllib

# Per node: containerd minor version Debian ships, the runtimes and default the host_vars in molecule.yml ask for.
EXPECTED = {
    'container_toolkit-bookworm': ('1.6', ['nvidia'], 'nvidia'),
    'container_toolkit-trixie': ('1.7', ['nvidia', 'nvidia-cdi', 'nvidia-legacy'], 'nvidia'),
    'container_toolkit-sid': ('2.1', ['nvidia', 'nvidia-cdi', 'nvidia-legacy'], 'runc'),
}
BINARY = '/usr/bin/nvidia-container-runtime'

testinfra_hosts = ['podman://%s' % name for name in EXPECTED]


def expected(host):
    return EXPECTED[host.backend.get_hostname()]


def dump(host):
    return tomllib.loads(host.check_output('containerd config dump'))


def cri(host):
    """The CRI table of containerd's own view of its config."""
    config = dump(host)
    # containerd 2.x dumps version 3 (the CRI runtime plugin, single-quoted) even for a version 2 file.
    name = 'io.containerd.cri.v1.runtime' if config['version'] >= 3 else 'io.containerd.grpc.v1.cri'
    return config['plugins'][name]


def test_containerd_version(host):
    out = host.check_output('containerd --version')
    assert re.search(r' v?%s\.\d+' % re.escape(expected(host)[0]), out), out


def test_config_dump_lists_runtimes_with_binary(host):
    runtimes = cri(host)['containerd']['runtimes']
    for name in expected(host)[1]:
        binary = BINARY + name[len('nvidia'):].replace('-', '.')
        assert runtimes[name]['options']['BinaryName'] == binary
        # Inherited from runc, so the cgroup driver Debian configured survives.
        assert runtimes[name]['runtime_type'] == 'io.containerd.runc.v2'


def test_default_runtime(host):
    assert cri(host)['containerd']['default_runtime_name'] == expected(host)[2]


def test_cdi_enabled_only_when_asked(host):
    assert cri(host).get('enable_cdi', False) is (len(expected(host)[1]) > 1)


def test_containerd_active_and_toolkit_not_ready_without_binary(host):
    assert host.service('containerd').is_running
    # The lab has no NVIDIA toolkit binary: the role warns and must not claim readiness.
    assert not host.file(BINARY).exists
    assert not host.file('/run/nvidia/validations/toolkit-ready').exists
