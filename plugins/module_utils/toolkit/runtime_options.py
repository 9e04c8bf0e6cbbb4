# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Options shared by the *_nvidia_runtime modules (documented in doc_fragments/nvidia_runtime.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import DEFAULT_RUNTIME_NAME, RUNTIME_VARIANTS, runtime_names
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

# A RuntimeClass handler must be a DNS-1123 label (Kubernetes validation of RuntimeClass.handler); containerd,
# CRI-O and Docker take the runtime name from it, so a name that is not one can never be used by a Pod.
DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
DNS_LABEL_MAX = 63
# The runtimes containerd, CRI-O and Docker ship as their own: a name of theirs would be taken over, not added.
RESERVED_NAMES = ('runc', 'crun')
# The NVIDIA container runtime and its .cdi and .legacy variants (nvidia-ctk writes these names).
NVIDIA_BINARY_PREFIX = 'nvidia-container-runtime'
# nvidia-ctk counts every runtime whose name starts with this as an NVIDIA runtime.
NVIDIA_NAME_PREFIX = 'nvidia'


class OptionError(GpuOpsError):
    """An option value the runtime modules refuse before reading any file."""


def common_argument_spec(enable_cdi=True, backup=True):
    """A fresh copy of the options that mean the same for containerd, Docker and CRI-O.

    CRI-O leaves out enable_cdi and backup (doc fragments ENABLE_CDI and BACKUP).
    """
    spec = dict(
        state=dict(type='str', default='present', choices=['present', 'absent']),
        runtime_name=dict(type='str', default=DEFAULT_RUNTIME_NAME),
        runtime_binary=dict(type='path', default='/usr/bin/nvidia-container-runtime'),
        variants=dict(type='list', elements='str', default=[], choices=list(RUNTIME_VARIANTS)),
        set_as_default=dict(type='bool', default=False),
    )
    if enable_cdi:
        spec['enable_cdi'] = dict(type='bool', default=False)
    if backup:
        spec['backup'] = dict(type='bool', default=False)
    return spec


def check_options(params):
    """Refuse runtime names no runtime could use or that belong to another runtime, and a relative runtime_binary."""
    for name, _binary in runtime_entries(params['runtime_name'], params['runtime_binary'], params['variants']):
        if not DNS_LABEL.match(name) or len(name) > DNS_LABEL_MAX:
            raise OptionError('runtime_name: %r is not a valid runtime name: a RuntimeClass handler must be a DNS-1123 label '
                              '(lower case letters, digits and "-", starting and ending with a letter or digit, at most %d '
                              'characters%s)' % (name, DNS_LABEL_MAX, ', variants included' if name != params['runtime_name'] else ''))
    if params['runtime_name'] in RESERVED_NAMES:
        raise OptionError('runtime_name: %s is the name of a runtime the container runtime ships (%s); give the NVIDIA runtime '
                          'a name of its own, such as nvidia' % (params['runtime_name'], ', '.join(RESERVED_NAMES)))
    if not os.path.isabs(params['runtime_binary']):
        raise OptionError('runtime_binary: %s is not an absolute path; the container runtime would look for it relative to '
                          'its own working directory' % params['runtime_binary'])


def is_nvidia_runtime(name, binary):
    """True for a runtime named like NVIDIA's (as nvidia-ctk judges it) or running the NVIDIA container runtime."""
    return name.startswith(NVIDIA_NAME_PREFIX) or (bool(binary) and os.path.basename(binary).startswith(NVIDIA_BINARY_PREFIX))


def runtime_entries(runtime_name, runtime_binary, variants):
    """[(name, binary)] for the main runtime and each requested variant, in a stable order."""
    binaries = [runtime_binary] + ['%s.%s' % (runtime_binary, variant) for variant in RUNTIME_VARIANTS if variant in variants]
    return list(zip(runtime_names(runtime_name, variants), binaries))


def all_runtime_names(runtime_name):
    """Every name the module may have registered for `runtime_name`, whatever the variants."""
    return runtime_names(runtime_name, RUNTIME_VARIANTS)
