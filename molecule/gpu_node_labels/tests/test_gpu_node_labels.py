# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""After converge: each lab node's Node carries the labels of its GPU fixture; the NFD node got its features.d file."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import json
import os

import kubernetes

# Per node: the GPU fixture's product and family (tests/lab/images/recipe.toml mounts it), and labels prepare.yml or
# host_vars make special. NFD runs in the cluster (gpu_operator_nfd.enabled, molecule.yml) for every node.
# The H100 and A100 captures' /proc shows their driver loaded, so the role itself labels it pre-installed.
EXPECTED = {
    'gpu_node_labels-bookworm': ('NVIDIA-H100-80GB-HBM3', 'hopper', {'nvidia.com/gpu.deploy.driver': 'pre-installed'}),
    'gpu_node_labels-trixie': ('NVIDIA-A100-SXM4-80GB', 'ampere',
                               {'nvidia.com/mig.strategy': 'single', 'nvidia.com/gpu.deploy.driver': 'pre-installed'}),
    # The T4 is not MIG capable: no mig-manager; prepare.yml marked its driver pre-installed, which the role keeps.
    'gpu_node_labels-sid': ('Tesla-T4', 'turing', {'nvidia.com/gpu.deploy.driver': 'pre-installed'}),
}
FEATURES_D = '/etc/kubernetes/node-feature-discovery/features.d/gpuops'
OWNED_ANNOTATION = 'gpuops.io/nfd-labels'
EPHEMERAL = os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY', '')

testinfra_hosts = ['podman://%s' % name for name in EXPECTED]


def expected(host):
    return EXPECTED[host.backend.get_hostname()]


def node_name(host):
    # As molecule.yml's gpu_node_labels_node_name.
    return host.backend.get_hostname().replace('_', '-')


@functools.lru_cache(maxsize=None)
def node_metadata(name):
    """(labels, annotations) of a Node, read once from the API the scenario's role labelled."""
    client = kubernetes.config.new_client_from_config(config_file=os.environ.get('KUBECONFIG') or os.path.join(EPHEMERAL, 'kubeconfig'))
    meta = kubernetes.client.CoreV1Api(client).read_node(name).metadata
    return dict(meta.labels or {}), dict(meta.annotations or {})


def labels_before(host):
    """The Node's labels as prepare.yml recorded them, before the role ran."""
    with open(os.path.join(EPHEMERAL, 'labels-before.json'), encoding='utf-8') as stream:
        return json.load(stream)[node_name(host)]


def test_gpu_labels_match_the_fixture(host):
    labels = node_metadata(node_name(host))[0]
    product, family, special = expected(host)
    assert labels['nvidia.com/gpu.present'] == 'true'
    assert labels['nvidia.com/gpu.product'] == product
    assert labels['nvidia.com/gpu.family'] == family
    assert labels['nvidia.com/gpu.count'] == '1'
    assert {key: labels.get(key) for key in special} == special


def test_deploy_labels(host):
    labels = node_metadata(node_name(host))[0]
    deploy = {key.rsplit('.', 1)[1]: value for key, value in labels.items() if key.startswith('nvidia.com/gpu.deploy.')}
    special = {key.rsplit('.', 1)[1]: value for key, value in expected(host)[2].items() if key.startswith('nvidia.com/gpu.deploy.')}
    assert {'driver', 'container-toolkit', 'device-plugin', 'gpu-feature-discovery', 'dcgm', 'dcgm-exporter', 'operator-validator'} <= set(deploy)
    assert ('mig-manager' in deploy) is (labels['nvidia.com/mig.capable'] == 'true')
    assert deploy == dict({component: 'true' for component in deploy}, **special)


def test_foreign_labels_kept_and_annotation_lists_what_was_set(host):
    labels, annotations = node_metadata(node_name(host))
    before = labels_before(host)
    assert {key: labels.get(key) for key in before} == before
    assert sorted(json.loads(annotations[OWNED_ANNOTATION])) == sorted(set(labels) - set(before))


def test_nfd_labels_left_to_nfd_when_it_runs(host):
    labels = node_metadata(node_name(host))[0]
    assert not [key for key in labels if key.startswith('feature.node.kubernetes.io/')]


def test_features_d_holds_the_gfd_labels_when_nfd_runs(host):
    features = host.file(FEATURES_D)
    labels = node_metadata(node_name(host))[0]
    # GFD's labels only: NFD must not set back what the Operator itself sets on the Node and may change later
    # (gpu.present, the deploy labels, the MIG manager's mig.config).
    operator_owned = ('nvidia.com/gpu.present', 'nvidia.com/mig.config')
    gfd = sorted('%s=%s' % item for item in labels.items()
                 if item[0].startswith('nvidia.com/') and item[0] not in operator_owned and not item[0].startswith('nvidia.com/gpu.deploy.'))
    assert host.check_output('stat -c %%F:%%a:%%U %s' % FEATURES_D) == 'regular file:644:root'
    content = features.content_string
    assert content.endswith('\n')
    assert [line for line in content.splitlines() if not line.startswith('#')] == gfd
    assert 'nvidia.com/gpu.product=%s' % expected(host)[0] in gfd
