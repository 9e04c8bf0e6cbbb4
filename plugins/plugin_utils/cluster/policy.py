# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""ClusterPolicy settings: the GPU Operator release this collection tracks, its defaults, and the fields honoured.

Everything the cluster side renders starts here. `accept()` takes a whole ClusterPolicy or its spec as the Operator's
CRD defines it and sorts every field by its row in fields.py: the honoured ones go on, the ones not applicable here are
kept for the CR only, and a refused one stops the run by name with its reason (never one at its default, empty, false,
or in a section that is off). `resolve()` checks the honoured fields against the schema (the sections every operand
shares here, and each operand's own section, registry.py), overlays them on the defaults of OPERATOR_RELEASE, points
the default images at a mirror, and settles what the GPU nodes decide (the runtime class name, CDI) from the container
toolkit settings of those nodes. Env and args lists merge by name, as the Operator merges env.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import re

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.contract import (
    MIG_STRATEGIES, SANDBOX_DEFAULTS, SANDBOX_MODES, TOOLKIT_DEFAULTS, WORKLOADS)
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.objects import MANAGED_BY, meta
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import fields, host_sections, images

# The GPU Operator release whose defaults (deployments/gpu-operator/values.yaml) and operand layouts
# (assets/, controllers/object_controls.go) the cluster side follows. A bump changes this, the operands' images
# (operands/*.py) and gets a changelog entry; tests/cluster/parity/ holds the facts of this release.
OPERATOR_RELEASE = 'v26.7.0'
PULL_POLICIES = ('Always', 'Never', 'IfNotPresent')
DOCS = 'docs/coming-from-gpu-operator.md'
POLICY_NAME = 'cluster-policy'  # the name NVIDIA's Helm chart gives its ClusterPolicy
# The Operator's sections this collection does not deploy: the ClusterPolicy says they are off.
NOT_DEPLOYED = ('driver', 'toolkit', 'gds', 'gdrcopy')
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
        'cdi': {'enabled': None},  # None: the GPU nodes' container_toolkit_cdi_enabled
        'psa': {'enabled': False},
        'hostPaths': dict(HOST_PATHS),
        'sandboxWorkloads': dict(SANDBOX_DEFAULTS),
    }


def defaults(operands):
    """The Operator's defaults for the fields honoured here: the shared sections and each operand's own."""
    found = dict(common_defaults(), **host_sections.defaults())
    found.update((operand.section, operand.section_defaults()) for operand in operands if operand.image)
    return found


# --- the fields honoured ------------------------------------------------------------------------

COMMON_SCHEMA = {
    'operator': {'runtimeClass': 'str'},
    'daemonsets': {'labels': 'strmap', 'annotations': 'strmap', 'priorityClassName': 'str', 'tolerations': 'dictlist',
                   'updateStrategy': 'str', 'rollingUpdate': {'maxUnavailable': 'scalar'}, 'podSecurityContext': 'dict'},
    'mig': {'strategy': 'str'},
    'cdi': {'enabled': 'bool'},
    'psa': {'enabled': 'bool'},
    'hostPaths': dict((key, 'str') for key in HOST_PATHS),
    'sandboxWorkloads': {'enabled': 'bool', 'defaultWorkload': 'str', 'mode': 'str'},
}


def schema(operands):
    """The fields honoured: the shared sections, those the node roles do (driver, toolkit) and each operand's own."""
    return dict(COMMON_SCHEMA, **dict(host_sections.SCHEMA, **dict((operand.section, operand.schema()) for operand in operands if operand.image)))


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


def _check_fields(spec, known, where):
    if not isinstance(spec, dict):
        raise PolicyError('%s must be a mapping, not %r' % (where or 'the ClusterPolicy spec', spec))
    for key in sorted(spec):
        path = '%s.%s' % (where, key) if where else key
        if key not in known:
            raise PolicyError('%s is not honoured by this collection (it honours %s); see %s' % (path, ', '.join(
                '%s.%s' % (where, name) if where else name for name in sorted(known)), DOCS))
        if isinstance(known[key], dict):
            _check_fields(spec[key], known[key], path)
        else:
            _check_value(path, known[key], spec[key])


# --- accepting a ClusterPolicy as the Operator's CRD has it -------------------------------------

