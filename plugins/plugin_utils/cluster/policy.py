# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ClusterPolicy settings: the GPU Operator release this collection tracks, its defaults, and the fields honoured.

Everything the cluster side renders starts here. `resolve()` checks a ClusterPolicy-style spec field
by field against the schema (the sections every operand shares here, and each operand's own section,
registry.py; a field this collection does not honour is refused by name, never dropped), overlays it
on the defaults of OPERATOR_RELEASE, points the default images at a mirror, and settles what the GPU
nodes decide (the runtime class name, CDI) from the container toolkit settings of those nodes. Env and
args lists merge by name, as the Operator merges env.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import MIG_STRATEGIES, TOOLKIT_DEFAULTS
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import meta
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import images

# The GPU Operator release whose defaults (deployments/gpu-operator/values.yaml) and operand layouts
# (assets/, controllers/object_controls.go) the cluster side follows. A bump changes this, the operands' images
# (operands/*.py) and gets a changelog entry; tests/cluster/parity/ holds the facts of this release.
OPERATOR_RELEASE = 'v26.7.0'
PULL_POLICIES = ('Always', 'Never', 'IfNotPresent')
DOCS = 'docs/coming-from-gpu-operator.md'
POLICY_NAME = 'cluster-policy'  # the name NVIDIA's Helm chart gives its ClusterPolicy
# The Operator's sections this collection does not deploy: the ClusterPolicy says they are off.
NOT_DEPLOYED = ('driver', 'toolkit')
# hostPaths and their defaults (the chart's rootFS and driverInstallDir, the CRD's kubeletRootDir): where the operands find
# the host's root, the driver's root and the kubelet's directory (skeleton.host_paths, the DCGM exporter's pod-resources).
HOST_PATHS = {'rootFS': '/', 'driverInstallDir': '/run/nvidia/driver', 'kubeletRootDir': '/var/lib/kubelet'}


class PolicyError(GpuOpsError):
    """A ClusterPolicy setting that cannot be honoured; the message names the field."""


def common_defaults():
    """The Operator's defaults of the sections every operand reads."""
    return {
        'operator': {'runtimeClass': ''},  # '': the GPU nodes' container_toolkit_runtime_name
        'daemonsets': {
            'labels': {}, 'annotations': {}, 'priorityClassName': 'system-node-critical',
            'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
            'updateStrategy': 'RollingUpdate', 'rollingUpdate': {'maxUnavailable': '1'}, 'podSecurityContext': {},
        },
        'mig': {'strategy': 'single'},
        'cdi': {'enabled': None, 'default': False},  # None: the GPU nodes' container_toolkit_cdi_enabled
        'psa': {'enabled': False},
        'hostPaths': dict(HOST_PATHS),
    }


def defaults(operands):
    """The Operator's defaults for the fields honoured here: the shared sections and each operand's own."""
    found = common_defaults()
    found.update((operand.section, operand.section_defaults()) for operand in operands if operand.image)
    return found


# --- the fields honoured ------------------------------------------------------------------------

COMMON_SCHEMA = {
    'operator': {'runtimeClass': 'str'},
    'daemonsets': {'labels': 'strmap', 'annotations': 'strmap', 'priorityClassName': 'str', 'tolerations': 'dictlist',
                   'updateStrategy': 'str', 'rollingUpdate': {'maxUnavailable': 'scalar'}, 'podSecurityContext': 'dict'},
    'mig': {'strategy': 'str'},
    'cdi': {'enabled': 'bool', 'default': 'bool'},
    'psa': {'enabled': 'bool'},
    'hostPaths': dict((key, 'str') for key in HOST_PATHS),
}


def schema(operands):
    """The fields honoured: the shared sections and each operand's own."""
    return dict(COMMON_SCHEMA, **dict((operand.section, operand.schema()) for operand in operands if operand.image))


# Sections the node-side roles do instead: only their "not deployed by the Operator" value is accepted.
HOST_SECTIONS = {
    'driver': 'the driver is installed on the host by the nvidia_driver role (nvidia_driver_* variables)',
    'toolkit': 'the container toolkit is set up on the host by the container_toolkit role (container_toolkit_* variables)',
}
_TYPES = {
    'str': (str,), 'bool': (bool,), 'dict': (dict,), 'strmap': (dict,), 'strlist': (list,), 'dictlist': (list,), 'env': (list,),
    'resources': (dict,), 'scalar': (str, int),
}


def _type_error(where, kind, value):
    return PolicyError('%s must be %s, not %r' % (where, {
        'str': 'a string', 'bool': 'true or false', 'dict': 'a mapping', 'strmap': 'a mapping of strings to strings',
        'strlist': 'a list of strings', 'dictlist': 'a list of mappings', 'env': 'a list of {name, value}',
        'resources': 'a mapping with limits and/or requests', 'scalar': 'a number or a string'}[kind], value))


