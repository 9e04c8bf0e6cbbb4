# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: k8s_nodes
short_description: The GPU nodes of a Kubernetes cluster, read from its API
version_added: 0.1.0
author:
  - gpuops developers (@gpuops)
description:
  - Reads the Nodes from the Kubernetes API and builds the inventory the playbooks of this collection use.
  - "C(gpu_nodes): the Nodes labelled NVIDIA (C(nvidia.com/gpu.present=true), or by NFD with one of the labels the GPU
    Operator looks for: C(feature.node.kubernetes.io/pci-10de.present), C(pci-0302_10de.present),
    C(pci-0300_10de.present)), and the Nodes this collection has not examined yet, so that a new node is examined
    once; a node without a GPU is then left out."
  - A Node is examined once the node labels stage of C(site.yml) labelled it, as M(gpuops.gpu_operator.nfd_labels) then
    records what it set in the Node annotation C(gpuops.io/nfd-labels), as C({}) where it set nothing.
    Removing that annotation lists the node again.
  - "Inside C(gpu_nodes), groups from the Node's C(status.nodeInfo): C(os_<OS image>), C(kernel_<kernel version>) and
    C(runtime_<container runtime>), lower case with every other character than a-z and 0-9 made C(_) (for example
    C(os_ubuntu_22_04_4_lts), C(kernel_6_8_0_45_generic), C(runtime_containerd))."
  - "Each GPU node gets C(ansible_host) (the Node's InternalIP, when it has one), C(gpu_node_labels_node_name) (the
    Node's name, the inventory name) and C(k8s_node): C(address), C(os_image), C(kernel_version), C(container_runtime),
    C(container_runtime_version), C(examined), C(nvidia) and C(labels)."
  - C(kube_api) holds O(api_host), the host that reaches the API; C(localhost) is reached with the local connection.
  - It only reads the API; nodes need not be reachable yet.
  - The configuration file's name must end with C(k8s_nodes.yml) or C(k8s_nodes.yaml).
requirements:
  - kubernetes (Python library) on the controller
extends_documentation_fragment:
  - constructed
  - inventory_cache
  - gpuops.gpu_operator.k8s_auth
options:
  plugin:
    description: Makes the file a configuration of this plugin.
    required: true
    type: str
    choices: [gpuops.gpu_operator.k8s_nodes]
  api_host:
    description:
      - The host of the C(kube_api) group.
      - Give its connection in another inventory source unless it is V(localhost).
    type: str
    default: localhost
notes:
  - The Kubernetes options fall back to the same E(K8S_AUTH_*) environment variables as the modules, so one environment
    serves the inventory and the playbooks' API tasks alike (in AWX, a credential injecting them).
seealso:
  - name: Event-driven runs
    description: The event source of the same name runs site.yml when a Node joins, reboots or loses its labels.
    link: https://github.com/gpuops/gpu_operator/blob/main/docs/event-driven.md
'''

EXAMPLES = r'''
# inventory/cluster/k8s_nodes.yml; credentials from K8S_AUTH_KUBECONFIG (or ~/.kube/config, or in-cluster)
plugin: gpuops.gpu_operator.k8s_nodes

---
# A kubeconfig context, the nodes reached as user ops with sudo, a group per GPU product
plugin: gpuops.gpu_operator.k8s_nodes
kubeconfig: ~/.kube/config
context: gpu-cluster
compose:
  ansible_user: "'ops'"
  ansible_become: "true"
keyed_groups:
  - key: k8s_node.labels['nvidia.com/gpu.product'] | default('unknown')
    prefix: product

---
# Cached for 5 minutes in JSON files
plugin: gpuops.gpu_operator.k8s_nodes
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/gpuops-inventory
cache_timeout: 300
'''

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.template import trust_as_template

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import k8s_nodes


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = 'gpuops.gpu_operator.k8s_nodes'

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith(('k8s_nodes.yml', 'k8s_nodes.yaml'))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        key = self.get_cache_key(path)
        found = None
        if self.get_option('cache') and cache:
            found = self._cache.get(key)
        if found is None:
            found = self._read()
            if self.get_option('cache'):
                self._cache[key] = found
        self._populate(found)

    def _read(self):
        try:
            api = k8s_client.plugin_api(dict((name, self.get_option(name)) for name in k8s_client.AUTH_ARG_SPEC))
            nodes = k8s_nodes.read_nodes(api)[0]
        except GpuOpsError as exc:
            raise AnsibleError('gpuops.gpu_operator.k8s_nodes: %s' % to_native(exc))
        return k8s_nodes.inventory(nodes, self.get_option('api_host'))

    def _populate(self, found):
        for group, hosts in found['groups'].items():
            self.inventory.add_group(group)
            for host in hosts:
                self.inventory.add_host(host, group=group)
        for parent, children in found['children'].items():
            for child in children:
                self.inventory.add_child(parent, child)
        strict = self.get_option('strict')
        gpu_nodes = found['groups'][k8s_nodes.GPU_GROUP]
        for host, variables in found['hosts'].items():
            for name, value in variables.items():
                # The API host's variables are the plugin's own (a template included); a Node's come from the API and
                # stay untrusted: whoever may label a Node must not have templates run.
                self.inventory.set_variable(host, name, value if host in gpu_nodes else trust_as_template(value))
        for host in gpu_nodes:
            hostvars = self.inventory.get_host(host).get_vars()
            self._set_composite_vars(self.get_option('compose'), hostvars, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option('groups'), hostvars, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option('keyed_groups'), hostvars, host, strict=strict)
