# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""containerd_nvidia_runtime, docker_nvidia_runtime and crio_nvidia_runtime through real ansible-playbook, their options
written as inventory YAML, on files in a temporary directory: runs that must fail do, with a message naming the
option or the file, and leave every file as it was (no undo record left behind); check mode fails where the run
fails; the few odd inputs that are fine work.

All cases run in one playbook (tests/node_playbook.py); each test asserts its own steps.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import subprocess

import pytest

from tests.node_playbook import Step, outcome, run_steps
from tests.unit.fault.fault_support import snapshot
from tests.unit.plugins.module_utils.toolkit.test_runtime_detection import DPKG_INSTALLED, KUBELET_CONFIG, SYSTEMCTL_SID

CRI = 'plugins."io.containerd.grpc.v1.cri"'
NVIDIA_BINARY = '/usr/bin/nvidia-container-runtime'
# `containerd --version` of the bookworm lab image (Debian's containerd 1.6.20, tests/lab/images/recipe.toml), printed
# by a stand-in on PATH so that the run does not depend on the containerd, if any, of the machine running the tests.
CONTAINERD_1_6 = 'containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3'
# The sid lab image's (Debian's containerd 2.1.9), for the cases that depend on containerd 2.x.
CONTAINERD_2_1 = 'containerd github.com/containerd/containerd/v2 2.1.9+unknown '
REGISTRY_PASSWORD = 's3cret-pa55'
# What `nvidia-ctk runtime configure --runtime=docker --set-as-default` writes (its layout: runtimes.<name> with path and
# args, default-runtime).
CONFIGURED_DOCKER = ('{\n    "default-runtime": "nvidia",\n    "runtimes": {\n        "nvidia": {\n            "args": [],\n'
                     '            "path": "%s"\n        }\n    }\n}\n' % NVIDIA_BINARY).encode()
REGISTRY = ('version = 2\n[%s.registry.configs."registry.example.internal".auth]\n  username = "puller"\n  password = "%s"\n'
            % (CRI, REGISTRY_PASSWORD)).encode()
# The issue's names; test_runtime_options.py has the rest of the rule.
BAD_NAMES = ['a"b', '', 'has space']
RESERVED = ['runc']
CRLF_CONTAINERD = ('version = 2\r\n[%s.containerd]\r\n  default_runtime_name = "runc"\r\n' % CRI).encode()
CRLF_DOCKER = b'{\r\n    "default-runtime": "runc"\r\n}\r\n'
CRUN_RUNTIME = ('version = 2\n[%s.containerd.runtimes.gpu]\n  runtime_type = "io.containerd.runc.v2"\n'
                '  [%s.containerd.runtimes.gpu.options]\n    BinaryName = "/usr/bin/crun"\n' % (CRI, CRI)).encode()
OVERRIDING_DROP_IN = ('version = 2\n[%s.containerd]\n  default_runtime_name = "crun"\n[%s.containerd.runtimes.crun]\n'
                      '  runtime_type = "io.containerd.runc.v2"\n[%s.containerd.runtimes.crun.options]\n  BinaryName = "/usr/bin/crun"\n'
                      % (CRI, CRI, CRI)).encode()


def _immutable(path, on):
    """chattr +i / -i; False when this machine cannot (no CAP_LINUX_IMMUTABLE, or a file system without the flag)."""
    return subprocess.run(['chattr', '+i' if on else '-i', str(path)], capture_output=True, check=False).returncode == 0


class Node(object):
    """The cases' directories; `before` holds each one's snapshot from before the playbook ran."""

    def __init__(self, top):
        self.top = top
        self.before = {}
        self.steps = []
        self.immutable = []

    def case(self, name, files):
        directory = self.top / name
        directory.mkdir()
        for relative, data in files.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        self.before[name] = snapshot(directory)
        return directory

    def step(self, name, module, args, **options):
        self.steps.append(Step(name, module, args, **options))


