# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one exception base of this collection: every module catches it and fails with its message."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class GpuOpsError(Exception):
    """Input or node state the module cannot act on; the message says what, where, and what to do."""


def fail_from_exception(module, exc, **result):
    """Fail the module with the error's message, keeping the result fields gathered so far (stable RETURN keys)."""
    module.fail_json(msg=str(exc), **result)
