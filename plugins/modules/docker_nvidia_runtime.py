#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: docker_nvidia_runtime
short_description: Register the NVIDIA container runtime with Docker
description:
  - Adds C(runtimes.<name>) with C(path) set to O(runtime_binary) and an empty C(args) list (and the same for the
    variants) to Docker's C(daemon.json), as C(nvidia-ctk runtime configure --runtime=docker) does.
  - O(set_as_default) sets C(default-runtime); O(enable_cdi) sets C(features.cdi = true).
  - Other keys and their order are kept; a file whose content does not change is not rewritten, and a changed one
    keeps its indentation.
  - What is needed to undo the change is kept on the node in C(<path>.gpuops-nvidia-runtime.json) (mode 0600),
    so O(state=absent) gives back the original file byte for byte when nobody edited it since, and otherwise
    removes only what was added and restores the previous C(default-runtime) and C(features.cdi).
  - Does not restart Docker.
  - Fails (in check mode too) where the files cannot be written, and gives back what it wrote when a write fails half
    way, the undo record included.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.nvidia_runtime
  - gpuops.gpu_operator.nvidia_runtime.enable_cdi
  - gpuops.gpu_operator.nvidia_runtime.backup
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  path:
    description:
      - Docker's daemon configuration file; a missing or empty one counts as C({}).
    type: path
    default: /etc/docker/daemon.json
seealso:
  - module: gpuops.gpu_operator.containerd_nvidia_runtime
  - module: gpuops.gpu_operator.crio_nvidia_runtime
'''

EXAMPLES = r'''
- name: Register the nvidia runtime as Docker's default, with CDI
  gpuops.gpu_operator.docker_nvidia_runtime:
    set_as_default: true
    enable_cdi: true

- name: Undo it, restoring the previous default-runtime
  gpuops.gpu_operator.docker_nvidia_runtime:
    state: absent
'''

RETURN = r'''
path:
  description: The daemon.json file.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
runtimes:
  description: Names of the runtimes managed (registered by present; removed by absent, those the undo record names
    as its own).
  returned: always
  type: list
  elements: str
  sample: [nvidia, nvidia-cdi]
default_runtime:
  description: C(default-runtime) after the run; null when unset (Docker then uses runc).
  returned: always
  type: str
  sample: nvidia
previous_default_runtime:
  description: C(default-runtime) before this module first changed the file; null when unset.
  returned: always
  type: str
  sample: runc
backup_file:
  description: The backup of O(path) made by O(backup), or null.
  returned: always
  type: str
  sample: /etc/docker/daemon.json.12345.2025-01-01@00:00:00~
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
  sample: [write /etc/docker/daemon.json, write /etc/docker/daemon.json.gpuops-nvidia-runtime.json]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.docker_config import DockerDialect
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import common_argument_spec


def main():
    argument_spec = common_argument_spec()
    argument_spec.update(path=dict(type='path', default='/etc/docker/daemon.json'))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    path = module.params['path']
    state_file = runtime_config.state_path(path)
    try:
        plan = runtime_config.plan_file(module.params, runtime_config.gather([path, state_file]), path, state_file, DockerDialect())
        result = runtime_config.execute(module, plan, path, state_file)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, path=path)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
