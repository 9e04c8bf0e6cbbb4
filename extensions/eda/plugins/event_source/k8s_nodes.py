# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""k8s_nodes: an ansible-rulebook event source for the Nodes of a Kubernetes cluster that need site.yml.

The decisions are plugins/plugin_utils/k8s_nodes.py's (observe, follow); this file runs them for ansible-rulebook.
"""

import asyncio
import os
import sys
import threading

DOCUMENTATION = r'''
---
short_description: Events for the Nodes of a Kubernetes cluster that need site.yml
description:
  - Lists and then watches the Nodes through the Kubernetes API and puts an event on the queue for each Node that needs
    the playbooks, with the reasons.
  - "C(joined): a Node this collection has not examined yet (no annotation C(gpuops.io/nfd-labels)), at start-up or when
    it registers."
  - "C(ready): a GPU node Ready again after a reboot (its C(nodeInfo.bootID) changed since it was last Ready; without
    boot IDs, Ready after not Ready)."
  - "C(labels): a GPU node lost labels this collection set, or has another value in one (a C(nvidia.com/gpu.deploy.*)
    label someone set to another non-empty value is theirs, as for the GPU Operator)."
  - "C(mig): the MIG manager applied a MIG layout on a GPU node (its C(nvidia.com/mig.config.state) label became
    V(success) since the last look): the node's GPU labels are computed again, as GPU Feature Discovery's periodic refresh
    does with the Operator. A layout applied before the source started gives no event."
  - A GPU node is one labelled NVIDIA by NFD or by this collection; examined nodes without a GPU give no events. Each
    change gives one event with all its reasons; a Node that stays as it is gives no further event.
  - "The event: C(node) (the Node's name), C(reasons), C(labels_lost), C(labels_changed), C(boot_id), C(mig_config) (the
    Node's C(nvidia.com/mig.config)), and C(meta.hosts) (the node and O(limit_with)), which ansible-rulebook uses as the
    limit of C(run_playbook)."
  - When the watch expires or the API fails, the Nodes are listed again (after 1, 2, 5, 10, then every 30 seconds);
    a Node whose change was missed meanwhile gives its event then. Credentials the API refuses (401, 403) stop the source.
  - Needs the C(kubernetes) Python library and ansible-core where ansible-rulebook runs.
options:
  limit_with:
    description:
      - Inventory groups or hosts that each event's run targets besides the node, by default the API host, so that
        the cluster plays of site.yml and the ClusterPolicy status run with the node's stages.
    type: list
    elements: str
    default: [kube_api]
  kubeconfig:
    description:
      - Path of a kubeconfig file, or its content as a dictionary (E(K8S_AUTH_KUBECONFIG), then C(~/.kube/config), then
        the in-cluster service account).
      - This and the options below are those of the collection's modules (doc fragment gpuops.gpu_operator.k8s_auth),
        with the same aliases and E(K8S_AUTH_*) environment variables.
    type: raw
  context:
    description: The kubeconfig context (E(K8S_AUTH_CONTEXT)).
    type: str
  host:
    description: URL of the API server (E(K8S_AUTH_HOST)).
    type: str
  api_key:
    description: Bearer token (E(K8S_AUTH_API_KEY)).
    type: str
  username:
    description: User for basic authentication (E(K8S_AUTH_USERNAME)).
    type: str
  password:
    description: Password for basic authentication (E(K8S_AUTH_PASSWORD)).
    type: str
  validate_certs:
    description: Verify the API server's certificate (E(K8S_AUTH_VERIFY_SSL)).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description: CA certificate file (E(K8S_AUTH_SSL_CA_CERT)).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description: Client certificate file (E(K8S_AUTH_CERT_FILE)).
    type: path
    aliases: [cert_file]
  client_key:
    description: Client key file (E(K8S_AUTH_KEY_FILE)).
    type: path
    aliases: [key_file]
  proxy:
    description: HTTP proxy URL (E(K8S_AUTH_PROXY)).
    type: str
'''

EXAMPLES = r'''
- name: Configure GPU nodes as they join, reboot or lose their labels
  hosts: all
  sources:
    - gpuops.gpu_operator.k8s_nodes:
        kubeconfig: /etc/gpuops/kubeconfig
  rules:
    - name: Run site.yml for the node
      condition: event.reasons is defined
      action:
        run_playbook:
          name: gpuops.gpu_operator.site_and_doctor
'''

try:
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
    from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import k8s_nodes
except ImportError:
    # ansible-rulebook runs a source plugin by its path, without the collection on sys.path: the directory holding
    # ansible_collections/ (seven levels up, as the collection path names it, links unresolved) goes there.
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *['..'] * 7)))
    from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
    from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import k8s_nodes


async def main(queue, args):
    """Put the events of the Nodes on `queue` until cancelled; raises when the source cannot go on."""
    options = dict(args)
    options.pop('eda_feedback_queue', None)  # given by ansible-rulebook to sources that ask for feedback; this one does not
    limit_with = options.pop('limit_with', None) or ['kube_api']
    api = k8s_client.plugin_api(options)
    loop = asyncio.get_running_loop()
    found = asyncio.Queue()
    stop = threading.Event()

    def emit(item):
        loop.call_soon_threadsafe(found.put_nowait, item)

    def follow():
        # The kubernetes client blocks: the list and the watches run in this thread, the events cross over to the loop.
        try:
            k8s_nodes.follow(api, k8s_nodes.Observer(limit_with), emit, stop.is_set)
        except BaseException as exc:  # pylint: disable=broad-exception-caught  # raised again in main()
            emit(exc)

    threading.Thread(target=follow, name='k8s-nodes-watch', daemon=True).start()
    try:
        while True:
            item = await found.get()
            if isinstance(item, BaseException):
                raise item
            await queue.put(item)
    finally:
        stop.set()


if __name__ == '__main__':
    class PrintQueue(asyncio.Queue):
        """Prints the events: python k8s_nodes.py shows what a rulebook would get (credentials from K8S_AUTH_*)."""

        async def put(self, item):
            print(item)

    asyncio.run(main(PrintQueue(), {}))
