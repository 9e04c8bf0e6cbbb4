# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The modules' way into the Kubernetes API: a client from kubernetes.core-style auth options, and calls that retry.

The auth options (doc fragment gpuops.gpu_operator.k8s_auth) have the same names, aliases and
K8S_AUTH_* environment fallbacks as kubernetes.core, so playbooks and module_defaults written for
kubernetes.core.k8s work unchanged. `Api` makes every call with a request timeout, retries what
may pass (throttling, an overloaded or restarting apiserver, a timeout) with bounded exponential
backoff, runs read-modify-writes again on 409 Conflict, and turns every other failure into an
`ApiError` that names the verb, the object, the server's answer and, for 403, the RBAC rule missing.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import json
import time
import traceback

from ansible.module_utils.basic import env_fallback, missing_required_lib
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError

try:
    import kubernetes
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError as NetworkError, NewConnectionError, ProtocolError, TimeoutError as RequestTimeout
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

# no_log as in kubernetes.core's own spec: a kubeconfig given as a dictionary holds tokens and keys.
AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type='raw', no_log=True, fallback=(env_fallback, ['K8S_AUTH_KUBECONFIG'])),
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


# Answers that another try may get past: throttling (429) and an apiserver, or the proxy in front of
# it, that is overloaded or restarting. 409 is not among them: only a fresh read can get past it.
RETRY_STATUSES = (429, 500, 502, 503, 504)
CONFLICT = 409
NOT_FOUND = 404
ATTEMPTS = 4  # tries of one call, the first included
BACKOFF = 0.5  # seconds before the first retry, doubled before each further one
MAX_DELAY = 10.0  # seconds: the longest wait before a retry, also when the server's Retry-After asks for more
REQUEST_TIMEOUT = (10, 30)  # seconds to connect, and to wait for the answer
CONFLICT_ATTEMPTS = 3  # read-modify-write rounds while the object keeps changing between the read and the write
LIST_PAGE = 500  # objects asked for per list request: a fleet's Node list comes in pages, not as one answer of megabytes
# Pages one list may take: an apiserver ends every list (5000 Nodes are 10 full pages); a proxy that keeps answering
# with a continue token would otherwise be followed for ever.
MAX_PAGES = 1000
# The notes of doc_fragments/k8s_auth.py state these numbers.


class K8sAuthError(GpuOpsError):
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
    # Api.call is the one place that retries: urllib3's own immediate retries would hide faults from it.
    configuration.retries = False
    return configuration


def api_client(module):
    """An ApiClient from the module's auth options; fails the module with a clear message when it cannot."""
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=KUBERNETES_IMPORT_ERROR)
    try:
        return kubernetes.client.ApiClient(client_configuration(module.params))
    except K8sAuthError as exc:
        module.fail_json(msg=str(exc))


def connect(module):
    """An `Api` on the module's auth options; fails the module with a clear message when it cannot."""
    return Api(api_client(module))


def plugin_api(options):
    """An `Api` for a plugin (inventory, event source) from its auth options, read as a module reads them.

    The names, aliases, types and K8S_AUTH_* fallbacks are AUTH_ARG_SPEC's; an option given as None counts as not
    given. Raises K8sAuthError for a missing kubernetes library, a bad option or no usable configuration.
    """
    if not HAS_KUBERNETES:
        raise K8sAuthError(missing_required_lib('kubernetes'))
    given = dict((name, value) for name, value in options.items() if value is not None)
    result = ArgumentSpecValidator(AUTH_ARG_SPEC).validate(given)
    if result.error_messages:
        raise K8sAuthError('; '.join(result.error_messages))
    return Api(kubernetes.client.ApiClient(client_configuration(result.validated_parameters)))


class ApiError(GpuOpsError):
    """An API call failed for good; the message names the verb, the object, the answer and what it needs."""

    def __init__(self, message, status=None, tries=1):
        super().__init__(message)
        self.status = status  # the HTTP status; None when no answer came
        self.tries = tries  # how many times the request was sent


