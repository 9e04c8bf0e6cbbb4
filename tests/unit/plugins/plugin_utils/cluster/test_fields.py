# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The table of ClusterPolicy fields (fields.py) against the GPU Operator's CRD of v26.7.0, copied unchanged into
tests/fixtures/gpu-operator/ (SOURCE.md): every leaf path of the CRD has exactly one row, of the CRD's type."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import fields

OPERATOR = Path(__file__).resolve().parents[5] / 'tests' / 'fixtures' / 'gpu-operator'


def crd_leaves(crd):
    """{path: CRD type} of every leaf of the ClusterPolicy spec; a list's items as `name[]`, int-or-string as such."""
    found = {}

    def walk(node, path):
        if node.get('type') == 'object' and 'properties' in node:
            for key, child in node['properties'].items():
                walk(child, path + [key])
        elif node.get('type') == 'array' and 'properties' in node['items']:
            for key, child in node['items']['properties'].items():
                walk(child, path[:-1] + [path[-1] + '[]', key])
        else:
            found['.'.join(path)] = 'int-or-string' if node.get('x-kubernetes-int-or-string') else node['type']

    [version] = crd['spec']['versions']
    walk(version['schema']['openAPIV3Schema']['properties']['spec'], [])
    return found


CRD = crd_leaves(yaml.safe_load((OPERATOR / 'nvidia.com_clusterpolicies.yaml').read_text()))


def test_the_operators_inputs_are_unchanged():
    """Each file still has the git blob id SOURCE.md names: NVIDIA's inputs, not edited copies."""
    rows = re.findall(r'^\| `([^`]+)` \| .* \| `([0-9a-f]{40})` \|$', (OPERATOR / 'SOURCE.md').read_text(), re.M)
    assert len(rows) == 3
    for name, blob in rows:
        data = (OPERATOR / name).read_bytes()
        assert hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest() == blob, name


def test_every_crd_field_has_its_row():
    """A field of the CRD in neither list (honoured, declared not applicable or refused) fails here, by name."""
    assert len(CRD) > 350, 'the walk found the fields'
    assert sorted(set(CRD) - set(fields.FIELDS)) == [], 'fields of the CRD without a row in fields.py'
    assert sorted(set(fields.FIELDS) - set(CRD)) == [], 'rows of fields.py that are not fields of the CRD'
    assert dict((path, row[0]) for path, row in fields.FIELDS.items()) == CRD, 'a row with another type than the CRD'


@pytest.mark.parametrize('path', sorted(fields.FIELDS))
def test_each_row_says_what_and_why(path):
    row = fields.FIELDS[path]
    assert row[1] in fields.STATUSES and isinstance(row[2], str) and row[2]
    # Refused rows may list the Operator's defaults, which are accepted; the others have none.
    assert len(row) == 3 or (row[1] == fields.REFUSED and len(row) == 4 and isinstance(row[3], tuple)), row
