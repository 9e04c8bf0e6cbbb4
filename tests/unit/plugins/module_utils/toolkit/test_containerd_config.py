# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Rules of the containerd config transformer and of the present/absent planner."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import json
import os
import re

import pytest
import tomlkit
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_config as cc
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_runtime as cr
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import runtime_config as rc
from tests.unit.plugins.module_utils.toolkit.containerd_node import MemoryNode

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'containerd')
REAL_DEFAULTS = ['default-1.6.20.toml', 'default-1.7.24.toml', 'default-2.1.9.toml']
PATH = '/etc/containerd/config.toml'
DROP_IN = '/etc/containerd/conf.d/99-nvidia.toml'
BIN = '/usr/bin/nvidia-container-runtime'
# An empty file the random configs may import (it exists: a missing import stops containerd).
EXTRA = '/etc/containerd/extra.toml'
V2 = 'io.containerd.grpc.v1.cri'
V3 = 'io.containerd.cri.v1.runtime'


def fixture(name):
    with open(os.path.join(FIXTURES, name), 'rb') as handle:
        return handle.read()


def params(**overrides):
    base = dict(path=PATH, drop_in=None, config_source='file', state='present', runtime_name='nvidia', runtime_binary=BIN,
                variants=[], set_as_default=False, enable_cdi=False, backup=False)
    base.update(overrides)
    return base


def run_plan(files, no_default=True, default_text=None, **overrides):
    """Plan against in-memory files (the node's files: config, drop-in, undo record, imported files); returns
    (plan, the node's files after it)."""
    p = params(**overrides)
    current = {PATH: files.get(PATH), cr.state_path(PATH): files.get(cr.state_path(PATH))}
    if p['drop_in']:
        current[p['drop_in']] = files.get(p['drop_in'])
    result = cr.plan(p, current, MemoryNode(files, default_config=default_text))
    # The node's other files (imported ones) stay as they were.
    return result, dict(files, **result.desired)


def runtime(doc, version, name):
    return cc.get_table(doc, cc.runtimes_keys(version) + (name,))


# --- version and CRI table -------------------------------------------------

@pytest.mark.parametrize('text, version, cri', [
    ('', 2, ('plugins', V2)),
    ('# only a comment\n', 2, ('plugins', V2)),
    ('root = "/var/lib/containerd"\n', 1, ('plugins', 'cri')),
    ('version = 1\n', 1, ('plugins', 'cri')),
    ('version = 2\n', 2, ('plugins', V2)),
    ('version = 3\n', 3, ('plugins', V3)),
])
def test_version_and_cri_table(text, version, cri):
    doc = cc.parse(text)
    assert cc.detect_version(doc) == version
    assert cc.cri_keys(version) == cri


@pytest.mark.parametrize('text', ['version = "2"\n', 'version = true\n', 'version = 0\n'])
def test_bad_version_names_key(text):
    with pytest.raises(rc.ConfigError, match='"version"'):
        cc.detect_version(cc.parse(text))


@pytest.mark.parametrize('text', ['version = 4\n', 'version = 99\n'])
def test_unknown_version_is_refused(text):
    # containerd 2.1 knows versions up to 3 (version.ConfigVersion); a later one is not a file it reads.
    with pytest.raises(rc.ConfigError, match='config version [0-9]+ is unknown: containerd reads versions 1, 2'):
        cc.detect_version(cc.parse(text))


def test_cri_table_label_is_quoted():
    assert cc.dotted(cc.cri_keys(2)) == 'plugins."io.containerd.grpc.v1.cri"'
    assert cc.dotted(cc.cri_keys(1)) == 'plugins.cri'


# --- inheritance -----------------------------------------------------------

def _config(version, runtimes, default=None):
    lines = ['version = %d' % version] if version > 1 else ['oom_score = 0']
    cri = 'plugins."%s"' % (V2 if version == 2 else V3) if version > 1 else 'plugins.cri'
    if default:
        lines += ['[%s.containerd]' % cri, 'default_runtime_name = "%s"' % default]
    for name, runtime_type, systemd in runtimes:
        lines += ['[%s.containerd.runtimes.%s]' % (cri, name), 'runtime_type = "%s"' % runtime_type,
                  '[%s.containerd.runtimes.%s.options]' % (cri, name), 'SystemdCgroup = %s' % ('true' if systemd else 'false')]
    return '\n'.join(lines) + '\n'


