"""The callback gpuops.gpu_operator.drift_report run by ansible-playbook on the controller alone: what it records from
real task results (a loop with a diff, a task of a role, a failure, ignore_errors, a host that cannot be reached, a
command skipped in check mode), where it writes, and what it says when it cannot write there. The lab run is tests/drift/test_drift_lab.py."""
import json
import os
import subprocess
import sys

import pytest

from tests.cluster.helpers import REPO
from tests.standin.runner import BackgroundStandin, write_kubeconfig

PLAYBOOK = """
- name: Files of the drift test
  hosts: kube_api
  gather_facts: false
  tasks:
    - name: Write the files
      ansible.builtin.copy:
        dest: "{{ drift_dir }}/{{ item }}.txt"
        content: "{{ item }} new\\n"
        mode: "0644"
      loop: [same, other]

    - name: Fail but go on
      ansible.builtin.command: /bin/false
      changed_when: false
      ignore_errors: true

    - name: Run a command
      ansible.builtin.command: /bin/true
      changed_when: false

    - name: Run the role
      ansible.builtin.include_role:
        name: drift_role

- name: The second host
  hosts: broken
  gather_facts: false
  tasks:
    - name: Reach the host
      ansible.builtin.ping:

    - name: Fail here
      ansible.builtin.fail:
        msg: the stage stopped here
"""
INVENTORY = """
all:
  children:
    kube_api:
      hosts:
        localhost: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
    broken:
      hosts:
        other-host: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
        # Nothing listens on port 1: unreachable at once.
        gone-host: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1}
"""


@pytest.fixture(name='project')
def fixture_project(tmp_path):
    (tmp_path / 'files').mkdir()
    (tmp_path / 'files' / 'same.txt').write_text('same new\n')
    (tmp_path / 'files' / 'other.txt').write_text('other old\n')
    (tmp_path / 'playbook.yml').write_text(PLAYBOOK)
    (tmp_path / 'hosts.yml').write_text(INVENTORY)
    tasks = tmp_path / 'roles' / 'drift_role' / 'tasks'
    tasks.mkdir(parents=True)
    (tasks / 'main.yml').write_text('- name: Change in the role\n  ansible.builtin.debug:\n    msg: changed\n  changed_when: true\n')
    return tmp_path


def play(project, *args, enabled=True, **env):
    environ = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_ROLES_PATH=str(project / 'roles'),
                   ANSIBLE_COLLECTIONS_PATH=os.environ.get('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections')),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'])
    environ.update(env)
    if enabled:
        environ['ANSIBLE_CALLBACKS_ENABLED'] = 'gpuops.gpu_operator.drift_report'
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'hosts.yml', 'playbook.yml',
                             '-e', f'drift_dir={project / "files"}', *args],
                            capture_output=True, text=True, check=False, cwd=project, env=environ, timeout=120)
    # other-host fails and gone-host cannot be reached, by design: rc 4 (unreachable wins).
    assert result.returncode == 4, result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.mark.parametrize('args, mode, status, verb', [
    (['--check', '--diff'], 'check', 'drift', 'would change'),
    (['--diff'], 'run', 'changed', 'changed'),
])
def test_report_of_a_run(project, args, mode, status, verb):
    out = play(project, *args)
    report = json.loads((project / 'gpuops-drift-report.json').read_text())
    assert report['mode'] == mode and report['diff'] is True and report['playbook'] == 'playbook.yml'
    assert list(report['hosts']) == ['localhost', 'gone-host', 'other-host'], 'the cluster entry first'
    local, other = report['hosts']['localhost'], report['hosts']['other-host']
    assert local['cluster'] is True and other['cluster'] is False
    assert local['status'] == status and other['status'] == 'failed'
    # The loop's changed item only, with its diff; the role's task under the role; ignore_errors is no failure.
    assert [(stage, [(one['task'], one['item']) for one in found]) for stage, found in local['stages'].items()] == [
        ('Files of the drift test', [('Write the files', 'other')]), ('drift_role', [('Change in the role', None)])]
    assert '-other old\n+other new\n' in local['stages']['Files of the drift test'][0]['diff']
    assert local['failures'] == []
    # Commands are skipped in check mode: drift could hide there.
    assert [{key: one[key] for key in ('stage', 'task')} for one in local['not_checked']] == (
        [{'stage': 'Files of the drift test', 'task': name} for name in ('Fail but go on', 'Run a command')] if mode == 'check' else [])
    assert all('check mode' in one['message'] for one in local['not_checked']), local['not_checked']
    assert other['failures'] == [{'stage': 'The second host', 'task': 'Fail here', 'message': 'the stage stopped here', 'unreachable': False}]
    gone = report['hosts']['gone-host']
    assert gone['status'] == 'unreachable' and gone['stages'] == {} and len(gone['failures']) == 1, gone
    assert gone['failures'][0]['unreachable'] is True and 'port 1' in gone['failures'][0]['message'], gone
    assert report['summary'] == {status: ['localhost'], 'failed': ['other-host'], 'unreachable': ['gone-host']}
    assert f'localhost (cluster): {status} in Files of the drift test (Write the files), drift_role (Change in the role)' in out
    assert 'other-host: FAILED in The second host / Fail here: the stage stopped here' in out
    assert 'gone-host: UNREACHABLE in The second host / Reach the host: ' in out
    text = (project / 'gpuops-drift-report.txt').read_text()
    assert f'localhost / Files of the drift test / Write the files [other] {verb}:\n    --- before: ' in text
    assert (project / 'files' / 'other.txt').read_text() == ('other old\n' if mode == 'check' else 'other new\n')


