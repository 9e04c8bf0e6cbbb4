# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters that render the cluster side's objects (see module_utils/k8s/manifests.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import manifests as cluster_manifests
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.filter_errors import checked as _checked


class FilterModule(object):
    """cluster_prerequisites, cluster_operands and cluster_policy."""

    def filters(self):
        return {
            'cluster_prerequisites': _checked(cluster_manifests.prerequisites),
            'cluster_operands': _checked(cluster_manifests.operands),
            'cluster_policy': _checked(cluster_manifests.cluster_policy),
        }
