# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""After site.yml: containerd on each lab node loads the nvidia runtime, each Node carries its fixture's labels and
the sharing labels of the device plugin config it runs (time-slicing on bookworm, MPS on sid, set in molecule.yml's
YAML inventory), and the cluster holds the prerequisites, the operands with that config and the ClusterPolicy (not
validated: no Pods run here). The operands' entrypoints run on bookworm against the driver stage's driver-ready. sid
had no driver: the run installed it and labelled the node again after that, so the MIG manager and the MPS control
daemon select it after this one run (the lab's kubelet simulator says which DaemonSets select it)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import functools
import os
import tomllib

import kubernetes
import testinfra
import yaml

from tests.lab import kubelet_sim

# Per node: containerd minor version Debian ships, the GPU product of the fixture recipe.toml mounts, the device
# plugin config it runs (molecule.yml: the default for bookworm, mps-2 picked for sid), and its driver's deploy label:
# bookworm's capture shows its driver loaded (pre-installed), sid's driver is the one the run installed.
EXPECTED = {
    'site-bookworm': ('1.6', 'NVIDIA-H100-80GB-HBM3', 'time-sliced', 'pre-installed'),
    'site-sid': ('2.1', 'NVIDIA-H200', 'mps-2', 'true'),
}
# The nvidia-smi of sid's labels (molecule.yml): the simulator once the driver stage installed the nvidia-smi package.
SID_NVIDIA_SMI = '/var/lib/gpuops-lab/driver/nvidia-smi'
CONFIG_MAP = 'device-plugin-config'
SHARING = {'timeSlicing': 'time-slicing', 'mps': 'mps'}
NAMESPACE = 'gpu-operator'
MANAGED_BY = 'app.kubernetes.io/managed-by=gpuops.gpu_operator'

testinfra_hosts = ['podman://%s' % name for name in EXPECTED]


@functools.lru_cache(maxsize=None)
def api():
    return kubernetes.config.new_client_from_config(config_file=os.environ['K8S_AUTH_KUBECONFIG'])


def cri(host):
    """The CRI table of containerd's own view of its config (2.x dumps version 3 even for a version 2 file)."""
    config = tomllib.loads(host.check_output('containerd config dump'))
    return config['plugins']['io.containerd.cri.v1.runtime' if config['version'] >= 3 else 'io.containerd.grpc.v1.cri']


def test_containerd_version(host):
    assert ' %s.' % EXPECTED[host.backend.get_hostname()][0] in host.check_output('containerd --version')


def test_containerd_loads_the_nvidia_runtime_as_default(host):
    containerd = cri(host)['containerd']
    assert containerd['runtimes']['nvidia']['options']['BinaryName'] == '/usr/bin/nvidia-container-runtime'
    assert containerd['default_runtime_name'] == 'nvidia'
    assert host.service('containerd').is_running


def test_runtime_classes_name_the_runtimes_containerd_reads(host):
    """gpu_cluster_base's RuntimeClasses are the NVIDIA runtimes containerd reads on the node (the default name, no CDI:
    nvidia alone; molecule/container_toolkit holds the other names and CDI to the same rule)."""
    handlers = sorted((item.metadata.name, item.handler) for item in kubernetes.client.NodeV1Api(api()).list_runtime_class(
        label_selector=MANAGED_BY).items)
    runtimes = cri(host)['containerd']['runtimes']
    nvidia = sorted(name for name, runtime in runtimes.items()
                    if (runtime.get('options') or {}).get('BinaryName', '').startswith('/usr/bin/nvidia-container-runtime'))
    assert handlers == [(name, name) for name in nvidia] == [('nvidia', 'nvidia')]


def labels_of(name):
    return kubernetes.client.CoreV1Api(api()).read_node(name).metadata.labels


def test_node_labels_describe_the_fixture(host):
    name = host.backend.get_hostname()
    labels = labels_of(name)
    assert labels['nvidia.com/gpu.present'] == 'true'
    assert labels['nvidia.com/gpu.product'] in (EXPECTED[name][1], EXPECTED[name][1] + '-SHARED')
    assert labels['nvidia.com/gpu.count'] == '1'
    assert labels['nvidia.com/gpu.deploy.device-plugin'] == 'true'
    assert labels['nvidia.com/gpu.deploy.driver'] == EXPECTED[name][3]
    # H100 and H200 are MIG-capable: the Operator's default MIG layout, as it labels such nodes.
    assert labels['nvidia.com/mig.config'] == 'all-disabled' and labels['nvidia.com/mig.strategy'] == 'single'


def test_sharing_labels_say_what_the_plugin_config_shares(host):
    """The labels follow the config of the ConfigMap the node's device plugin reads (chosen as config-manager chooses it)."""
    name = host.backend.get_hostname()
    labels = labels_of(name)
    chosen = labels.get('nvidia.com/device-plugin.config') or policy()['spec']['devicePlugin']['config']['default']
    assert chosen == EXPECTED[name][2]
    config = yaml.safe_load(kubernetes.client.CoreV1Api(api()).read_namespaced_config_map(CONFIG_MAP, NAMESPACE).data[chosen])
    (kind, shared), = config['sharing'].items()
    replicas = shared['resources'][0]['replicas']
    assert (labels['nvidia.com/gpu.sharing-strategy'], labels['nvidia.com/gpu.replicas']) == (SHARING[kind], str(replicas))
    assert labels['nvidia.com/gpu.product'] == EXPECTED[name][1] + '-SHARED'
    assert labels['nvidia.com/mps.capable'] == ('true' if kind == 'mps' else 'false')


def test_operand_entrypoints_start_on_the_driver_stage_s_driver_ready():
    """The device plugin's and MIG manager's entrypoints (from their ConfigMaps) run on the node: they source driver-ready,
    export it (a host driver: the MIG manager stops the host's GPU clients) and hand the args to the program. On bookworm,
    whose driver works: sid's driver needs the reboot a container cannot make, so it has no driver-ready."""
    host = testinfra.get_host('podman://site-bookworm')
    core = kubernetes.client.CoreV1Api(api())
    # a stand-in for the operand's program that prints what it was started with
    fake = '#!/bin/sh\nenv | sort\necho "args: $*"\n'
    for config_map, program in (('nvidia-device-plugin-entrypoint', 'nvidia-device-plugin'), ('nvidia-mig-manager-entrypoint', 'nvidia-mig-manager')):
        script = core.read_namespaced_config_map(config_map, NAMESPACE).data['entrypoint.sh']
        for path, text, mode in (('/tmp/gpuops-entrypoints/' + program, fake, '0755'), ('/tmp/gpuops-entrypoints/entrypoint.sh', script, '0644')):
            written = host.run('mkdir -p /tmp/gpuops-entrypoints && echo %s | base64 -d > %s && chmod %s %s',
                               base64.b64encode(text.encode()).decode(), path, mode, path)
            assert written.rc == 0, written.stderr
        started = host.run('PATH=/tmp/gpuops-entrypoints:$PATH timeout 20 sh /tmp/gpuops-entrypoints/entrypoint.sh --flag=x')
        assert started.rc == 0, started.stdout + started.stderr
        env = dict(line.split('=', 1) for line in started.stdout.splitlines() if '=' in line and not line.startswith('args: '))
        assert (env['IS_HOST_DRIVER'], env['NVIDIA_DRIVER_ROOT'], env['DRIVER_ROOT_CTR_PATH']) == ('true', '/', '/host')
        assert 'args: --flag=x' in started.stdout.splitlines()
        if program == 'nvidia-mig-manager':
            assert env['WITH_SHUTDOWN_HOST_GPU_CLIENTS'] == 'true'
    assert host.run('rm -rf /tmp/gpuops-entrypoints').rc == 0


def test_the_node_whose_driver_this_run_installed_is_labelled_fully_and_selected(tmp_path):
    """Issue #25: sid had no driver and no nvidia-smi when its labels were first computed (gpu.present and the deploy
    labels only); the driver stage installed the packages and the labels were computed again in the same run, so the
    Node has GFD's MIG and MPS labels and the MIG manager and MPS control daemon DaemonSets select it."""
    labels = labels_of('site-sid')
    assert (labels['nvidia.com/mig.capable'], labels['nvidia.com/mps.capable'], labels['nvidia.com/mig.config']) == ('true', 'true', 'all-disabled')
    assert labels['nvidia.com/gpu.deploy.mig-manager'] == 'true' and labels['nvidia.com/cuda.driver.major']
    report = tmp_path / 'kubelet.json'
    assert kubelet_sim.main(['--kubeconfig', os.environ['K8S_AUTH_KUBECONFIG'], '--output', str(report), 'site-sid=' + SID_NVIDIA_SMI]) == 0
    found = yaml.safe_load(report.read_text())['site-sid']
    assert {'nvidia-device-plugin-daemonset', 'nvidia-device-plugin-mps-control-daemon', 'nvidia-mig-manager'} <= set(found['selected_by']), found


def test_prerequisites_and_operands():
    core, apps = kubernetes.client.CoreV1Api(api()), kubernetes.client.AppsV1Api(api())
    namespace = core.read_namespace(NAMESPACE)
    assert namespace.metadata.labels['pod-security.kubernetes.io/enforce'] == 'privileged'
    # The lab's nodes do not use CDI: only the runtime class the operands name, as with the Operator.
    handlers = sorted(item.handler for item in kubernetes.client.NodeV1Api(api()).list_runtime_class(label_selector=MANAGED_BY).items)
    assert handlers == ['nvidia']
    daemonsets = dict((item.metadata.name, item.spec.template.spec)
                      for item in apps.list_namespaced_daemon_set(NAMESPACE, label_selector=MANAGED_BY).items)
    assert sorted(daemonsets) == ['nvidia-dcgm-exporter', 'nvidia-device-plugin-daemonset', 'nvidia-device-plugin-mps-control-daemon',
                                  'nvidia-mig-manager']
    # config-manager in the plugin and the MPS daemons picks each node's config from the ConfigMap
    for name in ('nvidia-device-plugin-daemonset', 'nvidia-device-plugin-mps-control-daemon'):
        sidecar = next(c for c in daemonsets[name].containers if c.name == 'config-manager')
        assert {e.name: e.value for e in sidecar.env}['DEFAULT_CONFIG'] == 'time-sliced'
        assert any(v.config_map and v.config_map.name == CONFIG_MAP for v in daemonsets[name].volumes)
    assert daemonsets['nvidia-device-plugin-mps-control-daemon'].node_selector == {
        'nvidia.com/gpu.deploy.device-plugin': 'true', 'nvidia.com/mps.capable': 'true'}
    assert sorted(core.read_namespaced_config_map(CONFIG_MAP, NAMESPACE).data) == ['mps-2', 'time-sliced']
    profiles = yaml.safe_load(core.read_namespaced_config_map('default-mig-parted-config', NAMESPACE).data['config.yaml'])['mig-configs']
    assert len(profiles) == 81 and 'all-balanced' in profiles


@functools.lru_cache(maxsize=None)
def policy():
    return kubernetes.client.CustomObjectsApi(api()).get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')


def test_cluster_policy_applied_not_validated():
    policy_ = policy()
    # The node-side roles install the driver and the toolkit on the host, as the Operator's driver.enabled=false does.
    assert policy_['spec']['driver']['enabled'] is False
    assert policy_['spec']['toolkit']['enabled'] is False
    assert policy_['spec']['devicePlugin']['config'] == {'name': CONFIG_MAP, 'default': 'time-sliced'}
    # The validation stage (skipped: the stand-in runs no Pods) is what records a state.
    assert 'state' not in policy_.get('status', {})
