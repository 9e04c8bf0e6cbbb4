# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The table of ClusterPolicy fields (fields.py) against the GPU Operator's CRD of v26.7.0, copied unchanged into
tests/fixtures/gpu-operator/ (SOURCE.md): every leaf path of the CRD has exactly one row, of the CRD's type."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import fields, policy, registry

OPERATOR = Path(__file__).resolve().parents[5] / 'tests' / 'fixtures' / 'gpu-operator'


def crd_leaves(crd):
    """{path: CRD type} of every leaf of the ClusterPolicy spec; a list's items as `name[]`, int-or-string as such."""
    found = {}

    def walk(node, path):
        if node.get('type') == 'object' and 'properties' in node:
            for key, child in node['properties'].items():
                walk(child, path + [key])
        elif node.get('type') == 'array' and 'properties' in node['items']:
            for key, child in node['items']['properties'].items():
                walk(child, path[:-1] + [path[-1] + '[]', key])
        else:
            found['.'.join(path)] = 'int-or-string' if node.get('x-kubernetes-int-or-string') else node['type']

    [version] = crd['spec']['versions']
    walk(version['schema']['openAPIV3Schema']['properties']['spec'], [])
    return found


CRD = crd_leaves(yaml.safe_load((OPERATOR / 'nvidia.com_clusterpolicies.yaml').read_text()))


def test_the_operators_inputs_are_unchanged():
    """Each file still has the git blob id SOURCE.md names: NVIDIA's inputs, not edited copies."""
    rows = re.findall(r'^\| `([^`]+)` \| .* \| `([0-9a-f]{40})` \|$', (OPERATOR / 'SOURCE.md').read_text(), re.M)
    assert len(rows) == 4
    for name, blob in rows:
        data = (OPERATOR / name).read_bytes()
        assert hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest() == blob, name


def test_every_crd_field_has_its_row():
    """A field of the CRD in neither list (honoured, declared not applicable or refused) fails here, by name."""
    assert len(CRD) > 350, 'the walk found the fields'
    assert sorted(set(CRD) - set(fields.FIELDS)) == [], 'fields of the CRD without a row in fields.py'
    assert sorted(set(fields.FIELDS) - set(CRD)) == [], 'rows of fields.py that are not fields of the CRD'
    assert dict((path, row[0]) for path, row in fields.FIELDS.items()) == CRD, 'a row with another type than the CRD'


@pytest.mark.parametrize('path', sorted(fields.FIELDS))
def test_each_row_says_what_and_why(path):
    row = fields.FIELDS[path]
    assert row[1] in fields.STATUSES and isinstance(row[2], str) and row[2]
    # Refused rows may list the Operator's defaults, which are accepted; the others have none.
    assert len(row) == 3 or (row[1] == fields.REFUSED and len(row) == 4 and isinstance(row[3], tuple)), row


# --- a ClusterPolicy taken as the table says ------------------------------------------------------

SAMPLE = yaml.safe_load((OPERATOR / 'v1_clusterpolicy.yaml').read_text())
SENTINELS = {'string': 'not-the-default', 'boolean': True, 'integer': 7, 'array': ['not-the-default'], 'object': {'a': 'b'},
             'int-or-string': '7%'}


def with_value(path, value):
    """A spec with `value` at a table path (a list's items as `name[]`)."""
    spec = current = {}
    parts = path.split('.')
    for part in parts[:-1]:
        if part.endswith('[]'):
            item = {}
            current[part[:-2]] = [item]
            current = item
        else:
            current = current.setdefault(part, {})
    current[parts[-1]] = value
    return spec


def at(obj, path):
    for part in path.split('.'):
        obj = obj[part[:-2]][0] if part.endswith('[]') else obj[part]
    return obj


def rows_with(status):
    return sorted(path for path, row in fields.FIELDS.items() if row[1] == status)


def switch_of(path):
    return next((section for section in sorted(fields.SWITCHES, key=len, reverse=True)
                 if path.startswith(section + '.') and path != section + '.enabled'), None)


def refusable(path):
    """The row's type has a value that is none of the accepted ones (a boolean whose default is true has none)."""
    row = fields.FIELDS[path]
    return not (row[0] == 'boolean' and True in (row[3] if len(row) > 3 else ()))


