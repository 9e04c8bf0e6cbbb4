# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Rules of the daemon.json transformer and of the single-file present/absent planner."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config as rc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.docker_config import DockerDialect

PATH = '/etc/docker/daemon.json'
STATE = PATH + rc.STATE_SUFFIX
BIN = '/usr/bin/nvidia-container-runtime'
DIALECT = DockerDialect()


def run_plan(files, **overrides):
    params = dict(state='present', runtime_name='nvidia', runtime_binary=BIN, variants=[], set_as_default=False, enable_cdi=False)
    params.update(overrides)
    result = rc.plan_file(params, {PATH: files.get(PATH), STATE: files.get(STATE)}, PATH, STATE, DIALECT)
    return result, dict(result.desired)


def doc_of(files):
    return json.loads(files[PATH])


@pytest.mark.parametrize('original, overrides, expected', [
    # missing and empty files start from {}
    (None, {}, {'runtimes': {'nvidia': {'path': BIN, 'args': []}}}),
    (b'', {}, {'runtimes': {'nvidia': {'path': BIN, 'args': []}}}),
    # other keys and their order are kept; variants follow the main runtime
    (b'{"log-driver": "journald", "runtimes": {"crun": {"path": "/usr/bin/crun"}}}', {'variants': ['legacy', 'cdi']},
     {'log-driver': 'journald', 'runtimes': {'crun': {'path': '/usr/bin/crun'}, 'nvidia': {'path': BIN, 'args': []},
                                             'nvidia-cdi': {'path': BIN + '.cdi', 'args': []},
                                             'nvidia-legacy': {'path': BIN + '.legacy', 'args': []}}}),
    # set_as_default replaces default-runtime in place
    (b'{"default-runtime": "runc", "debug": true}', {'set_as_default': True},
     {'default-runtime': 'nvidia', 'debug': True, 'runtimes': {'nvidia': {'path': BIN, 'args': []}}}),
    # without set_as_default a default naming ours is removed, another one is left alone
    (b'{"default-runtime": "nvidia"}', {}, {'runtimes': {'nvidia': {'path': BIN, 'args': []}}}),
    (b'{"default-runtime": "crun"}', {}, {'default-runtime': 'crun', 'runtimes': {'nvidia': {'path': BIN, 'args': []}}}),
    # enable_cdi joins existing features
    (b'{"features": {"buildkit": true}}', {'enable_cdi': True},
     {'features': {'buildkit': True, 'cdi': True}, 'runtimes': {'nvidia': {'path': BIN, 'args': []}}}),
    # an existing runtime entry keeps its extra keys, gets our path
    (b'{"runtimes": {"nvidia": {"path": "/old", "runtimeArgs": ["--debug"]}}}', {},
     {'runtimes': {'nvidia': {'path': BIN, 'runtimeArgs': ['--debug'], 'args': []}}}),
])
def test_present(original, overrides, expected):
    _plan, files = run_plan({PATH: original}, **overrides)
    assert doc_of(files) == expected
    assert list(doc_of(files)) == list(expected)  # key order
    assert run_plan(files, **overrides)[0].changes() == []


def test_a_lone_surrogate_escape_is_written_back_as_it_was():
    """Issue #28 item 11: JSON allows "\\udc80", which is no character UTF-8 holds; dockerd reads it as U+FFFD."""
    original = b'{\n  "log-opts": {"tag": "\\udc80 \\ud83d\\ude80"}\n}\n'
    _plan, files = run_plan({PATH: original})
    assert files[PATH].startswith(b'{\n  "log-opts": {\n    "tag": "\\udc80 \xf0\x9f\x9a\x80"\n  },\n  "runtimes": {')
    assert doc_of(files)['log-opts'] == json.loads(original)['log-opts']
    assert run_plan(files, state='absent')[1][PATH] == original


def test_indentation_is_kept_and_unchanged_file_not_rewritten():
    original = b'{\n  "runtimes": {\n    "nvidia": {\n      "path": "%s",\n      "args": []\n    }\n  }\n}' % BIN.encode()
    plan, _files = run_plan({PATH: original})
    assert plan.changes() == []  # configured by someone else: no state file either
    _plan, files = run_plan({PATH: original}, set_as_default=True)
    assert files[PATH].startswith(b'{\n  "runtimes": {\n    "nvidia"')


@pytest.mark.parametrize('original, overrides, restored', [
    # present -> edited by someone -> absent: only what we added goes, default and cdi come back
    (b'{"default-runtime": "runc"}', {'set_as_default': True, 'enable_cdi': True}, {'default-runtime': 'runc', 'debug': True}),
    (b'{"features": {"cdi": false}}', {'enable_cdi': True}, {'features': {'cdi': False}, 'debug': True}),
    (b'{}', {'set_as_default': True, 'variants': ['cdi']}, {'debug': True}),
])
def test_absent_after_foreign_edit_is_structural(original, overrides, restored):
    _plan, files = run_plan({PATH: original}, **overrides)
    edited = doc_of(files)
    edited['debug'] = True
    files[PATH] = json.dumps(edited).encode()
    plan, back = run_plan(files, state='absent')
    assert json.loads(back[PATH]) == restored
    assert back[STATE] is None and plan.result['default_runtime'] == restored.get('default-runtime')


