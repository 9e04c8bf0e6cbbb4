# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ClusterPolicy's driver and toolkit sections, which the node roles honour (plugin_utils/cluster/host_sections.py).

SOURCE (facts, not code):
- NVIDIA/gpu-operator v26.7.0 (10ee5b3638b89e11e949412aafa5ba99279c3721): api/nvidia/v1/clusterpolicy_types.go
  (driver.kernelModuleType auto|open|proprietary, default auto; toolkit.installDir default /usr/local/nvidia);
  controllers/object_controls.go TransformToolkit (toolkit.env set on the toolkit container, then transformForRuntime
  sets CONTAINERD_RUNTIME_CLASS to operator.runtimeClass; a non-default installDir is the toolkit's host directory,
  the runtime in <installDir>/toolkit: transformDevicePluginCtrForCDI's NVIDIA_CDI_HOOK_PATH).
- NVIDIA/nvidia-container-toolkit v1.20.0 (the Operator's default toolkit image, deployments/gpu-operator/values.yaml
  toolkit.version), cmd/nvidia-ctk-installer/container/runtime/runtime.go: CONTAINERD_CONFIG is the runtime's config
  file (--config, /etc/containerd/config.toml), CONTAINERD_SOCKET its socket (--socket), CONTAINERD_RUNTIME_CLASS the
  runtime's name (--runtime-name, nvidia), CONTAINERD_SET_AS_DEFAULT whether it is the default (--set-as-default, true,
  a Go boolean).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.filter.container_toolkit import FilterModule
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import host_sections, registry

SETTINGS = FilterModule().filters()['container_toolkit_settings']


def env(**values):
    return [{'name': name, 'value': value} for name, value in values.items()]


@pytest.mark.parametrize('policy, nodes, expected', [
    pytest.param({}, None, dict(enabled=True, runtime_name='nvidia', cdi_enabled=False, install_dir='/usr/bin',
                                containerd_config='/etc/containerd/config.toml', set_as_default=True), id='the defaults: the role\'s own'),
    pytest.param({'toolkit': {'enabled': False}}, None, dict(enabled=False), id='toolkit.enabled false: pre-installed, left alone'),
    pytest.param({'toolkit': {'env': env(CONTAINERD_CONFIG='/etc/containerd/custom.toml', CONTAINERD_SET_AS_DEFAULT='false',
                                         CONTAINERD_SOCKET='/run/containerd/containerd.sock')}}, None,
                 dict(containerd_config='/etc/containerd/custom.toml', set_as_default=False), id='env as the installer reads it'),
    pytest.param({'toolkit': {'env': env(CONTAINERD_SET_AS_DEFAULT='1')}}, None, dict(set_as_default=True), id='a Go boolean'),
    pytest.param({'operator': {'runtimeClass': 'nvidia-gpu'}, 'toolkit': {'env': env(CONTAINERD_RUNTIME_CLASS='other')}}, None,
                 dict(runtime_name='nvidia-gpu'), id='CONTAINERD_RUNTIME_CLASS is operator.runtimeClass, as the Operator sets it'),
    pytest.param({'cdi': {'enabled': True}}, None, dict(cdi_enabled=True), id='cdi.enabled'),
    pytest.param({'toolkit': {'installDir': '/opt/nvidia'}}, None, dict(install_dir='/opt/nvidia/toolkit'), id='installDir of its own'),
    pytest.param({'toolkit': {'installDir': '/usr/local/nvidia/'}}, None, dict(install_dir='/usr/bin'), id='the Operator default: packages'),
    pytest.param({}, [{'host': 'a', 'runtime_name': 'gpu'}, {'host': 'b', 'runtime_name': 'gpu'}], dict(runtime_name='gpu'),
                 id='the nodes\' inventory decides when the policy leaves it out'),
])
def test_container_toolkit_settings(policy, nodes, expected):
    found = SETTINGS(registry.resolution(policy, nodes=nodes))
    assert dict((key, found[key]) for key in expected) == expected


def test_the_nodes_follow_the_policy_unless_their_inventory_says_otherwise():
    """operator.runtimeClass, cdi.enabled and toolkit.installDir are what a node that sets nothing gets; one that sets
    another value in its inventory still has to agree (one DaemonSet serves every GPU node)."""
    policy = {'operator': {'runtimeClass': 'nvidia-gpu'}, 'cdi': {'enabled': True}, 'toolkit': {'installDir': '/opt/nvidia'}}
    resolved = registry.resolution(policy, nodes=[{'host': 'a'}, {'host': 'b', 'cdi_enabled': True}])
    assert resolved['spec']['operator']['runtimeClass'] == 'nvidia-gpu' and resolved['cdi_hook_path'] == '/opt/nvidia/toolkit/nvidia-cdi-hook'
    with pytest.raises(GpuOpsError, match="operator.runtimeClass is 'nvidia-gpu' but container_toolkit_runtime_name='nvidia' on b"):
        registry.resolution(policy, nodes=[{'host': 'a'}, {'host': 'b', 'runtime_name': 'nvidia'}])


def test_driver_section_defaults_and_upgrade_policy():
    spec = registry.resolution({'driver': {'version': '580', 'kernelModuleType': 'open',
                                           'upgradePolicy': {'autoUpgrade': True, 'drain': {'enable': 'true'}}}})['spec']
    assert spec['driver']['enabled'] is True and spec['driver']['version'] == '580' and spec['driver']['kernelModuleType'] == 'open'
    assert spec['driver']['upgradePolicy']['drain']['enable'] is True and spec['driver']['upgradePolicy']['podDeletion']['timeoutSeconds'] == 300
    assert registry.resolution({})['spec']['driver'] == host_sections.defaults()['driver']
    assert registry.resolution({})['spec']['driver']['version'] == '', 'the distribution\'s driver, not the chart\'s image tag'
    # The ClusterPolicy written: the driver section as given, off for the Operator (the host's).
    assert registry.cluster_policy(registry.resolution({'driver': {'version': '580'}}))['spec']['driver'] == {'version': '580', 'enabled': False}
