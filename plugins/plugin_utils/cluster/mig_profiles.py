# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The MIG manager's default ConfigMaps: the GPU Operator's MIG profiles and the host GPU clients it stops.

Data of GPU Operator v26.7.0 (assets/state-mig-manager/0400_configmap.yaml and 0410_configmap.yaml): the
profiles a node picks with the label nvidia.com/mig.config (all-disabled, all-enabled, all-<profile> per GPU
model, all-balanced), in the Operator's order. mig-manager v0.15.0 uses them when it cannot generate a
config from the node's GPUs. tests/cluster/parity/ compares them with the Operator's.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

MIG_CONFIG_MAP = 'default-mig-parted-config'
GPU_CLIENTS_MAP = 'default-gpu-clients'

# PCI device filters (device id + vendor 10de) of the GPU models whose profiles differ.
# H100-80GB, H800-80GB, A100-80GB, A800-80GB
X100_80GB = ['0x233010DE', '0x233110DE', '0x232210DE', '0x20B210DE', '0x20B510DE', '0x20F310DE', '0x20F510DE', '0x232410DE']
A100_40GB = ['0x20B010DE', '0x20B110DE', '0x20F110DE', '0x20F610DE']  # A100-40GB, A800-40GB
A30 = '0x20B710DE'  # a single filter, not a list, as the Operator writes it
H100_96GB = ['0x234210DE', '0x233D10DE', '0x20B610DE', '0x232910DE']  # H100-96GB, PG506-96GB, GH200, H20
H100_NVL = ['0x232110DE', '0x233A10DE']  # H100 NVL, H800 NVL
H200_141GB = ['0x233510DE', '0x233B10DE']  # H200 141GB, H200 NVL
GH200_144GB = ['0x234810DE']
GB200 = ['0x294110DE']
B200 = ['0x290110DE']
B300 = ['0x318210DE']
GB300 = ['0x31C210DE']
RTX_PRO_6000 = ['0x2BB510DE']


def _all(profile, count):
    """all-<profile> (a '+' of the profile becomes '.'): every GPU split into `count` instances of it."""
    return 'all-' + profile.replace('+', '.'), [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {profile: count}}]


def _on(device_filter, mig_devices):
    return {'device-filter': device_filter, 'devices': 'all', 'mig-enabled': True, 'mig-devices': mig_devices}


MIG_CONFIGS = [
    ('all-disabled', [{'devices': 'all', 'mig-enabled': False}]),
    ('all-enabled', [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}]),
    _all('1g.5gb', 7),
    _all('1g.5gb+me', 1),
    _all('2g.10gb', 3),
    _all('3g.20gb', 2),
    _all('4g.20gb', 1),
    _all('7g.40gb', 1),
    _all('1g.24gb+gfx', 4),
    _all('1g.24gb+me.all', 1),
    _all('1g.24gb-me', 4),
    _all('2g.48gb', 2),
    _all('2g.48gb+gfx', 2),
    _all('2g.48gb+me.all', 1),
    _all('2g.48gb-me', 2),
    _all('4g.96gb', 1),
    _all('4g.96gb+gfx', 1),
    ('all-1g.10gb', [_on(X100_80GB, {'1g.10gb': 7}), _on(A100_40GB, {'1g.10gb': 4})]),
    _all('1g.10gb+me', 1),
    _all('1g.20gb', 4),
    _all('1g.23gb', 7),
    _all('1g.23gb+me', 1),
    _all('1g.24gb+me', 1),
    _all('2g.20gb', 3),
    _all('3g.40gb', 2),
    _all('4g.40gb', 1),
    _all('7g.80gb', 1),
    _all('1g.6gb', 4),
    _all('1g.6gb+me', 1),
    _all('2g.12gb', 2),
    _all('2g.12gb+me', 1),
    _all('4g.24gb', 1),
    _all('1g.12gb', 7),
    _all('1g.12gb+me', 1),
    _all('1g.24gb', 4),
    _all('1g.45gb', 4),
    _all('1g.47gb', 4),
    _all('2g.24gb', 3),
    _all('2g.45gb', 3),
    _all('2g.47gb', 3),
    _all('3g.47gb', 2),
    _all('4g.47gb', 1),
    _all('7g.94gb', 1),
    _all('3g.48gb', 2),
    _all('3g.90gb', 2),
    _all('3g.93gb', 2),
    _all('3g.95gb', 2),
    _all('4g.48gb', 1),
    _all('4g.90gb', 1),
    _all('4g.93gb', 1),
    _all('4g.95gb', 1),
    _all('7g.96gb', 1),
    _all('7g.180gb', 1),
    _all('7g.186gb', 1),
    _all('7g.189gb', 1),
    ('all-balanced', [
        _on(GB200, {'1g.23gb': 2, '2g.47gb': 1, '3g.93gb': 1}),
        _on(RTX_PRO_6000, {'1g.24gb': 2, '2g.48gb': 1}),
        _on(B200, {'1g.23gb': 2, '2g.45gb': 1, '3g.90gb': 1}),
        _on(GH200_144GB, {'1g.18gb': 2, '2g.36gb': 1, '3g.72gb': 1}),
        _on(H200_141GB, {'1g.18gb': 2, '2g.35gb': 1, '3g.71gb': 1}),
        _on(H100_NVL, {'1g.12gb': 2, '2g.24gb': 1, '3g.47gb': 1}),
        _on(X100_80GB, {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}),
        _on(A100_40GB, {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}),
        _on(A30, {'1g.6gb': 2, '2g.12gb': 1}),
        _on(H100_96GB, {'1g.12gb': 2, '2g.24gb': 1, '3g.48gb': 1}),
        _on(B300, {'1g.34gb': 2, '2g.67gb': 1, '3g.135gb': 1}),
        _on(GB300, {'1g.35gb': 2, '2g.70gb': 1, '3g.139gb': 1}),
    ]),
    _all('1g.18gb', 7),
    _all('1g.18gb+me', 1),
    ('all-1g.35gb', [_on(H200_141GB[:1], {'1g.35gb': 4}), _on(GB300, {'1g.35gb': 7})]),
    _all('2g.35gb', 3),
    _all('3g.71gb', 2),
    _all('4g.71gb', 1),
    _all('7g.141gb', 1),
    _all('1g.36gb', 4),
    _all('2g.36gb', 3),
    _all('3g.72gb', 2),
    _all('4g.72gb', 1),
    _all('7g.144gb', 1),
    _all('1g.34gb', 7),
    _all('1g.34gb+me', 1),
    _all('1g.67gb', 4),
    _all('2g.67gb', 3),
    _all('3g.135gb', 2),
    _all('4g.135gb', 1),
    _all('7g.269gb', 1),
    _all('1g.35gb+me', 1),
    _all('1g.70gb', 4),
    _all('2g.70gb', 3),
    _all('3g.139gb', 2),
    _all('4g.139gb', 1),
    _all('7g.278gb', 1),
]

