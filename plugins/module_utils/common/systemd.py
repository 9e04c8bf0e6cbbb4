# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Whether systemd runs the node, so that systemctl can be asked at all.

systemctl is often installed where systemd is not PID 1 (a container, a CI runner, an image started by another init);
there it fails with "System has not been booted with systemd as init system (PID 1). Can't operate.". The test is
sd_booted(3)'s, the one systemctl makes itself: systemd creates BOOTED_DIR when it boots the system.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

BOOTED_DIR = '/run/systemd/system'
# How the notes that skip a service action name the condition (also where systemctl is not installed at all).
NOT_BOOTED = 'systemd is not PID 1 on this node'


def booted(module):
    """Whether systemctl is installed and systemd is the node's init (PID 1)."""
    return module.get_bin_path('systemctl') is not None and os.path.isdir(BOOTED_DIR)