@pytest.mark.parametrize('path', [path for path in rows_with(fields.REFUSED) if refusable(path)])
def test_a_refused_field_stops_the_run_by_name_unless_at_its_default_or_off(path):
    """Set to another value (its section on), the field is refused with its name and the row's reason; empty, false, each
    of the row's defaults, and any value in a section that is off, pass."""
    row = fields.FIELDS[path]
    switch = switch_of(path)
    value = SENTINELS[row[0]]
    spec = with_value(path, value)
    if switch:
        spec = policy.merge(spec, with_value(switch + '.enabled', True))
    with pytest.raises(policy.PolicyError) as caught:
        registry.resolution(spec)
    message = str(caught.value)
    assert message.startswith(path.replace('[]', '[0]') + ' is ') and row[2].replace('`', '') in message, message
    for accepted in ('', [], {}, False) + (row[3] if len(row) > 3 else ()):
        if isinstance(accepted, policy._CRD_TYPES[row[0]]) and (row[0] == 'boolean') == isinstance(accepted, bool):
            registry.resolution(policy.merge(spec, with_value(path, accepted)))
    if switch:
        registry.resolution(policy.merge(spec, with_value(switch + '.enabled', False)))


@pytest.mark.parametrize('path', rows_with(fields.NOT_APPLICABLE))
def test_a_field_not_applicable_is_accepted_and_kept_in_the_cr(path):
    """Any value of its type passes, has no effect on what is rendered, and the ClusterPolicy CR holds it as given (a
    section not deployed here is marked disabled there); a value of another type is refused."""
    value = SENTINELS[fields.FIELDS[path][0]]
    resolved = registry.resolution(with_value(path, value))
    assert resolved['spec'] == registry.resolution()['spec'], 'no effect on what is rendered'
    expected = False if path in ['%s.enabled' % section for section in policy.NOT_DEPLOYED] else value
    assert at(registry.cluster_policy(resolved)['spec'], path) == expected
    with pytest.raises(policy.PolicyError, match='must be of type %s' % fields.FIELDS[path][0]):
        registry.resolution(with_value(path, 3.5))


def covers(schema_path, path):
    return path == schema_path or path.startswith(schema_path + '.') or path.startswith(schema_path + '[].')


def schema_leaves(schema, prefix=''):
    for key, value in schema.items():
        path = prefix + key
        if isinstance(value, dict):
            yield from schema_leaves(value, path + '.')
        else:
            yield path


def test_the_honoured_rows_are_the_schema_resolve_checks():
    """A row marked honoured has its section's schema (policy.schema), and every field of the schema is a honoured row
    (or one of the chart's config fields): a field cannot be marked honoured without being implemented, nor the reverse."""
    schema = list(schema_leaves(policy.schema(registry.OPERANDS)))
    honoured = rows_with(fields.HONOURED) + sorted(fields.SPEC_EXTRAS)
    assert [path for path in honoured if not any(covers(leaf, path) for leaf in schema)] == []
    assert [leaf for leaf in schema if not any(covers(leaf, path) for path in honoured)] == []


def test_a_refused_field_under_a_switch_has_its_default():
    """A refused field in a section with an `enabled` (not that field itself) is accepted while the section is off: the
    section's default must be known (fields.SWITCHES)."""
    for path in rows_with(fields.REFUSED):
        parts = path.split('.')
        # cdi.enabled does not turn cdi.nriPluginEnabled off: the Operator refuses the NRI plugin without CDI
        sections = ['.'.join(parts[:end]) for end in range(1, len(parts)) if '.'.join(parts[:end]) + '.enabled' in fields.FIELDS
                    and '.'.join(parts[:end]) != 'cdi']
        assert all(section in fields.SWITCHES for section in sections if path != section + '.enabled'), path


def test_a_list_holds_fields_of_one_status():
    """accept() keeps or drops a list whole."""
    for path, shape in policy.SHAPE.items():
        if shape == 'list':
            assert len(policy.STATUSES[path]) == 1, path