def _cases(node):
    fake_bin = node.top / 'bin'
    fake_bin.mkdir()
    (fake_bin / 'containerd').write_text('#!/bin/sh\necho "%s"\n' % CONTAINERD_1_6)
    (fake_bin / 'containerd').chmod(0o755)
    containerd_env = {'PATH': '%s:/usr/bin:/bin' % fake_bin}

    def containerd(name, args, env=None, **options):
        node.step(name, 'containerd_nvidia_runtime', dict(args, config_source='file'), environment=env or containerd_env, **options)

    fake_bin_2 = node.top / 'bin2'
    fake_bin_2.mkdir()
    (fake_bin_2 / 'containerd').write_text('#!/bin/sh\necho "%s"\n' % CONTAINERD_2_1)
    (fake_bin_2 / 'containerd').chmod(0o755)
    containerd_2_env = {'PATH': '%s:/usr/bin:/bin' % fake_bin_2}

    # Item 3: runtime names no runtime can use, or another runtime's; never take over a runtime of its own.
    for number, bad in enumerate(BAD_NAMES + RESERVED):
        directory = node.case('name_%d' % number, {'config.toml': CRUN_RUNTIME})
        containerd('name_%d' % number, dict(path=str(directory / 'config.toml'), runtime_name=bad))
    directory = node.case('takeover', {'config.toml': CRUN_RUNTIME})
    containerd('takeover', dict(path=str(directory / 'config.toml'), runtime_name='gpu'))
    directory = node.case('docker_name', {'daemon.json': b'{}\n'})
    node.step('docker_name', 'docker_nvidia_runtime', dict(path=str(directory / 'daemon.json'), runtime_name='runc'))
    directory = node.case('docker_takeover', {'daemon.json': b'{"runtimes": {"gpu": {"path": "/usr/bin/crun"}}}\n'})
    node.step('docker_takeover', 'docker_nvidia_runtime', dict(path=str(directory / 'daemon.json'), runtime_name='gpu'))
    directory = node.case('crio_name', {'crio.conf.d/.keep': b''})
    node.step('crio_name', 'crio_nvidia_runtime', dict(path=str(directory / 'crio.conf.d' / '99-nvidia.conf'), runtime_name='a"b'))
    directory = node.case('crio_takeover', {'crio.conf.d/99-nvidia.conf': b'[crio.runtime.runtimes.gpu]\nruntime_path = "/usr/bin/crun"\n'})
    node.step('crio_takeover', 'crio_nvidia_runtime', dict(path=str(directory / 'crio.conf.d' / '99-nvidia.conf'), runtime_name='gpu'))

    # Item 11: a relative runtime_binary, config version 4.
    directory = node.case('relative_binary', {'config.toml': b'version = 2\n'})
    containerd('relative_binary', dict(path=str(directory / 'config.toml'), runtime_binary='bin/nvidia-container-runtime'))
    directory = node.case('docker_relative_binary', {'daemon.json': b'{}\n'})
    node.step('docker_relative_binary', 'docker_nvidia_runtime', dict(path=str(directory / 'daemon.json'), runtime_binary='nvidia'))
    directory = node.case('version_4', {'config.toml': b'version = 4\n'})
    containerd('version_4', dict(path=str(directory / 'config.toml')))

    # Item 2: drop_in equal to path (or to its undo record).
    directory = node.case('drop_in_is_path', {'config.toml': b'version = 2\n'})
    containerd('drop_in_is_path', dict(path=str(directory / 'config.toml'), drop_in=str(directory / 'config.toml')))
    directory = node.case('drop_in_is_record', {'config.toml': b'version = 2\n'})
    containerd('drop_in_is_record', dict(path=str(directory / 'config.toml'),
                                         drop_in=str(directory / 'config.toml.gpuops-nvidia-runtime.json')))

    # Issue 28 item 7: a symlink to the config is the config.
    directory = node.case('drop_in_is_link', {'config.toml': b'version = 2\n'})
    (directory / 'link.toml').symlink_to(directory / 'config.toml')
    node.before['drop_in_is_link'] = snapshot(directory)
    containerd('drop_in_is_link', dict(path=str(directory / 'config.toml'), drop_in=str(directory / 'link.toml')))

    # Issue 28 item 9: containerd 1.6 has no enable_cdi; item 10: containerd 2.x ignores a version 1 config's runtimes.
    directory = node.case('cdi_1_6', {'config.toml': b'version = 2\n'})
    containerd('cdi_1_6_check', dict(path=str(directory / 'config.toml'), enable_cdi=True), check_mode=True)
    containerd('cdi_1_6', dict(path=str(directory / 'config.toml'), enable_cdi=True))
    directory = node.case('version_1_on_2', {'config.toml': b'oom_score = 0\n'})
    containerd('version_1_on_2_check', dict(path=str(directory / 'config.toml')), env=containerd_2_env, check_mode=True)
    containerd('version_1_on_2', dict(path=str(directory / 'config.toml')), env=containerd_2_env)

    # Issue 28 item 1: configured before (nvidia-ctk's daemon.json), no undo record: absent leaves it, and says so.
    directory = node.case('configured_before', {'daemon.json': CONFIGURED_DOCKER})
    node.step('configured_before', 'docker_nvidia_runtime', dict(path=str(directory / 'daemon.json'), set_as_default=True))
    node.step('configured_before_absent', 'docker_nvidia_runtime', dict(path=str(directory / 'daemon.json'), state='absent'))

    # Issue 28 item 2: containerd 2.x merges the drop-in key by key: it needs no copy of config.toml's CRI table.
    directory = node.case('registry_2', {'config.toml': REGISTRY})
    containerd('registry_2', dict(path=str(directory / 'config.toml'), drop_in=str(directory / 'conf.d' / '99-nvidia.toml')),
               env=containerd_2_env)

    # Item 1: a conf.d drop-in sets another default (and, for containerd 1.x, its own CRI table).
    imports = ('version = 2\nimports = ["%s/conf.d/*.toml"]\n' % (node.top / 'imports')).encode()
    directory = node.case('imports', {'config.toml': imports, 'conf.d/10-crun.toml': OVERRIDING_DROP_IN})
    containerd('imports_in_place', dict(path=str(directory / 'config.toml'), set_as_default=True))
    containerd('imports_in_place_check', dict(path=str(directory / 'config.toml'), set_as_default=True), check_mode=True)

    # Item 10, and item 1's way out: a drop-in in a directory that does not exist, loaded after conf.d's.
    directory = node.case('new_directory', {'config.toml': b'version = 2\n'})
    drop_in = str(directory / 'nvidia.d' / 'sub' / '99-nvidia.toml')
    containerd('new_directory_check', dict(path=str(directory / 'config.toml'), drop_in=drop_in), check_mode=True)
    containerd('new_directory', dict(path=str(directory / 'config.toml'), drop_in=drop_in))
    containerd('new_directory_again', dict(path=str(directory / 'config.toml'), drop_in=drop_in))
    containerd('new_directory_absent', dict(path=str(directory / 'config.toml'), drop_in=drop_in, state='absent'))

    # Item 11: CRLF files keep CRLF line ends, and absent gives them back byte for byte.
    directory = node.case('crlf', {'config.toml': CRLF_CONTAINERD, 'daemon.json': CRLF_DOCKER})
    containerd('crlf', dict(path=str(directory / 'config.toml'), set_as_default=True), diff=True)
    node.step('crlf_docker', 'docker_nvidia_runtime', dict(path=str(directory / 'daemon.json'), set_as_default=True), diff=True)
    containerd('crlf_absent', dict(path=str(directory / 'config.toml'), state='absent'))
    node.step('crlf_docker_absent', 'docker_nvidia_runtime', dict(path=str(directory / 'daemon.json'), state='absent'))

    # Item 5: check mode fails where the run fails (a missing directory; an immutable file).
    missing = node.top / 'missing_directory'
    node.before['missing_directory'] = {}
    containerd('missing_directory_check', dict(path=str(missing / 'config.toml')), check_mode=True)
    containerd('missing_directory', dict(path=str(missing / 'config.toml')))
    node.step('docker_missing_directory_check', 'docker_nvidia_runtime', dict(path=str(missing / 'daemon.json')), check_mode=True)

    # Item 11: a kubelet on podman's socket, with containerd installed (systemctl prints the sid lab node's units).
    directory = node.case('podman', {'config.yaml': KUBELET_CONFIG.replace('/run/containerd/containerd.sock', '/run/podman/podman.sock').encode()})
    for name, out in (('systemctl', SYSTEMCTL_SID), ('dpkg-query', DPKG_INSTALLED)):
        (fake_bin / name).write_text('#!/bin/sh\ncat <<"EOF"\n%sEOF\n' % out)
        (fake_bin / name).chmod(0o755)
    node.step('podman', 'container_runtime_info', dict(kubelet_files=[str(directory / 'config.yaml')], packages=['containerd']),
              environment=containerd_env)

    # Items 5 and 9: an immutable config (its directory writable) fails before the undo record is written, check
    # mode too; for CRI-O, whose undo record is outside the drop-in directory, too.
    for name, module, relative, data in (('immutable', 'containerd_nvidia_runtime', 'config.toml', b'version = 2\n'),
                                         ('docker_immutable', 'docker_nvidia_runtime', 'daemon.json', b'{}\n'),
                                         ('crio_immutable', 'crio_nvidia_runtime', 'crio.conf.d/99-nvidia.conf', b'[crio]\n')):
        directory = node.case(name, {relative: data})
        if _immutable(directory / relative, True):
            node.immutable.append(directory / relative)
        args = dict(path=str(directory / relative))
        if module == 'containerd_nvidia_runtime':
            containerd(name + '_check', args, check_mode=True)
            containerd(name, args)
        else:
            node.step(name + '_check', module, args, check_mode=True)
            node.step(name, module, args)


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    node = Node(tmp_path_factory.mktemp('runtime-node'))
    _cases(node)
    try:
        node.results, node.output = run_steps(node.top, node.steps)
    finally:
        for path in node.immutable:
            _immutable(path, False)
    return node


