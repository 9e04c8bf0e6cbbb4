# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""10,000 generated configs per transformer through the planners, in memory.

For every config and option set: present succeeds (the configs are valid, so
a ConfigError is a failure too); its output parses with the standard library's
parser and means exactly what a model of the rules on plain dicts says (so a
table written in the wrong place is caught, not only a crash); a second present
changes nothing; absent gives back the input byte for byte and removes the
undo record (and the drop-in). Where present found everything in place it
keeps no record (someone else configured the runtime), and absent then changes
nothing: ownership is recorded, never inferred.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import copy
import fnmatch
import json
import multiprocessing
import tomllib
import traceback

import pytest

from hypothesis import given

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_runtime as cr
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config as rc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.crio_config import CrioDialect, state_path
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.docker_config import DockerDialect
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import is_nvidia_runtime, runtime_entries
from tests.unit.fault.fault_strategies import CRI, containerd_cases, crio_cases, docker_cases
from tests.unit.fault.fault_support import COUNTS, FUZZ_EXAMPLES, FUZZ_HALF, count
from tests.unit.plugins.module_utils.toolkit.containerd_node import MemoryNode

CONTAINERD = '/etc/containerd/config.toml'
IMPORTED = '/etc/containerd/extra.toml'
CONTAINERD_STATE = cr.state_path(CONTAINERD)
DOCKER = '/etc/docker/daemon.json'
DOCKER_STATE = DOCKER + rc.STATE_SUFFIX
CRIO = '/etc/crio/crio.conf.d/99-nvidia.conf'
CRIO_STATE = state_path(CRIO)
RUNC_TYPE = 'io.containerd.runc.v2'
FORK = multiprocessing.get_context('fork')
CONTAINERD_TEST = 'containerd_config fuzz'
CRIO_TEST = 'crio_config fuzz'
DOCKER_TEST = 'docker_config fuzz'


def _entries(opts):
    return runtime_entries(opts['runtime_name'], opts['runtime_binary'], opts['variants'])


def _absent(opts):
    return dict(opts, state='absent')


def _taken_over(test, existing, opts):
    """True when a runtime of `opts` is one of `existing`'s ({name: binary or None}) own, which the module refuses to take over."""
    refused = any(name in existing and existing[name] != binary and not is_nvidia_runtime(name, existing[name])
                  for name, binary in _entries(opts))
    if refused:
        count(test, 'refused: a runtime of its own by that name')
    return refused


def _already_configured(test, plan, files):
    """Present found everything in place and kept no record: absent changes nothing, and says what it leaves."""
    assert plan.changes() == [] and dict(plan.desired) == files
    assert plan.result['notes'] and plan.result['runtimes'] == []
    count(test, 'already configured (no undo record)')


# --- containerd ------------------------------------------------------------------

def _cri(doc, version):
    return doc.get('plugins', {}).get(CRI[version], {})


def containerd_model(before, version, opts):
    """(config, drop-in) as dicts after present, by the rules of containerd_nvidia_runtime's documentation."""
    entries = _entries(opts)
    ours = set(name for name, _binary in entries)
    config = copy.deepcopy(before)
    drop_in = opts['drop_in']
    if drop_in:
        target = {'version': version}
        if version == 2 and CRI[version] in config.get('plugins', {}):
            # A version 2 drop-in carries the whole CRI table (containerd 1.x replaces it wholesale).
            target['plugins'] = {CRI[version]: copy.deepcopy(_cri(config, version))}
        imports = config.get('imports', [])
        if not any(entry == drop_in or fnmatch.fnmatchcase(drop_in, entry) for entry in imports):
            config['imports'] = imports + [drop_in]
        docs = [target, config]
    else:
        target = config
        docs = [config]
    # New runtimes copy the default runtime unless it is ours, else runc, else crun.
    candidates = []
    for doc in docs:
        default = _cri(doc, version).get('containerd', {}).get('default_runtime_name')
        if default and default not in ours and not default.startswith('nvidia'):
            candidates.append(default)
            break
    candidates += ['runc', 'crun']
    source = next((runtimes[name] for name in candidates for doc in docs
                   for runtimes in [_cri(doc, version).get('containerd', {}).get('runtimes', {})] if name in runtimes), None)
    cri = target.setdefault('plugins', {}).setdefault(CRI[version], {})
    containerd = cri.setdefault('containerd', {})
    runtimes = containerd.setdefault('runtimes', {})
    previous_default = containerd.get('default_runtime_name')
    for name, binary in entries:
        if name not in runtimes:
            runtimes[name] = copy.deepcopy(source) if source is not None else {'runtime_type': RUNC_TYPE}
        if not runtimes[name].get('runtime_type'):
            runtimes[name]['runtime_type'] = RUNC_TYPE
        runtimes[name].setdefault('options', {})['BinaryName'] = binary
    if opts['set_as_default']:
        containerd['default_runtime_name'] = entries[0][0]
    elif previous_default in ours:
        del containerd['default_runtime_name']
    if opts['enable_cdi'] and cri.get('enable_cdi') is not True:
        cri['enable_cdi'] = True
    return config, target if drop_in else None