def test_the_operators_sample_is_accepted_whole():
    """config/samples/v1_clusterpolicy.yaml, the whole object: nothing refused, its metadata noted as ignored, what is not
    acted on here kept in the CR as given, driver and toolkit marked not deployed (the node roles do them), the standalone DCGM
    deployed as the sample asks."""
    resolved = registry.resolution(SAMPLE)
    assert resolved['notes'] == ['metadata (name gpu-cluster-policy) is ignored: the ClusterPolicy here is cluster-policy, '
                                 'the name the chart gives it']
    spec = registry.cluster_policy(resolved)['spec']
    given = SAMPLE['spec']
    for section in ('gds', 'psp', 'vgpuManager', 'kataManager'):
        assert spec[section] == given[section], section
    # the sandbox sections are honoured: as given, over the release's defaults
    for section in ('sandboxWorkloads', 'vgpuDeviceManager', 'vfioManager', 'sandboxDevicePlugin'):
        assert spec[section] == policy.merge(spec[section], given[section]), section
    assert spec['operator'] == dict(given['operator'], runtimeClass='nvidia')
    assert spec['driver'] == dict(given['driver'], enabled=False) and spec['toolkit'] == dict(given['toolkit'], enabled=False)
    assert spec['dcgm']['enabled'] is True and given['dcgm']['enabled'] is True
    assert spec['validator']['env'] == [{'name': 'WITH_WORKLOAD', 'value': 'false'}] and spec['validator']['plugin'] == {'env': []}
    assert (spec['gfd']['enabled'], spec['migManager']['config'], spec['mig']) == (True, {'default': 'all-disabled'}, {'strategy': 'single'})


def test_gpudirect_sections_reach_the_node_roles_and_the_cr_says_not_deployed():
    """driver.rdma, gds and gdrcopy are honoured on the host (module gpudirect through role nvidia_driver): the resolved spec
    carries them to the role's defaults, the CR marks gds and gdrcopy disabled as it marks the driver (no driver container)."""
    assert registry.resolution()['spec']['gds'] == {'enabled': False}
    given = {'driver': {'rdma': {'enabled': True, 'useHostMofed': True}}, 'gds': {'enabled': True}, 'gdrcopy': {'enabled': True}}
    resolved = registry.resolution(given)
    spec = resolved['spec']
    assert (spec['driver']['rdma'], spec['gds'], spec['gdrcopy']) == ({'enabled': True, 'useHostMofed': True}, {'enabled': True},
                                                                      {'enabled': True})
    written = registry.cluster_policy(resolved)['spec']
    assert (written['gds'], written['gdrcopy'], written['driver']['enabled']) == ({'enabled': False}, {'enabled': False}, False)


@pytest.mark.parametrize('given, message', [
    ({'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'spec': {}, 'extra': 1}, 'a whole ClusterPolicy has only'),
    ({'apiVersion': 'nvidia.com/v1', 'kind': 'NVIDIADriver', 'spec': {}}, 'nvidia.com/v1/NVIDIADriver is not a ClusterPolicy'),
    ({'gfd': {'enabeld': True}}, 'gfd.enabeld is not a field of the ClusterPolicy CRD'),
    ({'daemonsets': {'tolerations': {'key': 'a'}}}, 'daemonsets.tolerations must be a list'),
    ({'gds': 'off'}, 'gds must be a mapping'),
    ({'operator': {'use_ocp_driver_toolkit': 'yes'}}, 'operator.use_ocp_driver_toolkit must be of type boolean'),
    ({'toolkit': {'version': 'v1.17.0'}}, "toolkit.version is 'v1.17.0'"),
])
def test_what_is_not_the_crds_is_refused_by_name(given, message):
    with pytest.raises(policy.PolicyError) as caught:
        registry.resolution(given)
    assert message in str(caught.value)


def test_status_and_nulls_are_left_out():
    resolved = registry.resolution({'kind': 'ClusterPolicy', 'spec': {'validator': {'plugin': None}, 'gds': None}, 'status': {'state': 'ready'}})
    assert resolved['notes'] == ['status is ignored: the validation stage writes it']
    assert resolved['kept'] == {} and resolved['spec'] == registry.resolution()['spec']


def test_the_helm_managed_by_label_is_left_out_with_a_note():
    """An exported ClusterPolicy of a Helm install labels the DaemonSets app.kubernetes.io/managed-by: gpu-operator; the
    objects here keep the collection's, by which uninstall and the doctor find them."""
    resolved = registry.resolution({'daemonsets': {'labels': {'app.kubernetes.io/managed-by': 'gpu-operator', 'team': 'ml'}}})
    assert resolved['spec']['daemonsets']['labels'] == {'team': 'ml'}
    assert resolved['notes'] == ['daemonsets.labels app.kubernetes.io/managed-by=gpu-operator is left out: every object here is '
                                 'app.kubernetes.io/managed-by=gpuops.gpu_operator']
    plugin = next(obj for obj in registry.render(resolved, 'gpu-operator')['present'] if obj['kind'] == 'DaemonSet')
    assert plugin['metadata']['labels']['app.kubernetes.io/managed-by'] == 'gpuops.gpu_operator'
