"""A vm-passthrough lab node through playbooks/site.yml and uninstall.yml (issue 27), with the GPU Operator's own sample
ClusterPolicy.

One bookworm lab node and its Node on a stand-in of its own. The node's GPU is a copy of the h100-x1 capture prepared by
tests/unit/plugins/modules/test_vfio_manager.build_node (its docstring lists the files it adds to the capture and why: the
driver link the capture recorded, the kernel's bind/unbind attributes, an IOMMU group and IOMMU kernel parameters). The copy
is made on the controller and put into the node (podman cp keeps its links) at /var/lib/gpuops-lab/vfio-node; the labels
stage and the vfio_manager role read it there (host variables of the inventory, in YAML). The labels stage's procfs stays
the capture's own (mounted by labctl.py): the copy's proc holds only the command line. The record, the udev rule and the
modules-load file are the role's defaults, the node's own /var/lib/gpuops and /etc.

The ClusterPolicy is tests/fixtures/gpu-operator/v1_clusterpolicy.yaml (NVIDIA/gpu-operator config/samples, see
SOURCE.md), the whole object, unchanged but for one field the test sets: sandboxWorkloads.enabled: true. It is given as a
user gives it: gpu_operator_policy in group_vars/all.yml, read from the file with lookup('file') | from_yaml. The Node
carries nvidia.com/gpu.workload.config=vm-passthrough, as the admin labels it.

The kernel's part: vfio_manager writes driver_override, unbind and bind in one module run and does not read the driver
link back afterwards, and nothing in site.yml reads it on this node after the stage. So the writes are observed in the
copy as the module left them, and only then does the kernel double act on them: test_vfio_manager.kernel itself (its
source, run by python3 in the node on the node's copy) moves the driver link, as the kernel does on those writes. The
same after uninstall.yml; the kernel then shows "(null)" in driver_override again, which the test writes (as the unit
test does).

site.yml runs with --skip-tags validation (the stand-in runs no Pods). Asserted: the writes; the rule, the modules-load
file and the record; nothing else under /etc, the record's directory or the copy changed (containerd's config among
them: the driver and container toolkit stages did not run) and containerd was not restarted; the Node's state labels are
the vm-passthrough ones and none of a container node's; the sandbox DaemonSets the sample enables select the Node and
no container operand's does; the summary says the node ended as vm-passthrough. uninstall.yml then gives the GPU back
(nvidia/bind got the address, the link points to nvidia again) and the copy, /etc and /var/lib/gpuops are as before,
byte for byte, and so are the node's packages and package lists (uninstall.yml's container toolkit stage once installed
python3-tomlkit there, refreshing the lists, to read a containerd config it had never configured). What each run took is
printed.
"""
import inspect
import io
import json
import re
import subprocess
import sys
import tarfile
import time

import yaml

from tests.cluster.helpers import REPO, raw
from tests.lab.labtest import ANSIBLE_PLAYBOOK, lab_inventory, named_lab_nodes, playbook_environment, run
from tests.unit.plugins.modules.test_vfio_manager import GPU, build_node, kernel, snapshot

PREFIX = 'gpuops-vfio-'
NODE = PREFIX + 'bookworm'
COPY = '/var/lib/gpuops-lab/vfio-node'
SYSFS = COPY + '/sys'
PCI = SYSFS + '/bus/pci'
SAMPLE = REPO / 'tests' / 'fixtures' / 'gpu-operator' / 'v1_clusterpolicy.yaml'
NAMESPACE = 'gpu-operator'
WORKLOAD = 'nvidia.com/gpu.workload.config'
DEPLOY = 'nvidia.com/gpu.deploy.'
# SOURCE: NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go, gpuStateLabels: the state labels of a vm-passthrough
# node (sandboxWorkloads.mode kubevirt, the default) and those of a container node (mig-manager: a MIG-capable one).
PASSTHROUGH_COMPONENTS = ('cc-manager', 'client', 'kata-manager', 'sandbox-device-plugin', 'sandbox-validator', 'vfio-manager')
CONTAINER_ONLY_COMPONENTS = ('container-toolkit', 'dcgm', 'dcgm-exporter', 'device-plugin', 'driver', 'gpu-feature-discovery',
                             'mig-manager', 'node-status-exporter', 'operator-validator')
