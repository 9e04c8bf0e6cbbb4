"""Mitogen's strategy against ansible's linear one: site.yml on one lab node, no-op runs interleaved.

    make setup images
    .build/venv/bin/pip install --target .build/mitogen mitogen==0.3.54
    .build/venv/bin/python bench/mitogen_trial.py [--runs 2]

Brings up one lab node (gpuops-mito-bookworm, removed afterwards) and a stand-in of its own, converges it with the
linear strategy, then runs the no-op site.yml (--skip-tags validation) `--runs` times with each strategy in turn.
The node is reached with the connection `podman` (the short name: Mitogen replaces only the connections it knows by
that name with its own). Prints each run's wall time, controller CPU (this process's children: ansible and what it
starts) and recap, and writes them to .build/bench/mitogen/results.json. Not part of make test.
"""
import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402  pylint: disable=wrong-import-position

from tests.lab.labtest import ANSIBLE_PLAYBOOK, lab_inventory, lab_nodes, playbook_environment  # noqa: E402  pylint: disable=wrong-import-position
# bench/ is this script's directory, first on sys.path.
from site_bench import strategy_environment  # noqa: E402  pylint: disable=wrong-import-position

NODE = 'gpuops-mito-bookworm'
RESULTS = REPO / '.build' / 'bench' / 'mitogen'


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=2)
    runs = parser.parse_args().runs
    mitogen = strategy_environment('mitogen_linear')
    found = []
    with tempfile.TemporaryDirectory() as tmp, lab_nodes(pathlib.Path(tmp), 'gpuops-mito-', ('bookworm',)) as (kubeconfig, _kube):
        inventory = lab_inventory('gpuops-mito-')
        nodes = inventory['all']['children']['gpu_nodes']
        nodes['hosts'] = {NODE: nodes['hosts'][NODE]}
        nodes['vars']['ansible_connection'] = 'podman'
        path = pathlib.Path(tmp) / 'hosts.yml'
        path.write_text(yaml.safe_dump(inventory))

        def play(label, extra):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.monotonic()
            result = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(path), 'playbooks/site.yml', '--skip-tags', 'validation'], cwd=REPO,
                                    env=playbook_environment(kubeconfig, **extra), capture_output=True, text=True, timeout=900, check=False)
            wall = time.monotonic() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            recap = result.stdout[result.stdout.find('PLAY RECAP'):].strip().splitlines()[1:]
            found.append({'run': label, 'rc': result.returncode, 'wall_s': round(wall, 1),
                          'cpu_s': round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1), 'recap': recap,
                          'load': os.getloadavg()})
            print(json.dumps(found[-1]), flush=True)
            if result.returncode:
                sys.exit(result.stdout[-4000:] + result.stderr[-4000:])

        play('converge (linear)', {})
        for _run in range(runs):
            play('no-op (linear)', {})
            play('no-op (mitogen_linear)', mitogen)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / 'results.json').write_text(json.dumps(found, indent=1) + '\n')


if __name__ == '__main__':
    main()
