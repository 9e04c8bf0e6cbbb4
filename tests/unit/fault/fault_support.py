# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the fault tests share: their counts (printed at the end of the run, see conftest.py) and file snapshots."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import os
import stat

from hypothesis import HealthCheck, settings

# Test -> {what: how many}; conftest.py prints it after the run, so CI logs show the counts.
COUNTS = collections.OrderedDict()

# Examples per transformer, run in two halves (one per core, see test_fuzz_transformers.py).
FUZZ_EXAMPLES = 10000
# Deterministic, so that CI runs the same examples every time.
FUZZ_HALF = settings(max_examples=FUZZ_EXAMPLES // 2, derandomize=True, database=None, deadline=None,
                     suppress_health_check=list(HealthCheck), print_blob=False)


def count(test, what, number=1):
    counts = COUNTS.setdefault(test, collections.OrderedDict())
    counts[what] = counts.get(what, 0) + number


def snapshot(*directories):
    """Every entry under `directories` with its mode and bytes or link target; for asserting that nothing changed."""
    seen = {}
    for top in directories:
        for root, dirs, names in os.walk(str(top)):
            for name in dirs + names:
                path = os.path.join(root, name)
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode):
                    seen[path] = ('link', os.readlink(path))
                elif stat.S_ISREG(mode):
                    with open(path, 'rb') as handle:
                        seen[path] = ('file', mode, handle.read())
                else:
                    seen[path] = ('other', mode)
    return seen