OBJECT_KEYS = ('apiVersion', 'kind', 'metadata', 'spec', 'status')
_CRD = 'the ClusterPolicy CRD (nvidia.com/v1) of GPU Operator %s' % OPERATOR_RELEASE
# The CRD's types, as Python's (a bool is no integer there).
_CRD_TYPES = {'string': (str,), 'boolean': (bool,), 'integer': (int,), 'array': (list,), 'object': (dict,), 'int-or-string': (int, str)}


def _shape(rows):
    """{path: 'leaf' | 'object' | 'list'} of every path the rows name (a list's items are the path with `[]`; '' is the spec)."""
    found = {'': 'object'}
    for path in rows:
        parts = path.split('.')
        for end in range(1, len(parts)):
            prefix = '.'.join(parts[:end])
            if prefix.endswith('[]'):
                found[prefix[:-2]] = 'list'
            found.setdefault(prefix, 'object')
        found[path] = 'leaf'
    return found


ROWS = dict(fields.FIELDS, **fields.SPEC_EXTRAS)
SHAPE = _shape(ROWS)


def _statuses():
    """{path: the statuses of the rows at and under it}."""
    found = {'': set(row[1] for row in ROWS.values())}
    for path, row in ROWS.items():
        parts = path.split('.')
        for end in range(1, len(parts) + 1):
            prefix = '.'.join(parts[:end])
            found.setdefault(prefix[:-2] if prefix.endswith('[]') else prefix, set()).add(row[1])
    return found


STATUSES = _statuses()


def _without_nulls(value):
    """A null is a field left out, as the Operator reads it (validator.plugin: in its sample)."""
    if isinstance(value, dict):
        return dict((key, _without_nulls(item)) for key, item in value.items() if item is not None)
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def spec_of(given):
    """(the ClusterPolicy spec, notes): `given` is a spec, or a whole ClusterPolicy as `kubectl get clusterpolicy -o yaml`
    writes it, whose metadata and status are ignored."""
    given = _without_nulls(given or {})
    if not isinstance(given, dict):
        raise PolicyError('the ClusterPolicy must be a mapping (its spec, or the whole object), not %r' % (given,))
    if not set(given) & set(OBJECT_KEYS):
        return given, []
    if set(given) - set(OBJECT_KEYS):
        raise PolicyError('a whole ClusterPolicy has only %s, not %s; or give its spec alone' % (
            ', '.join(OBJECT_KEYS), ', '.join(sorted(set(given) - set(OBJECT_KEYS)))))
    if given.get('kind', 'ClusterPolicy') != 'ClusterPolicy' or given.get('apiVersion', 'nvidia.com/v1') != 'nvidia.com/v1':
        raise PolicyError('%s/%s is not a ClusterPolicy (nvidia.com/v1)' % (given.get('apiVersion'), given.get('kind')))
    notes = []
    if 'metadata' in given:
        notes.append('metadata (name %s) is ignored: the ClusterPolicy here is %s, the name the chart gives it'
                     % ((given['metadata'] or {}).get('name', '?'), POLICY_NAME))
    if 'status' in given:
        notes.append('status is ignored: the validation stage writes it')
    return given.get('spec') or {}, notes


def _leaves(value, path, where, found):
    """The given fields as (row path, where it is, value), checked against the CRD's shape."""
    shape = SHAPE.get(path)
    if shape == 'leaf':
        found.append((path, where, value))
    elif shape is None:
        raise PolicyError('%s is not a field of %s; see %s' % (where, _CRD, DOCS))
    elif shape == 'list':
        if not isinstance(value, list):
            raise PolicyError('%s must be a list, not %r' % (where, value))
        for index, item in enumerate(value):
            _leaves(item, path + '[]', '%s[%d]' % (where, index), found)
    else:
        if not isinstance(value, dict):
            raise PolicyError('%s must be a mapping, not %r' % (where or 'the ClusterPolicy spec', value))
        for key in sorted(value):
            _leaves(value[key], '%s.%s' % (path, key) if path else key, '%s.%s' % (where, key) if where else key, found)
    return found


