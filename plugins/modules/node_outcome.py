#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_outcome
short_description: Report one node's share of a run made for many nodes as that node's own result
description:
  - A module run on the API host for every node of a play at once (M(gpuops.gpu_operator.nfd_labels) with O(gpuops.gpu_operator.nfd_labels#module:nodes))
    returns each node's outcome by name, and ansible gives its change to the one host that ran it. This action, run
    for each node with its own entry, makes that entry the node's task result, so the play recap, C(--diff) and the
    drift report (callback M(gpuops.gpu_operator.drift_report)) name the node that changed or failed.
  - Runs on the controller only; nothing is sent to the node.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
options:
  outcome:
    description:
      - The node's entry of the run's result. C(changed), C(failed), C(msg) and C(diff) become this task's; its other
        keys are returned as they are.
    type: dict
    required: true
attributes:
  check_mode:
    support: full
    details: It changes nothing; the entry says what the run for many nodes would change.
  diff_mode:
    support: full
    details: The entry's C(diff) is shown.
  platform:
    platforms: posix
notes:
  - A task with an O(outcome) that is not a mapping fails with a message naming what it got.
'''

EXAMPLES = r'''
- name: Apply the labels of the play's nodes to their Nodes from the API host
  gpuops.gpu_operator.nfd_labels:
    nodes: "{{ ansible_play_batch | map('extract', hostvars, 'node_entry') }}"
    continue_on_error: true
  delegate_to: "{{ groups['kube_api'][0] }}"
  run_once: true
  changed_when: false  # each node reports its own change below
  register: applied

- name: Report the node's labels
  gpuops.gpu_operator.node_outcome:
    outcome: "{{ applied.nodes[node_entry.name] }}"
'''

RETURN = r'''
changed:
  description: The entry's C(changed).
  returned: always
  type: bool
failed:
  description: The entry's C(failed); C(msg) then says why.
  returned: always
  type: bool
diff:
  description: The entry's C(diff), when it has one.
  returned: when the entry has one
  type: dict
'''
