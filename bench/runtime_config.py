# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Benchmark of containerd_nvidia_runtime: the pure transform and the module run.

Run from anywhere with the venv's Python (see bench/README.md):

    python bench/runtime_config.py [--runs N] [--module-runs N]

Prints a markdown table, writes .build/bench/runtime_config.json and exits 1
when a median misses its goal. Not part of the test suite: timings depend on
the machine.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import json
import os
import pathlib
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
COLLECTIONS = REPO / '.build' / 'collections'
FIXTURE = REPO / 'tests' / 'unit' / 'fixtures' / 'containerd' / 'default-1.7.24.toml'
OUTPUT = REPO / '.build' / 'bench' / 'runtime_config.json'
MODULE = 'ansible_collections.gpuops.gpu_operator.plugins.modules.containerd_nvidia_runtime'
# The heaviest present run: three runtimes, default switched, CDI turned on.
OPTIONS = dict(runtime_name='nvidia', runtime_binary='/usr/bin/nvidia-container-runtime', variants=['cdi', 'legacy'],
               set_as_default=True, enable_cdi=True)
# Goals from the issue: the module_utils present transform (on a parsed document)
# and the module's own run; parsing and dumping are tomlkit's and shown apart.
TRANSFORM = 'apply_present (the transform)'
MODULE_CHANGED = 'module run, file changed'
MODULE_UNCHANGED = 'module rerun, nothing to do'
GOAL_TRANSFORM_S = 0.020
GOAL_MODULE_S = 0.5

if not (COLLECTIONS / 'ansible_collections' / 'gpuops' / 'gpu_operator').exists():
    sys.exit('%s has no gpuops.gpu_operator: run `make setup` first' % COLLECTIONS)
sys.path.insert(0, str(COLLECTIONS))

# pylint: disable=wrong-import-position
import tomlkit  # noqa: E402

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit import containerd_config as cc  # noqa: E402
from ansible_collections.gpuops.gpu_operator.plugins.module_utils.toolkit.runtime_options import runtime_entries  # noqa: E402


def build_config():
    """containerd 1.7's real default config plus what a production node typically adds.

    - runc's SystemdCgroup switched on (what kubeadm's guide asks for);
    - a crun runtime, registered by the module's own ensure_runtime (so it copies runc's table as nvidia-ctk would);
    - pull-through mirrors for docker.io and registry.k8s.io and a private registry with TLS and credentials.
    """
    doc = cc.parse(FIXTURE.read_text(encoding='utf-8'), FIXTURE.name)
    version = cc.detect_version(doc)
    runtimes = cc.runtimes_keys(version)
    cc.get_table(doc, runtimes + ('runc', 'options'))['SystemdCgroup'] = True
    runc = cc.get_table(doc, runtimes + ('runc',))
    cc.ensure_runtime(doc, version, 'crun', '/usr/bin/crun', runc, doc)
    registry = cc.cri_keys(version) + ('registry',)
    mirrors = cc.get_table(doc, registry + ('mirrors',))
    for name, endpoint in (('docker.io', 'https://mirror.registry.internal/v2/docker.io'),
                           ('registry.k8s.io', 'https://mirror.registry.internal/v2/registry.k8s.io')):
        mirror = tomlkit.table()
        mirror['endpoint'] = [endpoint, 'https://' + name]
        mirrors[name] = mirror
    private = tomlkit.table()
    private['tls'] = {'ca_file': '/etc/containerd/certs.d/registry.internal/ca.crt', 'insecure_skip_verify': False}
    private['auth'] = {'username': 'puller', 'password': 'not-a-secret'}
    cc.get_table(doc, registry + ('configs',))['registry.internal'] = private
    # Round trip, so the benchmark starts from text exactly as it would sit on disk.
    return cc.dumps(cc.parse(cc.dumps(doc)))


def transform(text):
    """The module's present path on one file, text in and text out."""
    doc = cc.parse(text)
    version = cc.detect_version(doc)
    entries = runtime_entries(OPTIONS['runtime_name'], OPTIONS['runtime_binary'], OPTIONS['variants'])
    cc.apply_present(doc, version, entries, OPTIONS['set_as_default'], OPTIONS['enable_cdi'], {name for name, _binary in entries})
    return cc.dumps(doc)


def time_calls(func, runs):
    samples = []
    for _run in range(runs):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return samples


