"""Run a module's main() in-process, as the module tests do."""
import json

import pytest
from ansible.module_utils.testing import patch_module_args


def run_module(capsys, main, args, failed=False):
    """Call main() with `args` as the module arguments; return the JSON result it printed.

    Every run states its outcome: `failed` True when the module must fail, False (the default) when it must
    not. A run that ends otherwise fails the test with the module's result, so a test cannot pass on a module
    that fails where it should succeed (or the other way round) just because it did not look. None is only for
    a test that learns from the run itself which outcome is right (the crash injection: whether the run reached
    the injected fault); it must assert the outcome right after.
    """
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exited:
            main()
    result = json.loads(capsys.readouterr().out)
    outcome = bool(result.get('failed'))
    assert exited.value.code == (1 if outcome else 0), 'exit status %r for %r' % (exited.value.code, result)
    if failed is None:
        return result
    assert outcome is failed, 'expected the module to %s, it %s: %r' % (
        'fail' if failed else 'succeed', 'failed' if outcome else 'succeeded', result)
    return result