def unchanged(node, name):
    assert snapshot(node.top / name) == node.before[name] if node.before[name] else not (node.top / name).exists()


@pytest.mark.parametrize('number, name', list(enumerate(BAD_NAMES)))
def test_invalid_runtime_names_are_refused(node, number, name):
    msg = outcome(node.results['name_%d' % number], failed=True)
    assert msg.startswith('runtime_name: %r is not a valid runtime name: a RuntimeClass handler must be a DNS-1123 label' % name)
    unchanged(node, 'name_%d' % number)


@pytest.mark.parametrize('number, name', list(enumerate(RESERVED, len(BAD_NAMES))))
def test_the_runtimes_own_names_are_refused(node, number, name):
    assert 'runtime_name: %s is the name of a runtime the container runtime ships' % name in outcome(node.results['name_%d' % number], True)
    unchanged(node, 'name_%d' % number)


@pytest.mark.parametrize('name, key', [
    ('takeover', '%s.containerd.runtimes.gpu' % CRI),
    ('docker_takeover', 'runtimes.gpu'),
    ('crio_takeover', 'crio.runtime.runtimes.gpu'),
])
def test_a_runtime_of_its_own_is_not_taken_over(node, name, key):
    msg = outcome(node.results[name], failed=True)
    assert '%s is a runtime of its own (it runs /usr/bin/crun), not the NVIDIA runtime, and this module did not register it' % key in msg
    unchanged(node, name)