def bench_transform(text, runs):
    doc = cc.parse(text)
    version = cc.detect_version(doc)
    entries = runtime_entries(OPTIONS['runtime_name'], OPTIONS['runtime_binary'], OPTIONS['variants'])
    ours = {name for name, _binary in entries}

    def apply_present():
        # apply_present edits in place, so each run starts from a fresh parse made outside the timing.
        fresh = cc.parse(text)
        start = time.perf_counter()
        cc.apply_present(fresh, version, entries, OPTIONS['set_as_default'], OPTIONS['enable_cdi'], ours)
        return time.perf_counter() - start

    transform(text)  # warm-up: first calls fill tomlkit's and re's caches
    return {
        'parse (tomlkit)': time_calls(lambda: cc.parse(text), runs),
        TRANSFORM: [apply_present() for _run in range(runs)],
        'dumps (tomlkit)': time_calls(lambda: cc.dumps(doc), runs),
        'text to text (parse + apply_present + dumps)': time_calls(lambda: transform(text), runs),
    }


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_module(args_file, env):
    """One module process: wall seconds, its CPU seconds (steadier than wall on a loaded machine) and `changed`."""
    start, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run([sys.executable, '-m', MODULE, str(args_file)], env=env, capture_output=True, text=True, check=False)
    elapsed, cpu = time.perf_counter() - start, children_cpu() - cpu
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        sys.exit('module run failed (exit %d): %s%s' % (proc.returncode, proc.stdout, proc.stderr))
    if result.get('failed'):
        sys.exit('module run failed: %s' % result.get('msg'))
    return elapsed, cpu, result['changed']


def bench_module(text, runs):
    """The module as ansible runs it on the node: a fresh Python process reading a JSON args file.

    Each round writes the config fresh, then runs the module twice: the first
    run changes the file, the second must find nothing to do. Returns the wall
    and the CPU samples of each.
    """
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS))
    first, second, first_cpu, second_cpu = [], [], [], []
    work = pathlib.Path(tempfile.mkdtemp(prefix='bench-runtime-config-'))
    try:
        config = work / 'config.toml'
        args_file = work / 'args.json'
        args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': dict(OPTIONS, path=str(config))}), encoding='utf-8')
        for _run in range(runs):
            for name in os.listdir(work):
                if name != args_file.name:
                    os.unlink(work / name)
            config.write_text(text, encoding='utf-8')
            for samples, cpu_samples, expect_changed in ((first, first_cpu, True), (second, second_cpu, False)):
                elapsed, cpu, changed = run_module(args_file, env)
                if changed is not expect_changed:
                    sys.exit('module run reported changed=%s, expected %s' % (changed, expect_changed))
                samples.append(elapsed)
                cpu_samples.append(cpu)
    finally:
        shutil.rmtree(work)
    return {MODULE_CHANGED: first, MODULE_UNCHANGED: second}, {MODULE_CHANGED: first_cpu, MODULE_UNCHANGED: second_cpu}


def summarize(samples, goal, cpu_samples=None):
    median = statistics.median(samples)
    row = {'median_ms': round(median * 1000, 2), 'min_ms': round(min(samples) * 1000, 2),
           'max_ms': round(max(samples) * 1000, 2), 'runs': len(samples)}
    if cpu_samples:
        row['cpu_median_ms'] = round(statistics.median(cpu_samples) * 1000, 2)
    if goal is not None:
        row.update(goal_ms=goal * 1000, met=median <= goal)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--runs', type=int, default=50, help='runs of each pure-transform measurement (default 50)')
    parser.add_argument('--module-runs', type=int, default=10, help='rounds of module runs (default 10)')
    args = parser.parse_args()
    if args.runs < 1 or args.module_runs < 1:
        parser.error('--runs and --module-runs must be at least 1')

    text = build_config()
    goals = {TRANSFORM: GOAL_TRANSFORM_S, MODULE_CHANGED: GOAL_MODULE_S, MODULE_UNCHANGED: GOAL_MODULE_S}
    measured = bench_transform(text, args.runs)
    module_wall, module_cpu = bench_module(text, args.module_runs)
    measured.update(module_wall)
    rows = {name: summarize(samples, goals.get(name), module_cpu.get(name)) for name, samples in measured.items()}
    report = {
        'config': {'source': str(FIXTURE.relative_to(REPO)), 'lines': len(text.splitlines()), 'bytes': len(text.encode('utf-8'))},
        'options': OPTIONS,
        'environment': {'python': platform.python_version(), 'tomlkit': tomlkit.__version__, 'machine': platform.machine(),
                        'cpus': os.cpu_count(), 'load_average_1m': round(os.getloadavg()[0], 2)},
        'results': rows,
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(report, indent=2) + '\n', encoding='utf-8')

    env = report['environment']
    print('containerd config: %s + extras, %d lines; Python %s, tomlkit %s, %d CPUs, load %.2f' % (
        report['config']['source'], report['config']['lines'], env['python'], env['tomlkit'], env['cpus'], env['load_average_1m']))
    print()
    print('| measurement | median ms | min ms | max ms | CPU ms (median) | runs | goal ms | met |')
    print('|---|---:|---:|---:|---:|---:|---:|---|')
    for name, row in rows.items():
        goal = '%g' % row['goal_ms'] if 'goal_ms' in row else ''
        met = ('yes' if row['met'] else 'NO') if 'met' in row else ''
        cpu = '%.2f' % row['cpu_median_ms'] if 'cpu_median_ms' in row else ''
        print('| %s | %.2f | %.2f | %.2f | %s | %d | %s | %s |' % (name, row['median_ms'], row['min_ms'], row['max_ms'], cpu, row['runs'], goal, met))
    print()
    print('JSON: %s' % OUTPUT)
    return 0 if all(row.get('met', True) for row in rows.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
