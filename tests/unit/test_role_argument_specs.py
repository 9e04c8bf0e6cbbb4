"""Every role's meta/argument_specs.yml is complete and typed, and agrees with its defaults/main.yml.

A role variable a user can set is a default in defaults/main.yml and an option of the role's main entry point,
each option (suboptions included) has a type and a description, list options name their elements, and a default
written in the spec is the value defaults/main.yml really gives (templated defaults are documented in words).
The AWX surveys in docs/awx/ ask for role options with the type, choices and default their specs give.
"""
import json
import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[2] / 'roles'
TYPES = {'str', 'bool', 'int', 'float', 'path', 'list', 'dict', 'raw', 'bits', 'bytes', 'jsonarg', 'json'}
MISSING = object()
# Variables of the whole collection (no role prefix): several roles take them and default their own variables to them,
# so they have no role default; their spec documents the default the roles assume.
COLLECTION_WIDE = {'gpu_operator_registry', 'gpu_operator_policy', 'gpu_operator_helm_values', 'gpu_operator_nfd'}


def option_problems(options, where):
    """Problems of an options mapping (recursively into suboptions): type, description, list elements."""
    problems = []
    for name, spec in (options or {}).items():
        at = f'{where}.{name}'
        if not isinstance(spec, dict):
            problems.append(f'{at}: not a mapping')
            continue
        if spec.get('type') not in TYPES:
            problems.append(f'{at}: type {spec.get("type")!r} is not one of {sorted(TYPES)}')
        if spec.get('type') == 'list' and 'elements' not in spec:
            problems.append(f'{at}: a list without elements')
        description = spec.get('description')
        if not description or (isinstance(description, list) and not all(isinstance(line, str) and line.strip() for line in description)):
            problems.append(f'{at}: no description')
        problems += option_problems(spec.get('options'), at)
    return problems


def role_problems(role):
    """Everything that makes `role`'s argument specs incomplete or inconsistent with its defaults."""
    specs_file, defaults_file = role / 'meta' / 'argument_specs.yml', role / 'defaults' / 'main.yml'
    if not specs_file.is_file():
        return [f'{role.name}: no meta/argument_specs.yml']
    entry_points = (yaml.safe_load(specs_file.read_text()) or {}).get('argument_specs') or {}
    if 'main' not in entry_points:
        return [f'{role.name}: no main entry point in meta/argument_specs.yml']
    defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.is_file() else {}
    problems = []
    for entry, spec in entry_points.items():
        if not spec.get('short_description'):
            problems.append(f'{role.name}/{entry}: no short_description')
        problems += option_problems(spec.get('options'), f'{role.name}/{entry}')
    options = entry_points['main'].get('options') or {}
    problems += [f'{role.name}: default {name} has no option in argument_specs' for name in sorted(set(defaults) - set(options))]
    problems += [f'{role.name}: option {name} has no default in defaults/main.yml'
                 for name, spec in sorted(options.items())
                 if name not in defaults and name not in COLLECTION_WIDE and not (isinstance(spec, dict) and spec.get('required'))]
    problems += [f'{role.name}: collection-wide option {name} does not document its default'
                 for name in sorted(set(options) & COLLECTION_WIDE) if 'default' not in options[name]]
    for name in sorted(set(defaults) & set(options)):
        value, documented = defaults[name], options[name].get('default', MISSING) if isinstance(options[name], dict) else MISSING
        templated = isinstance(value, str) and '{{' in value
        if templated and documented is not MISSING:
            problems.append(f'{role.name}: option {name} documents default {documented!r}, defaults/main.yml templates it')
        elif not templated and documented is not MISSING and documented != value:
            problems.append(f'{role.name}: option {name} documents default {documented!r}, defaults/main.yml has {value!r}')
        elif not templated and documented is MISSING:
            problems.append(f'{role.name}: option {name} does not document its default {value!r}')
    problems += [f'{role.name}: private variable {name} in defaults/main.yml' for name in defaults if name.startswith('__')]
    problems += [f'{role.name}: variable {name} lacks the role prefix' for name in defaults if not name.startswith(f'{role.name}_')]
    return problems


@pytest.mark.parametrize('role', sorted(path for path in ROLES.iterdir() if path.is_dir()), ids=lambda path: path.name)
def test_role_argument_specs_complete(role):
    assert role_problems(role) == []


def test_roles_found():
    assert len([path for path in ROLES.iterdir() if path.is_dir()]) >= 5


def write_role(tmp_path, defaults, options):
    role = tmp_path / 'sample'
    (role / 'meta').mkdir(parents=True)
    (role / 'defaults').mkdir()
    (role / 'defaults' / 'main.yml').write_text(yaml.safe_dump(defaults))
    (role / 'meta' / 'argument_specs.yml').write_text(yaml.safe_dump({'argument_specs': {'main': {'short_description': 'A sample.', 'options': options}}}))
    return role