def _section_off(spec, path):
    """Whether a section above the field is off: its `enabled` false, or left out where the Operator's default is off."""
    for section, default in fields.SWITCHES.items():
        if path.startswith(section + '.') and path != section + '.enabled':
            found = spec
            for key in section.split('.'):
                found = found.get(key) if isinstance(found, dict) else None
            enabled = found.get('enabled', default) if isinstance(found, dict) else default
            if enabled is False:
                return True
    return False


def _check_row(spec, path, where, value):
    row = ROWS[path]
    if row[1] == fields.HONOURED:
        return  # checked with its section's schema (resolve)
    if not isinstance(value, _CRD_TYPES[row[0]]) or (row[0] != 'boolean' and isinstance(value, bool)):
        raise PolicyError('%s must be of type %s (%s), not %r' % (where, row[0], _CRD, value))
    accepted = row[3] if len(row) > 3 else ()
    # by type as well: 0 == False, yet maxParallelUpgrades 0 is no default
    if row[1] == fields.REFUSED and not _section_off(spec, path) and not any(
            type(value) is type(item) and value == item for item in ('', [], {}, False) + accepted):
        raise PolicyError('%s is %r: %s. This collection refuses it rather than ignore it (accepted: empty or false%s); see %s'
                          % (where, value, row[2].replace('`', ''), ''.join(', %r' % (item,) for item in accepted), DOCS))


def _split(value, path):
    """(the honoured part of `value`, the rest): a path all of whose rows are honoured goes whole to the first."""
    statuses = STATUSES[path]
    if statuses == {fields.HONOURED}:
        return value, None
    if fields.HONOURED not in statuses:
        return None, value
    honoured, rest = {}, {}
    for key, item in value.items():
        mine, other = _split(item, '%s.%s' % (path, key) if path else key)
        if mine is not None:
            honoured[key] = mine
        if other is not None:
            rest[key] = other
    # a section given with fields of one kind only is not left empty in the other
    return honoured if honoured or not value else None, rest if rest or not value else None


def accept(given, base=None):
    """A ClusterPolicy (its spec, or the whole object), laid over `base` (a spec: the chart's values', helm_values.py), sorted
    by fields.py: {'honoured': the fields this collection acts on, 'kept': the others, as given (the CR holds them), 'notes':
    what was left out}. Refuses (PolicyError) a field that is not the CRD's, of another type, or refused and set."""
    spec, notes = spec_of(given)
    spec = _without_nulls(merge(base, spec)) if base else spec
    for path, where, value in _leaves(spec, '', '', []):
        _check_row(spec, path, where, value)
    honoured, kept = _split(spec, '')
    honoured, kept = honoured or {}, kept or {}
    # The node roles follow the driver and toolkit fields; the ClusterPolicy written holds these sections as given.
    kept.update((section, copy.deepcopy(spec[section])) for section in NOT_DEPLOYED if section in spec)
    labels = (honoured.get('daemonsets') or {}).get('labels') or {}
    for key in MANAGED_BY:
        if key in labels:
            # An exported ClusterPolicy of a Helm install has app.kubernetes.io/managed-by: gpu-operator; here every object
            # is the collection's (uninstall and the doctor find them by that label).
            notes.append('daemonsets.labels %s=%s is left out: every object here is %s=%s' % (key, labels.pop(key), key, MANAGED_BY[key]))
    return {'honoured': honoured, 'kept': kept, 'notes': notes}


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

