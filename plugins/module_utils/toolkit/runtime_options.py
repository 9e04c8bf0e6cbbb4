# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Options shared by the *_nvidia_runtime modules (documented in doc_fragments/nvidia_runtime.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

VARIANTS = ('cdi', 'legacy')


def common_argument_spec(enable_cdi=True, backup=True):
    """A fresh copy of the options that mean the same for containerd, Docker and CRI-O.

    CRI-O leaves out enable_cdi and backup (doc fragments ENABLE_CDI and BACKUP).
    """
    spec = dict(
        state=dict(type='str', default='present', choices=['present', 'absent']),
        runtime_name=dict(type='str', default='nvidia'),
        runtime_binary=dict(type='path', default='/usr/bin/nvidia-container-runtime'),
        variants=dict(type='list', elements='str', default=[], choices=list(VARIANTS)),
        set_as_default=dict(type='bool', default=False),
    )
    if enable_cdi:
        spec['enable_cdi'] = dict(type='bool', default=False)
    if backup:
        spec['backup'] = dict(type='bool', default=False)
    return spec


def runtime_entries(runtime_name, runtime_binary, variants):
    """[(name, binary)] for the main runtime and each requested variant, in a stable order."""
    entries = [(runtime_name, runtime_binary)]
    for variant in VARIANTS:
        if variant in variants:
            entries.append(('%s-%s' % (runtime_name, variant), '%s.%s' % (runtime_binary, variant)))
    return entries


def all_runtime_names(runtime_name):
    """Every name the module may have registered for `runtime_name`, whatever the variants."""
    return [runtime_name] + ['%s-%s' % (runtime_name, variant) for variant in VARIANTS]
