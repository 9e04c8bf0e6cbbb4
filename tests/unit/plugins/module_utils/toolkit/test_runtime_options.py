# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""runtime_options.check_options: runtime names are RuntimeClass handlers (DNS-1123 labels), not another runtime's.

SOURCE for the rule: Kubernetes validates RuntimeClass.handler as a DNS-1123 label (kubernetes/kubernetes
pkg/apis/node/validation ValidateRuntimeClass -> apimachinery IsDNS1123Label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import OptionError, check_options, is_nvidia_runtime


def params(**overrides):
    return dict(dict(runtime_name='nvidia', runtime_binary='/usr/bin/nvidia-container-runtime', variants=[]), **overrides)


@pytest.mark.parametrize('name, variants', [
    ('nvidia', []), ('nvidia', ['cdi', 'legacy']), ('gpu', []), ('a', []), ('0', []), ('nvidia-2', []), ('x' * 63, []),
    ('x' * 56, ['legacy']),
])
def test_good_names(name, variants):
    check_options(params(runtime_name=name, variants=variants))


@pytest.mark.parametrize('name, variants, said', [
    ('a"b', [], "'a\"b' is not a valid runtime name"),
    ('', [], "'' is not a valid runtime name"),
    ('has space', [], 'not a valid runtime name'),
    ('Nvidia', [], 'not a valid runtime name'),
    ('-gpu', [], 'not a valid runtime name'),
    ('gpu-', [], 'not a valid runtime name'),
    ('gpu.1', [], 'not a valid runtime name'),
    ('x' * 64, [], 'at most 63 characters)'),
    # The variant's name counts too: x*57 + '-legacy' is 64 characters.
    ('x' * 57, ['legacy'], 'at most 63 characters, variants included)'),
    ('runc', [], 'runtime_name: runc is the name of a runtime the container runtime ships (runc, crun)'),
    ('crun', ['cdi'], 'runtime_name: crun is the name of a runtime'),
])
def test_bad_names(name, variants, said):
    with pytest.raises(OptionError, match='runtime_name: ') as raised:
        check_options(params(runtime_name=name, variants=variants))
    assert said in str(raised.value)


@pytest.mark.parametrize('binary', ['nvidia-container-runtime', 'bin/nvidia', './nvidia'])
def test_relative_binary(binary):
    with pytest.raises(OptionError, match='runtime_binary: %s is not an absolute path' % binary):
        check_options(params(runtime_binary=binary))


@pytest.mark.parametrize('name, binary, nvidia', [
    ('nvidia', None, True), ('nvidia-cdi', '/usr/bin/runc', True), ('gpu', '/usr/bin/nvidia-container-runtime', True),
    ('gpu', '/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi', True), ('gpu', '/usr/bin/crun', False), ('gpu', None, False),
    ('kata', '/usr/bin/kata-runtime', False),
])
def test_is_nvidia_runtime(name, binary, nvidia):
    assert is_nvidia_runtime(name, binary) is nvidia