def _check_value(where, kind, value):
    if not isinstance(value, _TYPES[kind]) or (kind != 'bool' and isinstance(value, bool)):
        raise _type_error(where, kind, value)
    if kind == 'strmap' and not all(isinstance(item, str) for item in value.values()):
        raise _type_error(where, kind, value)
    if kind == 'strlist' and not all(isinstance(item, str) for item in value):
        raise _type_error(where, kind, value)
    if kind == 'dictlist' and not all(isinstance(item, dict) for item in value):
        raise _type_error(where, kind, value)
    if kind == 'env':
        for index, item in enumerate(value):
            if not isinstance(item, dict) or set(item) - {'name', 'value'} or not isinstance(item.get('name'), str) or not item['name']:
                raise PolicyError('%s[%d] must be {name, value} (the ClusterPolicy EnvVar), not %r' % (where, index, item))
            if not isinstance(item.get('value', ''), str):
                raise PolicyError('%s[%d] (%s): the value must be a string (quote it in YAML), not %r' % (where, index, item['name'], item['value']))
    if kind == 'resources':
        for part, quantities in value.items():
            if part not in ('limits', 'requests') or not isinstance(quantities, dict) or not all(
                    isinstance(q, (str, int, float)) and not isinstance(q, bool) for q in quantities.values()):
                raise PolicyError('%s.%s: resources take limits and requests, each a mapping of quantities' % (where, part))


def _check_fields(spec, fields, where):
    if not isinstance(spec, dict):
        raise PolicyError('%s must be a mapping, not %r' % (where or 'the ClusterPolicy spec', spec))
    for key in sorted(spec):
        path = '%s.%s' % (where, key) if where else key
        if key not in fields:
            if not where and key in HOST_SECTIONS:
                if spec[key] == {'enabled': False}:
                    continue
                raise PolicyError('%s: %s; only {enabled: false} is accepted here' % (path, HOST_SECTIONS[key]))
            raise PolicyError('%s is not honoured by this collection (it honours %s); see %s' % (path, ', '.join(
                '%s.%s' % (where, name) if where else name for name in sorted(fields)), DOCS))
        if isinstance(fields[key], dict):
            _check_fields(spec[key], fields[key], path)
        else:
            _check_value(path, fields[key], spec[key])


# --- merging ------------------------------------------------------------------------------------

def merge(base, override):
    """Deep merge of mappings; other values of `override` replace those of `base`."""
    result = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def merge_env(env, overrides):
    """The Operator's env merge: a name already there gets the new value in place, a new name is appended."""
    merged = copy.deepcopy(env)
    for item in overrides or []:
        found = next((entry for entry in merged if entry['name'] == item['name']), None)
        if found is None:
            merged.append({'name': item['name'], 'value': item.get('value', '')})
        else:
            found.pop('valueFrom', None)
            found['value'] = item.get('value', '')
    return merged


def _flag(arg):
    return arg.split('=', 1)[0] if arg.startswith('-') else None


def merge_args(args, overrides):
    """Args merged by flag name (--name or --name=value): a flag given again replaces the earlier one in place."""
    merged = list(args)
    for arg in overrides or []:
        flag = _flag(arg)
        position = next((index for index, item in enumerate(merged) if flag and _flag(item) == flag), None)
        if position is None:
            merged.append(arg)
        else:
            merged[position] = arg
    return merged


# --- what the GPU nodes decide ------------------------------------------------------------------

def node_toolkit(nodes):
    """{host: {runtime_name, cdi_enabled, install_dir}} of the GPU nodes, the container_toolkit defaults filled in."""
    found = {}
    for node in nodes or []:
        settings = dict(TOOLKIT_DEFAULTS)
        settings.update((key, value) for key, value in node.items() if value not in (None, '') and key in TOOLKIT_DEFAULTS)
        found[node.get('host') or '?'] = settings
    return found


def _from_nodes(toolkit, key, setting, explicit, where):
    """One value all GPU nodes agree on (or the explicit ClusterPolicy value they must agree with)."""
    values = dict((host, settings[key]) for host, settings in toolkit.items())
    distinct = sorted(set(values.values()), key=str)
    if explicit not in (None, ''):
        differ = sorted(host for host, value in values.items() if value != explicit)
        if differ:
            raise PolicyError('%s is %r but %s on %s: one DaemonSet serves every GPU node, so they must agree'
                              % (where, explicit, ', '.join('%s=%r' % (setting, values[host]) for host in differ[:1]), ', '.join(differ)))
        return explicit
    if len(distinct) > 1:
        raise PolicyError('the GPU nodes differ in %s (%s): one DaemonSet serves them all, so set it alike on every node'
                          % (setting, ', '.join('%s=%r' % (host, value) for host, value in sorted(values.items()))))
    return distinct[0] if distinct else TOOLKIT_DEFAULTS[key]


# --- resolving ----------------------------------------------------------------------------------

def check_config(where, config, check_data):
    """A config section (devicePlugin.config, ...): the chart's create and data agree with its name; check_data(config)
    checks the data."""
    data = config.get('data')
    if config.get('create') is None:
        config['create'] = bool(data)
    if config['create'] and not data:
        raise PolicyError('%s.create is true but %s.data is empty: there is nothing to create' % (where, where))
    if data and not config['create']:
        raise PolicyError('%s.data is given but %s.create is false: the data would be ignored' % (where, where))
    if data and not config.get('name'):
        raise PolicyError('%s.name is required with %s.data (the ConfigMap to create)' % (where, where))
    if data:
        check_data(config)
    return config