@pytest.mark.parametrize('defaults, options, expected', [
    ({'sample_a': 1}, {'sample_a': {'type': 'int', 'default': 1, 'description': 'A.'}}, []),
    ({'sample_a': 1, 'sample_b': 'x'}, {'sample_a': {'type': 'int', 'default': 1, 'description': 'A.'}},
     ['sample: default sample_b has no option in argument_specs']),
    ({}, {'sample_a': {'type': 'int', 'default': 1, 'description': 'A.'}}, ['sample: option sample_a has no default in defaults/main.yml']),
    ({}, {'sample_a': {'type': 'int', 'required': True, 'description': 'A.'}}, []),
    ({'sample_a': 1}, {'sample_a': {'default': 1, 'description': 'A.'}},
     [f"sample/main.sample_a: type None is not one of {sorted(TYPES)}"]),
    ({'sample_a': 1}, {'sample_a': {'type': 'int', 'default': 1}}, ['sample/main.sample_a: no description']),
    ({'sample_a': []}, {'sample_a': {'type': 'list', 'default': [], 'description': 'A.'}}, ['sample/main.sample_a: a list without elements']),
    ({'sample_a': {}}, {'sample_a': {'type': 'dict', 'default': {}, 'description': 'A.', 'options': {'x': {'type': 'str'}}}},
     ['sample/main.sample_a.x: no description']),
    ({'sample_a': 2}, {'sample_a': {'type': 'int', 'default': 1, 'description': 'A.'}},
     ['sample: option sample_a documents default 1, defaults/main.yml has 2']),
    ({'sample_a': 2}, {'sample_a': {'type': 'int', 'description': 'A.'}}, ['sample: option sample_a does not document its default 2']),
    ({'sample_a': '{{ x }}'}, {'sample_a': {'type': 'str', 'description': 'A.'}}, []),
    ({'sample_a': '{{ x }}'}, {'sample_a': {'type': 'str', 'default': 'y', 'description': 'A.'}},
     ["sample: option sample_a documents default 'y', defaults/main.yml templates it"]),
    ({'other_a': 1}, {'other_a': {'type': 'int', 'default': 1, 'description': 'A.'}}, ['sample: variable other_a lacks the role prefix']),
], ids=['complete', 'undocumented-default', 'option-without-default', 'required-option', 'untyped', 'undescribed', 'list-elements',
        'suboption', 'default-mismatch', 'default-undocumented', 'templated', 'templated-documented', 'prefix'])
def test_checker_finds_gaps(tmp_path, defaults, options, expected):
    assert role_problems(write_role(tmp_path, defaults, options)) == expected


# AWX survey answers are strings for every question type but integer and float: booleans, lists and dicts go in
# the job template's extra variables (Ansible 2.19 refuses a string where a conditional wants a boolean).
SURVEY_TYPES = {'str': ('text', 'textarea', 'password', 'multiplechoice'), 'int': ('integer',), 'float': ('float',)}


def role_options():
    """option name -> its spec, over the main entry points of all roles."""
    found = {}
    for role in sorted(path for path in ROLES.iterdir() if (path / 'meta' / 'argument_specs.yml').is_file()):
        found.update(yaml.safe_load((role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']['main'].get('options') or {})
    return found


@pytest.mark.parametrize('survey', sorted((ROLES.parent / 'docs' / 'awx').glob('*-survey.json')), ids=lambda path: path.name)
def test_awx_survey_follows_the_argument_specs(survey):
    options = role_options()
    questions = json.loads(survey.read_text())['spec']
    assert questions
    for question in questions:
        spec = options.get(question['variable'])
        assert spec is not None, f'{question["variable"]} is no role option'
        assert question['type'] in SURVEY_TYPES.get(spec['type'], ()), f'{question["variable"]}: a {spec["type"]} cannot be a {question["type"]} question'
        assert (question['type'] == 'multiplechoice') == ('choices' in spec), question['variable']
        if 'choices' in spec:
            assert question['choices'] == spec['choices']
        # A variable that defaults from the run's ClusterPolicy (templated) is sent only when answered: no default, not required.
        assert question.get('default') == spec.get('default'), question['variable']
        assert 'default' in spec or not question['required'], f'{question["variable"]} would override the ClusterPolicy in every job'
        description = ' '.join(spec['description']) if isinstance(spec['description'], list) else spec['description']
        plain = re.sub(r'[A-Z]\(([^)]*)\)', r'\1', description)  # C(x), V(x), O(x) markup as plain text
        assert question['question_description'] in plain or plain.startswith(question['question_description']), question['variable']
