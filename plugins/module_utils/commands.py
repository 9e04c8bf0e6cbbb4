# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Running a program on the node: an argv list, never a shell, and untranslated output."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.gpu_discovery import C_LOCALE


def run(module, argv, environ=None):
    """(rc, stdout, stderr) of argv with LC_ALL=C (or `environ`); rc 127 when the program is not installed."""
    binary = module.get_bin_path(argv[0])
    if binary is None:
        return 127, '', '%s: command not found' % argv[0]
    return module.run_command([binary] + list(argv[1:]), environ_update=environ or C_LOCALE)
