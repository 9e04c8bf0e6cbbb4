# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of gpuops.gpu_operator.k8s_objects (documented in plugins/modules/k8s_objects.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.drift_report import object_diffs

MODULE = 'kubernetes.core.k8s'


class ActionModule(ActionBase):
    """kubernetes.core.k8s (its action plugin, which runs its module), whose result also carries each object's diff where
    ansible-core's callbacks print a task's."""

    def run(self, tmp=None, task_vars=None):
        task = self._task.copy()
        task.action = MODULE  # kubernetes.core's action runs the module of the task's name
        action = self._shared_loader_obj.action_loader.get(MODULE, task=task, connection=self._connection, play_context=self._play_context,
                                                           loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        result = action.run(tmp, task_vars)
        diffs = object_diffs(result)
        if diffs:
            result['diff'] = diffs
        return result
