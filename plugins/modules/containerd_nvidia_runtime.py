#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: containerd_nvidia_runtime
short_description: Register the NVIDIA container runtime with containerd
description:
  - Adds the NVIDIA runtime (and optional variants) to containerd's C(config.toml), following the rules of
    C(nvidia-ctk runtime configure) so the result means the same to containerd.
  - Supports config versions 1, 2 and 3 (containerd 1.x and 2.x); the CRI table is chosen from the file's version.
  - A new runtime copies the options of the current default runtime (unless that is one of ours), else of
    C(runc), else of C(crun), else starts from runtime_type C(io.containerd.runc.v2); C(options.BinaryName)
    is set to O(runtime_binary).
  - Comments, key order, quoting and unrelated tables are kept; a second run changes nothing.
  - What is needed to undo the change is kept on the node in C(<path>.gpuops-nvidia-runtime.json) (mode 0600),
    so O(state=absent) gives back the original file byte for byte when nobody edited it since, and otherwise
    removes only what was added and restores the previous default runtime.
  - When the config imports other files (its C(imports), and theirs), they are read as containerd reads them (containerd
    1.x puts the CRI table of a file loaded later in place of the earlier one whole, 2.x merges it key by key). The module
    fails, naming that file and writing nothing, when one loaded after the file it writes would drop the runtime, make
    it run another binary or, with O(set_as_default), set another default. The installed containerd's rules apply
    (C(containerd --version)); without containerd, those of both (for a version 3 config, 2.x's only).
  - Fails (in check mode too) where the files cannot be written, and gives back what it wrote when a write fails half
    way, the undo record included.
  - Fails (in check mode too), writing nothing, where the installed containerd would not use what it writes (a version 1
    config under containerd 2.x (which ignores its C(plugins.cri) tables), O(enable_cdi) under containerd 1.6, as CDI came
    in 1.7).
  - O(state=absent) follows the undo record and undoes the drop-in the record names, whatever O(drop_in) says.
  - Does not restart containerd.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
requirements:
  - tomlkit (Python library on the managed node, for example the C(python3-tomlkit) package)
extends_documentation_fragment:
  - gpuops.gpu_operator.nvidia_runtime
  - gpuops.gpu_operator.nvidia_runtime.enable_cdi
  - gpuops.gpu_operator.nvidia_runtime.backup
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - On a node without tomlkit (before the container toolkit stage installed C(python3-tomlkit)), check mode cannot
        read the config; the task is skipped with a message that says so (C(msg), C(notes)), not failed.
      - With O(state=absent) on a node without tomlkit, a config without an undo record is not read and nothing changes
        (RV(notes) says so); one with an undo record fails the task, in check mode too, naming tomlkit and the record.
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  path:
    description:
      - containerd's top-level config file.
    type: path
    default: /etc/containerd/config.toml
  drop_in:
    description:
      - Write the runtime tables to this file instead of editing O(path) in place; O(path)'s top-level C(imports)
        gains it (existing imports are kept, and C(version) is written when O(path) was empty).
      - For config version 2 a new drop-in starts with a copy of the CRI table containerd 1.x would use without it (the
        last file it loads before the drop-in that has one, else O(path)'s), because containerd 1.x replaces a plugin's
        section wholesale when an imported file defines it. The copy may hold registry credentials, so the drop-in gets the
        mode of the file it comes from. With containerd 2.x installed, which merges key by key, nothing is copied and the
        drop-in holds only the runtimes and the keys this module sets.
      - Needs config version 2 or later. An absolute path other than O(path) (and its undo record); a symlink to either
        is refused too.
      - Another drop-in than the one the undo record names is refused; run O(state=absent) first.
      - A missing directory is created with mode 0755, as C(nvidia-ctk runtime configure --drop-in-config) does;
        O(state=absent) removes it again when it is empty.
    type: path
  config_source:
    description:
      - Where the starting config comes from when O(path) is missing or empty.
      - V(auto) uses C(containerd config default) when containerd is installed (so C(SystemdCgroup) and the other
        defaults survive), else an empty version 2 config.
      - V(command) always uses C(containerd config default) and fails when containerd is not installed.
      - V(file) uses the file as it is.
      - A non-empty O(path) is always edited in place.
    type: str
    choices: [auto, file, command]
    default: auto
  containerd:
    description:
      - The containerd program whose version, defaults and reading of the config (O(verify)) count; a distribution's own
        (an absolute path, such as k3s's C(/var/lib/rancher/k3s/data/current/bin/containerd)), or C(containerd) on PATH.
    type: str
    default: containerd
  generated:
    description:
      - O(path) is written by a Kubernetes distribution at each start (k3s's and RKE2's C(config.toml), k0s's
        C(containerd.toml)); it is read, never written, and the runtimes go into O(drop_in), which O(path) must import
        already (the module fails, writing nothing, where it does not, where O(path) does not exist yet, and where
        containerd 1.x would need a copy of O(path)'s CRI table in the drop-in, which the next start would leave stale).
      - O(state=absent) removes the drop-in and leaves O(path) as the distribution wrote it.
    type: bool
    default: false
  verify_path:
    description:
      - The config containerd is started with, when it is not O(path) (MicroK8s renders C(containerd.toml) from the
        C(containerd-template.toml) this module edits, at each start); O(verify) reads this one. Default O(path).
    type: path
  verify:
    description:
      - With O(state=present), have containerd read the config after the run as it will at its next start
        (C(containerd --config PATH config dump), O(path) (or O(verify_path)) with its imports) and fail unless it shows
        every runtime registered with its binary (and, with O(enable_cdi), C(enable_cdi) true; with O(set_as_default),
        the default runtime). This costs no round trip of its own;
        containerd must be installed. When containerd's reading shows otherwise, the run gives back what it wrote.
      - In check mode a config the run would change is not on disk yet, so it is not verified (RV(verified) is false).
    type: bool
    default: false
notes:
  - The state file holds the original config; keep it with the config when moving or restoring nodes.
seealso:
  - name: nvidia-ctk runtime configure
    description: The NVIDIA Container Toolkit command whose rules this module follows.
    link: https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html#configuring-containerd-for-kubernetes
'''

EXAMPLES = r'''
- name: Register the nvidia runtime and make it containerd's default
  gpuops.gpu_operator.containerd_nvidia_runtime:
    set_as_default: true
    enable_cdi: true
    variants: [cdi]
  register: containerd_runtime

- name: Register it and check that containerd reads it so
  gpuops.gpu_operator.containerd_nvidia_runtime:
    verify: true

- name: Register it in a drop-in file instead of editing config.toml's runtime tables
  gpuops.gpu_operator.containerd_nvidia_runtime:
    drop_in: /etc/containerd/conf.d/99-nvidia.toml

- name: Undo everything, restoring the previous default runtime
  gpuops.gpu_operator.containerd_nvidia_runtime:
    state: absent
'''

RETURN = r'''
path:
  description: The top-level config file.
  returned: always
  type: str
  sample: /etc/containerd/config.toml
verified:
  description: Whether containerd's own reading of the config (O(verify)) showed every runtime with its binary.
  returned: always
  type: bool
  sample: true
config_version:
  description: The config's version after the run (a missing or empty file counts as 2).
  returned: always
  type: int
  sample: 2
cri_table:
  description: The CRI plugin table the runtimes live under.
  returned: always
  type: str
  sample: plugins."io.containerd.grpc.v1.cri"
runtimes:
  description: Names of the runtimes managed (registered by present; removed by absent, those the undo record names
    as its own).
  returned: always
  type: list
  elements: str
  sample: [nvidia, nvidia-cdi]
default_runtime:
  description: containerd's default runtime after the run (the drop-in's when it sets one); null when unset.
  returned: always
  type: str
  sample: nvidia
previous_default_runtime:
  description: The default runtime in effect before this module first changed the file; null when unset.
  returned: always
  type: str
  sample: runc
drop_in:
  description: The drop-in file used, or null.
  returned: always
  type: str
  sample: /etc/containerd/conf.d/99-nvidia.toml
backup_file:
  description: The backup of O(path) made by O(backup), or null.
  returned: always
  type: str
  sample: /etc/containerd/config.toml.12345.2025-01-01@00:00:00~
notes:
  description: What the run left alone and why, one sentence each (shown as warnings by O(state=absent)), for example
    the runtimes V(present) found configured already (it keeps no undo record of them) or the runtimes V(absent) leaves
    for want of an undo record.
  returned: always
  type: list
  elements: str
  sample: ["/etc/containerd/config.toml: there is no undo record (/etc/containerd/config.toml.gpuops-nvidia-runtime.json), so
    state=absent leaves runtime nvidia in /etc/containerd/config.toml as it is: this module did not configure it, or its
    record was removed. Remove it yourself if it should go"]
actions:
  description: What the module did, or would do in check mode, one C(write PATH) or C(remove PATH) per file, and
    C(create directory DIR) or C(remove directory DIR) for the drop-in's directory (only when it is empty then), and
    C(remove PATH) for each temp file a killed run left.
  returned: always
  type: list
  elements: str
  sample: [write /etc/containerd/config.toml, write /etc/containerd/config.toml.gpuops-nvidia-runtime.json]
'''

import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_runtime, runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import common_argument_spec

try:
    import tomlkit  # noqa: F401 pylint: disable=unused-import
    HAS_TOMLKIT = True
    TOMLKIT_IMPORT_ERROR = None
except ImportError:
    HAS_TOMLKIT = False
    TOMLKIT_IMPORT_ERROR = traceback.format_exc()


def main():
    argument_spec = common_argument_spec()
    argument_spec.update(
        path=dict(type='path', default='/etc/containerd/config.toml'),
        drop_in=dict(type='path'),
        config_source=dict(type='str', default='auto', choices=['auto', 'file', 'command']),
        verify=dict(type='bool', default=False),
        containerd=dict(type='str', default='containerd'),
        generated=dict(type='bool', default=False),
        verify_path=dict(type='path'),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    if not HAS_TOMLKIT:
        runtime_config.without_tomlkit(module, module.params['path'], runtime_config.state_path(module.params['path']), (
            'verified', 'config_version', 'cri_table', 'runtimes', 'default_runtime', 'previous_default_runtime', 'drop_in', 'backup_file'),
            TOMLKIT_IMPORT_ERROR)

    try:
        plan = containerd_runtime.plan(module.params, containerd_runtime.gather(module), containerd_runtime.NodeFiles(module))
        result = containerd_runtime.execute(module, plan)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, path=module.params['path'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
