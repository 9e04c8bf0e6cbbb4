# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Which container runtime a node's kubelet uses, and what the container toolkit stage needs to know
about the node, read in one module run: the pure parsers first, then gather() (files and read-only
commands only).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import files
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common import systemd as init
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.commands import run
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import distributions

# Socket name in the kubelet's --container-runtime-endpoint / containerRuntimeEndpoint -> runtime.
SOCKETS = {
    'containerd.sock': 'containerd',
    'crio.sock': 'crio',
    'cri-dockerd.sock': 'docker',
    'dockershim.sock': 'docker',
}
# Runtime -> systemd unit, in the order tried when no kubelet config names one: containerd first,
# since Docker's packages pull containerd in too.
UNITS = {'containerd': 'containerd.service', 'crio': 'crio.service', 'docker': 'docker.service'}
# Runtime -> its default socket and its daemon (the program name /proc/PID/comm shows): on a node that systemd does
# not run these show that the runtime is there.
RUNTIME_SOCKETS = {'containerd': '/run/containerd/containerd.sock', 'crio': '/var/run/crio/crio.sock', 'docker': '/var/run/docker.sock'}
DAEMONS = {'containerd': 'containerd', 'crio': 'crio', 'docker': 'dockerd'}
PROC_ROOT = '/proc'
KUBELET_FILES = ['/var/lib/kubelet/config.yaml', '/var/lib/kubelet/kubeadm-flags.env', '/etc/default/kubelet']
KUBELET_FILE_LIMIT = 1024 * 1024
# Where the distributions' files are looked for: the node's root (tests lay a node out under a directory of theirs).
FILE_ROOT = ''
_SOCKET = re.compile(r'[a-z-]+\.sock\b')


def kubelet_socket(texts):
    """The first runtime socket name the kubelet's configuration texts mention, or None."""
    for text in texts:
        for match in _SOCKET.finditer(text or ''):
            return match.group(0)
    return None


def systemd_units(text):
    """{unit: {load_state, active_state}} of `systemctl show --property=Id,LoadState,ActiveState UNIT...`."""
    units = {}
    for block in re.split(r'\n\s*\n', text or ''):
        props = dict(line.split('=', 1) for line in block.splitlines() if '=' in line)
        if props.get('Id'):
            units[props['Id']] = dict(load_state=props.get('LoadState'), active_state=props.get('ActiveState'))
    return units


def installed(service):
    """A unit systemd can load (masked included), as service_facts would list it."""
    return (service or {}).get('load_state') not in (None, '', 'not-found')


def _mount_namespace(proc_root, pid):
    """The mount namespace of process `pid` ('self': this one), as /proc names it (mnt:[4026531841]); None if unreadable."""
    try:
        return os.readlink(os.path.join(proc_root, pid, 'ns', 'mnt'))
    except OSError:
        return None


def daemon_processes(proc_root):
    """{runtime: [pid, ...]} of the runtimes' daemons running on the node, told by /proc/PID/comm.

    Only daemons in this process's mount namespace count: a containerd inside a container on the node (a kind node, a
    lab node, a CI job's) shows in the node's /proc too, but it serves the container's files and sockets, not the node's.
    """
    names = dict((daemon, runtime) for runtime, daemon in DAEMONS.items())
    found = dict((runtime, []) for runtime in DAEMONS)
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return found
    own = _mount_namespace(proc_root, 'self')
    for entry in entries:
        if not entry.isdigit():
            continue
        if own is not None and _mount_namespace(proc_root, entry) not in (own, None):
            continue
        try:
            with open(os.path.join(proc_root, entry, 'comm'), 'rb') as handle:
                name = to_text(handle.read(), errors='surrogate_or_replace').strip()
        except (IOError, OSError):
            continue  # a process that ended meanwhile
        if name in names:
            found[names[name]].append(int(entry))
    return dict((runtime, sorted(pids)) for runtime, pids in found.items())


def process_started(proc_root, pid):
    """When process `pid` started, in seconds since the epoch (/proc/stat btime plus /proc/PID/stat starttime, field 22,
    in clock ticks since boot); None when either cannot be read."""
    try:
        with open(os.path.join(proc_root, 'stat'), 'rb') as handle:
            boot = next(int(line.split()[1]) for line in handle.read().decode('ascii', 'replace').splitlines() if line.startswith('btime '))
        with open(os.path.join(proc_root, str(pid), 'stat'), 'rb') as handle:
            # The program name (field 2) is in parentheses and may hold spaces: count the fields after its closing one.
            fields = handle.read().decode('ascii', 'replace').rsplit(')', 1)[1].split()
        return boot + int(fields[19]) / float(os.sysconf('SC_CLK_TCK'))
    except (IOError, OSError, StopIteration, IndexError, ValueError):
        return None


