# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of gpuops.gpu_operator.node_outcome (documented in plugins/modules/node_outcome.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.plain_data import PlainDataError, plain


class ActionModule(ActionBase):
    """One node's entry of a run made for many nodes, returned as this node's own result."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('outcome',))
    # Nothing runs on the node: its share of the work was done by the run whose result is given.
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        outcome = self._task.args.get('outcome')
        if not isinstance(outcome, Mapping):
            result.update(failed=True, msg='outcome: a mapping (one node of a run for many nodes) is needed, not %s' % type(outcome).__name__)
            return result
        try:
            outcome = plain(outcome, 'outcome')
        except PlainDataError as error:
            result.update(failed=True, msg=str(error))
            return result
        result.update(outcome)
        result['changed'] = bool(outcome.get('changed'))
        result['failed'] = bool(outcome.get('failed'))
        if result['failed']:
            result['msg'] = outcome.get('msg') or 'failed, with no message'
        return result
