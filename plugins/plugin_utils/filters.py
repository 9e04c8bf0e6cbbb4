# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the collection's filter plugins share."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.plain_data import PlainDataError, plain


def checked(function):
    """`function` as a filter: plain data in (ansible-core 2.19 hands filters tagged, lazy types), and a GpuOpsError
    (bad settings) out as a filter error whose message names the setting."""
    def wrapper(*args, **kwargs):
        try:
            return function(*plain(list(args), 'argument'), **plain(kwargs, 'option'))
        except (GpuOpsError, PlainDataError) as exc:
            raise AnsibleFilterError('gpuops.gpu_operator: %s' % exc) from None
    wrapper.__doc__ = function.__doc__
    return wrapper
