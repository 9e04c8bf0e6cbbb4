# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    # Kubernetes API access with kubernetes.core's option names, aliases and environment
    # variables; the matching argument spec is AUTH_ARG_SPEC in module_utils/k8s/client.py.
    DOCUMENTATION = r'''
options:
  kubeconfig:
    description:
      - Path of a kubeconfig file, or its content as a dictionary.
      - Without this option and without O(host), E(K8S_AUTH_KUBECONFIG), then C(~/.kube/config), then the
        in-cluster service account are tried.
      - As in kubernetes.core, its value is never logged nor returned (C(no_log)), like O(api_key) and O(password), as a
        kubeconfig dictionary holds tokens and keys. Output that quotes the value shows C(********) instead.
    type: raw
  context:
    description:
      - The kubeconfig context to use (E(K8S_AUTH_CONTEXT)).
    type: str
  host:
    description:
      - URL of the Kubernetes API server (E(K8S_AUTH_HOST)); overrides the kubeconfig's.
    type: str
  api_key:
    description:
      - Bearer token for the API (E(K8S_AUTH_API_KEY)).
    type: str
  username:
    description:
      - User name for basic authentication (E(K8S_AUTH_USERNAME)); needs O(password).
    type: str
  password:
    description:
      - Password for basic authentication (E(K8S_AUTH_PASSWORD)).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's certificate (E(K8S_AUTH_VERIFY_SSL)); the kubeconfig decides when unset.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - CA certificate file to verify the API server with (E(K8S_AUTH_SSL_CA_CERT)).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Client certificate file (E(K8S_AUTH_CERT_FILE)).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Client key file (E(K8S_AUTH_KEY_FILE)).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - HTTP proxy URL to reach the API through (E(K8S_AUTH_PROXY)).
    type: str
requirements:
  - kubernetes (Python library) where the API is called
notes:
  - Each request waits at most 10 seconds to connect and 30 seconds for the answer. A timeout, a dropped connection
    and the answers 429, 500, 502, 503 and 504 are tried again, 4 tries in all, after 0.5, 1 and 2 seconds or after the
    server's C(Retry-After) (at most 10 seconds).
  - Writes carry the C(resourceVersion) they were planned on; on 409 Conflict (the object changed meanwhile) the object
    is read again and the change planned anew, 3 times at most, so that changes made by others are kept.
  - Other failures (401, 403, 404, 422, a refused connection) fail at once with a message naming the verb, the object
    and the API's answer; for 403, the RBAC rule the credentials lack. So does an answer that is no Kubernetes object
    (an HTML page of a proxy in front of the API).
  - Lists are read 500 objects a page; pages that do not end (a C(continue) token given twice, more than 1000 pages)
    fail the list.
'''
