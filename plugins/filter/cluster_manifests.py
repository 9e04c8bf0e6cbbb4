# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters that render the cluster side's objects (see module_utils/k8s/manifests.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import manifests as cluster_manifests
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.filters import checked


class FilterModule(object):
    """cluster_prerequisites, cluster_operands, cluster_policy and cluster_validator_pod."""

    def filters(self):
        return {
            'cluster_prerequisites': checked(cluster_manifests.prerequisites),
            'cluster_operands': checked(cluster_manifests.operands),
            'cluster_policy': checked(cluster_manifests.cluster_policy),
            'cluster_validator_pod': checked(cluster_manifests.validator_pod),
        }
