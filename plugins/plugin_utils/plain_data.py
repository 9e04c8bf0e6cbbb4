# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Plain Python data from what ansible-core hands a filter.

ansible-core 2.19 passes variables to plugins as lazily templated, tagged subclasses of dict, list,
str, int and float. Serialisers that check exact types (PyYAML's safe dumper: "cannot represent an
object") refuse them, so the filters copy their input into plain types first.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping


class PlainDataError(TypeError):
    """A value that has no YAML/JSON form; the message says where it is."""


def plain(value, where='value'):
    """`value` as plain dict, list, str, int, float, bool and None (keys become str)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        return dict((str(key), plain(item, '%s.%s' % (where, key))) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(item, '%s[%d]' % (where, index)) for index, item in enumerate(value)]
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    raise PlainDataError('%s: a %s has no YAML/JSON form (%r)' % (where, type(value).__name__, value))