def test_not_enabled_writes_nothing(project):
    out = play(project, '--check', enabled=False)
    assert not (project / 'gpuops-drift-report.json').exists() and 'DRIFT REPORT' not in out


@pytest.mark.parametrize('where, why', [
    ('missing/report.json', 'No such file or directory'),
    ('a-directory', 'Is a directory'),
    ('a-file/report.json', 'Not a directory'),
])
def test_a_report_path_it_cannot_write(project, where, why):
    (project / 'a-directory').mkdir()
    (project / 'a-file').write_text('x')
    out = play(project, '--check', GPUOPS_DRIFT_REPORT_PATH=where)
    path = project / where
    assert f'the report could not be written to {path}' in ' '.join(out.split()) and why in out, out
    assert 'localhost (cluster): drift in' in out, 'the summary is printed all the same'
    assert not [name for name in os.listdir(project) if name.startswith('.')], 'no temporary file left behind'


def test_report_path_from_ansible_cfg(project):
    (project / 'ansible.cfg').write_text('[gpuops_drift_report]\nreport_path = out/drift.json\n')
    (project / 'out').mkdir()
    play(project, '--check', ANSIBLE_CONFIG=str(project / 'ansible.cfg'))
    report = json.loads((project / 'out' / 'drift.json').read_text())
    assert report['hosts']['localhost']['status'] == 'drift' and report['diff'] is False
    assert '(no diff: run with --diff)' in (project / 'out' / 'drift.txt').read_text()


OBJECTS = """
- name: Cluster objects
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Apply the objects
      kubernetes.core.k8s:
        state: present
        apply: true
        definition:
          - {apiVersion: v1, kind: Namespace, metadata: {name: drift-test}}
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: same, namespace: drift-test}, data: {value: same}}
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: other, namespace: drift-test}, data: {value: "{{ drift_value }}"}}
"""


def test_each_object_kubernetes_core_k8s_would_change(tmp_path):
    """kubernetes.core.k8s given several objects reports each object's result apart: each changed one is listed."""
    standin = BackgroundStandin()
    kubeconfig = tmp_path / 'kubeconfig'
    write_kubeconfig(str(kubeconfig), standin.start())
    (tmp_path / 'playbook.yml').write_text(OBJECTS)
    environ = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', K8S_AUTH_KUBECONFIG=str(kubeconfig),
                   ANSIBLE_COLLECTIONS_PATH=os.environ.get('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections')),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'],
                   ANSIBLE_CALLBACKS_ENABLED='gpuops.gpu_operator.drift_report')
    inventory = 'localhost ansible_connection=local ansible_python_interpreter=' + sys.executable + '\n'
    (tmp_path / 'hosts').write_text(inventory)
    try:
        for args in (['-e', 'drift_value=old'], ['-e', 'drift_value=new', '--check', '--diff']):
            result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'hosts', 'playbook.yml', *args],
                                    capture_output=True, text=True, check=False, cwd=tmp_path, env=environ, timeout=120)
            assert result.returncode == 0, result.stdout + result.stderr
    finally:
        standin.stop()
    found = json.loads((tmp_path / 'gpuops-drift-report.json').read_text())['hosts']['localhost']['stages']['Cluster objects']
    assert [(one['task'], one['item']) for one in found] == [('Apply the objects', 'apply ConfigMap drift-test/other')], found
    assert '-        "value": "old"\n+        "value": "new"\n' in found[0]['diff'], found[0]['diff']


SECRET = 'Pull-pa55word-7f3e'
CONFIG_WITH_CREDENTIALS = """
- name: Node files
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Change the config
      ansible.builtin.copy:
        dest: "{{ config }}"
        content: |
          version = 2
          [plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example".auth]
            username = "robot"
            password = "%s"
          [plugins."io.containerd.grpc.v1.cri".containerd]
            default_runtime_name = "nvidia"
        mode: "0600"
""" % SECRET


def test_report_of_a_config_with_credentials(tmp_path):
    """--check --diff of a 0600 containerd config whose registry password is in the diff's context: the reports show the
    change with the password redacted, and only their owner may read them (also where a world-readable report was)."""
    config = tmp_path / 'config.toml'
    config.write_text(f'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example".auth]\n  username = "robot"\n'
                      f'  password = "{SECRET}"\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n')
    config.chmod(0o600)
    (tmp_path / 'playbook.yml').write_text(CONFIG_WITH_CREDENTIALS)
    (tmp_path / 'hosts').write_text(f'localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n')
    (tmp_path / 'gpuops-drift-report.txt').write_text('an earlier report\n')
    (tmp_path / 'gpuops-drift-report.txt').chmod(0o644)
    environ = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
                   ANSIBLE_COLLECTIONS_PATH=os.environ.get('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections')),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'],
                   ANSIBLE_CALLBACKS_ENABLED='gpuops.gpu_operator.drift_report')
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'hosts', 'playbook.yml',
                             '-e', f'config={config}', '--check', '--diff'],
                            capture_output=True, text=True, check=False, cwd=tmp_path, env=environ, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ('gpuops-drift-report.json', 'gpuops-drift-report.txt'):
        assert os.stat(tmp_path / name).st_mode & 0o777 == 0o600, name
        assert SECRET not in (tmp_path / name).read_text(), name
    [change] = json.loads((tmp_path / 'gpuops-drift-report.json').read_text())['hosts']['localhost']['stages']['Node files']
    assert '   password = "********"\n [plugins."io.containerd.grpc.v1.cri".containerd]\n-  default_runtime_name = "runc"\n' in change['diff']
    # What the callback prints is its summary; the diff itself is the stdout callback's (ansible.builtin.copy's own).
    assert 'localhost (cluster): drift' not in result.stdout and 'localhost: drift in Node files (Change the config)' in result.stdout
