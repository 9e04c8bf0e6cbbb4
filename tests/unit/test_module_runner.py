# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""tests/module_runner.run_module: a run whose outcome is not the one the test states fails the test."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from ansible.module_utils.basic import AnsibleModule

from tests.module_runner import run_module


def succeeding():
    AnsibleModule(argument_spec={}).exit_json(changed=False)


def failing():
    AnsibleModule(argument_spec={}).fail_json(msg='broken', changed=False)


@pytest.mark.parametrize('main, failed', [(succeeding, False), (failing, True)])
def test_the_stated_outcome_passes(capsys, main, failed):
    assert bool(run_module(capsys, main, {}, failed=failed).get('failed')) is failed


@pytest.mark.parametrize('main, failed, said', [(failing, False, 'expected the module to succeed, it failed'),
                                                (succeeding, True, 'expected the module to fail, it succeeded')])
def test_the_other_outcome_fails_the_test(capsys, main, failed, said):
    with pytest.raises(AssertionError, match=said):
        run_module(capsys, main, {}, failed=failed)


def test_success_is_the_default(capsys):
    with pytest.raises(AssertionError, match='broken'):
        run_module(capsys, failing, {})
