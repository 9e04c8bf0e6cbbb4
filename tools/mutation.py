#!/usr/bin/env python
"""make mutation: mutmut over the pure module_utils, one file at a time, each within a time budget.

Each target file gets its own work tree under .build/mutation/<stage>-<name>/ holding a copy of plugins/ and
tests/ at ansible_collections/gpuops/gpu_operator/: mutmut names a mutant after the file's path and matches it
with the module name the tests import, so the path must be the import path. The unit tests
written for it (TARGETS) are the ones that may kill its mutants: mutmut runs, for each mutant, those of them that
reach the mutated function.

A run that reaches its budget is stopped; the mutants not tried by then are counted as not checked. The report
(.build/mutation/report.txt, also printed) gives per file the mutants killed among those checked and names the
survivors; `cd .build/mutation/<stage>-<name> && mutmut show <survivor>` shows one.

Not a gate: it is not part of make test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / '.build' / 'mutation'
COLLECTION = Path('ansible_collections', 'gpuops', 'gpu_operator')
UTILS = Path('plugins')
UNIT = Path('tests', 'unit', 'plugins')
# The pure transformers and rules (under plugins/), each with the unit tests written for it (under tests/unit/plugins/);
# node I/O, API clients and executors are left to the module and molecule tests. Wider test sets kill a few more
# mutants but make each one cost several times as long.
TARGETS = {
    'module_utils/toolkit/containerd_config.py': ['module_utils/toolkit/test_containerd_config.py'],
    'module_utils/toolkit/toml_doc.py': ['module_utils/toolkit/test_containerd_config.py', 'module_utils/toolkit/test_crio_config.py'],
    'module_utils/toolkit/docker_config.py': ['module_utils/toolkit/test_docker_config.py'],
    'module_utils/toolkit/crio_config.py': ['module_utils/toolkit/test_crio_config.py'],
    'module_utils/toolkit/runtime_config.py': ['module_utils/toolkit/test_containerd_config.py', 'module_utils/toolkit/test_crio_config.py',
                                               'module_utils/toolkit/test_docker_config.py'],
    'module_utils/labels/rules.py': ['module_utils/labels/test_nfd_label_rules.py', 'module_utils/labels/test_node_labels_to_apply.py'],
    'module_utils/common/contract.py': ['module_utils/common/test_contract.py', 'module_utils/labels/test_nfd_label_rules.py'],
    'module_utils/driver/plan.py': ['module_utils/driver/test_driver_plan.py'],
    'module_utils/driver/packages.py': ['module_utils/driver/test_driver_packages.py'],
    'plugin_utils/cluster/prerequisites.py': ['plugin_utils/cluster/test_cluster_manifests.py'],
    'plugin_utils/cluster/policy.py': ['plugin_utils/cluster/test_cluster_manifests.py', 'plugin_utils/cluster/test_fields.py'],
    'plugin_utils/cluster/helm_values.py': ['plugin_utils/cluster/test_helm_values.py'],
    'plugin_utils/cluster/images.py': ['plugin_utils/cluster/test_images.py'],
}
# mutmut's exit codes (mutmut/stats.py), grouped as the report counts them.
KILLED = {1, 3}
TIMEOUT = {-24, 24, 36, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}


def work_dir(target: str) -> Path:
    return OUT / target.replace('/', '-').removesuffix('.py')


def prepare(target: str) -> Path:
    """A fresh work tree for `target` with its mutmut settings."""
    work = work_dir(target)
    shutil.rmtree(work, ignore_errors=True)
    root = work / COLLECTION
    ignore = shutil.ignore_patterns('__pycache__', '.hypothesis', 'output')
    shutil.copytree(REPO / 'plugins', root / 'plugins', ignore=ignore)
    shutil.copytree(REPO / 'tests', root / 'tests', ignore=ignore, symlinks=True)
    shutil.copy2(REPO / 'pytest.ini', root / 'pytest.ini')
    tests = ''.join(f'\n    {COLLECTION / UNIT / test}' for test in TARGETS[target])
    (work / 'setup.cfg').write_text(
        '[mutmut]\n'
        'source_paths = ansible_collections\n'
        f'only_mutate = {COLLECTION / UTILS / target}\n'
        f'pytest_add_cli_args_test_selection ={tests}\n', encoding='utf-8')
    return work


def run_mutmut(work: Path, budget: float, jobs: int) -> tuple[int | None, float]:
    """Run mutmut in `work` for at most `budget` seconds; (its exit code or None when stopped, seconds)."""
    env = {key: value for key, value in os.environ.items() if key != 'PYTHONPATH'}
    log = (work / 'mutmut.log').open('w', encoding='utf-8')
    start = time.monotonic()
    # A session of its own, so that stopping mutmut also stops the pytest workers it forked.
    proc = subprocess.Popen([str(Path(sys.executable).with_name('mutmut')), 'run', '--max-children', str(jobs)],
                            cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        code = proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        # SIGINT lets mutmut save what it has; the results are written after each mutant anyway.
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        code = None
    finally:
        log.close()
    return code, time.monotonic() - start


def results(work: Path, target: str) -> dict:
    """Counts and survivor names from mutmut's record of the file (mutants/<path>.meta)."""
    meta = work / 'mutants' / COLLECTION / UTILS / (target + '.meta')
    if not meta.is_file():
        return {}
    codes = json.loads(meta.read_text(encoding='utf-8'))['exit_code_by_key']
    counts = {'mutants': len(codes), 'killed': 0, 'timeout': 0, 'survived': 0, 'no_tests': 0, 'not_checked': 0, 'other': 0}
    survivors = []
    for name, code in sorted(codes.items()):
        if code is None:
            counts['not_checked'] += 1
        elif code in KILLED:
            counts['killed'] += 1
        elif code in TIMEOUT:
            counts['timeout'] += 1
        elif code in SURVIVED:
            counts['survived'] += 1
            survivors.append(name)
        elif code in NO_TESTS:
            counts['no_tests'] += 1
            survivors.append(name)
        else:
            counts['other'] += 1
    checked = counts['mutants'] - counts['not_checked']
    # A mutant that makes the tests hang is caught too: mutmut stops it.
    counts['score'] = round(100.0 * (counts['killed'] + counts['timeout']) / checked, 1) if checked else None
    counts['survivors'] = survivors
    return counts


