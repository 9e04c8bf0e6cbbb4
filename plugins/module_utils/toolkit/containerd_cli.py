# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Running the containerd binary on the node."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands

# `containerd --version` as the lab images print it: "containerd github.com/containerd/containerd 1.6.20~ds1
# 1.6.20~ds1-1+deb12u3" (bookworm), "containerd github.com/containerd/containerd/v2 2.1.9+unknown" (sid).
VERSION = re.compile(r'\sv?(\d+)\.(\d+)\.\d+')


def _containerd(module, args):
    """stdout of `containerd <args>`, or None when containerd is not installed; CommandError when it fails."""
    if module.get_bin_path('containerd') is None:
        return None
    return commands.checked(module, ['containerd'] + args)


def default_config(module):
    """Text of `containerd config default`, or None when containerd is not installed."""
    return _containerd(module, ['config', 'default'])


def config_dump(module, path):
    """Text of `containerd --config <path> config dump`: containerd's own reading of the file and its imports."""
    return _containerd(module, ['--config', path, 'config', 'dump'])


def parse_version(text):
    """(major, minor) of `containerd --version` output, or None."""
    match = VERSION.search(text or '')
    return (int(match.group(1)), int(match.group(2))) if match else None


def version(module):
    """(major, minor) of the installed containerd, or None when it is not installed or does not say."""
    if module.get_bin_path('containerd') is None:
        return None
    rc, out, _err = commands.run(module, ['containerd', '--version'])
    return parse_version(out) if rc == 0 else None
