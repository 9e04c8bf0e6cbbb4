#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: crio_nvidia_runtime
short_description: Register the NVIDIA container runtime with CRI-O
description:
  - Writes a CRI-O drop-in with C([crio.runtime.runtimes.<name>]) (C(runtime_path), C(runtime_type = "oci")) for the
    runtime and its variants, and C(crio.runtime.default_runtime) when O(set_as_default) is on, as
    C(nvidia-ctk runtime configure --runtime=crio) does.
  - Other content of an existing drop-in is kept; a second run changes nothing.
  - O(state=absent) removes the drop-in when it holds nothing else (an edited one loses only what was added).
    The undo record is C(<drop-in directory>.<drop-in name>.gpuops-nvidia-runtime.json) (mode 0600), outside the drop-in
    directory because CRI-O loads every file in it; for the same reason this module makes no backups.
  - CRI-O turns CDI on by itself (since 1.23), so there is no O(ignore:enable_cdi) option.
  - Does not restart CRI-O.
  - Fails (in check mode too) where the files cannot be written, and gives back what it wrote when a write fails half
    way, the undo record included.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
requirements:
  - tomlkit (Python library on the managed node, for example the C(python3-tomlkit) package)
extends_documentation_fragment:
  - gpuops.gpu_operator.nvidia_runtime
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
      - The drop-in file; its directory must exist.
    type: path
    default: /etc/crio/crio.conf.d/99-nvidia.conf
seealso:
  - module: gpuops.gpu_operator.containerd_nvidia_runtime
  - module: gpuops.gpu_operator.docker_nvidia_runtime
'''

EXAMPLES = r'''
- name: Register the nvidia runtime as CRI-O's default
  gpuops.gpu_operator.crio_nvidia_runtime:
    set_as_default: true

- name: Remove the drop-in again
  gpuops.gpu_operator.crio_nvidia_runtime:
    state: absent
'''

RETURN = r'''
path:
  description: The drop-in file.
  returned: always
  type: str
  sample: /etc/crio/crio.conf.d/99-nvidia.conf
runtimes:
  description: Names of the runtimes managed (registered by present; removed by absent, those the undo record names
    as its own).
  returned: always
  type: list
  elements: str
  sample: [nvidia, nvidia-cdi]
default_runtime:
  description: The drop-in's C(crio.runtime.default_runtime) after the run; null when it sets none.
  returned: always
  type: str
  sample: nvidia
previous_default_runtime:
  description: The drop-in's C(crio.runtime.default_runtime) before this module first changed it; null when unset.
  returned: always
  type: str
  sample: null
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
    C(remove PATH) for each temp file a killed run left.
  returned: always
  type: list
  elements: str
  sample: [write /etc/crio/crio.conf.d/99-nvidia.conf, write /etc/crio/crio.conf.d.99-nvidia.conf.gpuops-nvidia-runtime.json]
'''

import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.crio_config import CrioDialect, state_path
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
    argument_spec = common_argument_spec(enable_cdi=False, backup=False)
    argument_spec.update(path=dict(type='path', default='/etc/crio/crio.conf.d/99-nvidia.conf'))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    path = module.params['path']
    state_file = state_path(path)
    if not HAS_TOMLKIT:
        runtime_config.without_tomlkit(module, path, state_file, ('runtimes', 'default_runtime', 'previous_default_runtime'), TOMLKIT_IMPORT_ERROR)
    try:
        plan = runtime_config.plan_file(module.params, runtime_config.gather([path, state_file]), path, state_file, CrioDialect())
        result = runtime_config.execute(module, plan, path, state_file)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, path=path)
    result.pop('backup_file')  # no backup option: see the description
    module.exit_json(**result)


if __name__ == '__main__':
    main()