class ObjectRef(collections.namedtuple('ObjectRef', 'kind name resource group namespace subresource')):
    """An API object as messages name it and as RBAC rules address it (resource is the plural, as in a rule)."""
    __slots__ = ()

    def __new__(cls, kind, name, resource, group='', namespace=None, subresource=None):
        return super(ObjectRef, cls).__new__(cls, kind, name, resource, group, namespace, subresource)

    def __str__(self):
        return '%s %s%s%s' % (self.kind, self.namespace + '/' if self.namespace else '', self.name,
                              ' ' + self.subresource if self.subresource else '')

    def rbac_rule(self, verb):
        """The RBAC rule that allows `verb` on this object, as a Role or ClusterRole writes it."""
        resource = self.resource + ('/' + self.subresource if self.subresource else '')
        scope = 'a Role in namespace %s or a ClusterRole' % self.namespace if self.namespace else 'a ClusterRole'
        return 'apiGroups ["%s"], resources ["%s"], verbs ["%s"] (%s)' % (self.group, resource, verb, scope)


def retry_delay(tries, backoff=BACKOFF, retry_after=None):
    """Seconds to wait after `tries` failed tries: the server's Retry-After, else exponential backoff; at most MAX_DELAY."""
    delay = retry_after if retry_after is not None else backoff * 2 ** (tries - 1)
    return min(max(delay, 0), MAX_DELAY)


def classify(exc):
    """(status, retryable, retry_after) for a failed call; None for an exception that is no API or network fault.

    status is None when no answer came. A timeout or a dropped connection is retryable; a refused
    connection, an unknown host or a TLS failure is not (nothing suggests that it passes soon).
    """
    if isinstance(exc, ApiException):
        if not exc.status:  # the client reports TLS failures as status 0
            return None, False, None
        return exc.status, exc.status in RETRY_STATUSES, _retry_after(exc)
    if isinstance(exc, NetworkError):
        return None, isinstance(exc, (RequestTimeout, ProtocolError)) and not isinstance(exc, NewConnectionError), None
    return None


def _retry_after(exc):
    try:
        return float((getattr(exc, 'headers', None) or {}).get('Retry-After'))
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date, which the apiserver does not send


def _server_message(exc):
    try:
        body = json.loads(getattr(exc, 'body', None) or '{}')
    except ValueError:
        return ''
    return body.get('message', '') if isinstance(body, dict) else ''


def describe(exc, verb, ref, host, timeout, tries=1):
    """The message of an ApiError: what failed, what the API answered (or that it did not) and what it needs."""
    status = getattr(exc, 'status', None) if isinstance(exc, ApiException) else None
    if status:
        message = _server_message(exc)
        text = 'cannot %s %s: API answered %s %s%s' % (verb, ref, status, exc.reason or '', ': ' + message if message else '')
        if status == 401:
            text += '; the API did not accept the credentials (kubeconfig user, api_key, client certificate)'
        elif status == 403:
            text += '; the credentials lack the RBAC permission %s' % ref.rbac_rule(verb)
    elif isinstance(exc, RequestTimeout) and not isinstance(exc, NewConnectionError):
        text = 'cannot %s %s: the Kubernetes API at %s did not answer within %ss' % (
            verb, ref, host, timeout[1] if isinstance(timeout, tuple) else timeout)
    else:
        text = 'cannot %s %s: the Kubernetes API at %s is unreachable: %s' % (verb, ref, host, exc)
    return text + (' (gave up after %d tries)' % tries if tries > 1 else '')


def json_object(data, verb, ref, host):
    """The body of an answer (bytes) as a JSON object; ApiError naming what came instead (a proxy's HTML page, ...)."""
    try:
        value = json.loads(data)
    except ValueError:  # UnicodeDecodeError included
        value, what = None, 'text that is not JSON'
    else:
        what = {list: 'a JSON array', str: 'a JSON string', bool: 'a JSON boolean', type(None): 'JSON null'}.get(type(value), 'a JSON number')
    if isinstance(value, dict):
        return value
    text = data.decode('utf-8', 'replace') if isinstance(data, bytes) else str(data)
    raise ApiError('cannot %s %s: the Kubernetes API at %s answered with %s, not a Kubernetes object (is a proxy or load '
                   'balancer answering for it?): %r' % (verb, ref, host, what, ' '.join(text.split())[:200]))


