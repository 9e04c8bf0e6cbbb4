# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A kubernetes ApiClient from kubernetes.core-style auth options (doc fragment gpuops.gpu_operator.k8s_auth).

Same option names, aliases and K8S_AUTH_* environment fallbacks as kubernetes.core, so playbooks
and module_defaults written for kubernetes.core.k8s work unchanged.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import traceback

from ansible.module_utils.basic import env_fallback, missing_required_lib

try:
    import kubernetes
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type='raw', fallback=(env_fallback, ['K8S_AUTH_KUBECONFIG'])),
    context=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_CONTEXT'])),
    host=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_HOST'])),
    api_key=dict(type='str', no_log=True, fallback=(env_fallback, ['K8S_AUTH_API_KEY'])),
    username=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_USERNAME'])),
    password=dict(type='str', no_log=True, fallback=(env_fallback, ['K8S_AUTH_PASSWORD'])),
    validate_certs=dict(type='bool', aliases=['verify_ssl'], fallback=(env_fallback, ['K8S_AUTH_VERIFY_SSL'])),
    ca_cert=dict(type='path', aliases=['ssl_ca_cert'], fallback=(env_fallback, ['K8S_AUTH_SSL_CA_CERT'])),
    client_cert=dict(type='path', aliases=['cert_file'], fallback=(env_fallback, ['K8S_AUTH_CERT_FILE'])),
    client_key=dict(type='path', aliases=['key_file'], no_log=False, fallback=(env_fallback, ['K8S_AUTH_KEY_FILE'])),
    proxy=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_PROXY'])),
)


class K8sAuthError(Exception):
    """The auth options do not give a usable client configuration."""


def _load_kubeconfig(params, configuration):
    kubeconfig = params.get('kubeconfig')
    try:
        if isinstance(kubeconfig, dict):
            kubernetes.config.load_kube_config_from_dict(kubeconfig, context=params.get('context'), client_configuration=configuration)
        else:
            kubernetes.config.load_kube_config(config_file=kubeconfig, context=params.get('context'), client_configuration=configuration)
    except (kubernetes.config.ConfigException, OSError, ValueError, TypeError) as exc:
        raise K8sAuthError('cannot load kubeconfig %s: %s' % (kubeconfig if isinstance(kubeconfig, str) else '(inline)', exc)) from exc


def client_configuration(params):
    """A kubernetes.client.Configuration from the auth options, kubernetes.core's way.

    A kubeconfig (option, K8S_AUTH_KUBECONFIG or the default ~/.kube/config) is the base unless
    only `host` is given; inside a pod without either, the in-cluster service account is used.
    The other options override what the kubeconfig says.
    """
    configuration = kubernetes.client.Configuration()
    if params.get('kubeconfig') or params.get('context') or not params.get('host'):
        try:
            _load_kubeconfig(params, configuration)
        except K8sAuthError:
            if params.get('kubeconfig') or params.get('context'):
                raise
            try:
                kubernetes.config.load_incluster_config(client_configuration=configuration)
            except kubernetes.config.ConfigException as exc:
                raise K8sAuthError('no Kubernetes API configured: set kubeconfig or host (no default kubeconfig, not in a pod: %s)' % exc) from exc
    if params.get('host'):
        configuration.host = params['host']
    if params.get('api_key'):
        configuration.api_key = {'authorization': 'Bearer ' + params['api_key']}
    if params.get('username') and params.get('password'):
        # The client sends only the `authorization` api key; basic auth goes through it (as kubernetes.core does).
        configuration.username, configuration.password = params['username'], params['password']
        configuration.api_key = {'authorization': configuration.get_basic_auth_token()}
    if params.get('validate_certs') is not None:
        configuration.verify_ssl = params['validate_certs']
    for option, attribute in (('ca_cert', 'ssl_ca_cert'), ('client_cert', 'cert_file'), ('client_key', 'key_file'), ('proxy', 'proxy')):
        if params.get(option):
            setattr(configuration, attribute, params[option])
    return configuration


def api_client(module):
    """An ApiClient from the module's auth options; fails the module with a clear message when it cannot."""
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=KUBERNETES_IMPORT_ERROR)
    try:
        return kubernetes.client.ApiClient(client_configuration(module.params))
    except K8sAuthError as exc:
        module.fail_json(msg=str(exc))
