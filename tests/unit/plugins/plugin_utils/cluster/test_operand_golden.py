# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Golden tests, one folder per operand: what each operand renders for a few settings, compared with checked-in YAML.

golden/<operand file>/<case>.yml holds `objects` (everything the operand renders with those settings, enabled or not:
a disabled operand's objects are the ones removed) and `unwanted` (what it removes while it runs); for Node Feature
Discovery (registry.NFD, not a ClusterPolicy operand) what role gpu_cluster_base does with it given what the cluster holds
(its plan; the CRDs by name: their schemas are the chart's, test_node_feature_discovery.py). A change to what an
operand renders shows here as a diff of its YAML; the Operator's facts it must keep are tests/cluster/parity/'s.

After a deliberate change, write the files anew and read the diff before committing it:

    python tests/unit/plugins/plugin_utils/cluster/test_operand_golden.py --write
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import MANAGED_BY
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import registry

GOLDEN = Path(__file__).resolve().parent / 'golden'
MIRROR = 'mirror.example:5000/nvidia'
CDI_NODES = [{'host': 'gpu-a', 'runtime_name': 'nvidia', 'cdi_enabled': True, 'install_dir': '/usr/bin'}]
PLUGIN_CONFIGS = {'name': 'device-plugin-config', 'default': 'time-sliced', 'data': {
    'time-sliced': {'version': 'v1', 'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}},
    'mps-2': {'version': 'v1', 'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}}}}
MIG_CONFIG = {'version': 'v1', 'mig-configs': {'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
                                               'two-3g': [{'devices': [0], 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2}}]}}
NFD_CRD = {'metadata': {'name': 'nodefeatures.nfd.k8s-sigs.io', 'labels': dict(MANAGED_BY)}}
NFD_WORKER = {'metadata': {'name': 'nfd-worker', 'namespace': 'node-feature-discovery'},
              'spec': {'template': {'spec': {'containers': [{'name': 'nfd-worker', 'command': ['nfd-worker']}]}}}}
DAEMONSETS = {'tolerations': [{'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}],
              'priorityClassName': 'gpu-critical', 'updateStrategy': 'OnDelete', 'labels': {'team': 'ml'}, 'annotations': {'a': 'b'}}
# Per operand file: case -> settings as a user gives them (policy, registry, nodes, whether the ServiceMonitor CRD exists).
CASES = {
    'device_plugin': {
        'defaults': {},
        'configs, mirror, pull secrets, args and env': {'registry': MIRROR, 'policy': {'devicePlugin': {
            'config': PLUGIN_CONFIGS, 'imagePullSecrets': ['pull'], 'args': ['--fail-on-init-error=false'],
            'env': [{'name': 'DEVICE_ID_STRATEGY', 'value': 'index'}], 'resources': {'limits': {'memory': '100Mi'}}}}},
        'cdi, mixed MIG, mps root, host network, daemonsets': {'nodes': CDI_NODES, 'policy': {
            'mig': {'strategy': 'mixed'}, 'daemonsets': DAEMONSETS, 'devicePlugin': {'mps': {'root': '/var/lib/mps'}, 'hostNetwork': True}}},
    },
    'mps_control_daemon': {
        'defaults': {},
        'configs, mirror, mps root, resources': {'registry': MIRROR, 'policy': {'devicePlugin': {
            'config': PLUGIN_CONFIGS, 'mps': {'root': '/var/lib/mps'}, 'resources': {'limits': {'memory': '100Mi'}}}}},
    },
    'dcgm': {
        'defaults (off)': {},
        'on: mirror, pull secrets, args, env, resources, host network, daemonsets': {'registry': MIRROR, 'policy': {
            'daemonsets': DAEMONSETS, 'dcgm': {
                'enabled': True, 'imagePullSecrets': ['pull'], 'args': ['--log-level', 'ERROR'], 'env': [{'name': 'DCGM_HOME_DIR', 'value': '/tmp'}],
                'resources': {'limits': {'memory': '1Gi'}}, 'hostNetwork': True}}},
    },
    'dcgm_exporter': {
        'defaults, with the ServiceMonitor CRD': {'monitor': True},
        'metrics, pod labels, hpc, service, monitor settings': {'monitor': True, 'policy': {'dcgmExporter': {
            'config': {'name': 'metrics', 'data': 'DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization.\n'}, 'enablePodLabels': True,
            'podLabelAllowlistRegex': ['^app$'], 'hpcJobMapping': {'enabled': True}, 'service': {'type': 'NodePort'}, 'hostPID': True,
            'annotations': {'x': 'y'}, 'env': [{'name': 'DCGM_EXPORTER_INTERVAL', 'value': '10000'}],
            'serviceMonitor': {'interval': '30s', 'honorLabels': True, 'additionalLabels': {'release': 'prom'}}}}},
        'disabled, with the ServiceMonitor CRD': {'monitor': True, 'policy': {'dcgmExporter': {'enabled': False}}},
        'with the standalone DCGM': {'policy': {'dcgm': {'enabled': True}}},
        'the hostengine on the host (DGX OS)': {'policy': {'dcgmExporter': {'env': [{'name': 'DCGM_REMOTE_HOSTENGINE_INFO', 'value': 'localhost:5555'}]}}},
    },
    'gpu_feature_discovery': {
        'defaults (off)': {},
        'on, with the device plugin configs and user env': {'policy': {'gfd': {'enabled': True, 'env': [{'name': 'MIG_STRATEGY', 'value': 'none'}]},
                                                                       'devicePlugin': {'config': PLUGIN_CONFIGS}}},
    },
    'mig_manager': {
        'defaults': {},
        'configs of the user, cdi, args': {'nodes': CDI_NODES, 'policy': {'migManager': {
            'config': {'name': 'my-mig', 'data': {'config.yaml': MIG_CONFIG}}, 'gpuClientsConfig': {'name': 'my-clients'},
            'args': ['--with-reboot'], 'env': [{'name': 'WITH_REBOOT', 'value': 'true'}]}}},
    },
    'node_feature_discovery': {
        'enabled (the chart\'s nfd values), a fresh cluster': {'nfd': {'enabled': True}, 'daemonsets': []},
        'enabled with the chart\'s NodeFeatureRule, a mirror, installed before': {
            'nfd': {'enabled': True, 'nodefeaturerules': True}, 'registry': MIRROR, 'crd': NFD_CRD, 'daemonsets': []},
        'enabled where NFD runs already': {'nfd': {'enabled': True}, 'crd': dict(NFD_CRD, metadata={'name': NFD_CRD['metadata']['name']}),
                                           'daemonsets': [NFD_WORKER]},
        'disabled after it was installed': {'crd': NFD_CRD, 'daemonsets': []},
    },
    'node_status_exporter': {
        'defaults (off), with the ServiceMonitor CRD': {'monitor': True},
        'on: mirror, pull secrets, args, env, resources, host network, daemonsets': {'registry': MIRROR, 'policy': {
            'daemonsets': DAEMONSETS, 'nodeStatusExporter': {
                'enabled': True, 'imagePullSecrets': ['pull'], 'args': ['--metrics-port=8000'], 'env': [{'name': 'METRICS_PORT', 'value': '8000'},
                                                                                                        {'name': 'DEBUG', 'value': 'true'}],
                'resources': {'limits': {'memory': '50Mi'}}, 'hostNetwork': True}}},
    },
    'vgpu_device_manager': {
        'sandbox workloads on: the default configs': {'policy': {'sandboxWorkloads': {'enabled': True}}},
        'configs of the user, mirror, args, env, resources': {'registry': MIRROR, 'policy': {
            'sandboxWorkloads': {'enabled': True}, 'validator': {'imagePullSecrets': ['pull']}, 'vgpuDeviceManager': {
                'config': {'name': 'my-vgpu-configs', 'default': 'A10-12Q'}, 'args': ['--debug'], 'env': [{'name': 'DEFAULT_VGPU_CONFIG', 'value': 'x'}],
                'resources': {'limits': {'memory': '100Mi'}}, 'imagePullSecrets': ['pull']}}},
    },
    'sandbox_validator': {
        'defaults (off)': {},
        'on: default workload, component env, args, env, host root, daemonsets': {'registry': MIRROR, 'policy': {
            'sandboxWorkloads': {'enabled': True, 'defaultWorkload': 'vm-passthrough'}, 'daemonsets': DAEMONSETS,
            'hostPaths': {'rootFS': '/host-root'}, 'validator': {
                'env': [{'name': 'DEBUG', 'value': 'true'}], 'args': ['sleep infinity'], 'imagePullSecrets': ['pull'],
                'vfioPCI': {'env': [{'name': 'DEFAULT_GPU_WORKLOAD_CONFIG', 'value': 'vm-vgpu'}]}, 'vgpuManager': {'env': [{'name': 'A', 'value': '1'}]},
                'vgpuDevices': {'env': [{'name': 'B', 'value': '2'}]}}}},
        'cc manager off': {'policy': {'sandboxWorkloads': {'enabled': True}, 'ccManager': {'enabled': False}}},
    },
    'vfio_manager': {
        'defaults (off)': {},
        'on: mirror, driver manager, args, env, resources, host network': {'registry': MIRROR, 'policy': {
            'sandboxWorkloads': {'enabled': True}, 'vfioManager': {
                'driverManager': {'env': [{'name': 'ENABLE_AUTO_DRAIN', 'value': 'true'}], 'imagePullSecrets': ['pull'], 'version': 'v0.12.1'},
                'args': ['vfio-manage bind --all --verbose && sleep infinity'], 'env': [{'name': 'DEBUG', 'value': 'true'}],
                'resources': {'limits': {'memory': '300Mi'}}, 'hostNetwork': True}}},
    },
    'sandbox_device_plugin': {
        'on (kubevirt)': {'policy': {'sandboxWorkloads': {'enabled': True}}},
        'on: mirror, pull secrets, args, env, resources, host network': {'registry': MIRROR, 'policy': {
            'validator': {'imagePullSecrets': ['pull'], 'resources': {'limits': {'memory': '50Mi'}}}, 'sandboxWorkloads': {'enabled': True},
            'sandboxDevicePlugin': {'imagePullSecrets': ['pull'], 'args': ['-v=4'], 'env': [{'name': 'PCI_VENDOR', 'value': '10de'}],
                                    'resources': {'limits': {'memory': '100Mi'}}, 'hostNetwork': True}}},
    },
    'kata_device_plugin': {
        'on (kata)': {'policy': {'sandboxWorkloads': {'enabled': True, 'mode': 'kata'}}},
        'off in mode kubevirt, with env and args': {'policy': {'sandboxWorkloads': {'enabled': True}, 'kataSandboxDevicePlugin': {
            'args': ['-v=4'], 'env': [{'name': 'P2P', 'value': 'true'}]}}},
    },
    'cc_manager': {
        'on (kata): default mode, env, args, resources': {'policy': {'sandboxWorkloads': {'enabled': True, 'mode': 'kata'}, 'ccManager': {
            'defaultMode': 'devtools', 'env': [{'name': 'DEFAULT_CC_MODE', 'value': 'off'}, {'name': 'X', 'value': 'y'}], 'args': ['--debug'],
            'resources': {'requests': {'cpu': '50m'}}}}},
        'off in mode kubevirt': {'policy': {'sandboxWorkloads': {'enabled': True}}},
    },
    'validator': {
        'defaults': {},
        'mirror, pull secrets, resources, no device plugin, daemonsets': {'registry': MIRROR, 'policy': {
            'validator': {'imagePullSecrets': ['pull'], 'resources': {'limits': {'memory': '50Mi'}}}, 'devicePlugin': {'enabled': False},
            'daemonsets': DAEMONSETS}},
        'component env, args, env, host network': {'policy': {'validator': {
            'env': [{'name': 'DEBUG', 'value': 'true'}], 'args': ['sleep infinity'], 'hostNetwork': True,
            'driver': {'env': [{'name': 'DISABLE_DEV_CHAR_SYMLINK_CREATION', 'value': 'true'}]},
            'toolkit': {'env': [{'name': 'NVIDIA_VISIBLE_DEVICES', 'value': 'void'}]}, 'cuda': {'env': [{'name': 'WITH_WORKLOAD', 'value': 'false'}]},
            'plugin': {'env': [{'name': 'WITH_WORKLOAD', 'value': 'true'}]}}}},
    },
}


def slug(name):
    return re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')


NFD_STEM = registry.NFD.__name__.rsplit('.', 1)[-1]


def stem_of(operand):
    return type(operand).__module__.rsplit('.', 1)[-1]


def operand_of(stem):
    return next(operand for operand in registry.OPERANDS if stem_of(operand) == stem)


def rendered(stem, case):
    """What the operand renders for the case, as plain data."""
    resolved = registry.resolution(case.get('policy'), case.get('registry', ''), case.get('nodes'), nfd=case.get('nfd'))
    if stem == NFD_STEM:
        found = registry.nfd(resolved, 'gpu-operator', case.get('crd'), case.get('daemonsets'))
        found['crds'] = [crd['metadata']['name'] for crd in found['crds']]
    else:
        operand, context = operand_of(stem), registry.context(resolved, 'gpu-operator', case.get('monitor', False))
        found = {'objects': operand.objects(resolved['spec'], context), 'unwanted': operand.unwanted(resolved['spec'], context)}
    return json.loads(json.dumps(found))


def golden_file(stem, name):
    return GOLDEN / stem / (slug(name) + '.yml')


class _Dumper(yaml.SafeDumper):
    """YAML as people read it (and yamllint takes it): sequences indented, multi-line text (scripts, config files) as blocks."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


_Dumper.add_representer(str, lambda dumper, text: dumper.represent_scalar('tag:yaml.org,2002:str', text, style='|' if '\n' in text else None))


def as_yaml(data):
    return yaml.dump(data, Dumper=_Dumper, default_flow_style=False, sort_keys=False, width=150)


ALL = [(stem, name) for stem, cases in sorted(CASES.items()) for name in cases]


@pytest.mark.parametrize('stem, name', ALL, ids=['%s: %s' % item for item in ALL])
def test_operand_renders_its_golden_objects(stem, name):
    path = golden_file(stem, name)
    assert path.is_file(), '%s is missing: write it (see the docstring) and read it before committing it' % path
    want, got = yaml.safe_load(path.read_text()), rendered(stem, CASES[stem][name])
    if got != want:
        diff = ''.join(difflib.unified_diff(as_yaml(want).splitlines(True), as_yaml(got).splitlines(True), str(path), 'rendered', n=2))
        raise AssertionError('%s renders otherwise than %s:\n%s' % (stem, path, diff[:8000]))


def test_every_operand_has_golden_cases_and_no_file_is_left_over():
    """An operand added to the registry comes with its golden cases; a golden file no case writes is stale."""
    stems = {stem_of(operand) for operand in registry.OPERANDS} | {NFD_STEM}
    assert stems == set(CASES)
    written = {golden_file(stem, name) for stem, name in ALL}
    assert set(GOLDEN.glob('*/*.yml')) == written


def write():
    for stem, name in ALL:
        path = golden_file(stem, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('---\n# %s, case %r (test_operand_golden.py)\n%s' % (stem, name, as_yaml(rendered(stem, CASES[stem][name]))))
        print(path)


if __name__ == '__main__':
    if sys.argv[1:] != ['--write']:
        sys.exit(__doc__)
    write()