@pytest.mark.parametrize('version', [1, 2, 3])
@pytest.mark.parametrize('runtimes, default, inherited, runtime_type, systemd', [
    ([('runc', 'io.containerd.runc.v2', True), ('kata', 'io.containerd.kata.v2', False)], 'kata', 'kata', 'io.containerd.kata.v2', False),
    ([('runc', 'io.containerd.runc.v2', True), ('crun', 'io.containerd.crun.v2', False)], None, 'runc', 'io.containerd.runc.v2', True),
    ([('crun', 'io.containerd.crun.v2', True)], None, 'crun', 'io.containerd.crun.v2', True),
    # A default that is one of ours (or nvidia*) is never inherited from.
    ([('runc', 'io.containerd.runc.v2', True), ('nvidia-old', 'x', False)], 'nvidia-old', 'runc', 'io.containerd.runc.v2', True),
    ([('runc', 'io.containerd.runc.v2', False)], 'missing', 'runc', 'io.containerd.runc.v2', False),
    ([], None, None, 'io.containerd.runc.v2', None),
    ([('runc', '', True)], None, 'runc', 'io.containerd.runc.v2', True),
])
def test_new_runtime_inherits(version, runtimes, default, inherited, runtime_type, systemd):
    doc = cc.parse(_config(version, runtimes, default))
    facts = cc.apply_present(doc, version, [('nvidia', BIN)], False, False, {'nvidia'})
    assert facts['inherited_from'] == inherited
    ours = runtime(doc, version, 'nvidia')
    assert ours['runtime_type'] == runtime_type
    assert ours['options']['BinaryName'] == BIN
    assert ours['options'].get('SystemdCgroup') == systemd
    assert cc.detect_version(cc.parse(cc.dumps(doc))) == version


def test_existing_runtime_only_gets_binary_updated():
    text = _config(2, [('runc', 'io.containerd.runc.v2', True), ('nvidia', 'io.containerd.runc.v2', False)])
    doc = cc.parse(text)
    cc.apply_present(doc, 2, [('nvidia', '/opt/bin/ncr')], False, False, {'nvidia'})
    assert runtime(doc, 2, 'nvidia')['options']['SystemdCgroup'] is False
    assert runtime(doc, 2, 'nvidia')['options']['BinaryName'] == '/opt/bin/ncr'


# --- default runtime, variants, enable_cdi ---------------------------------

@pytest.mark.parametrize('set_as_default, before, after', [
    (True, 'runc', 'nvidia'),
    (True, None, 'nvidia'),
    (False, 'runc', 'runc'),
    (False, 'nvidia', None),
    (False, 'nvidia-cdi', None),
    (False, None, None),
])
def test_set_as_default(set_as_default, before, after):
    doc = cc.parse(_config(2, [('runc', 'io.containerd.runc.v2', True)], before))
    facts = cc.apply_present(doc, 2, [('nvidia', BIN), ('nvidia-cdi', BIN + '.cdi')], set_as_default, False, {'nvidia', 'nvidia-cdi'})
    assert facts['previous_default'] == before
    assert cc.default_runtime(doc, 2) == after


@pytest.mark.parametrize('variants, expected', [
    ([], {'nvidia': BIN}),
    (['cdi'], {'nvidia': BIN, 'nvidia-cdi': BIN + '.cdi'}),
    (['legacy', 'cdi'], {'nvidia': BIN, 'nvidia-cdi': BIN + '.cdi', 'nvidia-legacy': BIN + '.legacy'}),
])
def test_variants(variants, expected):
    _plan, files = run_plan({PATH: b'version = 2\n'}, variants=variants)
    doc = cc.parse(files[PATH].decode())
    names = list(cc.get_table(doc, cc.runtimes_keys(2)).keys())
    assert names == list(expected)
    assert {name: runtime(doc, 2, name)['options']['BinaryName'] for name in names} == expected


@pytest.mark.parametrize('version, before', [(2, None), (2, False), (3, True), (3, None)])
def test_enable_cdi(version, before):
    text = 'version = %d\n' % version
    if before is not None:
        text += '[plugins."%s"]\nenable_cdi = %s\n' % (V2 if version == 2 else V3, str(before).lower())
    doc = cc.parse(text)
    facts = cc.apply_present(doc, version, [('nvidia', BIN)], False, True, {'nvidia'})
    assert facts['previous_enable_cdi'] == before
    assert cc.get_enable_cdi(doc, version) is True


