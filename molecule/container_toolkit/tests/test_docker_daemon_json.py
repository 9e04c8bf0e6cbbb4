# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""After converge: a real dockerd (sid's docker.io) accepts the daemon.json docker_nvidia_runtime wrote."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

DAEMON_JSON = '/etc/docker/daemon.json'
BINARY = '/usr/bin/nvidia-container-runtime'
# prepare.yml installs docker.io on this node only.
testinfra_hosts = ['podman://container_toolkit-sid']


def validate(host, path):
    """`dockerd --validate` on `path`: (exit status, what it printed)."""
    cmd = host.run('dockerd --validate --config-file %s', path)
    return cmd.rc, (cmd.stdout + cmd.stderr).strip()


def test_dockerd_accepts_the_written_file(host):
    rc, out = validate(host, DAEMON_JSON)
    assert rc == 0, out
    assert out == 'configuration OK'


@pytest.fixture
def bad_file(host):
    path = '/tmp/daemon-unknown-key.json'
    host.check_output('printf %s > %s', '{"no-such-option": true}', path)
    yield path
    host.check_output('rm -f %s', path)


def test_dockerd_rejects_an_unknown_key(host, bad_file):
    """The check above is real: this dockerd fails a file it does not accept."""
    rc, out = validate(host, bad_file)
    assert rc != 0
    assert 'no-such-option' in out, out


def test_runtimes_default_and_cdi_added_user_keys_kept(host):
    config = json.loads(host.file(DAEMON_JSON).content_string)
    assert config == {
        'log-driver': 'journald',
        'exec-opts': ['native.cgroupdriver=systemd'],
        'default-runtime': 'nvidia',
        'runtimes': {
            'nvidia': {'path': BINARY, 'args': []},
            'nvidia-cdi': {'path': BINARY + '.cdi', 'args': []},
            'nvidia-legacy': {'path': BINARY + '.legacy', 'args': []},
        },
        'features': {'cdi': True},
    }
    # The user's keys keep their place ahead of the ones added.
    assert list(config)[:3] == ['log-driver', 'exec-opts', 'default-runtime']
