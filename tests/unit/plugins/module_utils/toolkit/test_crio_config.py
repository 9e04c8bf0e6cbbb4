# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Rules of the CRI-O drop-in transformer."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
import tomlkit
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config as rc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.crio_config import CrioDialect, state_path

PATH = '/etc/crio/crio.conf.d/99-nvidia.conf'
STATE = state_path(PATH)
BIN = '/usr/bin/nvidia-container-runtime'
NVIDIA = '[crio.runtime.runtimes.nvidia]\nruntime_path = "%s"\nruntime_type = "oci"\n' % BIN


def run_plan(files, **overrides):
    params = dict(state='present', runtime_name='nvidia', runtime_binary=BIN, variants=[], set_as_default=False)
    params.update(overrides)
    result = rc.plan_file(params, {PATH: files.get(PATH), STATE: files.get(STATE)}, PATH, STATE, CrioDialect())
    return result, dict(result.desired)


def test_state_file_is_outside_the_drop_in_directory():
    # CRI-O parses every file in crio.conf.d, a JSON state file there would break it. Called here, not only at import,
    # so that mutation testing sees it (x_state_path__mutmut_1..5 survived the import-time STATE).
    assert state_path(PATH) == STATE == '/etc/crio/crio.conf.d.99-nvidia.conf.gpuops-nvidia-runtime.json'


@pytest.mark.parametrize('original, overrides, expected', [
    (None, {}, NVIDIA),
    (None, {'set_as_default': True}, '[crio.runtime]\ndefault_runtime = "nvidia"\n\n' + NVIDIA),
    (None, {'variants': ['cdi']}, NVIDIA + '\n[crio.runtime.runtimes.nvidia-cdi]\nruntime_path = "%s.cdi"\nruntime_type = "oci"\n' % BIN),
    # someone else's keys in an existing drop-in are kept
    ('# ours\n[crio.runtime]\nlog_level = "info"\n', {}, '# ours\n[crio.runtime]\nlog_level = "info"\n\n' + NVIDIA),
    # a default naming ours is dropped without set_as_default
    ('[crio.runtime]\ndefault_runtime = "nvidia"\nlog_level = "info"\n', {}, '[crio.runtime]\nlog_level = "info"\n\n' + NVIDIA),
    # The runtimes as a dotted key holding an inline table (issue #28 item 11): ours goes into it, as nowhere else is TOML.
    ('[crio]\nruntime.runtimes = { crun = { runtime_path = "/usr/bin/crun" } }\n', {'set_as_default': True},
     '[crio]\nruntime.runtimes = { crun = { runtime_path = "/usr/bin/crun" }, nvidia = {runtime_path = "%s", runtime_type = "oci"}}\n'
     'runtime.default_runtime = "nvidia"\n' % BIN),
])
def test_present(original, overrides, expected):
    _plan, files = run_plan({PATH: original and original.encode()}, **overrides)
    assert files[PATH].decode() == expected
    assert run_plan(files, **overrides)[0].changes() == []


@pytest.mark.parametrize('set_as_default', [False, True])
def test_absent_removes_the_drop_in_it_recorded_only(set_as_default):
    _plan, files = run_plan({}, set_as_default=set_as_default, variants=['legacy'])
    plan, back = run_plan(files, state='absent')
    assert back == {PATH: None, STATE: None} and plan.result['runtimes'] == ['nvidia', 'nvidia-legacy']
    # The same drop-in without its record (nvidia-ctk writes 99-nvidia.conf too): not known to be ours, it stays.
    plan, back = run_plan({PATH: files[PATH]}, state='absent')
    assert back == {PATH: files[PATH], STATE: None} and plan.result['runtimes'] == []
    assert 'there is no undo record' in plan.result['notes'][0]


def test_absent_restores_an_existing_drop_in():
    original = b'[crio.runtime]\ndefault_runtime = "crun"  # site choice\n'
    _plan, files = run_plan({PATH: original}, set_as_default=True)
    assert b'default_runtime = "nvidia"' in files[PATH]
    plan, back = run_plan(files, state='absent')
    assert back[PATH] == original and plan.result['default_runtime'] == 'crun'
    edited = files[PATH] + b'\n[crio.image]\npause_image = "p"\n'
    _plan, back = run_plan(dict(files, **{PATH: edited}), state='absent')
    assert back[PATH] == b'[crio.runtime]\ndefault_runtime = "crun"  # site choice\n\n[crio.image]\npause_image = "p"\n'


@pytest.mark.parametrize('original, message', [
    ('[crio.runtime\n', 'invalid TOML at line 1, column 14'),
    ('[crio]\nruntime = "runc"\n', 'key crio.runtime must be a table'),
    ('[crio.runtime]\nruntimes = 1\n', 'key crio.runtime.runtimes must be a table'),
    # x_get_default__mutmut_16..21 (the message, and the file it names) survived: no test had a default of another type.
    ('[crio.runtime]\ndefault_runtime = 1\n', '^%s: key crio.runtime.default_runtime must be a string$' % PATH),
])
def test_bad_input_names_the_problem(original, message):
    with pytest.raises(rc.ConfigError, match=message):
        run_plan({PATH: original.encode()})


def test_absent_after_an_edit_leaves_no_default_where_there_was_none():
    """x_get_default__mutmut_22 (a missing default read as the string 'None') survived: the default of a drop-in without
    one was only ever restored by copying its bytes back."""
    original = b'[crio.runtime]\nlog_level = "info"\n'
    plan, files = run_plan({PATH: original}, set_as_default=True)
    assert plan.result['default_runtime'] == 'nvidia'
    edited = files[PATH] + b'\n[crio.image]\npause_image = "p"\n'
    plan, back = run_plan(dict(files, **{PATH: edited}), state='absent')
    assert back[PATH] == b'[crio.runtime]\nlog_level = "info"\n\n[crio.image]\npause_image = "p"\n'
    assert plan.result['default_runtime'] is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(default=st.sampled_from([None, 'runc', 'crun', 'nvidia']), extra=st.booleans(), runtimes=st.lists(st.sampled_from(['crun', 'nvidia']), unique=True),
       opts=st.fixed_dictionaries(dict(variants=st.lists(st.sampled_from(['cdi', 'legacy']), unique=True), set_as_default=st.booleans())))
def test_property_present_idempotent_parses_and_absent_restores(default, extra, runtimes, opts):
    lines = []
    if default or extra:
        lines += ['[crio.runtime]'] + (['default_runtime = "%s"' % default] if default else []) + (['log_level = "warn"'] if extra else [])
    for name in runtimes:
        lines += ['[crio.runtime.runtimes.%s]' % name, 'runtime_path = "/usr/bin/%s"' % name]
    original = ('\n'.join(lines) + '\n').encode() if lines else None
    _plan, files = run_plan({PATH: original}, **opts)
    doc = tomlkit.parse(files[PATH].decode())
    assert doc['crio']['runtime']['runtimes']['nvidia']['runtime_path'] == BIN
    assert (doc['crio']['runtime'].get('default_runtime') == 'nvidia') == opts['set_as_default']
    assert run_plan(files, **opts)[0].changes() == []
    _plan, back = run_plan(files, state='absent')
    assert back[PATH] == original and back[STATE] is None
