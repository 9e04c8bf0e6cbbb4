#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: k8s_objects
short_description: Apply or remove several Kubernetes objects with kubernetes.core.k8s, each object's diff shown
description:
  - Runs M(kubernetes.core.k8s) with the options given, unchanged. Given several objects, M(kubernetes.core.k8s) returns
    each one's result, with its C(diff), under C(result.results); ansible-core's callbacks print only a task's top-level
    C(diff), so C(--check --diff) showed the task changed but no object. This action also returns each changed object's
    diff as the task's C(diff) list, headed by what is done to it (C(create DaemonSet gpu-operator/nvidia-dcgm-exporter)),
    so that C(--diff) shows them with any callback; credentials in them are redacted.
  - The roles of the cluster side apply and remove their objects with it, in one round trip per task.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
options:
  state:
    description: As M(kubernetes.core.k8s)'s C(state).
    type: str
    choices: [present, absent, patched]
    default: present
  apply:
    description: As M(kubernetes.core.k8s)'s C(apply).
    type: bool
    default: false
  definition:
    description: The objects, a list (or one), as M(kubernetes.core.k8s)'s C(definition).
    type: raw
  wait:
    description: As M(kubernetes.core.k8s)'s C(wait).
    type: bool
    default: false
  wait_timeout:
    description: As M(kubernetes.core.k8s)'s C(wait_timeout).
    type: int
    default: 120
notes:
  - Every other option of M(kubernetes.core.k8s) (its authentication options, C(namespace), C(continue_on_error), ...) is
    passed to it unchanged.
attributes:
  check_mode:
    support: full
    details: As M(kubernetes.core.k8s) - the API dry-runs each object.
  diff_mode:
    support: full
    details: Each changed object's diff, as the task's C(diff) list.
  platform:
    platforms: posix
requirements:
  - kubernetes (the Python client), as for M(kubernetes.core.k8s)
seealso:
  - module: kubernetes.core.k8s
'''

EXAMPLES = r'''
- name: Apply the operands
  gpuops.gpu_operator.k8s_objects:
    state: present
    apply: true
    definition: "{{ (gpu_operator_policy_resolved | gpuops.gpu_operator.cluster_operands(namespace='gpu-operator')).present }}"
'''

RETURN = r'''
result:
  description: As M(kubernetes.core.k8s) returns it; given several objects, each one's result under C(results).
  returned: always
  type: dict
diff:
  description: Each changed object's diff (C(before), C(after), C(before_header), C(after_header)) when run with C(--diff).
  returned: with --diff, when an object changed
  type: list
  elements: dict
'''
