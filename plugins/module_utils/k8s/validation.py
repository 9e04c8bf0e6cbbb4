# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The validation stage's Kubernetes objects: the CUDA vectorAdd Pod."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import images
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.manifests import (
    DEFAULT_POLICY, VALIDATOR_ACCOUNT, _merge, _meta, image)

DEFAULT_VALIDATOR = {'repository': 'nvcr.io/nvidia/k8s', 'image': 'cuda-sample', 'version': 'vectoradd-cuda12.5.0',
                     'imagePullPolicy': 'IfNotPresent', 'imagePullSecrets': []}
VALIDATOR_POD = 'nvidia-cuda-validator'


def validator_pod(namespace='gpu-operator', settings=None, registry='', tolerations=None):
    """The vectorAdd Pod: one nvidia.com/gpu, the GPU toleration, run once."""
    spec = _merge(DEFAULT_VALIDATOR, settings)
    if registry and not (settings or {}).get('repository'):
        spec['repository'] = images.mirrored(spec['repository'], registry)
    pod = {
        'restartPolicy': 'Never', 'serviceAccountName': VALIDATOR_ACCOUNT, 'automountServiceAccountToken': False,
        'runtimeClassName': 'nvidia',
        'tolerations': DEFAULT_POLICY['daemonsets']['tolerations'] if tolerations is None else tolerations,
        'containers': [{'name': 'cuda-vectoradd', 'image': image(spec, 'validator'), 'imagePullPolicy': spec['imagePullPolicy'],
                        'resources': {'limits': {'nvidia.com/gpu': '1'}}}],  # a quantity, as the API returns it
    }
    if spec['imagePullSecrets']:
        pod['imagePullSecrets'] = [{'name': name} for name in spec['imagePullSecrets']]
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': _meta(VALIDATOR_POD, namespace, {'app': VALIDATOR_POD}), 'spec': pod}
