# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the rolling driver upgrade (role gpu_driver_upgrade, see plugin_utils/driver_upgrade.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import driver_upgrade
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.filters import checked


class FilterModule(object):
    """driver_upgrade_plan, driver_upgrade_admission, driver_upgrade_node and driver_upgrade_pods_left."""

    def filters(self):
        return {
            'driver_upgrade_plan': checked(driver_upgrade.plan),
            'driver_upgrade_admission': checked(driver_upgrade.admission),
            'driver_upgrade_node': driver_upgrade.node_state,
            'driver_upgrade_pods_left': driver_upgrade.pods_left,
        }