def test_variant_dropped_later_is_removed():
    _p, files = run_plan({PATH: b'version = 2\n'}, variants=['cdi', 'legacy'])
    _p, files = run_plan(files, variants=['cdi'])
    doc = cc.parse(files[PATH].decode())
    assert list(cc.get_table(doc, cc.runtimes_keys(2)).keys()) == ['nvidia', 'nvidia-cdi']


# --- missing / empty files and config_source --------------------------------

@pytest.mark.parametrize('source, default_text, expect_runc', [
    ('auto', fixture('default-1.7.24.toml').decode(), True),
    ('auto', None, False),
    ('command', fixture('default-2.1.9.toml').decode(), True),
    ('file', fixture('default-1.7.24.toml').decode(), False),
])
@pytest.mark.parametrize('existing', [None, b'', b'\n'])
def test_missing_or_empty_config(source, default_text, expect_runc, existing):
    _p, files = run_plan({PATH: existing}, default_text=default_text, config_source=source)
    doc = cc.parse(files[PATH].decode())
    version = cc.detect_version(doc)
    assert doc['version'] == version
    assert (runtime(doc, version, 'runc') is not None) == expect_runc
    if expect_runc:  # SystemdCgroup and friends survive through the inherited runtime
        assert 'SystemdCgroup' in runtime(doc, version, 'nvidia')['options']
    _p, back = run_plan(files, state='absent')
    assert back[PATH] == existing
    assert back[cr.state_path(PATH)] is None


def test_command_source_without_containerd_fails():
    with pytest.raises(rc.ConfigError, match='containerd is not installed'):
        run_plan({PATH: None}, config_source='command')


# --- drop-in ----------------------------------------------------------------

@pytest.mark.parametrize('base, expected_imports', [
    (b'', [DROP_IN]),
    (b'version = 2\nimports = ["/etc/containerd/other.toml"]\n', ['/etc/containerd/other.toml', DROP_IN]),
    (b"version = 3\nimports = ['/etc/containerd/conf.d/*.toml']\n", ['/etc/containerd/conf.d/*.toml']),
    (fixture('default-1.7.24.toml'), [DROP_IN]),
])
def test_drop_in(base, expected_imports):
    # The file the second case imports exists (a missing one stops containerd, see test_containerd_imports).
    _p, files = run_plan({PATH: base, '/etc/containerd/other.toml': b''}, drop_in=DROP_IN, set_as_default=True)
    top = cc.parse(files[PATH].decode())
    version = cc.detect_version(top)
    assert cc.imports_list(top) == expected_imports
    assert cc.get_table(top, cc.runtimes_keys(version) + ('nvidia',)) is None
    drop = cc.parse(files[DROP_IN].decode())
    assert drop['version'] == version
    assert runtime(drop, version, 'nvidia')['options']['BinaryName'] == BIN
    assert cc.default_runtime(drop, version) == 'nvidia'
    if base == fixture('default-1.7.24.toml'):
        # containerd 1.x replaces the CRI section wholesale, so the drop-in carries all of it.
        assert runtime(drop, 2, 'runc')['options']['SystemdCgroup'] is False
        cni = ('plugins', V2, 'cni')
        assert cc.get_table(drop, cni)['bin_dir'] == cc.get_table(cc.parse(base.decode()), cni)['bin_dir']
    _p, again = run_plan(files, drop_in=DROP_IN, set_as_default=True)
    assert again == files
    _p, back = run_plan(files, drop_in=DROP_IN, state='absent')
    assert back[PATH] == base and back[DROP_IN] is None and back[cr.state_path(PATH)] is None


def test_drop_in_rejected_for_version_1():
    with pytest.raises(rc.ConfigError, match='version 2 or later'):
        run_plan({PATH: b'oom_score = 0\n'}, drop_in=DROP_IN)


# --- absent -------------------------------------------------------------------

@pytest.mark.parametrize('name', REAL_DEFAULTS)
@pytest.mark.parametrize('options', [
    dict(),
    dict(set_as_default=True, enable_cdi=True, variants=['cdi', 'legacy']),
])
def test_real_defaults_roundtrip(name, options):
    original = fixture(name)
    plan, files = run_plan({PATH: original}, **options)
    assert plan.result['previous_default_runtime'] == 'runc'
    assert plan.result['inherited_from'] == 'runc'
    assert run_plan(files, **options)[0].changes() == []
    _p, back = run_plan(files, state='absent')
    assert back[PATH] == original