class Api(object):
    """Calls into the kubernetes client with a request timeout; transient faults are retried, others raise ApiError."""

    def __init__(self, client, attempts=ATTEMPTS, backoff=BACKOFF, timeout=REQUEST_TIMEOUT, sleep=time.sleep):
        self.client = client  # a kubernetes.client.ApiClient, for the typed API classes
        self.attempts, self.backoff, self.timeout, self.sleep = attempts, backoff, timeout, sleep

    def call(self, verb, ref, method, *args, **kwargs):
        """method(*args, **kwargs), retried on 429, 5xx and timeouts; `verb` and `ref` name the call in errors.

        Only for calls that are safe to send again: reads, and writes guarded by a resourceVersion or
        idempotent in themselves.
        """
        kwargs['_request_timeout'] = self.timeout
        tries = 0
        while True:
            tries += 1
            try:
                return method(*args, **kwargs)
            except Exception as exc:  # pylint: disable=broad-exception-caught  # classify() picks the API's; others are re-raised
                fault = classify(exc)
                if fault is None:
                    raise
                status, retryable, retry_after = fault
                if not retryable or tries >= self.attempts:
                    raise ApiError(describe(exc, verb, ref, self.client.configuration.host, self.timeout, tries), status, tries) from exc
                self.sleep(retry_delay(tries, self.backoff, retry_after))

    def read(self, verb, ref, method, *args, **kwargs):
        """call() with the answer as a decoded JSON object (raw: the client's models reject objects that lack fields
        they require); an answer that is not one raises ApiError."""
        answer = self.call(verb, ref, method, *args, _preload_content=False, **kwargs)
        return json_object(answer.data, verb, ref, self.client.configuration.host)

    def list_items(self, ref, method, *args, **kwargs):
        """The items of a list call, read page by page (LIST_PAGE at a time); ApiError when the pages do not end: the
        API gives a continue token a second time, or more than MAX_PAGES pages."""
        items, token, seen = [], None, set()
        for _page in range(MAX_PAGES):
            if token:
                kwargs['_continue'] = token
            page = self.read('list', ref, method, *args, limit=LIST_PAGE, **kwargs)
            found = page.get('items') or []
            if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
                raise ApiError('cannot list %s: the API\'s answer has no list of objects under items: %r' % (ref, str(found)[:200]))
            items += found
            token = (page.get('metadata') or {}).get('continue')
            if not token:
                return items
            if token in seen:
                raise ApiError('cannot list %s: the API gave the continue token %r a second time, so its pages would never end '
                               '(is a proxy answering for it from a cache?)' % (ref, str(token)[:100]))
            seen.add(token)
        raise ApiError('cannot list %s: the API still gave a continue token after %d pages of %d' % (ref, MAX_PAGES, LIST_PAGE))

    def read_modify_write(self, attempt, check_mode=False):
        """Run a read-modify-write, again on a fresh read when the write meets 409 Conflict; returns (result, changed).

        attempt() reads the object and returns (result, write): write is None when nothing is to change,
        else a function making the one write, guarded by the resourceVersion read (so that a conflict is
        detected rather than overwritten). In check mode the write is not made.
        """
        landed = None
        rounds = 0
        while True:
            rounds += 1
            result, write = attempt()
            if write is None:
                return (landed, True) if landed is not None else (result, False)
            if check_mode:
                return result, True
            try:
                write()
                return result, True
            except ApiError as exc:
                if exc.status != CONFLICT:
                    raise
                if rounds >= CONFLICT_ATTEMPTS:
                    raise ApiError('%s (the object changed between read and write %d times)' % (exc, rounds), exc.status, exc.tries) from exc
                if exc.tries > 1:
                    landed = result  # a try that went unanswered may have made the write: the next read may show it done
