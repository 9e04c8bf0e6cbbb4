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
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.commands import NOT_INSTALLED, run

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
# Runtime -> its default socket and its daemon: on a node without systemd these show that the runtime is there.
RUNTIME_SOCKETS = {'containerd': '/run/containerd/containerd.sock', 'crio': '/var/run/crio/crio.sock', 'docker': '/var/run/docker.sock'}
DAEMONS = {'containerd': 'containerd', 'crio': 'crio', 'docker': 'dockerd'}
KUBELET_FILES = ['/var/lib/kubelet/config.yaml', '/var/lib/kubelet/kubeadm-flags.env', '/etc/default/kubelet']
KUBELET_FILE_LIMIT = 1024 * 1024
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


def pick_runtime(socket, services, present=()):
    """The runtime the kubelet names, else (no kubelet configuration yet) the first installed runtime service or, where
    no systemd can be asked, the first of `present` (runtimes whose socket or daemon the node has), else None.

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

    rc, out, err = run(module, ['systemctl', 'show', '--property=Id,LoadState,ActiveState'] + list(UNITS.values()))
    # A node without systemd (a container host, a minimal image): the services' state is unknown (null), and the
    # runtime is told by its socket or its daemon instead.
    systemd = rc != NOT_INSTALLED
    if systemd and rc != 0:
        module.fail_json(msg='systemctl show failed (rc=%d): %s' % (rc, (err or out).strip()))
    units = systemd_units(out) if systemd else {}
    services = dict((runtime, dict(unit=unit, **units.get(unit, dict(load_state=None, active_state=None))))
                    for runtime, unit in UNITS.items())
    present = () if systemd else [runtime for runtime in UNITS
                                  if os.path.exists(RUNTIME_SOCKETS[runtime]) or module.get_bin_path(DAEMONS[runtime])]

    binary = params['runtime_binary']
    return dict(
        runtime=pick_runtime(socket, services, present),
        kubelet_socket=socket,
        systemd=systemd,
        services=services,
        runtime_binary=binary,
        runtime_binary_exists=os.path.exists(binary) if binary else None,
        packages=package_versions(module, params['packages']),
        ready_file_content=ready_file_content(params['ready_file']),
    )


# toolkit-ready is three short lines; anything larger is not the stage's marker.
READY_FILE_LIMIT = 4096


def ready_file_content(path):
    """The marker file's text, or None when no path is given or the file does not exist (files.FileError otherwise)."""
    data = files.read_bytes(path, limit=READY_FILE_LIMIT) if path else None
    return None if data is None else to_text(data, errors='surrogate_or_replace')
