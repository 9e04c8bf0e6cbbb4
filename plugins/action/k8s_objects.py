# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of gpuops.gpu_operator.k8s_objects (documented in plugins/modules/k8s_objects.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.kubernetes.core.plugins.action.k8s import ActionModule as K8sAction

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.drift_report import object_diffs

MODULE = 'kubernetes.core.k8s'


class ActionModule(K8sAction):
    """kubernetes.core.k8s, whose result also carries each object's diff where ansible-core's callbacks print a task's."""

    def _execute_module(self, module_name=None, **kwargs):
        # kubernetes.core's action runs the module of the task's name: here that is its own module's.
        return super(ActionModule, self)._execute_module(module_name=MODULE, **kwargs)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        diffs = object_diffs(result)
        if diffs:
            result['diff'] = diffs
        return result
