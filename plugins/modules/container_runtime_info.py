#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: container_runtime_info
short_description: Find the container runtime a node's kubelet uses, and what the container toolkit stage needs to know
description:
  - Reads, in one run, what the container toolkit stage needs before it configures a runtime.
  - "The runtime: the one whose socket (C(containerd.sock), C(crio.sock), C(cri-dockerd.sock), C(dockershim.sock)) the
    kubelet's configuration files name (C(--container-runtime-endpoint) or C(containerRuntimeEndpoint)); on a node
    with no kubelet configuration yet, the first installed runtime service of C(containerd.service),
    C(crio.service), C(docker.service), in that order (Docker's packages pull containerd in too). A kubelet on the
    socket of another runtime (C(podman.sock)) gives none: the runtime installed beside it is not the kubelet's."
  - "On a node that systemd does not run (no C(systemctl), or systemd is not PID 1, as in a container or on a CI runner:
    C(/run/systemd/system) does not exist), C(systemctl) is not asked; the first runtime, in the same order, whose daemon
    runs (C(containerd), C(crio), C(dockerd) in C(/proc/PID/comm)), whose default socket exists
    (C(/run/containerd/containerd.sock), C(/var/run/crio/crio.sock), C(/var/run/docker.sock)) or whose daemon program is
    installed stands for the installed service; the services' state is then null (unknown)."
  - "A Kubernetes distribution that runs a containerd of its own (k3s, RKE2, k0s, MicroK8s; O(distribution)): its
    containerd is the kubelet's runtime (unless the kubelet's files name another runtime's socket), and RV(distribution)
    says where that containerd's configuration is kept and how: the file it is started with, the drop-in it imports or
    the template it is rendered from, its socket, its program and the unit that runs it. A distribution is found by its
    systemd units (C(k3s), C(k3s-agent), C(rke2-server), C(rke2-agent), C(k0sworker), C(k0scontroller),
    C(snap.microk8s.daemon-containerd)), or where systemd does not run the node by its configuration files."
  - The systemd state of those three services, the running processes of their daemons, whether O(runtime_binary)
    exists, and the installed version of each of O(packages) (C(dpkg-query), else C(rpm)).
  - It only reads files and C(/proc), and runs C(systemctl show), C(dpkg-query) or C(rpm -q).
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode changes nothing about what it does.
  diff_mode:
    support: N/A
    details: The module only reads.
  platform:
    platforms: posix
options:
  kubelet_files:
    description:
      - The kubelet's configuration files to look for the runtime socket in, in this order. Missing ones are skipped,
        as are ones that cannot be read (with a warning).
    type: list
    elements: path
    default: [/var/lib/kubelet/config.yaml, /var/lib/kubelet/kubeadm-flags.env, /etc/default/kubelet]
  runtime_binary:
    description:
      - The NVIDIA container runtime binary whose presence is returned in RV(runtime_binary_exists).
    type: path
  packages:
    description:
      - Packages whose installed version is returned in RV(packages).
    type: list
    elements: str
    default: []
  distribution:
    description:
      - The Kubernetes distribution whose containerd the node runs; V(auto) finds it, V(none) looks for none.
    type: str
    choices: [auto, none, k3s, rke2, k0s, microk8s]
    default: auto
  ready_file:
    description:
      - A marker file whose content is returned in RV(ready_file_content) (the toolkit stage's C(toolkit-ready)), so that
        a converged node needs no round trip of its own to find it as it should be.
    type: path
notes:
  - systemd (C(systemctl)) is asked only where it runs the node; elsewhere the module reports RV(systemd) false, not a failure.
'''

EXAMPLES = r'''
- name: Find the node's container runtime and whether the toolkit is installed
  gpuops.gpu_operator.container_runtime_info:
    runtime_binary: /usr/bin/nvidia-container-runtime
    packages: [nvidia-container-toolkit, python3-tomlkit, containerd]
  register: runtime_info

- name: Show it
  ansible.builtin.debug:
    msg: "{{ runtime_info.runtime }} ({{ runtime_info.services[runtime_info.runtime].active_state }})"
  when: runtime_info.runtime is not none
'''

RETURN = r'''
runtime:
  description: The kubelet's runtime (C(containerd), C(crio) or C(docker)); null when none was found or the kubelet
    names another runtime's socket (RV(kubelet_socket)).
  returned: always
  type: str
  sample: containerd
distribution:
  description:
    - The distribution whose containerd runs the node (O(distribution)), or null.
    - C(path) is the file the runtime's configuration is written to or through (the generated config, or MicroK8s's
      template), C(drop_in) the file of a drop-in directory the generated config imports (null where the release has
      none, or for a template), C(generated) whether C(path) is rewritten by the distribution at each start (then it is
      never edited), C(verify_config) the file the distribution's containerd is started with, C(config_present) whether
      it exists (the distribution has started once), C(config_version) its config version, C(containerd) the
      distribution's containerd program, C(socket) its socket, C(unit) the unit that runs it (the active one first;
      null without systemd), C(active_state) that unit's state and C(units) every unit it may run as.
  returned: always
  type: dict
  sample:
    name: k3s
    unit: k3s.service
    active_state: active
    units: [k3s.service, k3s-agent.service]
    path: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
    drop_in: /var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/99-nvidia.toml
    generated: true
    verify_config: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
    config_present: true
    config_version: 3
    containerd: /var/lib/rancher/k3s/data/current/bin/containerd
    socket: /run/k3s/containerd/containerd.sock
