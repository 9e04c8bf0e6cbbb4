# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Every module's secret options are no_log, in the argument spec its main() builds.

No_log keeps an option's value out of the module's result (its `invocation`, shown at -vvv) and out of every message.
The Kubernetes auth options are held to kubernetes.core's own spec (the AUTH_ARG_SPEC of the kubernetes.core installed
with the `ansible` wheel, plugins/module_utils/args_common.py): what it marks no_log (kubeconfig, api_key, password) is
no_log here too; any other option named like a credential must be no_log as well.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib
import os
import re

import pytest
import yaml

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC as KUBERNETES_CORE_AUTH

MODULES_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'plugins', 'modules')
MODULES = sorted(name[:-3] for name in os.listdir(MODULES_DIR) if name.endswith('.py') and not name.startswith('_'))
# Option names that say "credential"; a path to a key or a certificate file is none (kubernetes.core's client_key).
CREDENTIAL = re.compile(r'(password|passwd|token|secret|api_?key|kubeconfig)\Z')
KUBERNETES_CORE_NO_LOG = sorted(name for name, spec in KUBERNETES_CORE_AUTH.items() if spec.get('no_log'))


class _Built(Exception):
    pass


def argument_spec(name):
    """The argument spec the module's main() hands to AnsibleModule; for a module an action plugin runs (no main()), its
    documented options, which can hold no secret."""
    module = importlib.import_module('ansible_collections.gpuops.gpu_operator.plugins.modules.' + name)
    if not hasattr(module, 'main'):
        return dict((option, {}) for option in yaml.safe_load(module.DOCUMENTATION)['options'])
    seen = {}

    def capture(argument_spec, **_kwargs):
        seen['spec'] = argument_spec
        raise _Built()

    original = module.AnsibleModule
    module.AnsibleModule = capture
    try:
        with pytest.raises(_Built):
            module.main()
    finally:
        module.AnsibleModule = original
    return seen['spec']


def test_kubernetes_core_marks_its_credentials():
    """The reference itself: if kubernetes.core changed what it hides, this test's table is to be read again."""
    assert KUBERNETES_CORE_NO_LOG == ['api_key', 'kubeconfig', 'password']


@pytest.mark.parametrize('name', MODULES)
def test_secret_options_are_no_log(name):
    spec = argument_spec(name)
    auth = [option for option in spec if option in KUBERNETES_CORE_AUTH]
    secret = sorted(set(option for option in auth if option in KUBERNETES_CORE_NO_LOG)
                    | set(option for option in spec if CREDENTIAL.search(option)))
    assert [option for option in secret if not spec[option].get('no_log')] == [], 'options that would be shown at -vvv'
    if auth:
        # A module taking Kubernetes auth takes all of kubernetes.core's credentials.
        assert set(KUBERNETES_CORE_NO_LOG) <= set(spec), sorted(spec)
