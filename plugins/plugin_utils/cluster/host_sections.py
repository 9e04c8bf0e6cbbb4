# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The ClusterPolicy sections the GPU nodes' roles do instead of the Operator's containers: `driver` (roles nvidia_driver
and gpu_driver_upgrade) and `toolkit` (role container_toolkit).

Their fields honoured here, their defaults, their checks, and what they mean for the roles' variables, which default from
the resolved ClusterPolicy (an inventory value of a role variable overrides it). The facts and their sources are in the
docstrings; docs/coming-from-gpu-operator.md says how each field is honoured.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import posixpath

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import TOOLKIT_DEFAULTS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import driver_upgrade

SCHEMA = {
    'driver': {'enabled': 'bool', 'version': 'str', 'kernelModuleType': 'str', 'upgradePolicy': 'dict',
               'rdma': {'enabled': 'bool', 'useHostMofed': 'bool'}},
    'toolkit': {'enabled': 'bool', 'installDir': 'str', 'env': 'env'},
    # GPUDirect Storage and GDRCopy: their kernel modules on the host, with the driver (module gpudirect).
    'gds': {'enabled': 'bool'},
    'gdrcopy': {'enabled': 'bool'},
}
KERNEL_MODULE_TYPES = ('auto', 'open', 'proprietary')
# The driver image tag the Operator release deploys by default (NVIDIA/gpu-operator v26.7.0
# deployments/gpu-operator/values.yaml driver.version): every ClusterPolicy exported from a default install and the chart's
# values carry it. It names the Operator's driver container, not a choice of the user's: here it means the distribution's
# driver, as an empty version does.
OPERATOR_DRIVER_VERSION = '595.91.07'
# The Operator's default toolkit.installDir (api/nvidia/v1/clusterpolicy_types.go, kubebuilder default): its toolkit
# container installs the runtime into <installDir>/toolkit. This collection installs the toolkit's packages (/usr/bin).
OPERATOR_INSTALL_DIR = '/usr/local/nvidia'
# The env of the Operator's toolkit container honoured here, and the container_toolkit variable each one sets.
# SOURCE: NVIDIA/nvidia-container-toolkit v1.20.0 (the Operator v26.7.0's toolkit image), cmd/nvidia-ctk-installer/
# container/runtime/runtime.go (tools/container/ moved there before that release):
#   CONTAINERD_CONFIG       the path of the runtime's top-level config file (flag --config, default /etc/containerd/config.toml)
#   CONTAINERD_SOCKET       the runtime's socket (flag --socket, /run/containerd/containerd.sock), through which the
#                           installer signals containerd to reload (--restart-mode signal)
#   CONTAINERD_RUNTIME_CLASS the name of the nvidia runtime (flag --runtime-name, default nvidia; NVIDIA_RUNTIME_NAME wins)
#   CONTAINERD_SET_AS_DEFAULT whether it becomes the default runtime (flag --set-as-default, default true)
# The Operator (NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go transformForRuntime) sets
# CONTAINERD_RUNTIME_CLASS to operator.runtimeClass after toolkit.env: the runtime is always named that.
CONTAINERD_CONFIG = '/etc/containerd/config.toml'
TOOLKIT_ENV = {
    'CONTAINERD_CONFIG': 'container_toolkit_containerd_config',
    'CONTAINERD_SOCKET': None,  # containerd is restarted through its systemd unit (the distribution's), not signalled
    'CONTAINERD_RUNTIME_CLASS': None,  # replaced by operator.runtimeClass, as the Operator does
    'CONTAINERD_SET_AS_DEFAULT': 'container_toolkit_set_as_default',
}


class HostSectionError(GpuOpsError):
    """A driver or toolkit setting the node roles cannot honour; the message names the field."""


def defaults():
    """The Operator's defaults of the fields honoured (its CRD's, not the chart's driver image version: an empty version
    here installs the distribution's driver)."""
    return {
        'driver': {'enabled': True, 'version': '', 'kernelModuleType': 'auto', 'upgradePolicy': driver_upgrade.policy({}),
                   'rdma': {'enabled': False, 'useHostMofed': False}},
        'toolkit': {'enabled': True, 'installDir': OPERATOR_INSTALL_DIR, 'env': []},
        'gds': {'enabled': False},
        'gdrcopy': {'enabled': False},
    }


