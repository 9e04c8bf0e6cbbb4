# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""After site.yml: containerd on each lab node loads the nvidia runtime, each Node carries its fixture's labels,
and the cluster holds the prerequisites, the operands and the ClusterPolicy (not validated: no Pods run here)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import os
import tomllib

import kubernetes

# Per node: containerd minor version Debian ships and the GPU product of the fixture recipe.toml mounts.
EXPECTED = {
    'site-bookworm': ('1.6', 'NVIDIA-H100-80GB-HBM3'),
    'site-sid': ('2.1', 'NVIDIA-H200'),
}
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


def test_node_labels_describe_the_fixture(host):
    name = host.backend.get_hostname()
    labels = kubernetes.client.CoreV1Api(api()).read_node(name).metadata.labels
    assert labels['nvidia.com/gpu.present'] == 'true'
    assert labels['nvidia.com/gpu.product'] == EXPECTED[name][1]
    assert labels['nvidia.com/gpu.count'] == '1'
    assert labels['nvidia.com/gpu.deploy.device-plugin'] == 'true'
    # Every fixture's /proc shows its driver loaded: the driver stage found them pre-installed.
    assert labels['nvidia.com/gpu.deploy.driver'] == 'pre-installed'


def test_prerequisites_and_operands():
    core, apps = kubernetes.client.CoreV1Api(api()), kubernetes.client.AppsV1Api(api())
    namespace = core.read_namespace(NAMESPACE)
    assert namespace.metadata.labels['pod-security.kubernetes.io/enforce'] == 'privileged'
    handlers = sorted(item.handler for item in kubernetes.client.NodeV1Api(api()).list_runtime_class(label_selector=MANAGED_BY).items)
    assert handlers == ['nvidia', 'nvidia-cdi', 'nvidia-legacy']
    daemonsets = sorted(item.metadata.name for item in apps.list_namespaced_daemon_set(NAMESPACE, label_selector=MANAGED_BY).items)
    assert daemonsets == ['nvidia-dcgm-exporter', 'nvidia-device-plugin-daemonset', 'nvidia-mig-manager']


def test_cluster_policy_applied_not_validated():
    policy = kubernetes.client.CustomObjectsApi(api()).get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')
    # The node-side roles install the driver and the toolkit on the host, as the Operator's driver.enabled=false does.
    assert policy['spec']['driver']['enabled'] is False
    assert policy['spec']['toolkit']['enabled'] is False
    # The validation stage (skipped: the stand-in runs no Pods) is what records a state.
    assert 'state' not in policy.get('status', {})