# The DaemonSets of the sandbox operands the sample enables (sandboxDevicePlugin, vfioManager; the sandbox validator)
SANDBOX_DAEMONSETS = {'nvidia-sandbox-device-plugin-daemonset', 'nvidia-sandbox-validator', 'nvidia-vfio-manager'}
# What the stage writes on the node, besides the copy's sysfs attributes.
UDEV_RULE = 'etc/udev/rules.d/60-gpuops-vfio-pci.rules'
MODULES_LOAD = 'etc/modules-load.d/gpuops-vfio-pci.conf'
RECORD = 'var/lib/gpuops/vfio_manager.json'


def on_node(*argv):
    return run('podman', 'exec', NODE, *argv)


def node_state(tmp_path, name):
    """snapshot() of /etc, /var/lib/gpuops (when there) and the copy, as tar brings them from the node, with the node's
    packages and its package lists (a package installed and removed again refreshes them)."""
    archive = subprocess.run(['podman', 'exec', NODE, 'sh', '-c', f'cd / && tar -cf - etc {COPY[1:]} $(test -d var/lib/gpuops && echo var/lib/gpuops)'],
                             capture_output=True, check=False)
    assert archive.returncode == 0, archive.stderr
    root = tmp_path / 'state' / name
    root.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter='tar')
    packages = on_node('sh', '-c', "dpkg-query -W -f '${Package}=${Version} ${Status}\\n'; ls -A /var/lib/apt/lists")
    return dict(snapshot(str(root)), **{'(packages and package lists)': packages})


def kernel_double():
    """test_vfio_manager.kernel, run in the node on its copy: the kernel's part on the writes the module made."""
    on_node('python3', '-c', 'import os\n' + inspect.getsource(kernel) + f'\nkernel({{"sysfs_root": {SYSFS!r}}})\n')


def containerd_run():
    return on_node('systemctl', 'show', 'containerd', '-p', 'InvocationID', '-p', 'MainPID')


def write_inventory(tmp_path):
    """The lab inventory with this node only, the copy in its host variables, and the sample ClusterPolicy as
    gpu_operator_policy in group_vars/all.yml."""
    directory = tmp_path / 'inventory'
    (directory / 'group_vars').mkdir(parents=True)
    inventory = lab_inventory(PREFIX)
    hosts = inventory['all']['children']['gpu_nodes']['hosts']
    inventory['all']['children']['gpu_nodes']['hosts'] = {NODE: dict(
        hosts[NODE], gpuops_lab_fixture='h100-x1', gpu_node_labels_sysfs_root=SYSFS, vfio_manager_sysfs_root=SYSFS,
        vfio_manager_procfs_root=COPY + '/proc')}
    (directory / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    policy = yaml.safe_load(SAMPLE.read_text())
    assert policy['spec']['sandboxWorkloads'] == {'enabled': False, 'defaultWorkload': 'container'}
    policy['spec']['sandboxWorkloads']['enabled'] = True
    (directory / 'clusterpolicy.yaml').write_text(yaml.safe_dump(policy, sort_keys=False))
    (directory / 'group_vars' / 'all.yml').write_text(
        "---\ngpu_operator_policy: \"{{ lookup('ansible.builtin.file', inventory_dir ~ '/clusterpolicy.yaml') | from_yaml }}\"\n")
    return directory / 'hosts.yml'


def playbook(tmp_path, kubeconfig, inventory, name, *args):
    started = time.monotonic()
    result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), f'playbooks/{name}', *args], capture_output=True, text=True,
                            check=False, cwd=REPO, env=playbook_environment(kubeconfig), timeout=600)
    print(f'{name} {" ".join(args)}: {time.monotonic() - started:.1f} s', file=sys.stderr)
    out = result.stdout + result.stderr
    (tmp_path / (name + '.log')).write_text(out)
    assert result.returncode == 0, out[-8000:]
    return out


def selects(daemonset, labels):
    selector = daemonset['spec']['template']['spec'].get('nodeSelector') or {}
    return all(labels.get(key) == value for key, value in selector.items())


