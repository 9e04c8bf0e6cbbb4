"""kubernetes.core.k8s and k8s_info (through ansible-playbook) against the API: idempotent apply, label selectors."""
import os
import re
import subprocess
import sys
import textwrap

from tests.cluster.helpers import REPO, delete_namespace, unique

PLAYBOOK = textwrap.dedent('''\
    - hosts: localhost
      gather_facts: false
      vars:
        ns: "{{ test_namespace }}"
      tasks:
        - name: Namespace, ConfigMap and DaemonSet
          kubernetes.core.k8s:
            state: present
            apply: true
            definition:
              - {apiVersion: v1, kind: Namespace, metadata: {name: "{{ ns }}", labels: {gpuops.test/ansible: "yes"}}}
              - apiVersion: v1
                kind: ConfigMap
                metadata: {name: settings, namespace: "{{ ns }}", labels: {app: gpuops-test}}
                data: {driver: "550"}
              - apiVersion: apps/v1
                kind: DaemonSet
                metadata: {name: agent, namespace: "{{ ns }}", labels: {app: gpuops-test}}
                spec:
                  selector: {matchLabels: {app: agent}}
                  template:
                    metadata: {labels: {app: agent}}
                    spec:
                      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
                      containers:
                        - name: agent
                          image: registry.example/agent:1
                          env: [{name: A, value: "1"}]
                          volumeMounts: [{name: dev, mountPath: /dev}]
                      volumes: [{name: dev, hostPath: {path: /dev}}]
        - name: Objects by label
          kubernetes.core.k8s_info:
            kind: "{{ item }}"
            namespace: "{{ ns }}"
            label_selectors: [app=gpuops-test]
          loop: [ConfigMap, DaemonSet]
          register: found
        - name: Each kind is found once by its label
          ansible.builtin.assert:
            that: found.results | map(attribute='resources') | map('length') | list == [1, 1]
        - name: No match for another label
          kubernetes.core.k8s_info: {kind: ConfigMap, namespace: "{{ ns }}", label_selectors: [app=other]}
          register: unmatched
        - name: Nothing matches another label
          ansible.builtin.assert:
            that: unmatched.resources == []
''')


def run_playbook(kube_api, tmp_path, namespace):
    playbook = tmp_path / 'k8s.yml'
    playbook.write_text(PLAYBOOK)
    env = kube_api.env()
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections'))
    env['ANSIBLE_LOCALHOST_WARNING'] = 'false'
    env['ANSIBLE_INVENTORY_UNPARSED_WARNING'] = 'false'
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    result = subprocess.run([ansible, str(playbook), '-e', f'test_namespace={namespace}', '-e', f'ansible_python_interpreter={sys.executable}'],
                            env=env, capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    recap = re.search(r'localhost\s*:\s*ok=(\d+)\s+changed=(\d+)', result.stdout)
    assert recap, result.stdout
    return int(recap.group(2))


def test_apply_twice_then_unchanged(kube_api, tmp_path):
    namespace = unique('gpuops-ansible')
    try:
        assert run_playbook(kube_api, tmp_path, namespace) == 1, 'the first run creates (one task changes)'
        assert run_playbook(kube_api, tmp_path, namespace) == 0, 'the second run changes nothing'
    finally:
        delete_namespace(kube_api, namespace)
