"""A package manager module's test double for lab nodes dressed as another distribution (SOURCE.md): it installs and
removes nothing, it records the call on the node."""
import json
import os

from ansible.module_utils.basic import AnsibleModule

CALLS = '/var/lib/gpuops-lab/package-calls.jsonl'


def main(manager):
    """Run as the `manager` module: the options the roles pass, each call appended to CALLS (check mode records none)."""
    module = AnsibleModule(argument_spec=dict(name=dict(type='list', elements='str', required=True),
                                              state=dict(type='str', default='present'),
                                              update_cache=dict(type='bool', default=False)),
                           supports_check_mode=True)
    call = dict(manager=manager, name=module.params['name'], state=module.params['state'], update_cache=module.params['update_cache'])
    if not module.check_mode:
        os.makedirs(os.path.dirname(CALLS), exist_ok=True)
        with open(CALLS, 'a') as calls:
            calls.write(json.dumps(call) + '\n')
    module.exit_json(changed=True, msg='%s double: recorded, nothing %s' % (manager, 'installed' if call['state'] == 'present' else 'removed'))
