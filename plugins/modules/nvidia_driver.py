#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: nvidia_driver
short_description: Install, validate or remove the NVIDIA GPU driver on a node (ClusterPolicy driver)
description:
  - Does on the host what the GPU Operator's driver container and driver validator do. The GPUs are the PCI
    functions of vendor C(0x10de) and class C(0x0300) (graphics) or C(0x0302) (compute) under O(sysfs_root); a node
    without one is left alone (RV(gpu_count=0), nothing runs; with O(state=validated) GPUs nvidia-smi lists there
    anyway are warned about).
  - "O(state=present): a working driver (C(nvidia-smi) answers) is validated and no package is touched, whoever
    installed it (a driver installed outside the package manager is reported as RV(driver.source=pre-installed)).
    Otherwise the driver packages are installed (with the kernel headers DKMS needs), held, the in-kernel
    C(nouveau) and C(nova_core) drivers are blacklisted, the modules loaded, C(nvidia-persistenced) enabled (where
    systemd runs the node; elsewhere a warning says it is left to the node) and the driver validated."
  - "Upgrades and downgrades: when O(version) asks for another version than the node's driver and this module installed
    that driver (O(record_file) names its packages), its packages are unheld, the requested versions installed (apt: the
    package list pinned to the version; dnf: the C(nvidia-driver) module stream switched, then installed) and held again.
    The loaded kernel module stays the old one until the node reboots (RV(reboot_required=true)). A driver this module
    did not install is never replaced: the module fails and says how to proceed."
  - O(state=validated) installs nothing and fails, saying why, when a node with a GPU has no working driver.
  - A driver works when C(nvidia-smi) lists every GPU on the PCI bus but those bound to a VFIO driver or C(pci-stub)
    (passed through to VMs) and SR-IOV virtual functions. A GPU it does not list fails the validation (also after an
    install), naming its bus id, and no C(driver-ready) is written.
  - O(state=absent) removes only what this module installed and wrote, as recorded in O(record_file), restores the
    files it changed byte for byte and unloads the modules when nothing uses them. A pre-installed driver is never touched.
  - A validated driver gets the file C(driver-ready) in O(validations_dir) with C(IS_HOST_DRIVER=true),
    C(NVIDIA_DRIVER_ROOT=/), C(DRIVER_ROOT_CTR_PATH=/host), C(NVIDIA_DEV_ROOT=/) and C(DEV_ROOT_CTR_PATH=/host), as the
    Operator's validator writes for a host driver (the device plugin and toolkit read their driver root from it).
  - "Packages by distribution: Debian (non-free, contrib) C(nvidia-driver), C(nvidia-kernel-dkms) or C(nvidia-open-kernel-dkms),
    C(nvidia-smi), C(nvidia-persistenced); Ubuntu (a branch is needed) C(nvidia-headless-<branch>-server) or
    C(nvidia-headless-<branch>-server-open) and C(nvidia-utils-<branch>-server), or, when the package lists have Canonical's
    precompiled signed module for the running kernel (C(linux-modules-nvidia-<branch>-server[-open]-<kernel release>), asked
    read-only with C(apt-cache policy), also in check mode), that package with C(nvidia-headless-no-dkms-<branch>-server[-open])
    and C(nvidia-utils-<branch>-server), and then no DKMS, no kernel headers and no Secure Boot signing key are needed
    (a full O(version) always takes the DKMS packages);
    RHEL 8 and 9 the CUDA repository's C(nvidia-driver) module stream (C(<branch>-dkms), C(<branch>-open), C(latest-dkms),
    C(open-dkms)). Kernel headers for DKMS: C(linux-headers-<kernel release>) or C(kernel-devel-<kernel release>)."
  - Loading modules fails in a container and before a reboot after C(nouveau) was blacklisted; the module then reports
    RV(driver.loaded=false) and RV(reboot_required=true) with a warning instead of failing.
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
extends_documentation_fragment:
  - gpuops.gpu_operator.discovery
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Nothing that changes the node runs; RV(actions) lists what would.
  diff_mode:
    support: full
    details:
      - Shows the files written or removed (blacklist, C(driver-ready)) and the packages installed, replaced, held or removed,
        one C(NAME VERSION) line each (C((held)) when held), before and after.
      - In check mode the packages are what C(apt-get -s) says the run would install or remove (dependencies included); with
        dnf, or where the simulation fails (package lists not refreshed yet, with a warning), the packages the run names,
        at their pinned version or C((version picked by the run)).
  platform:
    platforms: posix
