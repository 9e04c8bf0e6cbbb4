"""The rule for secrets, read off every task of every role and playbook: a task that carries a secret is no_log, or the
secret does not reach what the task shows.

Secret variables are the role options whose argument spec says no_log, themselves or in a suboption (the password of
gpu_cluster_base_registry_credentials). A task that names one is no_log, or names it only in a condition (when,
changed_when, failed_when, until: ansible-core shows the expression, never the value), as a module option the module
keeps out of its output (no_log in its argument spec), or in a loop over fields without a secret
(`| map(attribute='name')`). A loop over the secret items themselves is not enough with a loop_control.label: each
item's result holds the item, and -v prints it (a skipped item's too).

Secret options are the module options named like a credential (kubeconfig, api_key, password, token, secret): a task
that gives one is no_log, or its module keeps the option out of its output (this collection's modules, whose specs
tests/unit/plugins/modules/test_secret_options.py reads; kubernetes.core's, whose AUTH_ARG_SPEC says so).

The complement of tests/cluster/test_secrets.py, which runs the playbooks and looks for the secrets in what they show.
"""
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC as KUBERNETES_CORE_AUTH
from tests.unit.plugins.modules.test_secret_options import CREDENTIAL, argument_spec

REPO = Path(__file__).resolve().parents[2]
# Where ansible-core shows the expression and not its value.
CONDITIONS = ('when', 'changed_when', 'failed_when', 'until')
LOOPS = ('loop', 'with_items', 'with_list', 'with_dict', 'with_subelements')
BLOCKS = ('block', 'rescue', 'always')
TASK_LISTS = ('tasks', 'pre_tasks', 'post_tasks', 'handlers')
COLLECTION = 'gpuops.gpu_operator.'


def secret_variables():
    """{variable: the fields of its items that hold no secret}: each role option with no_log, itself or in a suboption."""
    found = {}
    for specs in sorted(REPO.glob('roles/*/meta/argument_specs.yml')):
        for entry in (yaml.safe_load(specs.read_text())['argument_specs'] or {}).values():
            for name, spec in (entry.get('options') or {}).items():
                suboptions = spec.get('options') or {}
                if spec.get('no_log') or any(sub.get('no_log') for sub in suboptions.values()):
                    found[name] = tuple(sorted(field for field, sub in suboptions.items() if not sub.get('no_log')))
    return found


def task_files():
    return sorted(REPO.glob('roles/*/tasks/*.yml')) + sorted(REPO.glob('roles/*/handlers/*.yml')) + sorted(REPO.glob('playbooks/*.yml'))