@pytest.mark.parametrize('name', REAL_DEFAULTS)
def test_structural_undo_when_file_edited_since(name):
    """Someone else edits the file after us: absent keeps their edit and removes only ours."""
    original = fixture(name)
    _p, files = run_plan({PATH: original}, set_as_default=True, enable_cdi=True, variants=['cdi'])
    files[PATH] = files[PATH] + b'# added by another tool\n'
    _p, back = run_plan(files, state='absent')
    assert back[PATH] == original + b'# added by another tool\n'


def test_absent_without_state_changes_nothing_and_says_what_it_leaves():
    """Ownership is recorded, never inferred (issue 28): runtimes named like ours are not ours without a record."""
    text = _config(2, [('runc', 'io.containerd.runc.v2', True), ('nvidia', 'io.containerd.runc.v2', True),
                       ('nvidia-cdi', 'io.containerd.runc.v2', True)], 'nvidia')
    plan, _files = run_plan({PATH: text.encode()}, state='absent')
    assert plan.changes() == [] and plan.result['runtimes'] == [] and plan.result['previous_default_runtime'] is None
    assert plan.result['default_runtime'] == 'nvidia'
    assert plan.result['notes'] == ['%s: there is no undo record (%s), so state=absent leaves runtime nvidia in %s, runtime nvidia-cdi '
                                    'in %s, default runtime nvidia in %s as it is: this module did not configure it, or its record '
                                    'was removed. Remove it yourself if it should go' % (PATH, cr.state_path(PATH), PATH, PATH, PATH)]
    plan, _files = run_plan({PATH: _config(2, [('runc', 'io.containerd.runc.v2', True)], 'runc').encode()}, state='absent')
    assert plan.changes() == [] and plan.result['notes'] == []


def test_present_on_already_configured_file_records_nothing():
    """A runtime set up by someone else: no change, and no state that would make absent a no-op."""
    text = _config(2, [('runc', 'io.containerd.runc.v2', True), ('nvidia', 'io.containerd.runc.v2', True)])
    text = text.replace('SystemdCgroup = true\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]',
                        'SystemdCgroup = true\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]')
    text = text.rstrip('\n') + '\nBinaryName = "%s"\n' % BIN
    plan, files = run_plan({PATH: text.encode()})
    assert plan.changes() == []
    assert files[cr.state_path(PATH)] is None


def test_state_keeps_first_original_and_previous_default():
    original = _config(2, [('runc', 'io.containerd.runc.v2', True)], 'runc').encode()
    _p, files = run_plan({PATH: original})
    plan, files = run_plan(files, set_as_default=True)
    assert plan.result['previous_default_runtime'] == 'runc'
    state = json.loads(files[cr.state_path(PATH)].decode())
    assert state['files'][PATH]['original'] == original.decode()
    _p, back = run_plan(files, state='absent')
    assert back[PATH] == original


# --- style preservation -------------------------------------------------------

STYLED = b"""# top comment
version = 2
root = '/var/lib/containerd'   # literal, with trailing comment

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    # comment inside the CRI table
    sandbox_image = 'registry.k8s.io/pause:3.9'
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = 'overlayfs'
      default_runtime_name = 'runc'  # keep me
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = true

[zeta]
  b = 2
  a = 1
"""


def test_style_preserved():
    _p, files = run_plan({PATH: STYLED}, set_as_default=True)
    out = files[PATH].decode()
    # Every original line is still there, in order, untouched except the changed default.
    expected = STYLED.decode().replace("default_runtime_name = 'runc'", "default_runtime_name = 'nvidia'").splitlines()
    out_lines = out.splitlines()
    opcodes = difflib.SequenceMatcher(None, expected, out_lines, autojunk=False).get_opcodes()
    assert {tag for tag, _i1, _i2, _j1, _j2 in opcodes} == {'equal', 'insert'}
    assert "BinaryName = '%s'" % BIN in out  # quoted like the file's other strings
    assert "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]" in out_lines  # indented like runc
    _p, back = run_plan(files, state='absent')
    assert back[PATH] == STYLED


# --- bad input ----------------------------------------------------------------

@pytest.mark.parametrize('text, line, col', [
    ('version = 2\n[plugins\n', 2, 9),
    ('version = 2\nroot = "unterminated\n', 2, 21),
    ('a = 1\na = 2\n', 2, 1),
])
def test_invalid_toml_reports_position(text, line, col):
    with pytest.raises(rc.ConfigError, match='line %d, column %d' % (line, col)):
        run_plan({PATH: text.encode()})


