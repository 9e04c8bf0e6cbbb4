"""The layout the code keeps: module_utils (what modules carry to the node or the API host) never imports plugin_utils
(controller-only), and each module carries only what it uses - gpu_validation_results, for one, none of the renderer."""
import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[2] / 'plugins'
PREFIX = 'ansible_collections.gpuops.gpu_operator.plugins.'


def imported(path):
    """The collection's files `path` imports (from ... import ...), as paths under plugins/."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or '').startswith(PREFIX):
            base = PLUGINS.joinpath(*node.module[len(PREFIX):].split('.'))
            for alias in node.names:
                for candidate in (base / (alias.name + '.py'), base.with_suffix('.py')):
                    if candidate.is_file():
                        found.add(candidate)
                        break
    return found


def closure(path):
    seen, todo = set(), [path]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(imported(current))
    return {str(item.relative_to(PLUGINS)) for item in seen - {path}}


@pytest.mark.parametrize('path', sorted((PLUGINS / 'module_utils').rglob('*.py')) + sorted((PLUGINS / 'modules').glob('*.py')),
                         ids=lambda path: str(path.relative_to(PLUGINS)))
def test_modules_carry_no_controller_code(path):
    assert [item for item in closure(path) if item.startswith('plugin_utils/')] == []


def test_gpu_validation_results_carries_the_pod_reading_only():
    assert closure(PLUGINS / 'modules' / 'gpu_validation_results.py') == {
        'module_utils/common/contract.py', 'module_utils/common/errors.py', 'module_utils/k8s/client.py',
        'module_utils/k8s/validation_api.py', 'module_utils/k8s/validation_pods.py'}
