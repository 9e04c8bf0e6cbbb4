# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pure parsers of runtime_detection. The systemctl and dpkg-query outputs are verbatim from the lab's
Debian nodes (bookworm: containerd 1.6, sid: containerd 2.1), 2026-11-26."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import time

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


# /proc/stat's btime and /proc/6/stat of a containerd 1.6 started by hand (podman exec --detach) on a bookworm lab
# node whose PID 1 is `sleep infinity` (tests/lab/labctl.py up --no-systemd), 2026-11-27; clock ticks 100 a second.
BTIME = 'cpu  1 2 3 4\nbtime 1795755156\nprocesses 5\n'
CONTAINERD_STAT = ('6 (containerd) S 0 6 6 0 -1 4194560 4090 205 10 3 4 2 0 0 20 0 8 0 87947 1309196288 9635 18446744073709551615 '
                   '12972032 32207857 140735174090512 0 0 0 1002055680 0 2143420159 0 0 0 17 0 0 0 0 0 0 51809320 52363832 1104691200 '
                   '140735174098794 140735174098805 140735174098805 140735174098916 0\n')


def fake_proc(root, processes, stat=BTIME, namespaces=None):
    """A /proc with `processes` {pid: (comm, stat line or None)}; with `namespaces` {pid or 'self': mount namespace},
    the ns/mnt links /proc has."""
    root.mkdir()
    (root / 'stat').write_text(stat)
    (root / 'self').mkdir()
    for pid, (comm, line) in processes.items():
        (root / str(pid)).mkdir()
        (root / str(pid) / 'comm').write_text(comm + '\n')
        if line is not None:
            (root / str(pid) / 'stat').write_text(line)
    for pid, namespace in (namespaces or {}).items():
        (root / str(pid) / 'ns').mkdir()
        (root / str(pid) / 'ns' / 'mnt').symlink_to(namespace)
    return str(root)


@pytest.mark.parametrize('processes, expected', [
    ({}, {'containerd': [], 'crio': [], 'docker': []}),
    ({6: ('containerd', CONTAINERD_STAT), 1: ('sleep', None)}, {'containerd': [6], 'crio': [], 'docker': []}),
    # Docker's own containerd and the shims are other programs; comm is the name, not a prefix.
    ({30: ('dockerd', None), 12: ('containerd', None), 9: ('containerd', None), 40: ('containerd-shim', None), 41: ('crio-conmon', None)},
     {'containerd': [9, 12], 'crio': [], 'docker': [30]}),
])
def test_daemon_processes(tmp_path, processes, expected):
    assert rd.daemon_processes(fake_proc(tmp_path / 'proc', processes)) == expected


# The node's own containerd (PID 6) and one inside a container on the node (PID 80, another mount namespace): only the
# node's counts. A process whose link cannot be read (it ended, or the kernel hides it) is not ruled out.
HOST_NS, CONTAINER_NS = 'mnt:[4026531841]', 'mnt:[4026532601]'


@pytest.mark.parametrize('namespaces, expected', [
    ({'self': HOST_NS, 6: HOST_NS, 80: CONTAINER_NS}, [6]),
    ({'self': HOST_NS, 80: CONTAINER_NS}, [6]),
    ({'self': HOST_NS, 6: CONTAINER_NS, 80: CONTAINER_NS}, []),
    # This process's own namespace unreadable: nothing is ruled out.
    ({6: HOST_NS, 80: CONTAINER_NS}, [6, 80]),
])
def test_daemon_processes_of_containers_on_the_node_do_not_count(tmp_path, namespaces, expected):
    proc = fake_proc(tmp_path / 'proc', {6: ('containerd', None), 80: ('containerd', None)}, namespaces=namespaces)
    assert rd.daemon_processes(proc)['containerd'] == expected


def test_daemon_processes_without_proc(tmp_path):
    assert rd.daemon_processes(str(tmp_path / 'none')) == {'containerd': [], 'crio': [], 'docker': []}


@pytest.mark.parametrize('processes, stat, pid, expected', [
    ({6: ('containerd', CONTAINERD_STAT)}, BTIME, 6, 1795755156 + 879.47),
    # A program name with a space and a parenthesis does not shift the fields.
    ({6: ('tmux: server', CONTAINERD_STAT.replace('(containerd)', '(a (b) c)'))}, BTIME, 6, 1795755156 + 879.47),
    ({6: ('containerd', CONTAINERD_STAT)}, 'cpu 1 2\n', 6, None),
    ({6: ('containerd', None)}, BTIME, 6, None),
    ({6: ('containerd', '6 (containerd) S 0\n')}, BTIME, 6, None),
    ({}, BTIME, 6, None),
])
def test_process_started(tmp_path, monkeypatch, processes, stat, pid, expected):
    monkeypatch.setattr(rd.os, 'sysconf', lambda name: 100 if name == 'SC_CLK_TCK' else None)
    started = rd.process_started(fake_proc(tmp_path / 'proc', processes, stat), pid)
    assert started == (pytest.approx(expected) if expected is not None else None)


def test_process_started_of_this_process_is_within_its_life():
    """The real /proc: this test's own process started after the boot and before now."""
    with open('/proc/stat') as handle:
        boot = next(int(line.split()[1]) for line in handle if line.startswith('btime '))
    started = rd.process_started('/proc', rd.os.getpid())
    assert boot <= started <= time.time() + 1