COLUMNS = ('mutants', 'checked', 'killed', 'timeout', 'survived', 'no_tests', 'not_checked')


def report_lines(found: dict) -> list[str]:
    """The table (score: killed or timed out, of the checked; no_tests: no test of the file reaches the mutated code)."""
    row = '%-28s' + ' %11s' * (len(COLUMNS) + 2)
    lines = [row % (('file',) + COLUMNS + ('score', 'seconds'))]
    for target, entry in found.items():
        counts = entry['counts']
        if not counts:
            lines.append('%-28s mutmut gave no results (see %s)' % (target, work_dir(target) / 'mutmut.log'))
            continue
        values = dict(counts, checked=counts['mutants'] - counts['not_checked'])
        score = '-' if counts['score'] is None else '%.1f%%' % counts['score']
        lines.append(row % ((target,) + tuple(values[column] for column in COLUMNS) + (score, '%.0f' % entry['seconds'])))
    for target, entry in found.items():
        survivors = (entry['counts'] or {}).get('survivors') or []
        if survivors:
            lines.append('')
            lines.append('survivors of %s (cd %s && mutmut show NAME):' % (target, work_dir(target).relative_to(REPO)))
            lines.extend('  ' + name for name in survivors)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('targets', nargs='*', metavar='FILE', help='files under plugins/ (default: all of %s)' % ', '.join(TARGETS))
    parser.add_argument('--budget', type=float, default=float(os.environ.get('MUTATION_BUDGET', 600)),
                        help='seconds per file (default 600, or $MUTATION_BUDGET)')
    parser.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 1, help='mutants tested at once')
    args = parser.parse_args(argv)
    targets = args.targets or TARGETS
    unknown = [target for target in targets if target not in TARGETS]
    if unknown:
        parser.error('not a target: %s (the targets: %s)' % (', '.join(unknown), ', '.join(TARGETS)))
    found = {}
    for target in targets:
        print('==> %s (at most %.0fs)' % (target, args.budget), flush=True)
        code, seconds = run_mutmut(prepare(target), args.budget, args.jobs)
        counts = results(work_dir(target), target)
        if code not in (0, None) and not counts:
            print('    mutmut failed (rc=%s); see %s' % (code, work_dir(target) / 'mutmut.log'), flush=True)
        found[target] = {'counts': counts, 'seconds': seconds, 'stopped': code is None}
    lines = report_lines(found)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / 'report.txt').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    (OUT / 'report.json').write_text(json.dumps(found, indent=1) + '\n', encoding='utf-8')
    print('\n'.join(lines))
    return 0 if all(entry['counts'] for entry in found.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
