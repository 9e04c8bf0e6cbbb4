# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Pure transformations of Docker's daemon.json (no I/O).

Same layout as nvidia-ctk writes: runtimes.<name> = {"path": ..., "args": []},
"default-runtime" for the default and features.cdi for CDI. Key order is kept
(Python dicts keep insertion order); a document whose content did not change is
given back with its original bytes, so reformatting only happens on a real change.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_config import ConfigError, Dialect, error, labelled, line_ends_like

DEFAULT_KEY = 'default-runtime'
# nvidia-ctk and `dockerd` documentation both indent daemon.json by 4 spaces.
DEFAULT_INDENT = 4
LONE_SURROGATE = re.compile('[\ud800-\udfff]')


class JsonObject(dict):
    """A parsed JSON object; unlike a dict it can carry the name of its file (runtime_config.labelled)."""


def _object_without_duplicates(pairs):
    obj = JsonObject()
    for key, value in pairs:
        if key in obj:
            # dockerd keeps the last one; rewriting the file would silently drop the other.
            raise ConfigError('duplicate key %s' % json.dumps(key))
        obj[key] = value
    return obj


def _no_constant(name):
    raise ConfigError('%s is not valid JSON' % name)


def _object(doc, key, create=False):
    """The object at top-level `key` (None when absent and not created); a non-object raises ConfigError."""
    if key not in doc:
        if not create:
            return None
        doc[key] = {}
    value = doc[key]
    if not isinstance(value, dict):
        raise error(doc, 'key %s must be a JSON object, found %s' % (key, _json_type(value)))
    return value


def _json_type(value):
    names = ((bool, 'a boolean'), (str, 'a string'), ((int, float), 'a number'), (list, 'an array'), (dict, 'an object'))
    return next((name for types, name in names if isinstance(value, types)), 'null')


def detect_indent(original):
    """The indentation unit of `original`'s first nested line; the default when it has none."""
    match = re.search(r'^\s*\{\s*\n([ \t]+)"', original)
    return match.group(1) if match else DEFAULT_INDENT


class DockerDialect(Dialect):
    label = 'daemon.json'

    def parse(self, content, label):
        if not content.strip():
            return labelled(JsonObject(), label)
        try:
            doc = json.loads(content, object_pairs_hook=_object_without_duplicates, parse_constant=_no_constant)
        except ValueError as exc:
            raise ConfigError('%s: invalid JSON at line %d, column %d: %s' % (label, exc.lineno, exc.colno, exc.msg))
        except ConfigError as exc:
            raise ConfigError('%s: invalid JSON: %s' % (label, exc))
        except RecursionError:
            raise ConfigError('%s: invalid JSON: nested too deeply' % label)
        if not isinstance(doc, dict):
            raise ConfigError('%s: the top level must be a JSON object, found %s' % (label, _json_type(doc)))
        return labelled(doc, label)

    def render(self, doc, original):
        # Compare serialisations, not dicts: in Python true == 1, in dockerd it is not.
        if json.dumps(doc) == json.dumps(self.parse(original, 'original')):
            return original
        if not doc and not original.strip():
            return original
        text = json.dumps(doc, indent=detect_indent(original), ensure_ascii=False)
        # A lone surrogate escape (\udc80) read from the file is no character UTF-8 can hold: it is written back as the
        # escape it was (dockerd reads it as U+FFFD, as before). Surrogate pairs were read as one character.
        text = LONE_SURROGATE.sub(lambda match: '\\u%04x' % ord(match.group()), text)
        return line_ends_like(original, text + '\n')

    def has_runtime(self, doc, name):
        runtimes = _object(doc, 'runtimes')
        return runtimes is not None and name in runtimes

    def runtime_binary(self, doc, name):
        entry = _object(doc, 'runtimes')[name]
        if not isinstance(entry, dict):
            raise error(doc, 'key runtimes.%s must be a JSON object, found %s' % (name, _json_type(entry)))
        value = entry.get('path')
        return value if isinstance(value, str) else None

    def runtime_key(self, name):
        return 'runtimes.%s' % name

    def set_runtime(self, doc, name, binary):
        runtimes = _object(doc, 'runtimes', create=True)
        entry = runtimes.setdefault(name, {'path': binary, 'args': []})
        if not isinstance(entry, dict):
            raise error(doc, 'key runtimes.%s must be a JSON object, found %s' % (name, _json_type(entry)))
        entry['path'] = binary
        entry.setdefault('args', [])

    def remove_runtime(self, doc, name):
        runtimes = _object(doc, 'runtimes')
        if runtimes is not None:
            runtimes.pop(name, None)

    def get_default(self, doc):
        value = doc.get(DEFAULT_KEY)
        if value is not None and not isinstance(value, str):
            raise error(doc, 'key %s must be a string, found %s' % (DEFAULT_KEY, _json_type(value)))
        return value

    def set_default(self, doc, name):
        if name is None:
            doc.pop(DEFAULT_KEY, None)
        else:
            doc[DEFAULT_KEY] = name

    def get_cdi(self, doc):
        features = _object(doc, 'features')
        value = None if features is None else features.get('cdi')
        if value is not None and not isinstance(value, bool):
            raise error(doc, 'key features.cdi must be true or false, found %s' % _json_type(value))
        return value

    def set_cdi(self, doc, value):
        if value is None:
            features = _object(doc, 'features')
            if features is not None:
                features.pop('cdi', None)
        else:
            _object(doc, 'features', create=True)['cdi'] = value

    def prune(self, doc):
        for key in ('runtimes', 'features'):
            if _object(doc, key) == {}:
                del doc[key]
