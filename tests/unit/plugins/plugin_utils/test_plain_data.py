# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""plain(): what ansible-core hands a filter, as the exact types PyYAML's safe dumper takes.

ansible-core's own tagged types are exercised through ansible-playbook (tests/cluster/test_parity.py); here
subclasses of the same builtins stand for them.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections import OrderedDict

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.plain_data import PlainDataError, plain


class TaggedDict(dict):
    pass


class TaggedList(list):
    pass


class TaggedStr(str):
    pass


class TaggedInt(int):
    pass


class TaggedFloat(float):
    pass


def test_subclasses_become_builtins_that_yaml_dumps():
    value = TaggedDict(sharing=TaggedDict(resources=TaggedList([TaggedDict(name=TaggedStr('nvidia.com/gpu'), replicas=TaggedInt(4))])),
                       ratio=TaggedFloat(0.5), on=True, off=None, pairs=(TaggedStr('a'), 1), ordered=OrderedDict(b=2))
    with pytest.raises(yaml.representer.RepresenterError):
        yaml.safe_dump(value)
    result = plain(value)
    assert yaml.safe_load(yaml.safe_dump(result)) == result
    resource = result['sharing']['resources'][0]
    # exactly the builtins: the subclasses are what the safe dumper refuses
    assert [type(value).__name__ for value in (resource['name'], resource['replicas'], result['ratio'], result['ordered'])] == [
        'str', 'int', 'float', 'dict']
    assert result['on'] is True and result['off'] is None and result['pairs'] == ['a', 1]


def test_a_value_without_a_yaml_form_is_named():
    with pytest.raises(PlainDataError, match=r'policy\.devicePlugin\.env\[0\]: a set has no YAML/JSON form'):
        plain({'devicePlugin': {'env': [{1, 2}]}}, 'policy')
