# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the node labels stage (see module_utils/labels/rules.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels import rules


def node_labels_to_apply(labels, nfd_enabled=False, gfd_labels=True):
    """rules.labels_to_apply, with the switches as Ansible reads booleans (-e gives 'false' as a string)."""
    return rules.labels_to_apply(labels, nfd_enabled=boolean(nfd_enabled), gfd_labels=boolean(gfd_labels))


class FilterModule(object):
    """node_labels_to_apply."""

    def filters(self):
        return {
            'node_labels_to_apply': node_labels_to_apply,
        }