kubelet_socket:
  description: The runtime socket name the kubelet's configuration files name first, or null.
  returned: always
  type: str
  sample: containerd.sock
systemd:
  description: Whether systemd runs the node (C(systemctl) is installed and systemd is PID 1); where it is false, every
    service's state in RV(services) is null and no service can be started or restarted through systemd.
  returned: always
  type: bool
  sample: true
services:
  description:
    - For each runtime, its systemd unit and that unit's C(LoadState) and C(ActiveState).
    - C(load_state) is C(not-found) for a service that is not installed; both are null where the node has no systemd
      (RV(systemd)).
  returned: always
  type: dict
  sample:
    containerd: {unit: containerd.service, load_state: loaded, active_state: active}
    crio: {unit: crio.service, load_state: not-found, active_state: inactive}
    docker: {unit: docker.service, load_state: not-found, active_state: inactive}
processes:
  description: For each runtime, the process IDs of its running daemon (C(containerd), C(crio), C(dockerd)), as
    C(/proc/PID/comm) names them; empty where none runs.
  returned: always
  type: dict
  sample: {containerd: [6], crio: [], docker: []}
runtime_binary:
  description: O(runtime_binary), or null.
  returned: always
  type: str
  sample: /usr/bin/nvidia-container-runtime
runtime_binary_exists:
  description: Whether O(runtime_binary) exists; null when it was not given.
  returned: always
  type: bool
  sample: true
packages:
  description: The installed version of each of O(packages); null for one that is not installed.
  returned: always
  type: dict
  sample: {containerd: 1.6.20~ds1-1+b1, python3-tomlkit: 0.11.7-1, nvidia-container-toolkit: null}
ready_file_content:
  description: The text of O(ready_file); null when it was not given, or the file does not exist.
  returned: always
  type: str
  sample: "runtime=containerd\nruntime_class=nvidia\nbinary=/usr/bin/nvidia-container-runtime\n"
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_detection


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kubelet_files=dict(type='list', elements='path', default=runtime_detection.KUBELET_FILES),
            runtime_binary=dict(type='path'),
            packages=dict(type='list', elements='str', default=[]),
            ready_file=dict(type='path'),
            distribution=dict(type='str', default='auto', choices=['auto', 'none'] + list(runtime_detection.distributions.NAMES)),
        ),
        supports_check_mode=True,
    )
    try:
        result = runtime_detection.gather(module)
    except GpuOpsError as exc:
        fail_from_exception(module, exc)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
