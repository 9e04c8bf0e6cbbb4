# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    # Options shared by containerd_nvidia_runtime, docker_nvidia_runtime and crio_nvidia_runtime;
    # the matching argument spec is module_utils/toolkit/runtime_options.py. ENABLE_CDI and BACKUP
    # are separate: CRI-O has CDI always on, and backups in its drop-in directory would be loaded as config.
    DOCUMENTATION = r'''
options:
  state:
    description:
      - V(present) registers the NVIDIA runtime(s); V(absent) removes everything V(present) added and restores
        the previous default runtime.
      - Ownership is recorded, never inferred. V(present) records what it changes in an undo record on the node;
        runtimes it finds configured already are not its own. V(absent) follows that record only; without one (none,
        removed, or one of another file) it changes nothing and says what it leaves (RV(notes), a warning). A runtime
        that was there before V(present) first changed the file stays after V(absent).
    type: str
    choices: [present, absent]
    default: present
  runtime_name:
    description:
      - Name of the runtime to register, as Kubernetes RuntimeClass handlers refer to it.
      - Must be a DNS-1123 label, as a RuntimeClass handler must be (lower case letters, digits and C(-), at most 63
        characters, the variants' names included). V(runc) and V(crun), runtimes of the container runtime's own, are refused.
      - A runtime of that name that exists already, that this module did not register and that is not an NVIDIA runtime
        (its name does not start with C(nvidia) and it does not run C(nvidia-container-runtime)) is never taken over (the
        module fails).
    type: str
    default: nvidia
  runtime_binary:
    description:
      - Path of the NVIDIA container runtime binary on the node; an absolute path.
    type: path
    default: /usr/bin/nvidia-container-runtime
  variants:
    description:
      - Extra runtimes to register next to O(runtime_name).
      - V(cdi) registers C(<runtime_name>-cdi) running C(<runtime_binary>.cdi);
        V(legacy) registers C(<runtime_name>-legacy) running C(<runtime_binary>.legacy).
    type: list
    elements: str
    choices: [cdi, legacy]
    default: []
  set_as_default:
    description:
      - Make O(runtime_name) the runtime's default.
      - When V(false), a default that names one of the managed runtimes is removed.
    type: bool
    default: false
'''

    ENABLE_CDI = r'''
options:
  enable_cdi:
    description:
      - Turn on the container runtime's CDI support.
      - O(state=absent) puts back the setting that was there before.
    type: bool
    default: false
'''

    BACKUP = r'''
options:
  backup:
    description:
      - Keep a timestamped copy of the config file before changing it.
    type: bool
    default: false
'''
