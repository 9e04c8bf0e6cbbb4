# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Running the containerd program on the node: `containerd` on PATH, or the one a distribution runs (an absolute
path, such as k3s's /var/lib/rancher/k3s/data/current/bin/containerd)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import commands

# `containerd --version` as the lab images print it: "containerd github.com/containerd/containerd 1.6.20~ds1
# 1.6.20~ds1-1+deb12u3" (bookworm), "containerd github.com/containerd/containerd/v2 2.1.9+unknown" (sid).
VERSION = re.compile(r'\sv?(\d+)\.(\d+)\.\d+')


PROGRAM = 'containerd'


def _installed(module, program):
    return os.path.isfile(program) if os.path.isabs(program) else module.get_bin_path(program) is not None


def _containerd(module, args, program):
    """stdout of `<program> <args>`, or None when that containerd is not installed; CommandError when it fails."""
    if not _installed(module, program):
        return None
    return commands.checked(module, [program] + args)


def default_config(module, program=PROGRAM):
    """Text of `containerd config default`, or None when containerd is not installed."""
    return _containerd(module, ['config', 'default'], program)


def config_dump(module, path, program=PROGRAM):
    """Text of `containerd --config <path> config dump`: containerd's own reading of the file and its imports."""
    return _containerd(module, ['--config', path, 'config', 'dump'], program)


def parse_version(text):
    """(major, minor) of `containerd --version` output, or None."""
    match = VERSION.search(text or '')
    return (int(match.group(1)), int(match.group(2))) if match else None


def version(module, program=PROGRAM):
    """(major, minor) of the installed containerd, or None when it is not installed or does not say."""
    if not _installed(module, program):
        return None
    rc, out, _err = commands.run(module, [program, '--version'])
    return parse_version(out) if rc == 0 else None
