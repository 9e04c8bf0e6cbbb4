# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""k8s_retryable: whether a failed kubernetes.core task is worth another try (see k8s_retryable.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping
from http.client import responses

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.client import CONFLICT, NOT_FOUND, RETRY_STATUSES

# kubernetes.core puts the HTTP reason phrase of the API's answer into the failed result's `reason`.
RETRYABLE_REASONS = frozenset(responses[status] for status in RETRY_STATUSES + (CONFLICT,))
# A removal reads each object, then deletes it: a 404 to the delete means another run (a sliced job's other slice)
# removed it in between. Another try reads anew, finds it gone and goes on to the objects after it.
REMOVAL_REASONS = RETRYABLE_REASONS | {responses[NOT_FOUND]}


def k8s_retryable(result, removal=False):
    """True for a failed result whose API answer was 409, 429, 500, 502, 503 or 504; for a removal, 404 too."""
    if not isinstance(result, Mapping):
        raise AnsibleFilterError('k8s_retryable tests a registered task result, not %s' % type(result).__name__)
    return bool(result.get('failed')) and result.get('reason') in (REMOVAL_REASONS if removal else RETRYABLE_REASONS)


class TestModule(object):
    """k8s_retryable."""

    def tests(self):
        return {'k8s_retryable': k8s_retryable}
