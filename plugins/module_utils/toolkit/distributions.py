# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Kubernetes distributions that run a containerd of their own, each as it lays out and keeps that containerd's
configuration (pure: the facts and the choices made from them; container_runtime_info reads the node).

What a distribution keeps, and so where the NVIDIA runtime goes so that restarts, reboots and upgrades keep it:

- k3s and RKE2 write their containerd's config.toml at every start, from their base template (or from a user's
  config.toml.tmpl / config-v3.toml.tmpl): an edit of config.toml is gone at the next start (rancher/rke2#3385,
  rancher/rke2#8752). Releases since k3s-io/k3s#13680 (merged 2026-02-25; RKE2 builds on k3s's agent) give the
  generated config an `imports` of a versioned drop-in directory (config-v3.toml.d/*.toml for a version 3 config,
  config.toml.d/*.toml for version 2): the runtimes and the default go into a drop-in there, which no start rewrites.
  A template is not written: a copy of a rendered config pins one release's values (NVIDIA/gpu-operator#992: the
  node breaks after a reboot), and one that extends the base with `{{ template "base" . }}` and adds a runtime the
  distribution finds itself (it registers nvidia-container-runtime from /usr/local/nvidia/toolkit or /usr/bin at
  start) names that table twice, which containerd refuses (k3s-io/docs#566, with runc).
- k0s (1.36 on, containerd 2) writes /etc/k0s/containerd.toml while it starts `# k0s_managed=true` and imports
  /etc/k0s/containerd.d/*.toml; it reloads containerd when that directory changes.
- MicroK8s renders $SNAP_DATA/args/containerd.toml from args/containerd-template.toml at every start of its
  containerd: the template is the file to edit (in place, with its undo record).

SOURCE: rancher/rke2 bundle/lib/systemd/system/rke2-{server,agent}.service at v1.36.3+rke2r1; rancher/rke2-docs
docs/advanced.md ("Configuring containerd", commit 9477b7b), docs/reference/linux_agent_config.md (default-runtime,
data-dir), docs/install/configuration.md (config.yaml.d), docs/add-ons/gpu_operators.md (socket
/run/k3s/containerd/containerd.sock, runtimes found in PATH); k3s-io/docs docs/advanced/advanced.md ("Configuring
containerd", "Base template", "NVIDIA Container Runtime Support"); k3s-io/k3s#13680 (the drop-in imports);
k3s-io/k3s pkg/agent/containerd/runtimes.go (findNvidiaContainerRuntimes: usr/local/nvidia/toolkit, usr/bin);
k0sproject/k0s docs/runtime.md, pkg/component/worker/containerd/{component.go,configurer.go,component_other.go,
utils_other.go} and pkg/install/service.go at v1.36.3+k0s.2; canonical/microk8s
microk8s-resources/default-args/{containerd-template.toml,containerd}, microk8s-resources/wrappers/
run-containerd-with-args and snap/snapcraft.yaml (app daemon-containerd) at v1.36 (the template is the same at v1.33,
whose containerd is 1.7.27; v1.36's is 2.2.3).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

NAMES = ('k3s', 'rke2', 'k0s', 'microk8s')
# The drop-in file written in a distribution's drop-in directory (k0s's docs name nvidia.toml for the GPU Operator).
DROP_IN_NAME = '99-nvidia.toml'


def _rancher(name, units, binary):
    """k3s and RKE2 lay out their containerd alike, under /var/lib/rancher/<name>/agent."""
    directory = '/var/lib/rancher/%s/agent/etc/containerd' % name
    return dict(
        name=name, units=units, config=directory + '/config.toml', template=None, containerd=binary,
        socket='/run/k3s/containerd/containerd.sock', keeps='generated',
        # config version -> the directory the generated config imports (k3s-io/k3s#13680).
        drop_in_dirs={2: directory + '/config.toml.d', 3: directory + '/config-v3.toml.d'},
        templates=[directory + '/config.toml.tmpl', directory + '/config-v3.toml.tmpl'],
        settings_dir='/etc/rancher/%s/config.yaml.d' % name,
    )


LAYOUTS = {
    'k3s': _rancher('k3s', ['k3s.service', 'k3s-agent.service'], '/var/lib/rancher/k3s/data/current/bin/containerd'),
    'rke2': _rancher('rke2', ['rke2-server.service', 'rke2-agent.service'], '/var/lib/rancher/rke2/bin/containerd'),
    'k0s': dict(
        name='k0s', units=['k0sworker.service', 'k0scontroller.service'], config='/etc/k0s/containerd.toml', template=None,
        containerd='/var/lib/k0s/bin/containerd', socket='/run/k0s/containerd.sock', keeps='generated',
        drop_in_dirs={3: '/etc/k0s/containerd.d'}, templates=[], settings_dir=None,
    ),
    'microk8s': dict(
        name='microk8s', units=['snap.microk8s.daemon-containerd.service'], config='/var/snap/microk8s/current/args/containerd.toml',
        template='/var/snap/microk8s/current/args/containerd-template.toml', containerd='/snap/microk8s/current/bin/containerd',
        socket='/var/snap/microk8s/common/run/containerd.sock', keeps='template', drop_in_dirs={}, templates=[], settings_dir=None,
    ),
}
# k0s marks the containerd.toml it manages (and rewrites) with this first line; without it, it imports no drop-in.
K0S_MANAGED = '# k0s_managed=true'
_VERSION = re.compile(r'^version\s*=\s*(\d+)\s*$', re.M)


def units():
    """Every distribution's systemd units, for one `systemctl show`."""
    return [unit for name in NAMES for unit in LAYOUTS[name]['units']]


def pick(services, exists, systemd):
    """The distribution that runs the node's containerd, or None.

    With systemd: the first distribution with an installed unit (`services`: unit -> {load_state, active_state}),
    preferring one whose unit is active. Without: the first whose generated config or template exists (`exists(path)`).
    """
    if systemd:
        installed = [name for name in NAMES if any(_installed(services.get(unit)) for unit in LAYOUTS[name]['units'])]
        active = [name for name in installed
                  if any((services.get(unit) or {}).get('active_state') == 'active' for unit in LAYOUTS[name]['units'])]
        return (active or installed or [None])[0]
    for name in NAMES:
        if exists(LAYOUTS[name]['template'] or LAYOUTS[name]['config']):
            return name
    return None


def _installed(service):
    return (service or {}).get('load_state') not in (None, '', 'not-found')


def config_version(text):
    """The `version` of a generated containerd config (a TOML line the distributions write as `version = N`), else 1."""
    match = _VERSION.search(text or '')
    return int(match.group(1)) if match else 1


def facts(name, services, config_text, systemd):
    """What the container toolkit stage needs to know of distribution `name` on this node.

    `config_text` is the generated config (None: not there yet: the distribution has not started). `path` is the file
    the containerd module is pointed at (the generated config, or MicroK8s's template), `drop_in` the file it writes
    (None: `path` in place), `generated` whether `path` is rewritten at every start (never edited then), `verify_config`
    the file the distribution's containerd is started with, `unit` the installed unit (the active one first; None
    without systemd) and `active_state` its state.
    """
    layout = LAYOUTS[name]
    unit = None
    if systemd:
        found = [unit for unit in layout['units'] if _installed(services.get(unit))]
        found.sort(key=lambda unit: (services[unit].get('active_state') != 'active'))
        unit = found[0] if found else None
    version = config_version(config_text)
    directory = layout['drop_in_dirs'].get(version)
    if layout['keeps'] == 'template':
        path, drop_in = layout['template'], None
    else:
        path = layout['config']
        drop_in = os.path.join(directory, DROP_IN_NAME) if directory else None
    return dict(
        name=name, unit=unit, active_state=services[unit].get('active_state') if unit else None, units=layout['units'],
        path=path, drop_in=drop_in, generated=layout['keeps'] == 'generated',
        verify_config=layout['config'], config_present=config_text is not None,
        config_version=version if config_text is not None else None,
        containerd=layout['containerd'], socket=layout['socket'],
    )
