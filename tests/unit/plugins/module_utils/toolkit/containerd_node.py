# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A stand-in for containerd_runtime.NodeFiles over in-memory files, so plan() reads nothing of the host's."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os


class MemoryNode(object):
    """`files` maps paths to bytes (with `modes`, default 0644); a directory exists when a file is under it or `directories`
    names it; `containerd_version` is (major, minor) or None (not installed)."""

    def __init__(self, files=None, directories=(), default_config=None, containerd_version=None, modes=None):
        self.files = dict(files or {})
        self.directories = set(directories)
        self._default_config = default_config
        self._containerd_version = containerd_version
        self.modes = dict(modes or {})

    def default_config(self):
        return self._default_config

    def containerd_version(self):
        return self._containerd_version

    def read(self, path):
        return self.files.get(path)

    def mode(self, path):
        assert path in self.files, path
        return self.modes.get(path, 0o644)

    def listdir(self, directory):
        return sorted(os.path.basename(path) for path in self.files if os.path.dirname(path) == directory)

    def _exists(self, directory):
        return directory == '/' or directory in self.directories or any(path.startswith(directory + '/') for path in self.files)

    def missing_directories(self, path):
        missing = []
        directory = os.path.dirname(path)
        while not self._exists(directory):
            missing.insert(0, directory)
            directory = os.path.dirname(directory)
        return missing
