"""Run a module's main() in-process, as the module tests do."""
import json

import pytest
from ansible.module_utils.testing import patch_module_args


def run_module(capsys, main, args):
    """Call main() with `args` as the module arguments; return the JSON result it printed."""
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            main()
    return json.loads(capsys.readouterr().out)