@pytest.mark.parametrize('text, key', [
    ('version = 2\nplugins = "x"\n', 'plugins'),
    ('version = 2\n[plugins]\n"io.containerd.grpc.v1.cri" = 5\n', 'plugins."io.containerd.grpc.v1.cri"'),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = ["runc"]\n',
     'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'),
    ('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes]\nrunc = "x"\n',
     'plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc'),
    ('version = 2\nimports = "not-a-list"\n', 'imports'),
])
def test_wrong_types_name_the_key(text, key):
    with pytest.raises(rc.ConfigError) as excinfo:
        run_plan({PATH: text.encode()}, drop_in=DROP_IN if key == 'imports' else None)
    assert 'key %s ' % key in str(excinfo.value)


def test_non_utf8_is_rejected():
    with pytest.raises(rc.ConfigError, match='not UTF-8'):
        run_plan({PATH: b'version = 2\n# \xff\n'})


# --- properties -----------------------------------------------------------------

QUOTES = st.sampled_from(['"%s"', "'%s'"])


@st.composite
def configs(draw):
    """Random but valid containerd configs: any version, runtimes, defaults, comments and quoting."""
    if draw(st.integers(0, 9)) == 0:  # real defaults are slow to parse and covered table-driven above
        return fixture(draw(st.sampled_from(REAL_DEFAULTS)))
    version = draw(st.sampled_from([None, 1, 2, 3]))
    quote = draw(QUOTES)
    lines = []
    if draw(st.booleans()):
        lines.append('# %s' % draw(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)))
    if version is None:
        return ('\n'.join(lines) + ('\n' if lines else '')).encode()
    if version > 1:
        lines.append('version = %d' % version)
    lines.append('root = %s' % (quote % '/var/lib/containerd'))
    if draw(st.booleans()):
        lines.append('imports = [%s]' % (quote % EXTRA))
    cri = {1: 'plugins.cri', 2: 'plugins."%s"' % V2, 3: "plugins.'%s'" % V3}[version]
    if draw(st.booleans()):
        lines += ['', '[%s]' % cri, '  enable_cdi = %s' % draw(st.sampled_from(['true', 'false']))]
    default = draw(st.sampled_from([None, 'runc', 'crun', 'nvidia', 'kata']))
    if default:
        lines += ['', '[%s.containerd]' % cri, '  default_runtime_name = %s  # chosen' % (quote % default)]
    for name in draw(st.lists(st.sampled_from(['runc', 'crun', 'kata', 'nvidia']), unique=True, max_size=3)):
        lines += ['', '[%s.containerd.runtimes.%s]' % (cri, name), '  runtime_type = %s' % (quote % draw(st.sampled_from(['', 'io.containerd.runc.v2'])))]
        if draw(st.booleans()):
            lines += ['  [%s.containerd.runtimes.%s.options]' % (cri, name), '    SystemdCgroup = %s' % draw(st.sampled_from(['true', 'false']))]
    if draw(st.booleans()):
        lines += ['', '[metrics]', '  address = %s' % (quote % '')]
    return ('\n'.join(lines) + '\n').encode()


@st.composite
def options(draw, version_one):
    return dict(
        variants=draw(st.lists(st.sampled_from(['cdi', 'legacy']), unique=True)),
        set_as_default=draw(st.booleans()),
        enable_cdi=draw(st.booleans()),
        runtime_name=draw(st.sampled_from(['nvidia', 'gpu'])),
        drop_in=None if version_one else draw(st.sampled_from([None, DROP_IN])),
    )


def _is_version_one(data):
    return bool(data.strip()) and cc.detect_version(cc.parse(data.decode())) == 1


PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(data=st.data(), original=configs())
def test_property_present_idempotent_and_parses(data, original):
    opts = data.draw(options(_is_version_one(original)))
    plan, files = run_plan({PATH: original, EXTRA: b''}, **opts)
    for name, content in files.items():
        if content is not None and name != cr.state_path(PATH):
            cc.parse(content.decode(), name)
    target = cc.parse(files[opts['drop_in'] or PATH].decode())
    version = plan.result['config_version']
    assert runtime(target, version, opts['runtime_name'])['options']['BinaryName'] == BIN
    assert run_plan(files, **opts)[0].changes() == []


