# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Kata's sandbox device plugin (kataSandboxDevicePlugin): assets/state-kata-device-plugin and TransformKataDevicePlugin of GPU
Operator v26.7.0.

NVIDIA's sandbox device plugin advertises the GPUs of vm-passthrough nodes bound to vfio-pci to Kata containers; deployed
with sandboxWorkloads.enabled in mode kata. Laid out and changed as KubeVirt's (sandbox_device_plugin.py), but for those.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.operands.sandbox_device_plugin import SandboxDevicePlugin
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster.skeleton import field_env


class KataDevicePlugin(SandboxDevicePlugin):
    """The Operator's state-kata-device-plugin (its OpenShift SCC and clusterversions rules left out): the vfio-pci GPUs of
    vm-passthrough nodes only, without /dev/vfio mounted; its Pod is told its ServiceAccount."""
    mode = contract.KATA
    skipped = 'kata'

    def layout(self):
        pod = SandboxDevicePlugin.layout(self)
        plugin = pod['containers'][0]
        plugin['name'] = 'nvidia-kata-sandbox-device-plugin-ctr'
        plugin['env'].append(field_env('POD_SERVICE_ACCOUNT', 'spec.serviceAccountName'))
        plugin['volumeMounts'] = [item for item in plugin['volumeMounts'] if item['name'] != 'vfio']
        return dict(pod, initContainers=pod['initContainers'][:1], volumes=self.volumes())


OPERAND = KataDevicePlugin('kataSandboxDevicePlugin', 'nvidia-kata-sandbox-device-plugin-daemonset', contract.KATA_DEVICE_PLUGIN_COMPONENT,
                           image=('nvcr.io/nvidia/cloud-native', 'nvidia-sandbox-device-plugin', 'v0.0.5'), account='nvidia-kata-sandbox-device-plugin')