GPU_CLIENTS = {
    'version': 'v1',
    'systemd-services': ['nvsm.service', 'nvsm-mqtt.service', 'nvsm-core.service', 'nvsm-api-gateway.service', 'nvsm-notifier.service',
                         'nv_peer_mem.service', 'nvidia-dcgm.service', 'dcgm.service', 'dcgm-exporter.service'],
}


def default_config():
    """The mig-parted config of the default-mig-parted-config ConfigMap (config.yaml)."""
    return {'version': 'v1', 'mig-configs': dict(MIG_CONFIGS)}


class MigConfigError(GpuOpsError):
    """A mig-parted config mig-manager would refuse; the message names the profile."""


def check_config(data, where, default):
    """migManager.config.data: {config.yaml: a mig-parted config, as a mapping or YAML text}, checked as mig-parted reads it."""
    if set(data) != {'config.yaml'}:
        raise MigConfigError('%s must hold exactly the key config.yaml (the mig-parted config), not %s' % (where, ', '.join(sorted(data))))
    config = data['config.yaml']
    if isinstance(config, str):
        import yaml  # pylint: disable=import-outside-toplevel  # the renderer runs on the controller, where PyYAML is
        try:
            config = yaml.safe_load(config)
        except yaml.YAMLError as exc:
            raise MigConfigError('%s.config.yaml is not valid YAML: %s' % (where, str(exc).replace('\n', ' ')))
    where += '.config.yaml'
    if not isinstance(config, dict) or config.get('version') != 'v1' or not isinstance(config.get('mig-configs'), dict) or not config['mig-configs']:
        raise MigConfigError('%s must be a mig-parted config: {version: v1, mig-configs: {<profile name>: [...]}}' % where)
    for name, entries in config['mig-configs'].items():
        if not isinstance(entries, list) or not entries:
            raise MigConfigError('%s: profile %r must be a non-empty list of {devices, mig-enabled[, mig-devices]}' % (where, name))
        for entry in entries:
            if not isinstance(entry, dict) or 'devices' not in entry or not isinstance(entry.get('mig-enabled'), bool):
                raise MigConfigError('%s: profile %r: each entry needs devices and mig-enabled (true or false), not %r' % (where, name, entry))
            unknown = sorted(set(entry) - {'devices', 'mig-enabled', 'mig-devices', 'device-filter'})
            if unknown:
                raise MigConfigError('%s: profile %r: unknown key(s) %s' % (where, name, ', '.join(unknown)))
            devices = entry.get('mig-devices', {})
            if not isinstance(devices, dict) or not all(isinstance(count, int) and not isinstance(count, bool) and count >= 0
                                                        for count in devices.values()):
                raise MigConfigError('%s: profile %r: mig-devices must map MIG profiles to counts, not %r' % (where, name, devices))
    if default and default not in config['mig-configs']:
        raise MigConfigError('%s has no %s profile, which migManager.config.default labels MIG-capable nodes with' % (where, default))
