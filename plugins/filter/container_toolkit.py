# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the container toolkit stage (see module_utils/common/contract.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import contract
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import host_sections
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.filters import checked


def runtime_variants(cdi_enabled):
    """contract.runtime_variants, with the switch as Ansible reads booleans (-e gives 'true' as a string)."""
    return contract.runtime_variants(boolean(cdi_enabled))


def container_toolkit_settings(resolved):
    """host_sections.container_toolkit_settings of the run's ClusterPolicy (role gpu_operator_policy's resolution)."""
    return host_sections.container_toolkit_settings(resolved['spec'])


class FilterModule(object):
    """runtime_variants, container_toolkit_settings."""

    def filters(self):
        return {
            'runtime_variants': runtime_variants,
            'container_toolkit_settings': checked(container_toolkit_settings),
        }