@pytest.mark.parametrize('name', ['docker_name', 'crio_name'])
def test_docker_and_crio_check_names_too(node, name):
    assert outcome(node.results[name], failed=True).startswith('runtime_name: ')
    unchanged(node, name)


@pytest.mark.parametrize('name, message', [
    ('relative_binary', 'runtime_binary: bin/nvidia-container-runtime is not an absolute path'),
    ('docker_relative_binary', 'runtime_binary: nvidia is not an absolute path'),
    ('version_4', 'config version 4 is unknown: containerd reads versions 1, 2 (containerd 1.x) and 3 (containerd 2.x)'),
    ('drop_in_is_path', 'config.toml is the config itself; a drop-in is a file of its own'),
    ('drop_in_is_record', 'is the undo record of the config itself'),
    ('drop_in_is_link', 'link.toml is the config itself; a drop-in is a file of its own'),
])
def test_options_and_files_that_cannot_work_are_refused(node, name, message):
    assert message in outcome(node.results[name], failed=True)
    unchanged(node, name)


@pytest.mark.parametrize('step', ['imports_in_place', 'imports_in_place_check'])
def test_a_drop_in_that_overrides_the_default_is_named(node, step):
    msg = outcome(node.results[step], failed=True)
    drop_in = node.top / 'imports' / 'conf.d' / '10-crun.toml'
    # The stand-in says containerd 1.6: its CRI table replaces config.toml's.
    assert msg.startswith('the NVIDIA runtime would not take effect: %s has a [%s] table and is loaded after %s: containerd 1.x puts '
                          'it in place of the earlier ones whole, so runtime nvidia would not exist' % (
                              drop_in, CRI, node.top / 'imports' / 'config.toml')), msg
    assert 'Nothing was written' in msg
    unchanged(node, 'imports')


@pytest.mark.parametrize('step', ['cdi_1_6_check', 'cdi_1_6'])
def test_enable_cdi_is_refused_where_containerd_ignores_it(node, step):
    """Issue 28 item 9: containerd 1.6 would start with CDI off; the run says so, in check mode too, and writes nothing."""
    msg = outcome(node.results[step], failed=True)
    assert msg.startswith('enable_cdi: containerd 1.6 ignores enable_cdi (CDI came in containerd 1.7)'), msg
    unchanged(node, 'cdi_1_6')


