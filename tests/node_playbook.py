"""Node-side modules through real ansible-playbook on localhost, their options written as YAML inventory variables.

Options reach the module as a user's inventory hands them over (ansible-core 2.19's templated, tagged values,
not the plain dicts of an in-process run). Every step runs with ignore_errors, so one playbook run serves many
cases; run_steps() returns each step's registered result and the playbook's output. The node's files are
wherever the steps' options point (a temporary directory): nothing here reads or writes the host's own.
"""
import json
import os
import re
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = re.compile(r'^[a-z][a-z0-9_]*$')


class Step(object):
    """One task: `module` (short name in gpuops.gpu_operator) with options `args`, registered as `name`."""

    def __init__(self, name, module, args, check_mode=False, diff=False, environment=None):
        assert NAME.match(name), name
        self.name, self.module, self.args = name, module, args
        self.check_mode, self.diff, self.environment = check_mode, diff, environment or {}

    def task(self):
        options = dict((key, '{{ node_cases.%s.%s }}' % (self.name, key)) for key in self.args)
        task = {'name': self.name, 'gpuops.gpu_operator.%s' % self.module: options, 'register': self.name,
                'ignore_errors': True, 'check_mode': self.check_mode, 'diff': self.diff}
        if self.environment:
            task['environment'] = self.environment
        return task


def run_steps(tmp_path, steps, timeout=300):
    """Run `steps` in order in one ansible-playbook run; ({step name: registered result}, output)."""
    names = [step.name for step in steps]
    assert len(set(names)) == len(names), names
    work = tmp_path / 'ansible'
    work.mkdir()
    inventory = {'all': {'hosts': {'localhost': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'node_cases': dict((step.name, step.args) for step in steps)}}}}
    (work / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    results = work / 'results.json'
    keep = {'name': 'Keep the results', 'check_mode': False, 'ansible.builtin.copy': {
        'dest': str(results), 'mode': '0600',
        'content': '{{ {%s} | to_json }}' % ', '.join("'%s': %s" % (name, name) for name in names)}}
    playbook = [{'hosts': 'localhost', 'gather_facts': False, 'tasks': [step.task() for step in steps] + [keep]}]
    (work / 'playbook.yml').write_text(yaml.safe_dump(playbook, sort_keys=False))
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_NOCOLOR='1',
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_LOCAL_TEMP=str(work / 'tmp'), ANSIBLE_REMOTE_TEMP=str(work / 'tmp'))
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    proc = subprocess.run([ansible, '-i', str(work / 'hosts.yml'), str(work / 'playbook.yml')], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and results.exists(), output
    return json.loads(results.read_text()), output


def outcome(result, failed):
    """Assert that a step failed (or not) as stated, and that a failure was the module's own (fail_json), not a crash;
    returns its message."""
    assert bool(result.get('failed')) is failed, result
    # ansible-core 2.19 reports an exception the module did not handle as "Task failed: Module failed: ..." with its
    # traceback; fail_json's failures carry "(traceback unavailable)".
    msg = result.get('msg', '')
    assert not msg.startswith('Task failed') and 'MODULE FAILURE' not in msg and 'Traceback' not in str(result.get('exception', '')), result
    return msg