def node_toolkit(nodes, node_defaults=None):
    """{host: {runtime_name, cdi_enabled, install_dir}} of the GPU nodes, `node_defaults` (what the ClusterPolicy makes of
    a node that sets nothing: host_sections.node_toolkit_defaults) or the container_toolkit defaults filled in."""
    found = {}
    for node in nodes or []:
        settings = dict(node_defaults or TOOLKIT_DEFAULTS)
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
    """The full ClusterPolicy spec: `policy` (the honoured fields, accept()) checked and overlaid on the defaults.

    `registry` mirrors every default repository (a repository set in `policy` wins); `nodes` are the
    GPU nodes' container toolkit settings ([{host, runtime_name, cdi_enabled, install_dir}]),
    which decide operator.runtimeClass and cdi.enabled when the policy leaves them out and must agree
    with them when it does not. `operands`: registry.OPERANDS, whose sections are honoured and checked.
    """
    policy = policy or {}
    known = schema(operands)
    _check_fields(policy, known, '')
    resolved = merge(defaults(operands), policy)
    for operand in operands:
        if not operand.image:
            continue
        # its own image, and those of its sub-sections (vfioManager.driverManager, ...)
        for keys in [()] + [(key,) for key in operand.images]:
            spec, given, where = resolved[operand.section], policy.get(operand.section) or {}, operand.section
            for key in keys:
                spec, given, where = spec[key], given.get(key) or {}, '%s.%s' % (where, key)
            if registry and not given.get('repository') and spec['repository']:
                spec['repository'] = images.mirrored(spec['repository'], registry)
            if operand.image_required(resolved):
                images.reference(spec['repository'], spec['image'], spec['version'], where)
            if spec['imagePullPolicy'] not in PULL_POLICIES:
                raise PolicyError('%s.imagePullPolicy must be one of %s, not %r' % (where, ', '.join(PULL_POLICIES), spec['imagePullPolicy']))
    common = resolved['daemonsets']
    # The Operator sets a DaemonSet's priority class and tolerations only from a non-empty value (object_controls.go
    # applyCommonDaemonsetConfig): an empty one keeps its assets' (system-node-critical, the nvidia.com/gpu toleration).
    for key in ('priorityClassName', 'tolerations'):
        if not common[key]:
            common[key] = common_defaults()['daemonsets'][key]
    if common['updateStrategy'] not in ('RollingUpdate', 'OnDelete'):
        raise PolicyError('daemonsets.updateStrategy must be RollingUpdate or OnDelete, not %r' % common['updateStrategy'])
    max_unavailable(common['rollingUpdate']['maxUnavailable'])
    if resolved['mig']['strategy'] not in MIG_STRATEGIES:
        raise PolicyError('mig.strategy must be one of %s, not %r' % (', '.join(MIG_STRATEGIES), resolved['mig']['strategy']))
    sandbox = resolved['sandboxWorkloads']
    if sandbox['defaultWorkload'] not in WORKLOADS or sandbox['mode'] not in SANDBOX_MODES:
        raise PolicyError('sandboxWorkloads: defaultWorkload must be one of %s and mode one of %s (the ClusterPolicy CRD\'s values), not %r and %r'
                          % (', '.join(WORKLOADS), ', '.join(SANDBOX_MODES), sandbox['defaultWorkload'], sandbox['mode']))
    for key, path in sorted(resolved['hostPaths'].items()):
        if path and not path.startswith('/'):  # empty is the default, as the Operator reads it
            raise PolicyError('hostPaths.%s must be an absolute path on the host, not %r' % (key, path))
    for operand in operands:
        operand.check(resolved)
    host_sections.check(resolved)
    toolkit = node_toolkit(nodes, host_sections.node_toolkit_defaults(resolved))
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


def cdi_hook_path(nodes, resolved=None):
    """Where nvidia-cdi-hook is on the GPU nodes (next to nvidia-container-runtime), the same on all of them; `resolved`:
    the resolved spec, whose toolkit.installDir a node that sets nothing follows."""
    install_dir = _from_nodes(node_toolkit(nodes, resolved and host_sections.node_toolkit_defaults(resolved)), 'install_dir',
                              'container_toolkit_install_dir', None, None)
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


def cluster_policy(resolved, operands, kept=None):
    """The ClusterPolicy CR: the resolved spec as the Operator's CRD holds it (each operand's section as it writes it), the
    fields given that this collection does not act on as they were given (`kept`, accept()), and the sections the Operator
    deploys that are not deployed here marked disabled (driver, toolkit, gds, gdrcopy: on the host, as the Operator's driver.enabled=false
    means; the standalone DCGM)."""
    spec = dict((key, copy.deepcopy(value)) for key, value in resolved.items() if key not in NOT_DEPLOYED)
    for operand in operands:
        if operand.image:
            spec[operand.section] = operand.in_cluster_policy(spec[operand.section])
    if not spec['daemonsets']['podSecurityContext']:
        del spec['daemonsets']['podSecurityContext']
    spec = merge(spec, kept)
    for section in NOT_DEPLOYED:
        spec[section] = dict(spec.get(section) or {}, enabled=False)
    return {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': meta(POLICY_NAME), 'spec': spec}
