# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Credentials out of what a run shows: diffs of config files, the drift report.

A runtime config may hold registry credentials (containerd's `registry.configs."<host>".auth` table: username,
password, auth, identitytoken; a Docker config's `auths`; a URL with a password). Whatever this collection shows of
such a file (a module's diff, the drift report) goes through `redact_text`, whatever it shows of a data structure
(an object in a diff, a loop item) through `redact_data`. The value of each credential key becomes REDACTED; keys,
quotes and every other line stay, so a diff still shows where the file changed.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

REDACTED = '********'
# Keys whose values are credentials: containerd's auth table (password, auth, identitytoken), Docker's config (auth,
# identitytoken, registrytoken), HTTP headers (Authorization), and any *password/*token/*secret/api_key. A unified diff's
# line prefix (- or +) may stick to a key at the start of a line.
CREDENTIAL_KEY = re.compile(r'[-+]?(?:auth|authorization|api[-_]?key|[\w.-]*(?:password|passwd|token|secret))\Z', re.IGNORECASE)
# A TOML string (multi-line basic, multi-line literal, basic, literal) or a JSON one.
_STRINGS = '|'.join((r'"""[\s\S]*?"""', r"'''[\s\S]*?'''", r'"(?:[^"\\\n]|\\.)*"', r"'[^'\n]*'"))
_STRING = re.compile(_STRINGS)
# A key followed by its separator: TOML `key =`, JSON `"key":`, YAML `key:`; or a string to step over (a key-like word
# inside a string is no key). A bare key is looked at from its first character only.
_TOKEN = re.compile(r'''(?P<key>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|(?<![\w-])[\w-]+)[ \t]*[=:][ \t]*|''' + _STRINGS)
# A YAML plain scalar after `key:` (up to the end of the line or a flow collection's delimiter); true, false, null
# and numbers are no credentials.
_PLAIN = re.compile(r'[^\s"\'\[{,}\]#][^\n,}\]]*')
_NOT_SECRET = re.compile(r'(?:true|false|null|~|yes|no|[-+]?[0-9][0-9._eE+-]*)\Z', re.IGNORECASE)
# scheme://user:password@host
_URL_PASSWORD = re.compile(r'''(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@"'\]]+):([^\s/@"']+)@''')


def is_credential_key(name):
    return bool(CREDENTIAL_KEY.match(name.strip('"\'')))


def _redact_string(match):
    """A string literal with its content replaced, its quotes kept."""
    text = match.group(0)
    quote = 3 if text[:3] in ('"""', "'''") else 1
    return text[:quote] + REDACTED + text[-quote:]


def _value_end(text, start):
    """(end, replacement) of the value of a credential key at `start`; replacement None leaves it (an inline table,
    whose keys are looked at one by one, or no credential)."""
    string = _STRING.match(text, start)
    if string:
        return string.end(), _redact_string(string)
    if text.startswith('[', start):
        # An array of strings (containerd's registry headers): each string in it, to its closing bracket.
        parts, position, depth = ['['], start + 1, 1
        while position < len(text) and depth:
            string = _STRING.match(text, position)
            if string:
                parts.append(_redact_string(string))
                position = string.end()
                continue
            char = text[position]
            depth += {'[': 1, ']': -1}.get(char, 0)
            parts.append(char)
            position += 1
        return position, ''.join(parts)
    plain = _PLAIN.match(text, start)
    if plain and not _NOT_SECRET.match(plain.group(0).strip()):
        value = plain.group(0).rstrip()
        return start + len(value), REDACTED
    return start, None


def redact_text(text):
    """`text` (TOML, JSON, YAML, a unified diff of one of them) with the values of credential keys replaced by REDACTED,
    and the password of each URL (scheme://user:password@host)."""
    if not text:
        return text
    out, position = [], 0
    while True:
        found = _TOKEN.search(text, position)
        if not found:
            break
        end = found.end()
        if found.group('key') is not None and is_credential_key(found.group('key')):
            end, replacement = _value_end(text, end)
            if replacement is not None:
                out.append(text[position:found.end()])
                out.append(replacement)
                position = end
                continue
        out.append(text[position:end])
        position = end
    out.append(text[position:])
    return _URL_PASSWORD.sub(r'\1:' + REDACTED + '@', ''.join(out))


def redact_data(value):
    """A copy of `value` (dicts, lists, strings) with credentials REDACTED: the values of credential keys, the data of a
    Kubernetes Secret, and in every string what redact_text finds."""
    if isinstance(value, dict):
        secret = value.get('kind') == 'Secret'
        copy = {}
        for key, item in value.items():
            if secret and key in ('data', 'stringData') and isinstance(item, dict):
                copy[key] = dict((name, REDACTED) for name in item)
            elif isinstance(key, str) and is_credential_key(key) and isinstance(item, (str, list)):
                copy[key] = REDACTED if isinstance(item, str) else [REDACTED if isinstance(one, str) else redact_data(one) for one in item]
            else:
                copy[key] = redact_data(item)
        return copy
    if isinstance(value, (list, tuple)):
        return [redact_data(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
