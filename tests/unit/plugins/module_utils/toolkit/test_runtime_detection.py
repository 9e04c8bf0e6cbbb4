# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pure parsers of runtime_detection. The systemctl and dpkg-query outputs are verbatim from the lab's
Debian nodes (bookworm: containerd 1.6, sid: containerd 2.1), 2026-11-26."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_detection as rd

SYSTEMCTL_SID = ('Id=containerd.service\nLoadState=loaded\nActiveState=active\n\n'
                 'Id=crio.service\nLoadState=not-found\nActiveState=inactive\n\n'
                 'Id=docker.service\nLoadState=not-found\nActiveState=inactive\n')
SYSTEMCTL_MASKED = 'Id=crio.service\nLoadState=masked\nActiveState=inactive\n'
# bookworm after `apt-get remove runc`, which took containerd with it: its config files stay (rc).
DPKG_REMOVED = 'containerd\t1.6.20~ds1-1+deb12u3\trc \nrunc\t\tun '
DPKG_INSTALLED = 'containerd\t1.6.20~ds1-1+deb12u3\tii \nrunc\t1.1.5+ds1-1+deb12u1\tii \n'
KUBEADM_FLAGS = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/crio/crio.sock --pod-infra-container-image=registry.k8s.io/pause:3.9"\n'
KUBELET_CONFIG = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n'


@pytest.mark.parametrize('texts, expected', [
    ([], None),
    (['', None, ''], None),
    ([KUBELET_CONFIG], 'containerd.sock'),
    ([KUBEADM_FLAGS], 'crio.sock'),
    # The first file that names one wins, as the kubelet's config file comes first.
    ([KUBELET_CONFIG, KUBEADM_FLAGS], 'containerd.sock'),
    (['', KUBEADM_FLAGS], 'crio.sock'),
    (['--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock'], 'cri-dockerd.sock'),
    (['some.socket.path=/run/x/'], None),
])
def test_kubelet_socket(texts, expected):
    assert rd.kubelet_socket(texts) == expected


@pytest.mark.parametrize('text, expected', [
    ('', {}),
    (None, {}),
    (SYSTEMCTL_SID, {'containerd.service': dict(load_state='loaded', active_state='active'),
                     'crio.service': dict(load_state='not-found', active_state='inactive'),
                     'docker.service': dict(load_state='not-found', active_state='inactive')}),
    (SYSTEMCTL_MASKED, {'crio.service': dict(load_state='masked', active_state='inactive')}),
    ('LoadState=loaded\n', {}),
])
def test_systemd_units(text, expected):
    assert rd.systemd_units(text) == expected


def services(**load_states):
    return dict((runtime, dict(unit=rd.UNITS[runtime], load_state=load_states.get(runtime, 'not-found'), active_state='inactive'))
                for runtime in rd.UNITS)


def unknown():
    """The services of a node without systemd: their state is unknown."""
    return dict((runtime, dict(unit=unit, load_state=None, active_state=None)) for runtime, unit in rd.UNITS.items())


@pytest.mark.parametrize('socket, found, present, expected', [
    # No systemd (the real H100 host of tests/fixtures/gpus/h100-x1 has no systemctl): the kubelet's socket still wins,
    # else the first runtime whose socket or daemon the node has, in the same order as the services.
    ('crio.sock', unknown(), ['containerd'], 'crio'),
    (None, unknown(), ['docker'], 'docker'),
    (None, unknown(), ['containerd', 'docker'], 'containerd'),
    (None, unknown(), [], None),
    ('podman.sock', unknown(), ['containerd'], None),
])
def test_pick_runtime_without_systemd(socket, found, present, expected):
    assert rd.pick_runtime(socket, found, present) == expected


@pytest.mark.parametrize('socket, found, expected', [
    ('containerd.sock', services(), 'containerd'),
    ('crio.sock', services(containerd='loaded'), 'crio'),
    ('cri-dockerd.sock', services(containerd='loaded'), 'docker'),
    ('dockershim.sock', services(), 'docker'),
    # No kubelet config yet: the first installed service, containerd before CRI-O before Docker.
    (None, services(containerd='loaded', docker='loaded'), 'containerd'),
    (None, services(docker='loaded'), 'docker'),
    (None, services(crio='masked', docker='loaded'), 'crio'),
    # A kubelet on another runtime's socket: not the containerd (or CRI-O) that happens to be installed.
    ('podman.sock', services(containerd='loaded'), None),
    ('other.sock', services(crio='loaded'), None),
    (None, services(), None),
    (None, {}, None),
])
def test_pick_runtime(socket, found, expected):
    assert rd.pick_runtime(socket, found) == expected


@pytest.mark.parametrize('text, expected', [
    ('', {}),
    (DPKG_INSTALLED, {'containerd': '1.6.20~ds1-1+deb12u3', 'runc': '1.1.5+ds1-1+deb12u1'}),
    (DPKG_REMOVED, {}),
    ('garbage\n', {}),
])
def test_dpkg_versions(text, expected):
    assert rd.dpkg_versions(text) == expected


@pytest.mark.parametrize('text, expected', [
    ('', {}),
    ('containerd.io\t1.7.25-3.1.el9\npackage cri-o is not installed\n', {'containerd.io': '1.7.25-3.1.el9'}),
])
def test_rpm_versions(text, expected):
    assert rd.rpm_versions(text) == expected
