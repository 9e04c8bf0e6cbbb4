# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the doctor playbook: the report from what the nodes and the API showed (see plugin_utils/doctor_report.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import doctor_report


class FilterModule(object):
    """doctor_report and doctor_text."""

    def filters(self):
        return {
            'doctor_report': doctor_report.build,
            'doctor_text': doctor_report.text,
        }