options:
  state:
    description:
      - V(present) makes sure a working driver is there, installing one when there is none.
      - V(validated) only checks the driver (ClusterPolicy C(driver.enabled=false)) and writes C(driver-ready).
      - V(absent) removes what this module installed.
    type: str
    choices: [present, validated, absent]
    default: present
  version:
    description:
      - The driver branch (V(550)) or full version (V(550.163.01)) to install (ClusterPolicy C(driver.version)).
      - Empty installs the distribution's packaged default; Ubuntu has none and needs a branch.
      - A driver of another version that this module installed is replaced by the requested one (an upgrade or downgrade); one it
        did not install fails the module (uninstall it yourself, or keep it with O(state=validated)).
    type: str
    default: ''
  kernel_module_type:
    description:
      - Which kernel module to install (ClusterPolicy C(driver.kernelModuleType)).
      - V(auto) keeps the type of a loaded module, else takes V(open) when every GPU supports it (Turing and newer) and
        either needs it (Blackwell) or O(version) is branch 560 or later, and V(proprietary) otherwise.
    type: str
    choices: [auto, open, proprietary]
    default: auto
  packages:
    description:
      - Packages to install instead of the computed list (a custom or air-gapped repository, or user-space only packages).
      - No kernel headers are added and Secure Boot is not checked for them.
      - They are installed as given, also when replacing a driver of another version; pin them to O(version) yourself
        (V(nvidia-smi=550.*)).
    type: list
    elements: str
    default: []
  hold:
    description:
      - Hold the driver packages at the installed version (C(apt-mark hold), C(dnf versionlock)).
    type: bool
    default: true
  blacklist_nouveau:
    description:
      - When installing, blacklist C(nouveau) and C(nova_core) in O(modprobe_dir) and update the initramfs (C(update-initramfs -u),
        C(dracut -f)). A node without that tool boots without an initramfs; the blacklist in O(modprobe_dir) applies at its next boot.
    type: bool
    default: true
  load_modules:
    description:
      - Load C(nvidia), C(nvidia_uvm) and C(nvidia_modeset) after installing.
    type: bool
    default: true
  persistence_mode:
    description:
      - Install, enable and start C(nvidia-persistenced) when the driver is installed by this module.
      - Where systemd does not run the node (it is not PID 1, as in a container) the package is installed and the service
        is neither enabled nor started, with a warning.
    type: bool
    default: true
  os_release_path:
    description:
      - The os-release file the distribution is read from.
    type: path
    default: /etc/os-release
  validations_dir:
    description:
      - Directory of the validation files (the Operator's C(/run/nvidia/validations)).
    type: path
    default: /run/nvidia/validations
  modprobe_dir:
    description:
      - Directory of the modprobe configuration the C(nouveau) blacklist goes to.
    type: path
    default: /etc/modprobe.d
  record_file:
    description:
      - Where the module records the packages it installed and the files it changed, for O(state=absent). Mode 0600.
      - A file there that is not such a record (other keys or types) fails the module, naming the key.
    type: path
    default: /var/lib/gpuops/nvidia_driver.json
notes:
  - Secure Boot is read from the EFI variable C(SecureBoot) under O(sysfs_root); when it is enabled and no DKMS signing key
    (C(/var/lib/dkms/mok.pub), C(/var/lib/shim-signed/mok/MOK.der)) exists, the module fails before installing.
  - A C(Driver/library version mismatch) from C(nvidia-smi) fails the module with the fix (reboot, or reload the modules).
  - The package repositories must be configured and their lists fresh (the nvidia_driver role does that).
  - Every file the run would write or remove (in O(validations_dir), O(modprobe_dir), O(record_file)) is checked before the
    first step, in check mode too; one that cannot be written fails the module, naming it, before anything changes.
seealso:
  - name: GPU Operator driver configuration
    description: The ClusterPolicy driver fields this module follows.
    link: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html
'''

EXAMPLES = r'''
- name: Install the Debian packaged driver and load it
  gpuops.gpu_operator.nvidia_driver:
  register: nvidia_driver_result

- name: Install the 570 open kernel module driver on Ubuntu (precompiled modules when Ubuntu has them for the kernel)
  gpuops.gpu_operator.nvidia_driver:
    version: "570"
    kernel_module_type: open

- name: Upgrade the driver this module installed to 570.172.08 (takes effect at the next reboot)
  gpuops.gpu_operator.nvidia_driver:
    version: "570.172.08"
  register: nvidia_driver_result

- name: Check a pre-installed driver (ClusterPolicy driver.enabled=false)
  gpuops.gpu_operator.nvidia_driver:
    state: validated

- name: Remove what the module installed
  gpuops.gpu_operator.nvidia_driver:
    state: absent
'''

RETURN = r'''
gpus:
  description: The GPUs on the PCI bus.
  returned: always
  type: list
  elements: dict
  sample: [{"pci_address": "0000:00:06.0", "vendor_id": "0x10de", "device_id": "0x2335", "class_id": "0x0302", "mode": "compute"}]
gpu_count:
  description: Number of GPUs.
  returned: always
  type: int
  sample: 1
nvswitch_count:
  description: Number of NVSwitches (PCI class C(0x0680)); nodes with NVSwitches need the fabric manager.
  returned: always
  type: int
  sample: 0
driver:
  description:
    - The driver after the run (or as it would be in check mode). C(source) is V(pre-installed) (there before, not by this
      module), V(package) (installed by this module) or V(none) (no driver, or removed by O(state=absent); C(loaded) stays
      true when its modules could not be unloaded).
  returned: always
  type: dict
  contains:
    installed:
      description: Whether a driver is installed (its module loaded, C(nvidia-smi) found, or installed by this module).
      type: bool
      sample: true
    loaded:
      description: Whether the C(nvidia) kernel module is loaded.
      type: bool
      sample: true
    version:
      description:
        - The driver version C(nvidia-smi) or the loaded module reports; for a driver this module installed that is not loaded
          yet (or was replaced while the old module stays loaded) the version of its installed package. Null when unknown.
      type: str
      sample: 580.159.04
    branch:
      description: The branch of RV(driver.version).
      type: str
      sample: "580"
    source:
      description: V(pre-installed), V(package) or V(none).
      type: str
      sample: pre-installed
    kernel_module_type:
      description: V(open) or V(proprietary), from the loaded module or the one chosen to install; null when unknown.
      type: str
      sample: open
nouveau_loaded:
  description: Whether C(nouveau) or C(nova_core) is loaded.
  returned: always
  type: bool
  sample: false
secure_boot:
  description: V(enabled), V(disabled) or V(unknown) (no EFI variable, as in containers and many VMs).
  returned: always
  type: str
  sample: unknown
reboot_required:
  description:
    - A reboot is needed before the driver works (C(nouveau) loaded, modules that could not be loaded or unloaded, a replaced
      driver whose old kernel module is still loaded).
  returned: always
  type: bool
  sample: false
deploy_driver_label:
  description:
    - The value for the Node label C(nvidia.com/gpu.deploy.driver), V(pre-installed) for a driver that was there
      before, V(true) for one this module installed, V(false) without GPU or after O(state=absent) removed the driver.
  returned: always
  type: str
  sample: pre-installed
actions:
  description: The changes made, or that would be made in check mode (commands and files).
  returned: always
  type: list
  elements: str
  sample: ["apt-get install -y --no-install-recommends nvidia-driver nvidia-kernel-dkms nvidia-smi nvidia-persistenced"]
systemd:
  description: Whether systemd runs the node (C(systemctl) is installed and systemd is PID 1); where it does not, no
    service is enabled or started (C(nvidia-persistenced), and the nvidia_driver role's fabric manager).
  returned: always
  type: bool
  sample: true
packages:
  description:
    - The packages this run installs (or would install in check mode) with O(state=present), kernel headers included, and
      removes with O(state=absent); empty when none, as on a rerun where everything is installed.
  returned: always
  type: list
  elements: str
  sample: [nvidia-driver, nvidia-kernel-dkms, nvidia-smi, nvidia-persistenced]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import executor as driver_executor
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import plan as driver_plan
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver import state as driver_state
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError, fail_from_exception
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.discovery import gpu as gpu_discovery
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.driver.state import NOUVEAU_MODULES


def main():
    argument_spec = dict(
        state=dict(type='str', default='present', choices=['present', 'validated', 'absent']),
        version=dict(type='str', default=''),
        kernel_module_type=dict(type='str', default='auto', choices=['auto', 'open', 'proprietary']),
        packages=dict(type='list', elements='str', default=[]),
        hold=dict(type='bool', default=True),
        blacklist_nouveau=dict(type='bool', default=True),
        load_modules=dict(type='bool', default=True),
        persistence_mode=dict(type='bool', default=True),
        os_release_path=dict(type='path', default='/etc/os-release'),
        validations_dir=dict(type='path', default='/run/nvidia/validations'),
        modprobe_dir=dict(type='path', default='/etc/modprobe.d'),
        record_file=dict(type='path', default=driver_state.RECORD_FILE),
    )
    argument_spec.update(gpu_discovery.DISCOVERY_ARG_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    result = dict(changed=False, gpus=[], gpu_count=0, nvswitch_count=0, nouveau_loaded=False, secure_boot='unknown',
                  reboot_required=False, deploy_driver_label='false', actions=[], packages=[], systemd=False,
                  driver=dict(installed=False, loaded=False, version=None, branch=None, source='none', kernel_module_type=None))
    try:
        facts = driver_executor.gather(module)
        result.update(gpus=facts['gpus'], gpu_count=len(facts['gpus']), nvswitch_count=facts['nvswitch_count'],
                      nouveau_loaded=any(name in facts['modules'] for name in NOUVEAU_MODULES), secure_boot=facts['secure_boot'],
                      systemd=facts['systemd'])
        planned = driver_plan.plan(facts, module.params)
        result.update(driver=planned['driver'], packages=planned['packages'], deploy_driver_label=planned['deploy_driver_label'])
        # A file the run could not write fails it before any step (and check mode with it).
        driver_executor.check_steps(planned['steps'])
        if module.check_mode:
            result['actions'] = [driver_plan.describe(step) for step in planned['steps'] if step['kind'] != 'validate']
            result['changed'] = bool(result['actions'])
            if module._diff:
                simulated, warnings = driver_executor.simulate(module, facts, planned['steps'])
                planned['warnings'].extend(warnings)
                result['diff'] = driver_plan.preview_diff(facts, planned['steps'], simulated)
        else:
            executor = driver_executor.Executor(module, facts, planned)
            try:
                executor.run_steps()
            finally:
                result.update(actions=executor.actions, changed=executor.changed)
                if module._diff:
                    result['diff'] = executor.diff
        result['reboot_required'] = planned['reboot_required']
        for warning in planned['warnings']:
            module.warn(warning)
    except GpuOpsError as exc:
        fail_from_exception(module, exc, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