@PROPERTY
@given(data=st.data(), original=configs())
def test_property_present_then_absent_is_byte_identical(data, original):
    opts = data.draw(options(_is_version_one(original)))
    _plan, files = run_plan({PATH: original, EXTRA: b''}, **opts)
    _plan, back = run_plan(files, state='absent', runtime_name=opts['runtime_name'], drop_in=opts['drop_in'])
    assert back[PATH] == original
    assert back[cr.state_path(PATH)] is None
    if opts['drop_in']:
        assert back[opts['drop_in']] is None


@PROPERTY
@given(original=configs())
def test_property_tomlkit_roundtrip_of_inputs(original):
    # The transformer's style preservation rests on tomlkit giving back what it read.
    assert cc.dumps(cc.parse(original.decode())) == original.decode()
    assert tomlkit.parse(original.decode()) is not None


# containerd's own reading of a config: real `containerd config dump` output (fixtures/containerd/SOURCE.md).
NVIDIA_CDI = [('nvidia', '/usr/bin/nvidia-container-runtime'), ('nvidia-cdi', '/usr/bin/nvidia-container-runtime.cdi')]


@pytest.mark.parametrize('dump, entries, problems', [
    ('dump-nvidia-cdi-1.6.20.toml', NVIDIA_CDI, []),
    # Issue 28 item 10: containerd 2.x reads none of a version 1 config's runtimes.
    ('dump-v1-nvidia-2.1.9.toml', NVIDIA_CDI, ['no runtime nvidia', 'no runtime nvidia-cdi']),
    ('dump-nvidia-cdi-2.1.9.toml', NVIDIA_CDI, []),
    ('dump-default-1.6.20.toml', NVIDIA_CDI, ['no runtime nvidia', 'no runtime nvidia-cdi']),
    ('dump-default-2.1.9.toml', NVIDIA_CDI[:1], ['no runtime nvidia']),
    ('dump-nvidia-cdi-2.1.9.toml', [('nvidia', '/usr/local/nvidia/toolkit/nvidia-container-runtime')],
     ['runtime nvidia has BinaryName /usr/bin/nvidia-container-runtime, not /usr/local/nvidia/toolkit/nvidia-container-runtime']),
    # runc has no BinaryName: containerd runs runc itself.
    ('dump-default-1.6.20.toml', [('runc', '/usr/bin/nvidia-container-runtime')],
     ['runtime runc has BinaryName (unset: runc), not /usr/bin/nvidia-container-runtime']),
])
def test_dump_problems_reads_containerds_own_dump(dump, entries, problems):
    with open(os.path.join(FIXTURES, dump), encoding='utf-8') as handle:
        assert cr.dump_problems(handle.read(), entries) == problems


@pytest.mark.parametrize('dump, problems', [
    # Issue 28 item 9: containerd 1.6 drops enable_cdi (it came in 1.7), so verify must not call it verified.
    ('dump-enable-cdi-1.6.20.toml', ['enable_cdi is not true (containerd before 1.7 ignores it)']),
    ('dump-nvidia-cdi-2.1.9.toml', []),
])
def test_dump_problems_with_enable_cdi(dump, problems):
    with open(os.path.join(FIXTURES, dump), encoding='utf-8') as handle:
        assert cr.dump_problems(handle.read(), NVIDIA_CDI, enable_cdi=True) == problems


@pytest.mark.parametrize('version, dumps', [
    (2, ['dump-dotted-inline-2-nvidia-cdi-1.6.20.toml', 'dump-dotted-inline-2-nvidia-cdi-1.7.24.toml', 'dump-dotted-inline-2-nvidia-cdi-2.1.9.toml']),
    (3, ['dump-dotted-inline-3-nvidia-cdi-2.1.9.toml']),
])
def test_runtimes_as_a_dotted_key_holding_an_inline_table(version, dumps):
    """Issue #28 item 11: the output for such a config is the one real containerd loaded with the nvidia runtimes as
    the default (fixtures/containerd/SOURCE.md), it is stable, and absent gives the input back."""
    original = fixture('dotted-inline-%d.toml' % version)
    plan, files = run_plan({PATH: original}, set_as_default=True, variants=['cdi'])
    assert files[PATH] == fixture('dotted-inline-%d-nvidia-cdi.toml' % version)
    for dump in dumps:
        text = fixture(dump).decode()
        assert cr.dump_problems(text, NVIDIA_CDI) == [] and re.search(r'default_runtime_name = ["\']nvidia["\']', text), dump
    assert run_plan(files, set_as_default=True, variants=['cdi'])[0].changes() == []
    assert run_plan(files, state='absent')[1][PATH] == original
