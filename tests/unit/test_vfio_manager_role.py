"""Role vfio_manager through ansible-playbook, its settings written as inventory host variables: a vm-passthrough node
(the workload set per host) gets its GPU bound to vfio-pci in its copy of the h100-x1 capture, a node left at the
default workload (container: the ClusterPolicy has no sandboxWorkloads) is not touched; the role's state=absent, as
playbooks/uninstall.yml runs it, gives the GPU back and leaves the copy as it was.

The copies are built and the kernel's part is played by tests/unit/plugins/modules/test_vfio_manager.py (it says which
files it adds to the capture and why)."""
import json
import os
import subprocess
import sys

import yaml

from tests.unit.plugins.modules.test_vfio_manager import GPU, build_node, kernel, snapshot

HOSTS = ('vmhost', 'containerhost', 'unmanagedhost')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def play(tmp_path, name, role_vars):
    playbook = [{'name': name, 'hosts': 'gpu_nodes', 'gather_facts': False,
                 'roles': [dict({'role': 'gpuops.gpu_operator.vfio_manager'}, **role_vars)],
                 'post_tasks': [{'name': 'Keep the result', 'ansible.builtin.copy': {
                     'dest': '{{ vfio_test_result }}', 'mode': '0600',
                     'content': '{{ {"result": vfio_manager_result, "passthrough": vfio_manager_passthrough} | to_json }}'}}]}]
    path = tmp_path / (name + '.yml')
    path.write_text(yaml.safe_dump(playbook, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'), ANSIBLE_LOCALHOST_WARNING='false')
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    proc = subprocess.run([ansible, '-i', str(tmp_path / 'hosts.yml'), str(path)], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict((host, json.loads((tmp_path / host / 'result.json').read_text())) for host in HOSTS)


def test_vm_passthrough_node_bound_container_node_untouched_and_uninstall_gives_back(tmp_path):
    hosts = {}
    for host in HOSTS:
        (tmp_path / host).mkdir()
        args = build_node(tmp_path / host)
        hosts[host] = dict(
            ansible_connection='local', ansible_python_interpreter=sys.executable,
            vfio_manager_sysfs_root=args['sysfs_root'], vfio_manager_procfs_root=args['procfs_root'],
            vfio_manager_record_file=args['record_file'], vfio_manager_udev_rules_file=args['udev_rules_file'],
            vfio_manager_modules_load_file=args['modules_load_file'], vfio_test_result=str(tmp_path / host / 'result.json'))
    hosts['vmhost']['vfio_manager_workload_config'] = 'vm-passthrough'
    # vm-passthrough, but the ClusterPolicy deploys no vfio-manager: its GPUs are someone else's to bind. With no kube_api
    # host each host resolves its own ClusterPolicy.
    hosts['unmanagedhost'].update(vfio_manager_workload_config='vm-passthrough', gpu_operator_policy={'vfioManager': {'enabled': False}})
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'children': {'gpu_nodes': {'hosts': hosts}}}}))
    before = dict((host, snapshot(str(tmp_path / host))) for host in hosts)

    installed = play(tmp_path, 'install', {})
    assert installed['vmhost']['passthrough'] is True and installed['vmhost']['result']['changed'] is True
    assert [action['action'] for action in installed['vmhost']['result']['actions']] == ['override', 'unbind', 'bind']
    sysfs = hosts['vmhost']['vfio_manager_sysfs_root']
    assert open(os.path.join(sysfs, 'bus', 'pci', 'drivers', 'vfio-pci', 'bind')).read() == GPU
    assert installed['containerhost'] == {'passthrough': False, 'result': dict(installed['containerhost']['result'], changed=False, actions=[])}
    assert installed['unmanagedhost']['passthrough'] is True
    assert (installed['unmanagedhost']['result']['changed'], installed['unmanagedhost']['result']['actions']) == (False, [])
    for host in ('containerhost', 'unmanagedhost'):
        now = snapshot(str(tmp_path / host))
        now.pop('result.json')
        assert now == before[host], host

    kernel(dict(sysfs_root=sysfs))
    removed = play(tmp_path, 'uninstall', {'vars': {'vfio_manager_state': 'absent'}})
    assert removed['vmhost']['passthrough'] is False
    assert [action['action'] for action in removed['vmhost']['result']['actions']] == ['unbind', 'override', 'bind']
    kernel(dict(sysfs_root=sysfs))
    # What the kernel shows once an empty override is written.
    with open(os.path.join(sysfs, 'bus', 'pci', 'devices', GPU, 'driver_override'), 'w') as handle:
        handle.write('(null)\n')
    after = snapshot(str(tmp_path / 'vmhost'))
    after.pop('result.json')
    assert after == before['vmhost']
