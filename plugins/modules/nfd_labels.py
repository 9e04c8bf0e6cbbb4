#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: nfd_labels
short_description: Compute the NFD, GPU Feature Discovery and GPU Operator labels of a node and apply them to its Node
description:
  - Computes, on the node itself, the labels that Node Feature Discovery, GPU Feature Discovery and the
    GPU Operator would put on its Node object, so that no NFD or GFD pod is needed, and applies them in one
    JSON merge patch.
  - "NFD: C(feature.node.kubernetes.io/pci-10de.present) (the form the Operator configures NFD with) and the
    class-qualified C(pci-0300_10de.present) / C(pci-0302_10de.present), C(kernel-version.full/major/minor/revision),
    C(system-os_release.ID/VERSION_ID/VERSION_ID.major/VERSION_ID.minor)."
  - "The chart's NodeFeatureRule C(nvidia-kernel-modules) (NFD with C(nfd.nodefeaturerules)): C(nvidia.com/peermem.capable),
    C(nvidia.com/gds.capable) and C(nvidia.com/gdrcopy.capable) when C(nvidia_peermem), C(nvidia_fs) or C(gdrdrv) is loaded
    (C(modules) under O(procfs_root)); role gpu_node_labels applies them where NFD does not run."
  - "Operator: C(nvidia.com/gpu.present) and C(nvidia.com/gpu.deploy.*) (C(mig-manager) on MIG-capable nodes). A deploy
    label already on the Node with a non-empty value (V(pre-installed), V(paused-for-driver-upgrade), V(false)) is kept.
    A Node that had C(gpu.present=true) and no longer shows a GPU gets C(gpu.present=false) and loses its deploy labels.
    A Node labelled C(nvidia.com/gpu.deploy.operands=false) (by its admin, or through O(deploy)) gets no deploy label and loses
    those the module set, as the Operator takes every deploy label off it; they return once it is no longer V(false).
    C(nvidia.com/gpu.deploy.client) (no operand's: other vendors' GPU clients select on it) is set with the others."
  - "GFD: C(gpu.count), C(gpu.product), C(gpu.memory), C(gpu.family), C(gpu.compute.major/minor), C(cuda.driver.*),
    C(cuda.driver-version.*), C(cuda.runtime.*), C(cuda.runtime-version.*), C(gpu.machine), C(gpu.replicas),
    C(gpu.sharing-strategy), C(gpu.mode), C(mig.capable), C(mps.capable), C(mig.strategy), and the MIG labels of the
    single and mixed strategies. A label whose source the node cannot give is left out and the reason is warned about
    (for example the compute capability when C(nvidia-smi --query-gpu=compute_cap) does not answer)."
  - The facts come from O(sysfs_root), O(procfs_root), O(os_release_path) and three C(nvidia-smi) queries
    (C(-q -x), C(--query-gpu), C(-L)). When C(nvidia-smi) is missing or fails on a node whose PCI bus shows a GPU,
    the NFD and Operator labels are still computed and the failure is warned about. When it lists GPUs but not every
    GPU on the PCI bus that the NVIDIA driver should drive (as M(gpuops.gpu_operator.nvidia_driver) validates it), the
    module fails naming the missing bus ids, rather than labelling the node with the GPUs that work.
  - The module only changes labels under the prefixes it computes (plus O(extra_labels)); the labels it set and their
    values are recorded in the Node annotation C(gpuops.io/nfd-labels), so labels it set that no longer apply are
    removed and O(state=absent) removes exactly those. A label whose value someone changed since is theirs and stays.
    An annotation that is damaged (not the JSON this module writes) changes nothing on its Node; the module fails
    naming the Node and the annotation (with O(nodes), that Node is reported in RV(failed_nodes)).
  - With O(state=present) the annotation is written also when the module sets no label on the Node (as C({}), for a
    node without a GPU whose NFD labels NFD sets). It marks the Node as examined by this collection, which the
    P(gpuops.gpu_operator.k8s_nodes#inventory) inventory reads. O(state=absent) removes it.
  - With O(nodes), the labels computed on many nodes are applied to their Nodes in one run from the host that reaches
    the API, as a fleet needs it (one client, one list of the Nodes, and one merge patch per Node that changes, guarded by
    the resourceVersion listed; a Node changed in between is read again and planned anew). A Node that cannot be
    labelled (not registered, the API refuses the patch) is reported in RV(nodes) and RV(failed_nodes); the others are
    labelled all the same.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.discovery
  - gpuops.gpu_operator.k8s_auth
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Nothing is written to the API or to O(features_d).
  diff_mode:
    support: full
    details: Shows the Node's labels before and after, and the O(features_d) file.
  platform:
    platforms: posix
options:
  node_name:
    description:
      - Name of the Node object to label. Required when O(apply=true), unless O(nodes) is given.
    type: str
  nodes:
    description:
      - Label many Nodes in one run, each with the labels given for it (typically the RV(labels) of an O(apply=false) run
        on each GPU node); nothing is discovered. Not with O(node_name) or O(labels).
      - With O(state=absent), the labels this module set are removed from each Node and O(nodes[].labels) is not used.
    type: list
    elements: dict
    suboptions:
      name:
        description: The Node's name.
        type: str
        required: true
      labels:
        description: The labels the Node is to carry from this module.
        type: dict
        default: {}
  continue_on_error:
    description:
      - With O(nodes), V(true) reports a Node that cannot be labelled in RV(nodes) and RV(failed_nodes) without failing
        the module (it fails only when the Nodes cannot be listed), so that a play can fail only the hosts whose Node
        refused; V(false) fails the module, naming every such Node, after the others were labelled.
    type: bool
    default: false
  apply:
    description:
      - V(true) patches the Node; V(false) only computes and returns the labels (no API access, no kubernetes library needed).
    type: bool
    default: true
  state:
    description:
      - V(present) applies the computed labels; V(absent) removes the labels this module set (and O(features_d)).
    type: str
    choices: [present, absent]
    default: present
  labels:
    description:
      - A label set computed before, typically the RV(labels) of an O(apply=false) run on the GPU node, to apply from
        the host that reaches the API.
      - When given, nothing is discovered and O(mig_strategy), O(sharing), O(deploy), O(extra_labels) and O(features_d)
        are not used.
    type: dict
  os_release_path:
    description:
      - The os-release file the C(system-os_release) labels come from.
    type: path
    default: /etc/os-release
  mig_strategy:
    description:
      - The MIG strategy the device plugin uses (ClusterPolicy C(mig.strategy)); decides the MIG labels like GFD's C(--mig-strategy).
      - The single and mixed strategies need the MIG profile names from C(nvidia-smi -L).
    type: str
    choices: [none, single, mixed]
    default: none
  sharing:
    description:
      - GPU sharing of the C(nvidia.com/gpu) resource as configured for the device plugin.
    type: dict
    suboptions:
      strategy:
        description:
          - V(time-slicing) or V(mps); V(mps) is refused on GPUs with MIG enabled.
        type: str
        choices: [none, time-slicing, mps]
        default: none
      replicas:
        description:
          - Replicas per GPU; with more than one, C(gpu.replicas) and C(gpu.sharing-strategy) say so and C(gpu.product)
            gets C(-SHARED) unless O(sharing.rename_by_default).
        type: int
        default: 1
      rename_by_default:
        description:
          - The device plugin renames shared resources (C(renameByDefault)); the product label then has no C(-SHARED) suffix.
        type: bool
        default: false
  deploy:
    description:
      - "Values of C(nvidia.com/gpu.deploy.<component>) to use instead of V(true), for example C(deploy: {dcgm: false})."
      - A value of V(true) still yields to a non-empty value already on the Node.
      - C(driver) defaults to V(pre-installed) when an NVIDIA kernel module is loaded that
        M(gpuops.gpu_operator.nvidia_driver) did not install (as O(driver_record_file) tells), else V(true), as
        nvidia_driver reports it in C(deploy_driver_label) once the driver is in place; so the label is right before
        the driver stage runs.
    type: dict
  sandbox_workloads:
    description:
      - The ClusterPolicy's C(sandboxWorkloads), used where the labels are applied to the Node (O(apply) or O(nodes)).
      - "With O(sandbox_workloads.enabled), the deploy labels are those of the Node's workload, as the GPU Operator gives them:
        the Node label C(nvidia.com/gpu.workload.config) (V(container), V(vm-passthrough) or V(vm-vgpu); the admin's, never
        set here), else O(sandbox_workloads.defaultWorkload). A V(vm-passthrough) node gets C(sandbox-device-plugin)
        (C(kata-sandbox-device-plugin) with O(sandbox_workloads.mode=kata)), C(sandbox-validator), C(vfio-manager),
        C(kata-manager), C(cc-manager) and C(client); a V(vm-vgpu) node C(sandbox-device-plugin), C(vgpu-manager),
        C(vgpu-device-manager), C(sandbox-validator), C(cc-manager) and C(client); the container ones it had of this
        module are removed."
    type: dict
    suboptions:
      enabled:
        description: C(sandboxWorkloads.enabled); false makes every node a container node.
        type: bool
        default: false
      defaultWorkload:
        description: The workload of a Node without a valid C(nvidia.com/gpu.workload.config) label.
        type: str
        default: container
        choices: [container, vm-passthrough, vm-vgpu]
      mode:
        description: C(sandboxWorkloads.mode), the device plugin of V(vm-passthrough) nodes (KubeVirt's or Kata's).
        type: str
        default: kubevirt
        choices: [kubevirt, kata]
  driver_record_file:
    description:
      - The record M(gpuops.gpu_operator.nvidia_driver) keeps of what it installed (its O(gpuops.gpu_operator.nvidia_driver#module:record_file)).
    type: path
    default: /var/lib/gpuops/nvidia_driver.json
  extra_labels:
    description:
      - More labels to set (any key); they are owned like the computed ones.
    type: dict
  mig_config:
    description:
      - The C(nvidia.com/mig.config) value of a MIG-capable node (the ClusterPolicy's C(migManager.config.default), for example
        V(all-disabled)), as the GPU Operator labels it; a value already on the Node that this module did not set is kept.
      - Empty sets no such label.
    type: str
    default: ''
  features_d:
    description:
      - Also write the GFD labels to this NFD local-source feature file, for clusters that run NFD
        (for example C(/etc/kubernetes/node-feature-discovery/features.d/gpuops)).
      - Written atomically; removed with O(state=absent) or when the node has no GPU labels.
    type: path
notes:
  - Run it on the GPU node with O(apply=false) and apply RV(labels) from the host that reaches the API, or with
    O(apply=true) where the node itself has API credentials; the gpu_node_labels role does the former.
  - The MIG device attributes (memory, multiprocessors, engines) come from C(nvidia-smi -q -x), the slice counts from the
    profile names of C(nvidia-smi -L).
seealso:
  - name: GPU Feature Discovery labels
    description: The labels GFD generates, which this module reproduces.
    link: https://github.com/NVIDIA/k8s-device-plugin#catalog-of-labels
'''

EXAMPLES = r'''
- name: Compute the labels on the GPU node only
  gpuops.gpu_operator.nfd_labels:
    apply: false
    mig_strategy: single
    deploy:
      driver: pre-installed
  register: node_labels

- name: Apply them from the host that reaches the API
  gpuops.gpu_operator.nfd_labels:
    node_name: "{{ ansible_facts.nodename }}"
    labels: "{{ node_labels.labels }}"
    kubeconfig: /etc/kubernetes/admin.conf
  delegate_to: "{{ groups['kube_api'] | first }}"

- name: Compute and apply on a node that has API credentials, feeding NFD too
  gpuops.gpu_operator.nfd_labels:
    node_name: gpu-node-1
    sharing:
      strategy: time-slicing
      replicas: 4
    features_d: /etc/kubernetes/node-feature-discovery/features.d/gpuops

- name: Name each node's Node and its labels
  ansible.builtin.set_fact:
    node_entry:
      name: "{{ ansible_facts.nodename }}"
      labels: "{{ node_labels.labels }}"

- name: Apply the labels of every node of the play to their Nodes, from the API host, in one run
  gpuops.gpu_operator.nfd_labels:
    nodes: "{{ ansible_play_batch | map('extract', hostvars, 'node_entry') }}"
    continue_on_error: true
  delegate_to: "{{ groups['kube_api'] | first }}"
  run_once: true
  register: applied

- name: Fail the nodes whose Node could not be labelled
  ansible.builtin.fail:
    msg: "{{ applied.nodes[ansible_facts.nodename].msg }}"
  when: ansible_facts.nodename in applied.failed_nodes

- name: Remove every label this module set
  gpuops.gpu_operator.nfd_labels:
    node_name: gpu-node-1
    state: absent
'''

RETURN = r'''
labels:
  description:
    - The desired label set (empty with O(state=absent)). Where a Node is labelled (O(apply), O(nodes)), as the Node's
      workload (O(sandbox_workloads)) and its C(nvidia.com/gpu.deploy.operands) make it.
    - With O(nodes), each Node's is in RV(nodes).
  returned: always
  type: dict
  sample: {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "1"}
added:
  description: Label keys added to the Node (empty when O(apply=false)).
  returned: always
  type: list
  elements: str
  sample: [nvidia.com/gpu.present]
updated:
  description: Label keys whose value changed.
  returned: always
  type: list
  elements: str
  sample: [nvidia.com/cuda.driver.major]
removed:
  description: Label keys removed (stale ones this module had set, deploy labels of a node without GPU, all of ours with O(state=absent)).
  returned: always
  type: list
  elements: str
  sample: [nvidia.com/mig.strategy]
workload:
  description:
    - The workload of the Node labelled with O(apply) (V(container), V(vm-passthrough) or V(vm-vgpu); see
      O(sandbox_workloads)); null when no Node was labelled. With O(nodes), each Node's is in RV(nodes).
  returned: always
  type: str
  sample: container
node_name:
  description: The Node labelled, or null.
  returned: always
  type: str
  sample: gpu-node-1
discovery:
  description:
    - What the node showed (PCI GPUs, the GPUs nvidia-smi reported, versions, which nvidia-smi queries failed);
      null when O(labels) was given or O(state=absent).
  returned: always
  type: dict
gpu_present:
  description:
    - Whether the node has an NVIDIA GPU as the GPU Operator counts one (C(nvidia.com/gpu.present)) - an NVIDIA VGA or 3D
      controller on the PCI bus (the classes NFD labels for the Operator), or a GPU C(nvidia-smi) lists. The Operator
      deploys nothing on a node without one, and C(site.yml) ends such a node after its labels.
    - Null when the labels are not computed on the node (O(labels) or O(nodes) given, or O(state=absent)).
  returned: always
  type: bool
  sample: true
features_d:
  description: The NFD feature file managed, or null.
  returned: always
  type: str
  sample: /etc/kubernetes/node-feature-discovery/features.d/gpuops
nodes:
  description:
    - With O(nodes), each Node's outcome by name (empty otherwise). C(msg) is there when C(failed) is true, C(diff) when
      the Node's labels change and the task runs with C(--diff) (M(gpuops.gpu_operator.node_outcome) reports it as the
      node's own).
  returned: always
  type: dict
  sample: {"gpu-node-1": {"changed": false, "failed": false, "labels": {"nvidia.com/gpu.present": "true"}, "added": [], "updated": [],
                          "removed": [], "workload": "container"}}
failed_nodes:
  description: With O(nodes), the Nodes that could not be labelled (their message is in RV(nodes)).
  returned: always
  type: list
  elements: str
  sample: []
ansible_facts:
  description:
    - When the labels are computed on the node (O(state=present), no O(labels) nor O(nodes)), the node's host facts named
      and valued as M(ansible.builtin.setup) gives them, so that a play needs no fact gathering for them.
  returned: when the labels are computed on the node
  type: dict
  contains:
    nodename:
      description: The host name (C(uname -n)), the Node's name unless set otherwise.
      type: str
      sample: gpu-node-1
    kernel:
      description: The kernel release.
      type: str
      sample: 6.8.0-60-generic
    distribution:
      description: The distribution.
      type: str
      sample: Debian
    distribution_version:
      description: Its version.
      type: str
      sample: "12.11"
    distribution_major_version:
      description: Its major version.
      type: str
      sample: "12"
    os_family:
      description: The distribution family.
      type: str
      sample: Debian
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.labels import node


def main():
    module = AnsibleModule(argument_spec=node.argument_spec(), supports_check_mode=True, required_if=[('apply', True, ['node_name', 'nodes'], True)],
                           mutually_exclusive=[('nodes', 'node_name'), ('nodes', 'labels')])
    result = node.empty_result(module.params)
    try:
        node.run(module, result)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