@pytest.mark.parametrize('step', ['version_1_on_2_check', 'version_1_on_2'])
def test_a_version_1_config_is_refused_on_containerd_2(node, step):
    """Issue 28 item 10: check mode predicts the failure, the run writes nothing, and the message says why."""
    msg = outcome(node.results[step], failed=True)
    assert 'is a version 1 config (it has no version key): containerd 2.1 ignores its plugins.cri tables' in msg, msg
    assert 'Nothing was written' in msg
    unchanged(node, 'version_1_on_2')


def test_uninstall_leaves_a_runtime_configured_before_and_warns(node):
    """Issue 28 item 1: no undo record, no removal; ansible-playbook shows why."""
    present, absent = node.results['configured_before'], node.results['configured_before_absent']
    assert outcome(present, failed=False) == '' and present['changed'] is False
    assert outcome(absent, failed=False) == '' and absent['changed'] is False and absent['runtimes'] == []
    path = node.top / 'configured_before' / 'daemon.json'
    assert absent['notes'] == ['%s: there is no undo record (%s.gpuops-nvidia-runtime.json), so state=absent leaves runtime nvidia, '
                               'default runtime nvidia as it is: this module did not configure it, or its record was removed. '
                               'Remove it yourself if it should go' % (path, path)]
    assert '[WARNING]: %s: there is no undo record' % path in node.output
    unchanged(node, 'configured_before')


def test_a_drop_in_for_containerd_2_copies_no_registry_credentials(node):
    """Issue 28 item 2: only the runtime tables go into the drop-in where containerd merges key by key."""
    outcome(node.results['registry_2'], failed=False)
    drop_in = (node.top / 'registry_2' / 'conf.d' / '99-nvidia.toml').read_text()
    assert 'runtimes.nvidia' in drop_in and REGISTRY_PASSWORD not in drop_in and 'registry' not in drop_in


def test_a_drop_in_in_a_new_directory(node):
    directory = node.top / 'new_directory'
    created = [str(directory / 'nvidia.d'), str(directory / 'nvidia.d' / 'sub')]
    check = node.results['new_directory_check']
    outcome(check, failed=False)
    assert check['actions'][:2] == ['create directory %s' % path for path in created]
    done = node.results['new_directory']
    assert outcome(done, failed=False) == '' and done['changed'] is True and done['actions'] == check['actions']
    again = node.results['new_directory_again']
    assert outcome(again, failed=False) == '' and again['changed'] is False
    gone = node.results['new_directory_absent']
    assert outcome(gone, failed=False) == '' and gone['actions'][-2:] == ['remove directory %s' % path for path in reversed(created)]
    # Back to the config alone: the directories the drop-in got are gone again.
    unchanged(node, 'new_directory')


@pytest.mark.parametrize('name', ['crlf', 'crlf_docker'])
def test_crlf_files_keep_their_line_ends(node, name):
    for step in (name, name + '_absent'):
        assert outcome(node.results[step], failed=False) == '' and node.results[step]['changed'] is True
    written = node.results[name]['diff'][0]['after']
    assert 'nvidia' in written and written.count('\n') == written.count('\r\n')
    unchanged(node, 'crlf')


@pytest.mark.parametrize('step, path', [
    ('missing_directory_check', 'config.toml'),
    ('missing_directory', 'config.toml'),
    ('docker_missing_directory_check', 'daemon.json'),
])
def test_check_mode_fails_where_the_run_fails_missing_directory(node, step, path):
    msg = outcome(node.results[step], failed=True)
    assert 'directory %s does not exist' % (node.top / 'missing_directory') in msg and path in msg
    unchanged(node, 'missing_directory')


@pytest.mark.parametrize('name', ['immutable', 'docker_immutable', 'crio_immutable'])
def test_an_immutable_file_fails_in_check_mode_too_and_leaves_no_undo_record(node, name):
    if not any(str(path).startswith(str(node.top / name) + '/') for path in node.immutable):
        pytest.skip('chattr +i is not possible here (needs CAP_LINUX_IMMUTABLE and a file system with the flag)')
    for step in (name + '_check', name):
        assert 'the file is read-only' in outcome(node.results[step], failed=True)
    unchanged(node, name)


def test_a_kubelet_on_another_runtimes_socket_is_not_given_the_installed_containerd(node):
    # The kubelet config is the lab's with its endpoint changed to podman's socket (constructed).
    found = node.results['podman']
    outcome(found, failed=False)
    assert (found['runtime'], found['kubelet_socket']) == (None, 'podman.sock')
    # The fake systemctl is asked only where systemd runs the machine running the tests (else the services are unknown).
    assert found['services']['containerd']['active_state'] == ('active' if found['systemd'] else None)