def tasks_of(items):
    """Every task (no blocks) in a task list, blocks opened."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if any(key in item for key in BLOCKS):
            for key in BLOCKS:
                yield from tasks_of(item.get(key))
        else:
            yield item


def all_tasks():
    """(file, task) of every role and playbook."""
    for path in task_files():
        content = yaml.safe_load(path.read_text()) or []
        plays = [item for item in content if isinstance(item, dict) and 'hosts' in item]
        lists = [play.get(key) for play in plays for key in TASK_LISTS] if plays else [content]
        for items in lists:
            for task in tasks_of(items):
                yield path.relative_to(REPO), task


def module_of(task):
    """(module, its options) of a task; modules are written with their FQCN (ansible-lint's fqcn rule)."""
    found = [key for key in task if '.' in key]
    assert len(found) == 1, task
    return found[0], task[found[0]] if isinstance(task[found[0]], dict) else {}


_SPECS = {}


def hides(module, option):
    """Whether `module` keeps `option` out of its output (no_log in its argument spec)."""
    if module.startswith(COLLECTION):
        name = module[len(COLLECTION):]
        if name not in _SPECS:
            _SPECS[name] = argument_spec(name)
        return bool(_SPECS[name].get(option, {}).get('no_log'))
    if module.startswith('kubernetes.core.'):
        return bool(KUBERNETES_CORE_AUTH.get(option, {}).get('no_log'))
    return False


def _text(value):
    """The strings of a task's value (where templates are), one a line."""
    if isinstance(value, dict):
        return '\n'.join(_text(key) + '\n' + _text(one) for key, one in value.items())
    if isinstance(value, list):
        return '\n'.join(_text(one) for one in value)
    return str(value)


def _names(text, variable):
    return re.search(r'\b%s\b' % re.escape(variable), text) is not None


def task_problems(path, task, secrets):
    """Why the task may show a secret; empty when it cannot."""
    if task.get('no_log') in (True, 'true', 'yes'):
        return []
    name = task.get('name', '?')
    module, options = module_of(task)
    problems = []
    for option in options:
        if CREDENTIAL.search(option) and not hides(module, option):
            problems.append(f'{path}: {name}: option {option} of {module} is not no_log')
    for variable, fields in secrets.items():
        for key, value in task.items():
            text = _text(value)
            if key in CONDITIONS or not _names(text, variable):
                continue
            if key == module:
                shown = [option for option, one in options.items() if _names(_text(one), variable) and not hides(module, option)]
                if shown:
                    problems.append(f'{path}: {name}: {variable} reaches option(s) {shown} of {module}, not no_log')
            elif key in LOOPS:
                projected = re.findall(r'%s\s*\|\s*map\(attribute=[\'"](\w+)[\'"]\)' % re.escape(variable), text)
                if not projected or any(field not in fields for field in projected) or len(projected) != len(re.findall(
                        r'\b%s\b' % re.escape(variable), text)):
                    problems.append(f'{path}: {name}: loops over {variable} (each item is printed at -v)')
            else:
                problems.append(f'{path}: {name}: {variable} in {key}')
    return problems


def test_the_secret_variables():
    """The table the rule works from, read off the role specs: a new secret option joins it by its no_log."""
    assert secret_variables() == {'gpu_cluster_base_registry_credentials': ('name', 'registry', 'username')}


def test_every_task_keeps_its_secrets():
    secrets = secret_variables()
    tasks = list(all_tasks())
    assert len(tasks) > 200, 'the walk finds the tasks'
    assert [problem for path, task in tasks for problem in task_problems(path, task, secrets)] == []


@pytest.mark.parametrize('task, problem', [
    ({'name': 'x', 'ansible.builtin.debug': {'msg': '{{ item.name }}'}, 'loop': '{{ secret_list }}', 'loop_control': {'label': '{{ item.name }}'}},
     'loops over secret_list'),
    ({'name': 'x', 'ansible.builtin.debug': {'msg': '{{ item }}'}, 'loop': "{{ secret_list | map(attribute='password') }}"},
     'loops over secret_list'),
    ({'name': 'x', 'ansible.builtin.debug': {'msg': "{{ secret_list | map(attribute='name') | join }}"}}, 'secret_list reaches option(s)'),
    ({'name': 'x', 'ansible.builtin.set_fact': {'copy': '{{ secret_list }}'}}, 'secret_list reaches option(s)'),
    ({'name': 'x', 'ansible.builtin.debug': {'msg': 'hi'}, 'vars': {'copy': '{{ secret_list }}'}}, 'secret_list in vars'),
    ({'name': 'x', 'ansible.builtin.uri': {'url': 'https://x', 'password': '{{ pw }}'}}, 'option password of ansible.builtin.uri'),
    ({'name': 'x', 'gpuops.gpu_operator.nvidia_driver': {'token': 'x'}}, 'option token of gpuops.gpu_operator.nvidia_driver'),
])
def test_the_rule_finds(task, problem):
    """What the rule must refuse (each of these shows a secret at -v or -vvv)."""
    found = task_problems('t.yml', task, {'secret_list': ('name',)})
    assert len(found) == 1 and problem in found[0], found


@pytest.mark.parametrize('task', [
    {'name': 'x', 'ansible.builtin.debug': {'msg': '{{ item }}'}, 'loop': "{{ secret_list | map(attribute='name') }}"},
    {'name': 'x', 'ansible.builtin.debug': {'msg': '{{ item.password }}'}, 'loop': '{{ secret_list }}', 'no_log': True},
    {'name': 'x', 'ansible.builtin.debug': {'msg': 'hi'}, 'when': 'secret_list | length > 0'},
    {'name': 'x', 'kubernetes.core.k8s': {'api_key': '{{ token }}', 'kubeconfig': '{{ kubeconfig }}', 'kind': 'Node'}},
    {'name': 'x', 'gpuops.gpu_operator.nfd_labels': {'kubeconfig': '{{ secret_list }}', 'nodes': []}},
])
def test_the_rule_lets_pass(task):
    assert task_problems('t.yml', task, {'secret_list': ('name',)}) == []