def test_absent_without_record_changes_nothing():
    """Ownership is recorded, never inferred (issue 28): runtimes named like ours are not ours without a record."""
    runtimes = {'nvidia': {'path': BIN}, 'nvidia-cdi': {'path': BIN}, 'runc': {'path': 'runc'}}
    original = json.dumps({'default-runtime': 'nvidia', 'runtimes': runtimes}).encode()
    plan, files = run_plan({PATH: original}, state='absent')
    assert files[PATH] == original and plan.changes() == []
    assert plan.result['previous_default_runtime'] is None and plan.result['default_runtime'] == 'nvidia'
    assert 'leaves runtime nvidia, runtime nvidia-cdi, default runtime nvidia as it is' in plan.result['notes'][0]


def test_changing_variants_removes_the_dropped_one():
    _plan, files = run_plan({PATH: b'{}'}, variants=['cdi', 'legacy'])
    _plan, files = run_plan(files, variants=['cdi'])
    assert set(doc_of(files)['runtimes']) == {'nvidia', 'nvidia-cdi'}
    _plan, back = run_plan(files, state='absent')
    assert back[PATH] == b'{}'


@pytest.mark.parametrize('original, message', [
    (b'{"a": 1,\n  "b": }', 'invalid JSON at line 2, column 8'),
    (b'[1, 2]', 'top level must be a JSON object'),
    (b'{"runtimes": []}', 'key runtimes must be a JSON object'),
    (b'{"runtimes": {"nvidia": "x"}}', 'key runtimes.nvidia must be a JSON object'),
    (b'{"features": true}', 'key features must be a JSON object'),
    (b'{"default-runtime": 1}', 'key default-runtime must be a string'),
    (b'\xff{}', 'not UTF-8 at byte 0'),
    # Whole messages, with the file and the type found. Each row kills mutants that survived without it: dockerd refuses
    # NaN and Infinity, which Python's json reads (DockerDialect.parse__mutmut_12, _no_constant__mutmut_1..5);
    # duplicate keys (_object_without_duplicates__mutmut_3..7); a CDI switch that is not a boolean
    # (get_cdi__mutmut_18..25); the names of the JSON types (_json_type__mutmut_2..17, _object__mutmut_7..15,
    # get_default__mutmut_6..13).
    (b'{"log-opts": {"max-size": NaN}}', '^/etc/docker/daemon.json: invalid JSON: NaN is not valid JSON$'),
    (b'{"debug": -Infinity}', '^/etc/docker/daemon.json: invalid JSON: -Infinity is not valid JSON$'),
    (b'{"debug": true, "debug": false}', '^/etc/docker/daemon.json: invalid JSON: duplicate key "debug"$'),
    (b'{"features": {"cdi": "yes"}}', '^/etc/docker/daemon.json: key features.cdi must be true or false, found a string$'),
    (b'{"features": {"cdi": {}}}', '^/etc/docker/daemon.json: key features.cdi must be true or false, found an object$'),
    (b'{"runtimes": [1]}', '^/etc/docker/daemon.json: key runtimes must be a JSON object, found an array$'),
    (b'{"features": false}', '^/etc/docker/daemon.json: key features must be a JSON object, found a boolean$'),
    (b'{"runtimes": null}', '^/etc/docker/daemon.json: key runtimes must be a JSON object, found null$'),
    (b'{"default-runtime": 1.5}', '^/etc/docker/daemon.json: key default-runtime must be a string, found a number$'),
])
def test_bad_input_names_the_problem(original, message):
    with pytest.raises(rc.ConfigError, match=message):
        run_plan({PATH: original}, enable_cdi=True)


# --- properties ----------------------------------------------------------------

KEYS = st.sampled_from(['log-driver', 'debug', 'data-root', 'storage-driver'])
VALUES = st.one_of(st.booleans(), st.integers(-5, 5), st.text(max_size=5), st.lists(st.text(max_size=3), max_size=2))


@st.composite
def daemon_json(draw):
    doc = draw(st.dictionaries(KEYS, VALUES, max_size=3))
    if draw(st.booleans()):
        doc['default-runtime'] = draw(st.sampled_from(['runc', 'crun', 'nvidia']))
    if draw(st.booleans()):
        doc['runtimes'] = dict((name, {'path': '/usr/bin/' + name}) for name in draw(st.lists(st.sampled_from(['crun', 'kata', 'nvidia']), max_size=2)))
    if draw(st.booleans()):
        doc['features'] = draw(st.dictionaries(st.sampled_from(['cdi', 'buildkit']), st.booleans(), max_size=2))
    if not doc and draw(st.booleans()):
        return draw(st.sampled_from([b'', b'{}\n', b'  \n']))
    return json.dumps(doc, indent=draw(st.sampled_from([None, 2, 4, '\t']))).encode() + draw(st.sampled_from([b'', b'\n']))


OPTIONS = st.fixed_dictionaries(dict(variants=st.lists(st.sampled_from(['cdi', 'legacy']), unique=True), set_as_default=st.booleans(),
                                     enable_cdi=st.booleans(), runtime_name=st.sampled_from(['nvidia', 'gpu'])))
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(original=daemon_json(), opts=OPTIONS)
def test_property_present_idempotent_parses_and_absent_restores(original, opts):
    _plan, files = run_plan({PATH: original}, **opts)
    doc = doc_of(files)
    assert doc['runtimes'][opts['runtime_name']] == {'path': BIN, 'args': []}
    assert (doc.get('default-runtime') == opts['runtime_name']) if opts['set_as_default'] else doc.get('default-runtime') != opts['runtime_name']
    assert run_plan(files, **opts)[0].changes() == []
    _plan, back = run_plan(files, state='absent', runtime_name=opts['runtime_name'])
    assert back[PATH] == original and back[STATE] is None
