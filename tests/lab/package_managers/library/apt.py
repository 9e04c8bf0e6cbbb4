"""Test double of the apt module (../SOURCE.md)."""
from ansible.module_utils.package_manager_double import main

if __name__ == '__main__':
    main('apt')
