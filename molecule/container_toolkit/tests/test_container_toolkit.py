# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""After converge: containerd itself reads the NVIDIA runtimes the role registered, under the names the RuntimeClasses of
gpu_cluster_base give their handlers."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import json
import re
import tomllib

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.containerd_cli import parse_version
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.containerd_config import ENABLE_CDI_SINCE
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.containerd_runtime import dump_problems

# Per node: containerd minor version Debian ships, the runtimes (name, binary suffix) and default the host_vars in
# molecule.yml ask for: a name of its own without CDI (the ClusterPolicy's operator.runtimeClass), one with CDI (the
# role's variables), the default name with CDI and not the default runtime (the ClusterPolicy's cdi.enabled and toolkit
# env CONTAINERD_SET_AS_DEFAULT=false).
EXPECTED = {
    'container_toolkit-bookworm': ('1.6', [('gpu-plain', '')], 'gpu-plain'),
    'container_toolkit-trixie': ('1.7', [('gpu', ''), ('gpu-cdi', '.cdi'), ('gpu-legacy', '.legacy')], 'gpu'),
    'container_toolkit-sid': ('2.1', [('nvidia', ''), ('nvidia-cdi', '.cdi'), ('nvidia-legacy', '.legacy')], 'runc'),
}
BINARY = '/usr/bin/nvidia-container-runtime'
# converge.yml writes the RuntimeClasses gpu_cluster_base renders for each node's variables here.
RUNTIME_CLASSES = '/var/lib/gpuops-test-runtime-classes.json'

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
    for name, suffix in expected(host)[1]:
        assert runtimes[name]['options']['BinaryName'] == BINARY + suffix
        # Inherited from runc, so the cgroup driver Debian configured survives.
        assert runtimes[name]['runtime_type'] == 'io.containerd.runc.v2'


def test_default_runtime(host):
    assert cri(host)['containerd']['default_runtime_name'] == expected(host)[2]


def test_runtime_classes_name_the_runtimes_containerd_reads(host):
    """Each RuntimeClass's handler is a runtime containerd reads from the file the module wrote, and every NVIDIA runtime
    there has one: with a runtime name of its own and CDI, <name>-cdi and <name>-legacy, not nvidia-cdi and nvidia-legacy."""
    classes = json.loads(host.file(RUNTIME_CLASSES).content_string)
    runtimes = cri(host)['containerd']['runtimes']
    nvidia = sorted(name for name, runtime in runtimes.items() if (runtime.get('options') or {}).get('BinaryName', '').startswith(BINARY))
    assert sorted(item['handler'] for item in classes) == nvidia == sorted(name for name, _suffix in expected(host)[1])
    assert all(item['metadata']['name'] == item['handler'] for item in classes)


def test_cdi_enabled_only_when_asked(host):
    assert cri(host).get('enable_cdi', False) is (len(expected(host)[1]) > 1)


def test_containerd_active_and_toolkit_not_ready_without_binary(host):
    assert host.service('containerd').is_running
    # The lab has no NVIDIA toolkit binary: the role warns and must not claim readiness.
    assert not host.file(BINARY).exists
    assert not host.file('/run/nvidia/validations/toolkit-ready').exists


# Issue 28 items 9 and 10: the module refuses enable_cdi before containerd 1.7 and a version 1 config under 2.x, as these
# containerds read them.
RULE_CONFIGS = {
    'enable-cdi': 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n',
    'version-1': ('[plugins.cri.containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
                  '[plugins.cri.containerd.runtimes.nvidia.options]\n  BinaryName = "%s"\n' % BINARY),
}


def test_the_version_rules_the_module_checks_are_containerds(host):
    version = parse_version(host.check_output('containerd --version'))
    dumps = {}
    for name, text in RULE_CONFIGS.items():
        path = '/tmp/gpuops-rule-%s.toml' % name
        host.check_output('echo %s | base64 -d > %s' % (base64.b64encode(text.encode()).decode(), path))
        dumps[name] = host.check_output('containerd --config %s config dump 2>/dev/null; rm -f %s' % (path, path))
    assert (dump_problems(dumps['enable-cdi'], [], enable_cdi=True) == []) is (version >= ENABLE_CDI_SINCE)
    assert (dump_problems(dumps['version-1'], [('nvidia', BINARY)]) == []) is (version[0] < 2)