def _containerd_plan(opts, files):
    params = dict(opts, path=CONTAINERD, config_source='file', backup=False)
    params.setdefault('state', 'present')
    # The file the generated configs may import exists (empty): a missing import stops containerd (test_containerd_imports.py).
    return cr.plan(params, files, MemoryNode(dict(files, **{IMPORTED: b''})))


def check_containerd(case):
    test = CONTAINERD_TEST
    original, version, opts = case
    before = tomllib.loads(original.decode('utf-8'))  # the generator writes valid TOML
    drop_in = opts['drop_in']
    current = {CONTAINERD: original, CONTAINERD_STATE: None}
    if drop_in:
        current[drop_in] = None
    count(test, 'examples')
    count(test, 'version %d' % version)
    count(test, 'with drop-in' if drop_in else 'in place')
    if 'containerd.runtimes = {' in original.decode('utf-8'):
        count(test, 'runtimes as a dotted key holding an inline table')
    existing = dict((name, (runtime.get('options') or {}).get('BinaryName'))
                    for name, runtime in _cri(before, version).get('containerd', {}).get('runtimes', {}).items())
    if _taken_over(test, existing, opts):
        with pytest.raises(rc.ConfigError, match='is a runtime of its own'):
            _containerd_plan(opts, current)
        return

    plan = _containerd_plan(opts, current)
    files = dict(plan.desired)
    expected_config, expected_drop_in = containerd_model(before, version, opts)
    assert tomllib.loads(files[CONTAINERD].decode('utf-8')) == expected_config
    if drop_in:
        assert tomllib.loads(files[drop_in].decode('utf-8')) == expected_drop_in
    assert plan.result['config_version'] == version

    assert _containerd_plan(opts, files).changes() == []
    absent = _containerd_plan(_absent(opts), files)
    back = absent.desired
    assert back[CONTAINERD_STATE] is None
    if plan.changes():
        assert json.loads(files[CONTAINERD_STATE].decode('utf-8'))['path'] == CONTAINERD
        assert back[CONTAINERD] == original
        if drop_in:
            assert back[drop_in] is None
    else:
        _already_configured(test, absent, files)


# --- CRI-O ------------------------------------------------------------------------

def crio_model(before, opts):
    entries = _entries(opts)
    doc = copy.deepcopy(before)
    runtime = doc.setdefault('crio', {}).setdefault('runtime', {})
    previous_default = runtime.get('default_runtime')
    runtimes = runtime.setdefault('runtimes', {})
    for name, binary in entries:
        runtimes.setdefault(name, {}).update(runtime_path=binary, runtime_type='oci')
    if opts['set_as_default']:
        runtime['default_runtime'] = entries[0][0]
    elif previous_default in set(name for name, _binary in entries):
        del runtime['default_runtime']
    return doc


def _file_plan(opts, files, path, state_file, dialect):
    params = dict(state='present', runtime_name=opts['runtime_name'], runtime_binary=opts['runtime_binary'],
                  variants=opts['variants'], set_as_default=opts['set_as_default'])
    if 'enable_cdi' in opts:
        params['enable_cdi'] = opts['enable_cdi']
    params.update(state=opts.get('state', 'present'))
    return rc.plan_file(params, files, path, state_file, dialect)


def check_crio(case):
    test = CRIO_TEST
    original, opts = case
    opts = dict(opts)
    del opts['enable_cdi']  # CRI-O has no such option
    before = tomllib.loads(original.decode('utf-8')) if original is not None else {}
    count(test, 'examples')
    count(test, 'new drop-in' if original is None else 'existing drop-in')
    if original is not None and b'runtime.runtimes = {' in original:
        count(test, 'runtimes as a dotted key holding an inline table')
    existing = dict((name, runtime.get('runtime_path')) for name, runtime in before.get('crio', {}).get('runtime', {}).get('runtimes', {}).items())
    if _taken_over(test, existing, opts):
        with pytest.raises(rc.ConfigError, match='is a runtime of its own'):
            _file_plan(opts, {CRIO: original, CRIO_STATE: None}, CRIO, CRIO_STATE, CrioDialect())
        return

    plan = _file_plan(opts, {CRIO: original, CRIO_STATE: None}, CRIO, CRIO_STATE, CrioDialect())
    files = dict(plan.desired)
    assert tomllib.loads(files[CRIO].decode('utf-8')) == crio_model(before, opts)

    assert _file_plan(opts, files, CRIO, CRIO_STATE, CrioDialect()).changes() == []
    absent = _file_plan(_absent(opts), files, CRIO, CRIO_STATE, CrioDialect())
    back = absent.desired
    assert back[CRIO_STATE] is None
    if plan.changes():
        assert json.loads(files[CRIO_STATE].decode('utf-8'))['path'] == CRIO
        assert back[CRIO] == original
    else:
        _already_configured(test, absent, files)