def test_a_vm_passthrough_node_with_the_sample_policy_is_bound_ends_there_and_is_given_back(tmp_path):
    started = time.monotonic()
    build_node(tmp_path / 'node')
    inventory = write_inventory(tmp_path)
    with named_lab_nodes(tmp_path, {NODE: ('bookworm', 'h100-x1')}) as (kubeconfig, kube):
        print(f'lab node up: {time.monotonic() - started:.1f} s', file=sys.stderr)
        run('podman', 'cp', str(tmp_path / 'node'), f'{NODE}:{COPY}')
        code, body = raw(kube, 'PATCH', f'/api/v1/nodes/{NODE}', {'metadata': {'labels': {WORKLOAD: 'vm-passthrough'}}},
                         content_type='application/merge-patch+json')
        assert code == 200, body
        before = node_state(tmp_path, 'before')
        containerd = containerd_run()

        out = playbook(tmp_path, kubeconfig, inventory, 'site.yml', '--skip-tags', 'validation')
        # The module's writes, as the module left them (before the kernel double acts on them).
        assert on_node('cat', f'{PCI}/devices/{GPU}/driver_override') == 'vfio-pci'
        assert on_node('cat', f'{PCI}/drivers/nvidia/unbind') == GPU
        assert on_node('cat', f'{PCI}/drivers/vfio-pci/bind') == GPU
        bound = node_state(tmp_path, 'bound')
        changed = sorted(key for key in set(before) | set(bound) if before.get(key) != bound.get(key))
        copy = COPY[1:] + '/sys/bus/pci/'
        assert changed == sorted([UDEV_RULE, MODULES_LOAD, RECORD, copy + f'devices/{GPU}/driver_override',
                                  copy + 'drivers/nvidia/unbind', copy + 'drivers/vfio-pci/bind']), changed
        assert bound[UDEV_RULE].decode().splitlines()[-1] == \
            f'ACTION=="add", SUBSYSTEM=="pci", KERNEL=="{GPU}", ATTR{{driver_override}}="vfio-pci"'
        assert bound[MODULES_LOAD].decode().splitlines()[-1] == 'vfio-pci'
        assert json.loads(bound[RECORD])['functions'] == {GPU: {'driver': 'nvidia', 'driver_override': None}}
        assert containerd_run() == containerd, 'containerd was restarted'
        assert 'TASK [gpuops.gpu_operator.nvidia_driver' not in out and 'TASK [gpuops.gpu_operator.container_toolkit' not in out
        assert re.search(rf'{NODE}: Debian 12\S*, kernel \S+, Node {NODE} labelled, vm-passthrough \(GPUs bound to vfio-pci\): '
                         'no driver, container toolkit or validation stage ran there', ' '.join(out.split())), out[out.find('Per-node summary'):]

        code, node = raw(kube, 'GET', f'/api/v1/nodes/{NODE}')
        assert code == 200, node
        labels = node['metadata']['labels']
        assert labels[WORKLOAD] == 'vm-passthrough' and labels['nvidia.com/gpu.product'] == 'NVIDIA-H100-80GB-HBM3', labels
        assert sorted(key[len(DEPLOY):] for key, value in labels.items() if key.startswith(DEPLOY) and value == 'true') == \
            list(PASSTHROUGH_COMPONENTS), labels
        assert not [key for key in labels if key[len(DEPLOY):] in CONTAINER_ONLY_COMPONENTS], labels
        code, listing = raw(kube, 'GET', f'/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets')
        assert code == 200, listing
        daemonsets = {item['metadata']['name']: item for item in listing['items']}
        selected = {name for name, daemonset in daemonsets.items() if selects(daemonset, labels)}
        assert selected == SANDBOX_DAEMONSETS, (selected, sorted(daemonsets))
        # The container operands the sample enables are applied too (the Operator deploys them for the cluster's
        # container nodes), and none selects this node.
        assert {'nvidia-device-plugin-daemonset', 'nvidia-dcgm', 'nvidia-dcgm-exporter', 'gpu-feature-discovery',
                'nvidia-mig-manager'} <= set(daemonsets) - selected, sorted(daemonsets)

        kernel_double()
        assert on_node('readlink', f'{PCI}/devices/{GPU}/driver') == '../../drivers/vfio-pci\n'

        playbook(tmp_path, kubeconfig, inventory, 'uninstall.yml')
        assert on_node('cat', f'{PCI}/drivers/nvidia/bind') == GPU
        kernel_double()
        assert on_node('readlink', f'{PCI}/devices/{GPU}/driver') == '../../drivers/nvidia\n'
        # The kernel shows "(null)" again once an empty override is written.
        assert on_node('cat', f'{PCI}/devices/{GPU}/driver_override') == '\n'
        on_node('sh', '-c', f"printf '(null)\\n' > {PCI}/devices/{GPU}/driver_override")
        after = node_state(tmp_path, 'after')
        assert after == before, sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))
    print(f'whole test: {time.monotonic() - started:.1f} s', file=sys.stderr)
