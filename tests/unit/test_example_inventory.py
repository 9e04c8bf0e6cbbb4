"""inventory/example parses with ansible-inventory, and every role variable it sets is one the roles take, well typed."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils.cluster import plugin_config, registry

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / 'inventory' / 'example'
ROLES = REPO / 'roles'


def role_options():
    """role name -> the options of its main entry point."""
    return {role.name: yaml.safe_load((role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']['main']['options']
            for role in sorted(ROLES.iterdir()) if (role / 'meta' / 'argument_specs.yml').is_file()}


@pytest.fixture(name='inventory', scope='module')
def fixture_inventory():
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(EXAMPLE), '--list'],
                            capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
                            env=dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED='true', ANSIBLE_NOCOLOR='1'))
    assert result.returncode == 0, result.stderr
    assert '[WARNING]' not in result.stderr, result.stderr
    return json.loads(result.stdout)


def hosts_of(inventory, group):
    entry = inventory.get(group, {})
    return set(entry.get('hosts', [])).union(*(hosts_of(inventory, child) for child in entry.get('children', [])))


def test_groups(inventory):
    assert hosts_of(inventory, 'kube_api') == {'localhost'}
    os_groups = inventory['gpu_nodes']['children']
    assert len(os_groups) >= 2 and all(hosts_of(inventory, group) for group in os_groups), 'GPU nodes of several OS groups'
    assert len(hosts_of(inventory, 'gpu_nodes')) >= 4


def test_every_role_variable_is_an_option_of_its_role(inventory):
    """A misspelt or mistyped variable would be ignored by the roles; the argument specs catch both."""
    options = role_options()
    hostvars = inventory['_meta']['hostvars']
    checked = set()
    for host in hosts_of(inventory, 'all'):
        variables = hostvars[host]
        collection_wide = set(name for spec in options.values() for name in spec if not any(name.startswith(f'{role}_') for role in options))
        unknown = [name for name in variables if not name.startswith(('ansible_', 'vault_')) and name not in collection_wide
                   and not any(name.startswith(f'{role}_') for role in options)]
        assert unknown == [], f'{host}: {unknown} belong to no role'
        for role, spec in options.items():
            mine = {name: value for name, value in variables.items() if name.startswith(f'{role}_') or (name in collection_wide and name in spec)}
            assert set(mine) <= set(spec), f'{host}: {sorted(set(mine) - set(spec))} are not options of {role}'
            # Templated values are resolved at run time; the rest must fit the spec now.
            literal = {name: value for name, value in mine.items() if '{{' not in json.dumps(value)}
            errors = ArgumentSpecValidator(spec).validate(literal, validate_role_argument_spec=True).error_messages
            assert errors == [], f'{host}: {errors}'
            checked |= set(literal)
    assert {'nvidia_driver_version', 'container_toolkit_runtime', 'gpu_operator_policy', 'gpu_node_labels_device_plugin_config'} <= checked


def test_node_labels_follow_the_cluster_policy(inventory):
    """mig.strategy and sharing are set once (gpu_operator_policy, seen by every host); each node's labels follow it."""
    hostvars = inventory['_meta']['hostvars']
    policy = hostvars['localhost']['gpu_operator_policy']
    sharing = {}
    for host in hosts_of(inventory, 'gpu_nodes'):
        assert hostvars[host]['gpu_operator_policy'] == policy, f'{host} sees the same ClusterPolicy settings'
        settings = plugin_config.node_label_settings(registry.resolution(policy), hostvars[host].get('gpu_node_labels_device_plugin_config', ''))
        sharing[host] = (settings['mig_strategy'], settings['sharing']['strategy'], settings['sharing']['replicas'])
    assert set(sharing.values()) == {('single', 'time-slicing', 4), ('single', 'mps', 2)}
    assert inventory['_meta']['hostvars']['localhost']['gpu_cluster_base_namespace'] == 'gpu-operator'