def _env(spec):
    return dict((item['name'], item.get('value', '')) for item in spec['toolkit']['env'])


def check(spec):
    """Refuse what the node roles cannot honour; normalise driver.upgradePolicy (driver_upgrade.policy) and the Operator's
    default driver version (OPERATOR_DRIVER_VERSION: the distribution's driver)."""
    driver, toolkit = spec['driver'], spec['toolkit']
    if driver['kernelModuleType'] not in KERNEL_MODULE_TYPES:
        raise HostSectionError('driver.kernelModuleType must be one of %s, not %r' % (', '.join(KERNEL_MODULE_TYPES), driver['kernelModuleType']))
    if driver['version'] == OPERATOR_DRIVER_VERSION:
        driver['version'] = ''
    driver['upgradePolicy'] = driver_upgrade.policy(driver['upgradePolicy'], 'driver.upgradePolicy')
    if not posixpath.isabs(toolkit['installDir']):
        raise HostSectionError('toolkit.installDir must be an absolute path, not %r' % toolkit['installDir'])
    env = _env(spec)
    unknown = sorted(set(env) - set(TOOLKIT_ENV))
    if unknown:
        raise HostSectionError('toolkit.env %s: the toolkit is set up on the host by role container_toolkit, which honours %s'
                               % (', '.join(unknown), ', '.join(sorted(TOOLKIT_ENV))))
    for name in ('CONTAINERD_CONFIG', 'CONTAINERD_SOCKET'):
        if name in env and not posixpath.isabs(env[name]):
            raise HostSectionError('toolkit.env %s must be an absolute path, not %r' % (name, env[name]))
    if 'CONTAINERD_SET_AS_DEFAULT' in env and _flag(env['CONTAINERD_SET_AS_DEFAULT']) is None:
        raise HostSectionError('toolkit.env CONTAINERD_SET_AS_DEFAULT must be true or false, not %r' % env['CONTAINERD_SET_AS_DEFAULT'])


# What Go's strconv.ParseBool takes (the installer's boolean flags read from env).
GO_BOOLS = {'1': True, 't': True, 'T': True, 'TRUE': True, 'true': True, 'True': True,
            '0': False, 'f': False, 'F': False, 'FALSE': False, 'false': False, 'False': False}


def _flag(value):
    """A boolean env value as the installer reads it, None when it reads none."""
    return GO_BOOLS.get(value)


def node_toolkit_defaults(spec):
    """What a GPU node's container toolkit is when its inventory sets nothing: the runtime named operator.runtimeClass
    (the Operator's CONTAINERD_RUNTIME_CLASS), CDI as cdi.enabled says, the runtime in /usr/bin (the packages), or in
    <toolkit.installDir>/toolkit when the ClusterPolicy names a directory of its own (the Operator's container layout)."""
    found = dict(TOOLKIT_DEFAULTS)
    if spec['operator']['runtimeClass']:
        found['runtime_name'] = spec['operator']['runtimeClass']
    if spec['cdi']['enabled'] is not None:
        found['cdi_enabled'] = spec['cdi']['enabled']
    if spec['toolkit']['installDir'].rstrip('/') != OPERATOR_INSTALL_DIR:
        found['install_dir'] = posixpath.join(spec['toolkit']['installDir'], 'toolkit')
    return found


def container_toolkit_settings(spec):
    """The container_toolkit role's defaults from a resolved ClusterPolicy spec: {enabled, runtime_name, cdi_enabled,
    install_dir, containerd_config, set_as_default}; where toolkit.env leaves them out, the installer's defaults."""
    env = _env(spec)
    return dict(node_toolkit_defaults(spec), enabled=spec['toolkit']['enabled'], runtime_name=spec['operator']['runtimeClass'],
                cdi_enabled=bool(spec['cdi']['enabled']), containerd_config=env.get('CONTAINERD_CONFIG', CONTAINERD_CONFIG),
                set_as_default=_flag(env.get('CONTAINERD_SET_AS_DEFAULT', 'true')))
