# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Valid but awkward runtime configs, decoded from bytes that hypothesis draws.

Each example is one draw of a fixed-size byte string, decoded here into a
config and module options: a draw costs hypothesis about as much as the whole
decoding, and 10,000 examples per transformer must fit the suite's budget.
Shrinking still works: hypothesis shrinks the bytes towards zeros, and a zero
byte always picks the first, simplest choice.

The configs are valid TOML/JSON (the fuzz tests check that with the standard
library's parser) and small; the awkwardness is in how they are written:
comments, inline tables, dotted keys, unicode, CRLF, quoting, indentation, a
missing final newline, other runtimes and ours with other options.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from hypothesis import strategies as st

SEED_BYTES = 40
SEEDS = st.binary(min_size=SEED_BYTES, max_size=SEED_BYTES)

CRI = {1: 'cri', 2: 'io.containerd.grpc.v1.cri', 3: 'io.containerd.cri.v1.runtime'}
# Runtimes a config may already have: ours (with other options), others, one
# whose name needs quoting and one that is not ASCII.
RUNTIME_NAMES = ['runc', 'nvidia', 'crun', 'kata', 'nvidia-cdi', 'gpu', 'my.rt', 'r\u00fcntime']
DEFAULTS = [None, 'runc', 'nvidia', 'crun', 'kata', 'gpu', 'not-defined']
TEXTS = ['', 'plain', 'caf\u00e9 \u6f22\u5b57 \U0001f680', 'a "quoted" \\ word', "it's", '# not a comment', '[not.a.table]',
         'key = "value"', 'tab\there', '\u00fcn\u00efc\u00f6d\u00e9 \u2713']
NEWLINES = ['\n', '\r\n']
INDENTS = ['', '  ', '\t']

# Module options; binaries include ones that need quoting. Runtime names are DNS-1123 labels (the module refuses
# others), which TOML never needs to quote; 'gpu' may be a runtime of the config's own, which the module refuses to take over.
RUNTIME_PARAM_NAMES = ['nvidia', 'gpu', 'nvidia-2', '0gpu']
BINARIES = ['/usr/bin/nvidia-container-runtime', "/opt/my bin/nvidia'rt", '/usr/local/nvidia/toolkit/nvidia-container-runtime\u00e9']
VARIANT_SETS = [[], [], [], [], ['cdi'], ['legacy'], ['legacy', 'cdi']]
# How often each layout of the CRI table (see _cri_lines) and of a runtime's options (see _runtime_lines) comes up.
LAYOUTS = [0] * 40 + [1, 2, 2, 3, 3, 3, 3, 4, 5]
CRIO_LAYOUTS = [0] * 16 + [1, 2, 2, 2, 3, 4]
OPTION_STYLES = [0] * 12 + [1, 1, 1, 2]


class Choices(object):
    """Reads choices from `data`, one byte each; past the end every choice is the first one."""

    def __init__(self, data):
        self.data = data
        self.position = 0

    def byte(self):
        value = self.data[self.position] if self.position < len(self.data) else 0
        self.position += 1
        return value

    def pick(self, options):
        return options[self.byte() % len(options)]

    def chance(self, numerator, denominator):
        return self.byte() % denominator >= denominator - numerator

    def subset(self, options, most):
        chosen = []
        for _index in range(self.byte() % (most + 1)):
            option = self.pick(options)
            if option not in chosen:
                chosen.append(option)
        return chosen


def toml_key(name):
    bare = name and all(c.isascii() and (c.isalnum() or c in '-_') for c in name)
    return name if bare else toml_string(name)


def toml_string(value, literal=False):
    if literal and "'" not in value and '\t' not in value:
        return "'%s'" % value
    return '"%s"' % value.replace('\\', '\\\\').replace('"', '\\"').replace('\t', '\\t')


def _comment(choices):
    return '  # %s' % choices.pick(TEXTS) if choices.chance(1, 3) else ''


def _value(choices):
    """A TOML value of some type, in one of its spellings."""
    return choices.pick([toml_string(choices.pick(TEXTS)), "'literal'", 'true', '-17', '1_000', '0x1F', '3.5e2', 'inf',
                         '["a", \'b\', ]', '{ a = 1, "b\u00e9" = "c" }', '1979-05-27T07:32:00Z'])


def module_options(choices, version_one=False):
    """Options of a present run; a drop-in only where containerd allows one (version 2 and later)."""
    return dict(
        runtime_name=choices.pick(RUNTIME_PARAM_NAMES),
        runtime_binary=choices.pick(BINARIES),
        variants=list(choices.pick(VARIANT_SETS)),
        set_as_default=choices.chance(1, 2),
        enable_cdi=choices.chance(1, 2),
        drop_in=None if version_one or not choices.chance(1, 8) else '/etc/containerd/conf.d/99-nvidia.toml',
    )


def _runtime_lines(choices, prefix, name, indent, literal):
    """One runtime as a [header] table; its options as a sub-table, an inline table or dotted keys."""
    header = '%s.%s' % (prefix, toml_key(name))
    lines = ['', '%s[%s]%s' % (indent, header, _comment(choices)),
             '%sruntime_type = %s%s' % (indent, toml_string(choices.pick(['io.containerd.runc.v2', '', 'io.containerd.kata.v2']), literal),
                                        _comment(choices))]
    options = []
    if choices.chance(1, 2):
        options.append('SystemdCgroup = %s' % choices.pick(['true', 'false']))
    if name.startswith('nvidia') or choices.chance(1, 4):
        options.append('BinaryName = %s' % toml_string(choices.pick(['/usr/bin/other-runtime', '/usr/bin/nvidia-container-runtime']), literal))
    style = choices.pick(OPTION_STYLES) if options else -1
    if style == 0:
        lines += ['%s[%s.options]' % (indent, header)] + ['%s  %s' % (indent, option) for option in options]
    elif style == 1:
        lines.append('%soptions = { %s }' % (indent, ', '.join(options)))
    elif style == 2:
        lines += ['%soptions.%s' % (indent, option) for option in options]
    return lines


def _inline_runtimes(names):
    runtime = '{ runtime_type = %s, options = { SystemdCgroup = true } }' % toml_string('io.containerd.runc.v2')
    return '{ %s }' % ', '.join('%s = %s' % (toml_key(name), runtime) for name in names)


def _cri_lines(choices, version, quoted_cri, indent, literal, top):
    """The CRI plugin's default runtime, runtimes and enable_cdi, in one of six layouts.

    `top` collects lines that must stay at the top level (before any table).
    """
    prefix = 'plugins.%s' % quoted_cri
    default = choices.pick(DEFAULTS)
    runtimes = choices.subset(RUNTIME_NAMES, 2)
    cdi = choices.pick([None, 'true', 'false'])
    default_line = 'default_runtime_name = %s%s' % (toml_string(default, literal), _comment(choices)) if default else None
    # Dotted keys (layouts 1 and 4) and a table continued after its sub-tables
    # (layout 2 with enable_cdi) give tables in pieces, which tomlkit handles
    # ten times slower: fewer of them, to fit the time budget.
    layout = choices.pick(LAYOUTS)
    lines = []
    if layout == 0:  # one [header] per table
        if cdi:
            lines += ['', '[%s]' % prefix, '%senable_cdi = %s' % (indent, cdi)]
        if default:
            lines += ['', '%s[%s.containerd]' % (indent, prefix), indent + default_line]
        for name in runtimes:
            lines += _runtime_lines(choices, prefix + '.containerd.runtimes', name, indent, literal)
    elif layout == 1:  # dotted keys in the CRI table
        if cdi or default or runtimes:
            lines += ['', '[%s]' % prefix]
        if default:
            lines.append('containerd.' + default_line)
        for name in runtimes:
            lines.append('containerd.runtimes.%s.runtime_type = %s' % (toml_key(name), toml_string('io.containerd.runc.v2')))
            if choices.chance(1, 2):
                lines.append('containerd.runtimes.%s.options.BinaryName = %s' % (toml_key(name), toml_string('/usr/bin/' + name)))
        if cdi:  # after the dotted keys: a table added in the middle would take it over
            lines.append('enable_cdi = %s' % cdi)
    elif layout == 2:  # the runtimes as inline tables
        if default or runtimes:
            lines += ['', '[%s.containerd]' % prefix]
        if default:
            lines.append(default_line)
        if runtimes:
            lines.append('runtimes = { %s }' % ', '.join(
                '%s = { runtime_type = %s, options = { SystemdCgroup = true } }' % (toml_key(name), toml_string('io.containerd.runc.v2'))
                for name in runtimes))
        if cdi:
            lines += ['', '[%s]' % prefix, 'enable_cdi = %s' % cdi]
    elif layout == 3:  # the whole CRI table inline, at the top level
        inner = ['enable_cdi = %s' % cdi] if cdi else []
        containerd = [default_line.split('  #')[0]] if default else []
        if runtimes:
            containerd.append('runtimes = { %s }' % ', '.join('%s = { runtime_type = "" }' % toml_key(name) for name in runtimes))
        if containerd:
            inner.append('containerd = { %s }' % ', '.join(containerd))
        if inner:
            top.append('plugins = { %s = { %s } }' % (quoted_cri, ', '.join(inner)))
    elif layout == 4:  # dotted keys from the top level
        if default:
            top.append('%s.containerd.%s' % (prefix, default_line))
        for name in runtimes:
            top.append('%s.containerd.runtimes.%s.runtime_type = "io.containerd.runc.v2"' % (prefix, toml_key(name)))
        if cdi:
            top.append('%s.enable_cdi = %s' % (prefix, cdi))
    elif choices.chance(1, 2):  # a dotted key holding the runtimes as an inline table (issue #28 item 11), in the CRI table
        lines += ['', '[%s]' % prefix]
        if default:
            lines.append('containerd.' + default_line)
        lines.append('%scontainerd.runtimes = %s' % (indent, _inline_runtimes(runtimes)))
        if cdi:
            lines.append('enable_cdi = %s' % cdi)
    else:  # the same from the top level
        if default:
            top.append('%s.containerd.%s' % (prefix, default_line))
        top.append('%s.containerd.runtimes = %s' % (prefix, _inline_runtimes(runtimes)))
        if cdi:
            top.append('%s.enable_cdi = %s' % (prefix, cdi))
    return lines


@st.composite
def containerd_cases(draw):
    """(config bytes, version, options) for containerd's config.toml, version 1, 2 or 3."""
    choices = Choices(draw(SEEDS))
    version = choices.pick([2, 1, 3])
    newline = choices.pick(NEWLINES)
    indent = choices.pick(INDENTS)
    literal = choices.chance(1, 2)
    quoted_cri = toml_key(CRI[version]) if not literal or version == 1 else "'%s'" % CRI[version]
    top = []
    if choices.chance(1, 3):
        top.append('# %s' % choices.pick(TEXTS))
    if version > 1 or choices.chance(1, 2):
        top.append('version = %d%s' % (version, _comment(choices)))
    if choices.chance(1, 4):
        top.append('root = %s' % toml_string('/var/lib/c\u00f6ntainerd', literal))
    if choices.chance(1, 6):
        top.append('debug.level = "info"')  # a dotted key at the top level
    if choices.chance(1, 6):
        drop_in = toml_string(choices.pick(['/etc/containerd/conf.d/*.toml', '/etc/containerd/extra.toml']), literal)
        top += ['imports = [', '  %s, # drop-ins' % drop_in, ']']
    tables = _cri_lines(choices, version, quoted_cri, indent, literal, top)
    if choices.chance(1, 6):
        tables += ['', '[metrics]', '%saddress = %s' % (indent, _value(choices))]
    if choices.chance(1, 6):
        tables += ['', '[%s]' % toml_key('t\u00e9'), '%s%s = %s' % (indent, toml_key(choices.pick(['k', 'k\u00fc', 'a.b'])), _value(choices))]
    if version == 1 and not [line for line in top + tables if line and not line.startswith('#')]:
        top.append('oom_score = 0')  # a file without keys counts as version 2
    lines = top + tables
    text = newline.join(lines) + (newline if choices.chance(3, 4) else '')
    return text.encode('utf-8'), version, module_options(choices, version_one=version == 1)


@st.composite
def crio_cases(draw):
    """(drop-in bytes or None, options) for a CRI-O drop-in that may hold other settings."""
    choices = Choices(draw(SEEDS))
    if choices.chance(1, 6):
        return None, module_options(choices)
    newline = choices.pick(NEWLINES)
    literal = choices.chance(1, 2)
    default = choices.pick(DEFAULTS)
    runtimes = choices.subset(['crun', 'runc', 'nvidia', 'nvidia-cdi', 'kata', 'r\u00fcntime'], 2)
    lines = ['# %s' % choices.pick(TEXTS)] if choices.chance(1, 3) else []
    layout = choices.pick(CRIO_LAYOUTS)
    settings = ['log_level = %s%s' % (toml_string('warn', literal), _comment(choices))] if choices.chance(1, 2) else []
    if default:
        settings.append('default_runtime = %s' % toml_string(default, literal))
    if layout == 0:  # [header] tables
        if settings:
            lines += ['[crio.runtime]'] + settings
        for name in runtimes:
            lines += ['', '[crio.runtime.runtimes.%s]%s' % (toml_key(name), _comment(choices)),
                      'runtime_path = %s' % toml_string('/usr/bin/' + name, literal)]
            if name.startswith('nvidia') or choices.chance(1, 3):
                lines.append('runtime_type = %s' % toml_string(choices.pick(['oci', 'vm'])))
    elif layout == 1:  # dotted keys in [crio.runtime]
        if settings or runtimes:
            lines.append('[crio.runtime]')
        lines += ['runtimes.%s.runtime_path = %s' % (toml_key(name), toml_string('/usr/bin/' + name)) for name in runtimes]
        lines += settings
    elif layout == 2:  # inline runtimes
        if settings or runtimes:
            lines.append('[crio.runtime]')
        lines += settings
        if runtimes:
            lines.append('runtimes = { %s }' % ', '.join('%s = { runtime_path = "/usr/bin/x" }' % toml_key(name) for name in runtimes))
    elif layout == 3:  # dotted keys from the top level
        lines += ['crio.runtime.%s' % setting for setting in settings]
        lines += ['crio.runtime.runtimes.%s.runtime_path = "/usr/bin/x"' % toml_key(name) for name in runtimes]
    else:  # a dotted key holding the runtimes as an inline table (issue #28 item 11)
        lines += ['[crio]'] + ['runtime.%s' % setting for setting in settings]
        lines.append('runtime.runtimes = { %s }' % ', '.join('%s = { runtime_path = "/usr/bin/x" }' % toml_key(name) for name in runtimes))
    if choices.chance(1, 4):
        lines += ['', '[crio.image]', 'pause_image = %s' % _value(choices)]
    if not lines:
        lines = ['# %s' % choices.pick(TEXTS)]
    text = newline.join(lines) + (newline if choices.chance(3, 4) else '')
    return text.encode('utf-8'), module_options(choices)


@st.composite
def docker_cases(draw):
    """(daemon.json bytes or None, options) with other settings, runtimes and ours with other options."""
    choices = Choices(draw(SEEDS))
    if choices.chance(1, 8):
        return choices.pick([None, b'', b'  \n', b'{}', b'{}\r\n']), module_options(choices)
    doc = {}
    for key in choices.subset(['log-driver', 'data-root', 'debug', 'registry-mirrors', 'log-opts', 'caf\u00e9 \U0001f680'], 3):
        doc[key] = choices.pick(['journald', True, 0, -1.5, 1e300, None, ['https://m\u00efrror', 'b'], {'max-size': '10m', 'nested': {'x': [1, {}]}},
                                 choices.pick(TEXTS)])
    default = choices.pick(DEFAULTS)
    if default:
        doc['default-runtime'] = default
    runtimes = choices.subset(['runc', 'crun', 'nvidia', 'nvidia-cdi', 'kata', 'r\u00fcntime'], 3)
    if runtimes or choices.chance(1, 6):
        doc['runtimes'] = dict((name, choices.pick([{'path': '/usr/bin/' + name}, {'path': '/opt/x', 'runtimeArgs': ['--debug']},
                                                   {'path': '/usr/bin/nvidia-container-runtime', 'args': ['a']}, {}]))
                               for name in runtimes)
    if choices.chance(1, 3):
        doc['features'] = dict((key, choices.pick([True, False])) for key in choices.subset(['cdi', 'buildkit', 'containerd-snapshotter'], 2))
    if choices.chance(1, 4):
        # Keys in an order json.dumps would not choose: the output must keep it.
        doc = dict(reversed(list(doc.items())))
    indent = choices.pick([4, None, 2, '\t', 0])
    text = json.dumps(doc, indent=indent, ensure_ascii=choices.chance(1, 2), separators=choices.pick([None, (',', ':'), (' , ', ' : ')]))
    newline = choices.pick(NEWLINES)
    text = text.replace('\n', newline) + choices.pick(['', newline, newline * 2, ' '])
    return text.encode('utf-8'), module_options(choices)
