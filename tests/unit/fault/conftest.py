# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Print what the fault tests counted (examples, cases, injections) at the end of the run."""

from tests.unit.fault.fault_support import COUNTS


def pytest_terminal_summary(terminalreporter):
    if not COUNTS:
        return
    terminalreporter.write_sep('=', 'fault suite counts')
    for test, counts in COUNTS.items():
        terminalreporter.write_line('%s: %s' % (test, ', '.join('%s %d' % (what, number) for what, number in counts.items())))