def resolve(policy, registry, nodes, operands):
    """The full ClusterPolicy spec: `policy` checked and overlaid on the defaults.

    `registry` mirrors every default repository (a repository set in `policy` wins); `nodes` are the
    GPU nodes' container toolkit settings ([{host, runtime_name, cdi_enabled, install_dir}]),
    which decide operator.runtimeClass and cdi.enabled when the policy leaves them out and must agree
    with them when it does not. `operands`: registry.OPERANDS, whose sections are honoured and checked.
    """
    policy = policy or {}
    fields = schema(operands)
    _check_fields(policy, fields, '')
    resolved = merge(defaults(operands), dict((key, value) for key, value in policy.items() if key in fields))
    for operand in operands:
        if not operand.image:
            continue
        spec = resolved[operand.section]
        if registry and not (policy.get(operand.section) or {}).get('repository'):
            spec['repository'] = images.mirrored(spec['repository'], registry)
        images.reference(spec['repository'], spec['image'], spec['version'], operand.section)
        if spec['imagePullPolicy'] not in PULL_POLICIES:
            raise PolicyError('%s.imagePullPolicy must be one of %s, not %r' % (operand.section, ', '.join(PULL_POLICIES), spec['imagePullPolicy']))
    common = resolved['daemonsets']
    if common['updateStrategy'] not in ('RollingUpdate', 'OnDelete'):
        raise PolicyError('daemonsets.updateStrategy must be RollingUpdate or OnDelete, not %r' % common['updateStrategy'])
    max_unavailable(common['rollingUpdate']['maxUnavailable'])
    if resolved['mig']['strategy'] not in MIG_STRATEGIES:
        raise PolicyError('mig.strategy must be one of %s, not %r' % (', '.join(MIG_STRATEGIES), resolved['mig']['strategy']))
    if resolved['cdi']['default']:
        raise PolicyError('cdi.default is deprecated in the GPU Operator and has no effect there; cdi.enabled makes CDI the default')
    for key, path in sorted(resolved['hostPaths'].items()):
        if path and not path.startswith('/'):  # empty is the default, as the Operator reads it
            raise PolicyError('hostPaths.%s must be an absolute path on the host, not %r' % (key, path))
    for operand in operands:
        operand.check(resolved)
    toolkit = node_toolkit(nodes)
    resolved['operator']['runtimeClass'] = _from_nodes(toolkit, 'runtime_name', 'container_toolkit_runtime_name',
                                                       resolved['operator']['runtimeClass'], 'operator.runtimeClass')
    if not re.match(r'^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', resolved['operator']['runtimeClass']):
        raise PolicyError('operator.runtimeClass %r is not a valid RuntimeClass name' % resolved['operator']['runtimeClass'])
    resolved['cdi']['enabled'] = _from_nodes(toolkit, 'cdi_enabled', 'container_toolkit_cdi_enabled', resolved['cdi']['enabled'], 'cdi.enabled')
    return resolved


def max_unavailable(value):
    """maxUnavailable is a string in the ClusterPolicy ("1", "25%") but an IntOrString in a DaemonSet."""
    text = str(value)
    if text.isdigit():
        return int(text)
    if text.endswith('%') and text[:-1].isdigit():
        return text
    raise PolicyError('daemonsets.rollingUpdate.maxUnavailable must be a number or a percentage, not %r' % (value,))


def cdi_hook_path(nodes):
    """Where nvidia-cdi-hook is on the GPU nodes (next to nvidia-container-runtime), the same on all of them."""
    install_dir = _from_nodes(node_toolkit(nodes), 'install_dir', 'container_toolkit_install_dir', None, None)
    return install_dir.rstrip('/') + '/nvidia-cdi-hook'


# --- the ClusterPolicy object -------------------------------------------------------------------

def config_in_cluster_policy(section, keep_unnamed):
    """A section whose `config` the CR holds by ConfigMap name, without the Helm chart's create and data; without a name
    the config goes, unless `keep_unnamed` (the chart writes migManager.config.default without one)."""
    section = copy.deepcopy(section)
    config = section['config']
    for field in ('create', 'data'):
        del config[field]
    if not config['name']:
        del config['name']
        if not keep_unnamed:
            del section['config']
    return section


def cluster_policy(resolved, operands):
    """The ClusterPolicy CR: the resolved spec as the Operator's CRD holds it (each operand's section as it writes it), and the
    sections the node-side roles do instead marked disabled (driver, toolkit: installed on the host, as the Operator's
    driver.enabled=false means)."""
    spec = copy.deepcopy(resolved)
    for operand in operands:
        if operand.image:
            spec[operand.section] = operand.in_cluster_policy(spec[operand.section])
    if not spec['daemonsets']['podSecurityContext']:
        del spec['daemonsets']['podSecurityContext']
    for section in NOT_DEPLOYED:
        spec[section] = {'enabled': False}
    return {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': meta(POLICY_NAME), 'spec': spec}
