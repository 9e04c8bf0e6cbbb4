# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The mirror rule and image references (module_utils/k8s/images.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import images

DIGEST = 'sha256:' + 'ab' * 32


@pytest.mark.parametrize('repository, registry, expected', [
    ('nvcr.io/nvidia/k8s', '', 'nvcr.io/nvidia/k8s'),
    ('nvcr.io/nvidia/k8s', 'registry.local:5000', 'registry.local:5000/nvidia/k8s'),
    ('nvcr.io/nvidia/k8s', 'registry.local:5000/', 'registry.local:5000/nvidia/k8s'),
    # the mirror's path ends with the repository's first segment: not doubled
    ('nvcr.io/nvidia/k8s', 'registry.local:5000/nvidia', 'registry.local:5000/nvidia/k8s'),
    ('nvcr.io/nvidia', 'registry.local:5000/nvidia', 'registry.local:5000/nvidia'),
    ('nvcr.io/nvidia/cloud-native', 'mirror.example/proxy/nvidia', 'mirror.example/proxy/nvidia/cloud-native'),
    ('nvcr.io/nvidia/k8s', 'registry.local:5000/nvidia/k8s', 'registry.local:5000/nvidia/k8s'),
    # a path that merely shares a name later on is kept whole
    ('nvcr.io/nvidia/k8s', 'registry.local:5000/k8s', 'registry.local:5000/k8s/nvidia/k8s'),
    ('nvcr.io/nvidia/k8s', 'harbor.corp/nvcr-proxy', 'harbor.corp/nvcr-proxy/nvidia/k8s'),
    ('localhost/nvidia', 'localhost:5000', 'localhost:5000/nvidia'),
    # a registry of blanks (an empty YAML value with a space) is no mirror: x_mirrored__mutmut_1 survived without it
    ('nvcr.io/nvidia/k8s', '  ', 'nvcr.io/nvidia/k8s'),
])
def test_mirrored(repository, registry, expected):
    assert images.mirrored(repository, registry) == expected


def test_mirror_without_host_is_refused():
    with pytest.raises(images.ImageError, match='must start with a registry host'):
        images.mirrored('nvcr.io/nvidia', 'nvidia/k8s')


@pytest.mark.parametrize('version, expected', [
    ('v0.17.0', 'nvcr.io/nvidia/k8s-device-plugin:v0.17.0'),
    ('v0.17.0-ubi9', 'nvcr.io/nvidia/k8s-device-plugin:v0.17.0-ubi9'),
    (DIGEST, 'nvcr.io/nvidia/k8s-device-plugin@' + DIGEST),
])
def test_reference(version, expected):
    assert images.reference('nvcr.io/nvidia/', 'k8s-device-plugin', version) == expected


@pytest.mark.parametrize('version, message', [
    ('', 'devicePlugin.version must be a non-empty string'),
    (None, 'devicePlugin.version must be a non-empty string'),
    ('sha256:abc', 'is not a sha256 digest'),
    ('sha256:' + 'AB' * 32, 'is not a sha256 digest'),
    ('v1 2', 'is not a valid image tag'),
    ('-v1', 'is not a valid image tag'),
])
def test_bad_version(version, message):
    with pytest.raises(images.ImageError, match=message):
        images.reference('nvcr.io/nvidia', 'k8s-device-plugin', version, 'devicePlugin')


@pytest.mark.parametrize('repository, image, message', [
    ('', 'k8s-device-plugin', '^image.repository must be a non-empty string, not \'\'$'),
    (' ', 'k8s-device-plugin', '^image.repository must be a non-empty string'),
    ('nvcr.io/nvidia', None, '^image.image must be a non-empty string, not None$'),
])
def test_bad_setting_is_named_image_by_default(repository, image, message):
    """Without `where`, the message names the setting image.<field>: x_reference__mutmut_1..3 survived without this."""
    with pytest.raises(images.ImageError, match=message):
        images.reference(repository, image, 'v1')