def pick_runtime(socket, services, present=()):
    """The runtime the kubelet names, else (no kubelet configuration yet) the first installed runtime service or, where
    systemd does not run the node, the first of `present` (runtimes whose daemon runs, or whose socket or daemon
    program the node has), else None.

    A socket of another runtime (podman.sock) is None too: the installed containerd is then not the kubelet's runtime.
    """
    if socket is not None:
        return SOCKETS.get(socket)
    for runtime in UNITS:
        if installed(services.get(runtime)) or runtime in present:
            return runtime
    return None


def dpkg_versions(text):
    """{package: version} of the installed ones in `dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`."""
    versions = {}
    for line in (text or '').splitlines():
        parts = line.split('\t')
        # 'ii ' is installed; 'rc ' (removed, config files kept) and the like are not.
        if len(parts) == 3 and parts[2].startswith('ii'):
            versions[parts[0]] = parts[1]
    return versions


def rpm_versions(text):
    """{package: version} of `rpm -q --queryformat '%{NAME}\\t%{VERSION}-%{RELEASE}\\n'` (not-installed lines have no tab)."""
    return dict(line.split('\t', 1) for line in (text or '').splitlines() if '\t' in line)


def package_versions(module, packages):
    """{package: version or None} from dpkg, else rpm; every package None where neither is installed."""
    versions = {}
    if packages:
        rc, out, err = run(module, ['dpkg-query', '-W', '-f', '${Package}\t${Version}\t${db:Status-Abbrev}\n'] + packages)
        if rc != 127:
            versions = dpkg_versions(out)
        else:
            rc, out, err = run(module, ['rpm', '-q', '--queryformat', '%{NAME}\t%{VERSION}-%{RELEASE}\n'] + packages)
            versions = rpm_versions(out) if rc != 127 else {}
    return dict((name, versions.get(name)) for name in packages)


def gather(module):
    """The module's result (less `changed`)."""
    params = module.params
    texts = []
    for path in params['kubelet_files']:
        # Each file is optional, and one the kubelet cannot use either is not this module's to judge.
        try:
            texts.append(to_text(files.read_bytes(path, limit=KUBELET_FILE_LIMIT) or b'', errors='surrogate_or_replace'))
        except files.FileError as exc:
            module.warn('%s; it is skipped' % exc)
    socket = kubelet_socket(texts)

    # A node that systemd does not run (a container, a CI runner, a minimal image; systemctl may be installed all the
    # same): the services' state is unknown (null), and the runtime is told by its daemon or its socket instead.
    systemd = init.booted(module)
    units = {}
    if systemd:
        rc, out, err = run(module, ['systemctl', 'show', '--property=Id,LoadState,ActiveState'] + list(UNITS.values())
                           + distributions.units())
        if rc != 0:
            module.fail_json(msg='systemctl show failed (rc=%d): %s' % (rc, (err or out).strip()))
        units = systemd_units(out)
    services = dict((runtime, dict(unit=unit, **units.get(unit, dict(load_state=None, active_state=None))))
                    for runtime, unit in UNITS.items())
    processes = daemon_processes(PROC_ROOT)
    present = () if systemd else [runtime for runtime in UNITS if processes[runtime] or os.path.exists(RUNTIME_SOCKETS[runtime])
                                  or module.get_bin_path(DAEMONS[runtime])]

    distribution = distribution_facts(params['distribution'], units, systemd)
    # A distribution's own containerd is the kubelet's runtime (its kubelet's settings are not in the kubelet files read
    # here), unless those name another runtime's socket.
    runtime = 'containerd' if distribution and socket in (None, 'containerd.sock') else pick_runtime(socket, services, present)
    binary = params['runtime_binary']
    return dict(
        runtime=runtime,
        distribution=distribution,
        kubelet_socket=socket,
        systemd=systemd,
        services=services,
        processes=processes,
        runtime_binary=binary,
        runtime_binary_exists=os.path.exists(binary) if binary else None,
        packages=package_versions(module, params['packages']),
        ready_file_content=ready_file_content(params['ready_file']),
    )


def distribution_facts(choice, units, systemd):
    """distributions.facts() of the distribution `choice` names (auto: the one found), or None (none found, or `none`)."""
    if choice == 'none':
        return None
    name = choice if choice != 'auto' else distributions.pick(units, lambda path: os.path.exists(FILE_ROOT + path), systemd)
    if name is None:
        return None
    data = files.read_bytes(FILE_ROOT + distributions.LAYOUTS[name]['config'], limit=KUBELET_FILE_LIMIT)
    return distributions.facts(name, units, None if data is None else to_text(data, errors='surrogate_or_replace'), systemd)


# toolkit-ready is three short lines; anything larger is not the stage's marker.
READY_FILE_LIMIT = 4096


def ready_file_content(path):
    """The marker file's text, or None when no path is given or the file does not exist (files.FileError otherwise)."""
    data = files.read_bytes(path, limit=READY_FILE_LIMIT) if path else None
    return None if data is None else to_text(data, errors='surrogate_or_replace')