# --- Docker -----------------------------------------------------------------------

def docker_model(before, opts):
    entries = _entries(opts)
    doc = copy.deepcopy(before)
    previous_default = doc.get('default-runtime')
    runtimes = doc.setdefault('runtimes', {})
    for name, binary in entries:
        runtimes.setdefault(name, {'path': binary, 'args': []})['path'] = binary
        runtimes[name].setdefault('args', [])
    if opts['set_as_default']:
        doc['default-runtime'] = entries[0][0]
    elif previous_default in set(name for name, _binary in entries):
        del doc['default-runtime']
    if opts['enable_cdi'] and doc.get('features', {}).get('cdi') is not True:
        doc.setdefault('features', {})['cdi'] = True
    return doc


def check_docker(case):
    test = DOCKER_TEST
    original, opts = case
    before = json.loads(original) if original and original.strip() else {}
    count(test, 'examples')
    existing = dict((name, runtime.get('path') if isinstance(runtime, dict) else None) for name, runtime in before.get('runtimes', {}).items())
    if _taken_over(test, existing, opts):
        with pytest.raises(rc.ConfigError, match='is a runtime of its own'):
            _file_plan(opts, {DOCKER: original, DOCKER_STATE: None}, DOCKER, DOCKER_STATE, DockerDialect())
        return

    plan = _file_plan(opts, {DOCKER: original, DOCKER_STATE: None}, DOCKER, DOCKER_STATE, DockerDialect())
    files = dict(plan.desired)
    after = json.loads(files[DOCKER])
    # Compared as JSON text: in Python true == 1, in dockerd not.
    assert json.dumps(after, sort_keys=True) == json.dumps(docker_model(before, opts), sort_keys=True)
    assert [key for key in after if key in before] == [key for key in before if key in after]  # key order kept

    assert _file_plan(opts, files, DOCKER, DOCKER_STATE, DockerDialect()).changes() == []
    absent = _file_plan(_absent(opts), files, DOCKER, DOCKER_STATE, DockerDialect())
    back = absent.desired
    assert back[DOCKER_STATE] is None
    if plan.changes():
        assert json.loads(files[DOCKER_STATE])['path'] == DOCKER
        assert back[DOCKER] == original
    else:
        _already_configured(test, absent, files)


# --- the runs: each transformer's examples in two halves, one per process -----------
# Two functions per transformer, so that derandomize gives each half its own
# examples (the seed comes from the function's source).

@FUZZ_HALF
@given(case=containerd_cases())
def containerd_first_half(case):
    check_containerd(case)


@FUZZ_HALF
@given(case=containerd_cases())
def containerd_second_half(case):
    check_containerd(case)


@FUZZ_HALF
@given(case=crio_cases())
def crio_first_half(case):
    check_crio(case)


@FUZZ_HALF
@given(case=crio_cases())
def crio_second_half(case):
    check_crio(case)


@FUZZ_HALF
@given(case=docker_cases())
def docker_first_half(case):
    check_docker(case)


@FUZZ_HALF
@given(case=docker_cases())
def docker_second_half(case):
    check_docker(case)


HALVES = collections.OrderedDict([
    (CONTAINERD_TEST, (containerd_first_half, containerd_second_half)),
    (CRIO_TEST, (crio_first_half, crio_second_half)),
    (DOCKER_TEST, (docker_first_half, docker_second_half)),
])


def _second_halves(sender):
    """Body of the second process: every second half, in order; sends (test, counts, failure text or None)."""
    for test, (_first, second) in HALVES.items():
        COUNTS.pop(test, None)
        try:
            second()
            error = None
        except BaseException:  # a failure, with hypothesis' falsifying example in the text
            error = traceback.format_exc()
        sender.send((test, COUNTS.get(test, {}), error))


@pytest.fixture(scope='module')
def second_halves():
    """Runs the second half of every fuzz in a forked process while this one runs the first halves.

    The suite's time budget counts on both of the machine's two cores. Gives a
    function that waits for one test's second half: (counts, failure text or None).
    """
    receiver, sender = FORK.Pipe(duplex=False)
    process = FORK.Process(target=_second_halves, args=(sender,))
    process.start()
    sender.close()
    results = {}

    def result(test):
        while test not in results:
            try:
                name, counts, error = receiver.recv()
            except EOFError:
                pytest.fail('the process running the second halves died')
            results[name] = counts, error
        return results[test]
    yield result
    process.join()


@pytest.mark.parametrize('test', list(HALVES))
def test_fuzz(second_halves, test):
    first, _second = HALVES[test]
    first()
    counts, error = second_halves(test)
    for what, number in counts.items():
        count(test, what, number)
    if error:
        pytest.fail('second half: ' + error, pytrace=False)
    assert COUNTS[test]['examples'] >= FUZZ_EXAMPLES
