"""playbooks/site.yml and uninstall.yml on a vm-passthrough node (issue 27), against the stand-in (tests/standin).

The GPU node is this machine, reached locally; its GPU is a copy of the h100-x1 capture that
tests/unit/plugins/modules/test_vfio_manager.build_node builds (it lists the files it adds to the capture and why: the
driver link the capture recorded, the kernel's bind/unbind attributes, an IOMMU group). The workload is set as an
Operator user sets it: sandboxWorkloads.enabled (mode kata) in the ClusterPolicy and the Node label
nvidia.com/gpu.workload.config=vm-passthrough (the inventory's vfio_manager_workload_config is the role test's,
tests/unit/test_vfio_manager_role.py). site.yml labels the node, binds its GPU to vfio-pci (the writes are read back
from the copy) and ends the node there: the driver and container toolkit stages do not run on it, nor on a vm-vgpu node
beside it (its own copy, left as it was). The kernel's part is
then played by test_vfio_manager.kernel; doctor.yml reads the workload from the Node label too, finds the GPU on
vfio-pci, and a host that offers no confidential VMs to the CC manager. uninstall.yml (its driver and toolkit
package removals, which would act on this machine, skipped as in test_secrets.py) gives the GPU back: the copy ends as
it began. Three ansible-playbook runs (~45 s of CPU).
"""
import json
import os
import subprocess
import sys

import kubernetes
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import WORKLOAD_CONFIG
from tests.cluster.helpers import GPUS, REPO, nvidia_smi_simulator
from tests.standin.runner import BackgroundStandin, write_kubeconfig
from tests.unit.plugins.modules.test_vfio_manager import GPU, build_node, kernel, snapshot

NODE = 'gpu-vm-passthrough'
VGPU_NODE = 'gpu-vm-vgpu'  # a node of the vm-vgpu workload beside it: its GPUs are the host vGPU manager's
NAMESPACE = 'gpuops-vfio'


def gpu_node(tmp_path, name):
    """(inventory host vars, build_node's paths) of a node served its own copy of the capture."""
    node_dir = tmp_path / name
    node_dir.mkdir()
    args = build_node(node_dir)
    host = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'gpu_node_labels_node_name': name,
            'gpu_node_labels_sysfs_root': args['sysfs_root'], 'gpu_node_labels_procfs_root': str(GPUS / 'h100-x1' / 'proc'),
            'gpu_node_labels_nvidia_smi': nvidia_smi_simulator(tmp_path / 'nvidia-smi', GPUS / 'h100-x1'),
            'nvidia_driver_enabled': False, 'container_toolkit_enabled': False, 'vfio_manager_sysfs_root': args['sysfs_root'],
            'vfio_manager_procfs_root': args['procfs_root'], 'vfio_manager_record_file': args['record_file'],
            'vfio_manager_udev_rules_file': args['udev_rules_file'], 'vfio_manager_modules_load_file': args['modules_load_file']}
    return host, args


def test_site_binds_the_gpu_ends_the_node_and_uninstall_gives_it_back(tmp_path):
    node, args = gpu_node(tmp_path, NODE)
    vgpu_node, _vgpu_args = gpu_node(tmp_path, VGPU_NODE)
    before, vgpu_before = snapshot(str(tmp_path / NODE)), snapshot(str(tmp_path / VGPU_NODE))
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {
        'vars': {'gpu_cluster_base_namespace': NAMESPACE, 'gpu_cluster_operands_namespace': NAMESPACE,
                 'gpu_cluster_validator_namespace': NAMESPACE, 'gpu_operator_policy': {'sandboxWorkloads': {'enabled': True, 'mode': 'kata'}}},
        'children': {'kube_api': {'hosts': {'api': local}}, 'gpu_nodes': {'hosts': {NODE: node, VGPU_NODE: vgpu_node}}}}}))
    server = BackgroundStandin(nodes=[NODE, VGPU_NODE])
    url = server.start()
    try:
        kubeconfig = tmp_path / 'kubeconfig'
        write_kubeconfig(str(kubeconfig), url)
        with kubernetes.config.new_client_from_config(config_file=str(kubeconfig)) as client:
            for name, workload in ((NODE, 'vm-passthrough'), (VGPU_NODE, 'vm-vgpu')):
                kubernetes.client.CoreV1Api(client).patch_node(name, {'metadata': {'labels': {WORKLOAD_CONFIG: workload}}})
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false',
                   ANSIBLE_COLLECTIONS_PATH=os.environ.get('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections')),
                   K8S_AUTH_KUBECONFIG=str(kubeconfig), ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'))
        env.pop('KUBECONFIG', None)
        ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')

        def play(name, *options):
            result = subprocess.run([ansible, '-i', str(inventory), str(REPO / 'playbooks' / name), *options],
                                    env=env, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
            out = result.stdout + result.stderr
            assert result.returncode == 0, out[-8000:]
            return out

        out = play('site.yml', '--skip-tags', 'validation')
        pci = os.path.join(args['sysfs_root'], 'bus', 'pci')
        assert open(os.path.join(pci, 'devices', GPU, 'driver_override')).read() == 'vfio-pci'
        assert open(os.path.join(pci, 'drivers', 'nvidia', 'unbind')).read() == GPU
        assert open(os.path.join(pci, 'drivers', 'vfio-pci', 'bind')).read() == GPU
        assert os.path.isfile(args['udev_rules_file']) and os.path.isfile(args['modules_load_file'])
        words = ' '.join(out.split())
        assert ('Node %s labelled, vm-passthrough (GPUs bound to vfio-pci): no driver, container toolkit or validation stage ran there'
                % NODE) in words, out
        assert ('Node %s labelled, vm-vgpu (GPUs for vGPU through the vGPU manager on the host): no driver, container toolkit or '
                'validation stage ran there' % VGPU_NODE) in words, out
        assert snapshot(str(tmp_path / VGPU_NODE)) == vgpu_before, 'nothing bound on the vm-vgpu node'
        assert 'TASK [gpuops.gpu_operator.nvidia_driver' not in out and 'TASK [gpuops.gpu_operator.container_toolkit' not in out, out

        kernel(args)
        report = tmp_path / 'doctor.json'
        play('doctor.yml', '-e', 'doctor_report_path=%s' % report)
        checked = json.loads(report.read_text())['nodes'][NODE]
        assert checked['facts']['workload_config'] == 'vm-passthrough', checked['facts']
        assert [(f['address'], f['driver']) for f in checked['facts']['vfio']['functions']] == [(GPU, 'vfio-pci')]
        # Its labels are the workload's, and no container runtime or device plugin is looked for there. In Kata mode the CC
        # manager (on by default, as in the chart) needs a host that runs confidential VMs: the capture keeps only the
        # sysfs files discovery reads (h100-x1/SOURCE.md), no /sys/module/kvm_*.
        assert [(f['check'], f['evidence']) for f in checked['findings'] if f['severity'] != 'info'] == [('cc-tee-off', [
            'AMD SEV-SNP: /sys/module/kvm_amd/parameters/sev_snp is absent (kvm_amd not loaded)',
            'Intel TDX: /sys/module/kvm_intel/parameters/tdx is absent (kvm_intel not loaded)'])], checked['findings']
        play('uninstall.yml', '--skip-tags', 'validation,toolkit,driver')
        kernel(args)
    finally:
        server.stop()
    # What the kernel shows once an empty override is written.
    with open(os.path.join(args['sysfs_root'], 'bus', 'pci', 'devices', GPU, 'driver_override'), 'w') as handle:
        handle.write('(null)\n')
    assert snapshot(str(tmp_path / NODE)) == before
