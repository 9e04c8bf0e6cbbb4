# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters that render the cluster side's objects (see module_utils/k8s/manifests.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import manifests as cluster_manifests
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import validation


def _checked(function):
    """Turn a settings error into a filter error whose message names the setting."""
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except GpuOpsError as exc:
            raise AnsibleFilterError('gpuops.gpu_operator: %s' % exc) from None
    wrapper.__doc__ = function.__doc__
    return wrapper


class FilterModule(object):
    """cluster_prerequisites, cluster_operands, cluster_policy and cluster_validator_pod."""

    def filters(self):
        return {
            'cluster_prerequisites': _checked(cluster_manifests.prerequisites),
            'cluster_operands': _checked(cluster_manifests.operands),
            'cluster_policy': _checked(cluster_manifests.cluster_policy),
            'cluster_validator_pod': _checked(validation.validator_pod),
        }
