# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""How the collection's filters report a bad setting."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError


def checked(function):
    """Turn a settings error into a filter error whose message names the setting."""
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except GpuOpsError as exc:
            raise AnsibleFilterError('gpuops.gpu_operator: %s' % exc) from None
    wrapper.__doc__ = function.__doc__
    return wrapper
