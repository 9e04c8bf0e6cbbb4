#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_node_doctor
short_description: Find what keeps a GPU node from serving GPUs to Kubernetes, without changing anything
description:
  - Reads the node and returns findings, each with a severity, the evidence and a fix. It never changes anything
    (it only reads files and runs read-only commands), so it is the same with and without check mode.
  - "Driver: NVIDIA GPUs on the PCI bus but no driver, nvidia-smi failing, a kernel module and libraries of different
    versions, GPUs the driver does not list, C(nouveau) or C(nova_core) loaded, Secure Boot refusing unsigned modules."
  - "Kernel log (C(journalctl -k), else C(dmesg); when neither can be read that is reported as info): Xid errors
    with their meaning from NVIDIA's catalogue, C(NVRM: API mismatch), GPUs that failed to initialise, rejected module
    signatures."
  - "Container runtime O(runtime): the O(runtime_name) runtime missing from the configuration the runtime itself reads
    (C(containerd config dump), C(crio config), Docker's C(daemon.json)), its binary missing, the runtime not restarted
    since its configuration changed (Docker: the running C(dockerd) lacks it), the service not running, and its
    journal's errors that name the NVIDIA runtime. Where systemd is not PID 1 (a container, a CI runner) the runtime's
    daemon process (C(/proc)) says whether and since when it runs, and the fixes name no C(systemctl)."
  - "On a node whose O(workload_config) is V(vm-passthrough) the driver and runtime checks give way to those of the GPUs
    given to virtual machines: the IOMMU off (no C(kernel/iommu_groups); the IOMMU kernel parameters are the evidence),
    the kernel without C(vfio-pci), a GPU function or its companion (audio, USB) still bound to another driver
    (C(nvidia), C(nouveau), C(snd_hda_intel)) or to none, as M(gpuops.gpu_operator.vfio_manager) binds them. On a
    V(vm-vgpu) node (its GPUs are the host vGPU manager's) the driver and kernel log are checked, not the runtime."
  - The device plugin's sockets are returned for the cluster-side checks of the doctor playbook, which compare them
    with the Node's C(nvidia.com/gpu) capacity.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.discovery
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode changes nothing about what it does.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  runtime:
    description:
      - The container runtime the kubelet uses. The doctor playbook detects it the way the container_toolkit role does.
      - Unset means none was found, which is reported.
    type: str
    choices: [containerd, docker, crio]
  runtime_name:
    description: Name of the NVIDIA runtime (the RuntimeClass handler), as in the C(*_nvidia_runtime) modules.
    type: str
    default: nvidia
  containerd_config:
    description: containerd's main configuration file (C(containerd --config <file> config dump)).
    type: path
    default: /etc/containerd/config.toml
  containerd:
    description:
      - The containerd program that reads O(containerd_config) (a distribution's own, such as k3s's
        C(/var/lib/rancher/k3s/data/current/bin/containerd)), or C(containerd) on PATH.
    type: str
    default: containerd
  unit:
    description:
      - The systemd unit that runs the runtime, where it is not the runtime's own (C(k3s), C(rke2-agent), C(k0sworker),
        C(snap.microk8s.daemon-containerd) start the containerd of their distribution); its state, start time and journal
        are read, and the fixes name it.
    type: str
  docker_config:
    description: Docker's C(daemon.json).
    type: path
    default: /etc/docker/daemon.json
  crio_drop_in:
    description: The CRI-O drop-in holding the NVIDIA runtime (its change time is compared with CRI-O's start).
    type: path
    default: /etc/crio/crio.conf.d/99-nvidia.conf
  device_plugin_dir:
    description: The kubelet's device plugin directory.
    type: path
    default: /var/lib/kubelet/device-plugins
  resource_name:
    description: The extended resource the device plugin advertises.
    type: str
    default: nvidia.com/gpu
  gpudirect_modules_load_file:
    description:
      - The list of GPUDirect modules module C(gpudirect) loads at boot; each module it names (C(nvidia_peermem), C(nvidia_fs),
        C(gdrdrv)) is checked as that module checks it (loaded, device nodes, C(nvidia_peermem) of the loaded driver's version)
        and reported, an error when it is not ready. No list, nothing checked.
    type: path
    default: /etc/modules-load.d/gpuops-gpudirect.conf
  dev_root:
    description: Where the GPUDirect device nodes (C(nvidia-fs0), C(gdrdrv)) are looked for.
    type: path
    default: /dev
  workload_config:
    description:
      - The node's GPU workload, its Node label C(nvidia.com/gpu.workload.config) (the role vfio_manager's
        C(vfio_manager_workload_config)); V(vm-passthrough) checks the node as one whose GPUs go to virtual machines.
    type: str
    choices: [container, vm-passthrough, vm-vgpu]
    default: container
  confidential_computing:
    description:
      - Whether the ClusterPolicy runs the CC manager on the node (C(sandboxWorkloads.enabled) in mode C(kata) with
        C(ccManager.enabled)); C(doctor.yml) takes it from the run's resolved ClusterPolicy.
      - On a V(vm-passthrough) node the host must then offer confidential VMs, C(/sys/module/kvm_amd/parameters/sev_snp)
        or C(/sys/module/kvm_intel/parameters/tdx) reading C(Y) (under O(sysfs_root)), else the finding C(cc-tee-off).
    type: bool
    default: false
notes:
  - Run it as root; without root the kernel log and some files may not be readable (reported, not fatal).
  - The doctor playbook (C(gpuops.gpu_operator.doctor)) runs it on every GPU node and joins its findings with those
    of the Kubernetes API.
seealso:
  - name: NVIDIA Xid errors
    description: The catalogue the Xid findings quote.
    link: https://docs.nvidia.com/deploy/xid-errors/
'''

EXAMPLES = r'''
- name: Check a containerd node
  gpuops.gpu_operator.gpu_node_doctor:
    runtime: containerd
  register: doctor

- name: Show the errors
  ansible.builtin.debug:
    msg: "{{ doctor.findings | selectattr('severity', 'eq', 'error') | map(attribute='summary') | list }}"
'''

RETURN = r'''
findings:
  description: What is wrong or worth knowing, errors first. Each has C(check) (a stable id), C(severity)
    (error, warning or info), C(summary), C(evidence) (lines) and C(fix). A fix may say C(<node>) for this host.
  returned: always
  type: list
  elements: dict
  sample:
    - check: runtime-not-configured
      severity: error
      summary: the nvidia runtime is not registered with containerd
      evidence: ['containerd config dump lists the runtimes: runc']
      fix: 'register it (container_toolkit stage): ansible-playbook -i <inventory> gpuops.gpu_operator.site --limit <node>; ...'
facts:
  description:
    - What the node showed; C(runtime_status) holds the runtime's configured and running runtimes, its unit's state (or,
      where systemd does not run the node, C(systemd) false and its daemon's C(process)) and the change times of its
      config files, C(kernel_log) the driver's kernel log lines and where they came from; C(vfio) (on a V(vm-passthrough)
      node, else null) the IOMMU groups and parameters, the GPU functions with their drivers and whether the kernel has
      C(vfio-pci).
  returned: always
  type: dict
  sample:
    pci_gpus: 1
    gpu_names: [NVIDIA H100 80GB HBM3]
    driver_version: 590.48.01
    kernel_module_type: proprietary
    nvidia_smi: /usr/bin/nvidia-smi
    secure_boot: disabled
    nouveau_loaded: false
    runtime: containerd
    device_plugin_sockets: {/var/lib/kubelet/device-plugins/kubelet.sock: true}
    workload_config: container
    vfio: null
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import device_plugin as device_plugin_check
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import CONTAINER, DEFAULT_RUNTIME_NAME, WORKLOADS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import checks as doctor_checks
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.doctor import node as doctor_node
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery


def main():
    argument_spec = dict(
        runtime=dict(type='str', choices=list(doctor_node.UNITS)),
        runtime_name=dict(type='str', default=DEFAULT_RUNTIME_NAME),
        containerd_config=dict(type='path', default='/etc/containerd/config.toml'),
        containerd=dict(type='str', default='containerd'),
        unit=dict(type='str'),
        docker_config=dict(type='path', default='/etc/docker/daemon.json'),
        crio_drop_in=dict(type='path', default='/etc/crio/crio.conf.d/99-nvidia.conf'),
        device_plugin_dir=dict(type='path', default=device_plugin_check.DEFAULT_SOCKET_DIR),
        resource_name=dict(type='str', default=device_plugin_check.DEFAULT_RESOURCE),
        gpudirect_modules_load_file=dict(type='path', default='/etc/modules-load.d/gpuops-gpudirect.conf'),
        dev_root=dict(type='path', default='/dev'),
        workload_config=dict(type='str', choices=list(WORKLOADS), default=CONTAINER),
        confidential_computing=dict(type='bool', default=False),
    )
    argument_spec.update(gpu_discovery.DISCOVERY_ARG_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        gathered = doctor_node.gather(module)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, findings=[], facts={})
    module.exit_json(changed=False, findings=doctor_checks.by_severity(doctor_node.findings(gathered)), facts=doctor_node.summary(gathered))


if __name__ == '__main__':
    main()
