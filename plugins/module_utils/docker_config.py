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

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.runtime_config import ConfigError, Dialect

DEFAULT_KEY = 'default-runtime'
# nvidia-ctk and `dockerd` documentation both indent daemon.json by 4 spaces.
DEFAULT_INDENT = 4


def _object(doc, key, create=False):
    """The object at top-level `key` (None when absent and not created); a non-object raises ConfigError."""
    if key not in doc:
        if not create:
            return None
        doc[key] = {}
    value = doc[key]
    if not isinstance(value, dict):
        raise ConfigError('key %s must be a JSON object, found %s' % (key, type(value).__name__))
    return value


def detect_indent(original):
    """The indentation unit of `original`'s first nested line; the default when it has none."""
    match = re.search(r'^\s*\{\s*\n([ \t]+)"', original)
    return match.group(1) if match else DEFAULT_INDENT


class DockerDialect(Dialect):
    label = 'daemon.json'

    def parse(self, content, label):
        if not content.strip():
            return {}
        try:
            doc = json.loads(content)
        except ValueError as exc:
            raise ConfigError('%s: invalid JSON at line %d, column %d: %s' % (label, exc.lineno, exc.colno, exc.msg))
        if not isinstance(doc, dict):
            raise ConfigError('%s: the top level must be a JSON object, found %s' % (label, type(doc).__name__))
        return doc

    def render(self, doc, original):
        # Compare serialisations, not dicts: in Python true == 1, in dockerd it is not.
        if json.dumps(doc) == json.dumps(self.parse(original, 'original')):
            return original
        if not doc and not original.strip():
            return original
        return json.dumps(doc, indent=detect_indent(original), ensure_ascii=False) + '\n'

    def has_runtime(self, doc, name):
        runtimes = _object(doc, 'runtimes')
        return runtimes is not None and name in runtimes

    def set_runtime(self, doc, name, binary):
        runtimes = _object(doc, 'runtimes', create=True)
        entry = runtimes.setdefault(name, {'path': binary, 'args': []})
        if not isinstance(entry, dict):
            raise ConfigError('key runtimes.%s must be a JSON object, found %s' % (name, type(entry).__name__))
        entry['path'] = binary
        entry.setdefault('args', [])

    def remove_runtime(self, doc, name):
        runtimes = _object(doc, 'runtimes')
        if runtimes is not None:
            runtimes.pop(name, None)

    def get_default(self, doc):
        value = doc.get(DEFAULT_KEY)
        if value is not None and not isinstance(value, str):
            raise ConfigError('key %s must be a string, found %s' % (DEFAULT_KEY, type(value).__name__))
        return value

    def set_default(self, doc, name):
        if name is None:
            doc.pop(DEFAULT_KEY, None)
        else:
            doc[DEFAULT_KEY] = name

    def get_cdi(self, doc):
        features = _object(doc, 'features')
        return None if features is None else features.get('cdi')

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
