# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Benchmark of playbooks/site.yml on lab nodes, plus the module timings (make bench).

Starts the API stand-in and N lab nodes, converges them once cold, then re-runs
site.yml (everything in place: a no-op) several times on 1, 2, 4, 8, 16 and 32 nodes at
forks = node count, and times the pure containerd transform, the
containerd_nvidia_runtime module and nfd_labels' compute-only run. Writes
bench/results/results.json, results.md and time_vs_nodes.png. See bench/README.md.

    python bench/site_bench.py [--nodes 1,2,4,8,16,32] [--runs 3] [--keep]

Not part of the test suite: timings depend on the machine and its load.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import pathlib
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

import runtime_config  # bench/runtime_config.py: the containerd transform and module timings (and the collection path check)

REPO = pathlib.Path(__file__).resolve().parent.parent
BENCH = REPO / 'bench'
WORK = REPO / '.build' / 'bench' / 'site'
RESULTS = BENCH / 'results'
MITOGEN = REPO / '.build' / 'mitogen'
MITOGEN_VERSION = '0.3.54'
LAB_INVENTORY = REPO / 'inventory' / 'lab' / 'hosts.yml'
FIXTURES = REPO / 'tests' / 'fixtures' / 'gpus'
SIMULATOR = FIXTURES / 'gpuops-lab-nvidia-smi'
LABCTL = REPO / 'tests' / 'lab' / 'labctl.py'
VENV_BIN = pathlib.Path(sys.executable).parent
PREFIX = 'gpuops-bench-'
DISTROS = ('bookworm', 'trixie', 'sid')
# h200-x1 first: the one real capture of our own, and the node of every one-node measurement.
NODE_FIXTURES = ('h200-x1', 'h100-sxm5-80gb-x1', 'a100-sxm4-80gb-mig', 't4')
# The issue asks for an 8-GPU fixture; every real capture we have is one GPU, h200-x1 is ours.
NFD_FIXTURE = 'h200-x1'
NFD_MODULE = 'ansible_collections.gpuops.gpu_operator.plugins.modules.nfd_labels'
SSH_KEY = WORK / 'ssh' / 'id_ed25519'
# Where ansible's ssh keeps its ControlPersist masters: each run's are found there, counted and ended.
SSH_CONTROL_DIR = WORK / 'ssh' / 'cp'
PACKAGE_ACTIONS = {'apt', 'package', 'deb822_repository', 'apt_repository', 'apt_key'}
GOAL_NOOP_ONE_NODE_S = 10.0
GOAL_CPU_PER_NODE_S = 1.0
# Wall time of the no-op at N nodes at most this many times one node's (the lab's nodes share the controller's CPUs).
GOAL_SCALE = {8: 4.0, 32: 8.0}
GOAL_NFD_S = 0.3

_children = []  # the ansible-playbook run in flight, ended on a signal


def say(msg):
    print(msg, flush=True)


def short_action(action):
    return action.rsplit('.', 1)[-1]


def task_title(task, action):
    """A task's name as the table shows it: role without the collection, argument checks without the spec's description."""
    title = task.replace('gpuops.gpu_operator.', '')
    return title.split(' against ', 1)[0] if action == 'validate_argument_spec' else title


def med(values):
    return round(statistics.median(values), 3) if values else None


# ---------------------------------------------------------------- the lab

def lab_nodes(count):
    """Node i cycles the distros and the fixtures; the first is bookworm with h200-x1."""
    nodes = []
    for index in range(count):
        distro = DISTROS[index % len(DISTROS)]
        nodes.append(dict(name='%s%s-%d' % (PREFIX, distro, index + 1), distro=distro, fixture=NODE_FIXTURES[index % len(NODE_FIXTURES)]))
    return nodes


def write_inventory(path, nodes, connection='podman'):
    """inventory/lab/hosts.yml with its gpu_nodes hosts replaced by `nodes`: the same role variables, and the same
    connection unless `connection` is ssh (each node's sshd at its address, pipelining as ansible.cfg sets it).

    A node gets the host variables of the lab host served the same fixture (how the lab runs that capture,
    e.g. a driver to install where the capture has none), then its own distro and fixture.
    """
    inventory = yaml.safe_load(LAB_INVENTORY.read_text(encoding='utf-8'))
    group = inventory['all']['children']['gpu_nodes']
    by_fixture = {(hv or {}).get('gpuops_lab_fixture'): hv or {} for hv in (group.get('hosts') or {}).values()}
    group['hosts'] = {node['name']: dict(by_fixture.get(node['fixture'], {}), gpuops_lab_distro=node['distro'], gpuops_lab_fixture=node['fixture'])
                      for node in nodes}
    if connection == 'ssh':
        group['vars'].update(ansible_connection='ssh', ansible_user='root', ansible_ssh_private_key_file=str(SSH_KEY),
                             ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
                             # Mitogen's ssh asks for host key checking itself unless told not to (the nodes are new each run).
                             ansible_host_key_checking=False)
        for node in nodes:
            group['hosts'][node['name']]['ansible_host'] = node['address']
    path.write_text('# Generated by bench/site_bench.py from %s\n%s' % (LAB_INVENTORY.relative_to(REPO), yaml.safe_dump(inventory, sort_keys=False)),
                    encoding='utf-8')
    return path


# systemd in a lab node holds 7 or 8 inotify instances (counted on 32 running nodes: 225 in all, the host's own
# included); the kernel's default limit, 128 per user, stops the 17th node or so while it boots.
INOTIFY_PER_NODE = 8
INOTIFY_LIMIT = pathlib.Path('/proc/sys/fs/inotify/max_user_instances')


def inotify_limit(nodes):
    """Exit with the setting to change when `nodes` lab nodes would exceed the inotify instances a user may hold."""
    try:
        limit = int(INOTIFY_LIMIT.read_text())
    except (OSError, ValueError):
        return  # not Linux's procfs: podman says what went wrong, if anything does
    needed = INOTIFY_PER_NODE * nodes + 32
    if limit < needed:
        raise SystemExit('%d lab nodes need about %d inotify instances and fs.inotify.max_user_instances is %d: '
                         'sysctl -w fs.inotify.max_user_instances=%d (as root), then run the bench again' % (nodes, needed, limit, needed))


class Lab:
    """The API stand-in and the bench's lab nodes; stop() removes all of them, also after a failure."""

    def __init__(self, nodes, connection='podman', strategy='linear'):
        self.nodes = nodes
        self.connection = connection
        self.strategy = strategy  # of the no-op runs; the cold converges use ansible's linear one
        self.kubeconfig = WORK / 'kubeconfig'
        self.pidfile = WORK / 'standin.pid'
        self.standin = None

    def start(self):
        inotify_limit(len(self.nodes))
        self.remove_leftovers()
        log = WORK / 'standin.log'
        say('==> API stand-in')
        args = [sys.executable, '-m', 'tests.standin', 'serve', '--kubeconfig', str(self.kubeconfig), '--pidfile', str(self.pidfile)]
        for node in self.nodes:
            args += ['--node', node['name']]
        with log.open('w', encoding='utf-8') as out:
            self.standin = subprocess.Popen(args, cwd=str(REPO), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        deadline = time.monotonic() + 30
        while 'ready ' not in log.read_text(encoding='utf-8'):
            if self.standin.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('the API stand-in did not start:\n' + log.read_text(encoding='utf-8'))
            time.sleep(0.2)
        say('==> %d lab nodes' % len(self.nodes))
        start = time.monotonic()
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
        try:
            for node, proc in zip(self.nodes, pool.map(self.up, self.nodes)):
                if proc.returncode != 0:
                    raise RuntimeError('%s did not start: %s' % (node['name'], proc.stdout.strip()))
            if self.connection == 'ssh':
                say('==> OpenSSH server on each node (not part of any measurement)')
                if not SSH_KEY.exists():
                    SSH_KEY.parent.mkdir(parents=True, exist_ok=True)
                    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(SSH_KEY)], check=True)
                for node, address in zip(self.nodes, pool.map(self.enable_ssh, self.nodes)):
                    node['address'] = address
        finally:
            pool.shutdown(cancel_futures=True)  # on a failure or a signal, start no more nodes before stop() removes them
        return time.monotonic() - start

    @staticmethod
    def enable_ssh(node):
        """Install and start sshd in the node, authorise the bench's key; returns the node's address."""
        script = ('set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null; '
                  'apt-get install -y -q --no-install-recommends openssh-server >/dev/null; '
                  'install -d -m 700 /root/.ssh; cat > /root/.ssh/authorized_keys; chmod 600 /root/.ssh/authorized_keys; '
                  'systemctl enable --now ssh.service >/dev/null 2>&1')
        with open(str(SSH_KEY) + '.pub', 'rb') as key:
            proc = subprocess.run(['podman', 'exec', '-i', node['name'], 'sh', '-c', script], stdin=key,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        if proc.returncode != 0:
            raise RuntimeError('%s: sshd setup failed: %s' % (node['name'], proc.stdout.decode(errors='replace')[-2000:]))
        return subprocess.run(['podman', 'inspect', '--format', '{{.NetworkSettings.IPAddress}}', node['name']],
                              stdout=subprocess.PIPE, text=True, check=True).stdout.strip()

    @staticmethod
    def up(node):
        return subprocess.run([sys.executable, str(LABCTL), 'up', node['name'], '--distro', node['distro'],
                               '--fixture', str(FIXTURES / node['fixture']), '--timeout', '300'],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)

    def remove_leftovers(self):
        """Nodes left by a killed run would make the cold converge warm: remove every node with the bench's prefix."""
        out = subprocess.run(['podman', 'ps', '--all', '--filter', 'label=gpuops.lab=1', '--format', '{{.Names}}'],
                             stdout=subprocess.PIPE, text=True, check=False).stdout.split()
        stale = [name for name in out if name.startswith(PREFIX)]
        if stale:
            say('==> removing nodes left by an earlier run: %s' % ' '.join(stale))
            subprocess.run([sys.executable, str(LABCTL), 'down'] + stale, check=False)
        self.stop_standin()

    def stop_standin(self):
        if self.pidfile.exists():
            subprocess.run([sys.executable, '-m', 'tests.standin', 'stop', '--pidfile', str(self.pidfile), '--missing-ok'],
                           cwd=str(REPO), check=False)
        if self.standin is not None and self.standin.poll() is None:
            self.standin.terminate()
            self.standin.wait(15)

    def stop(self):
        say('==> removing the bench nodes and the API stand-in')
        self.stop_standin()
        subprocess.run([sys.executable, str(LABCTL), 'down'] + [node['name'] for node in self.nodes], check=False)

    def standin_cpu(self):
        """CPU seconds the stand-in has used so far (it serves the API calls of every run)."""
        if self.standin is None:
            return 0.0
        try:
            fields = pathlib.Path('/proc/%d/stat' % self.standin.pid).read_text().rsplit(')', 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


# ---------------------------------------------------------------- one playbook run

def strategy_environment(strategy):
    """The settings that make ansible-playbook use `strategy`: Mitogen's comes from .build/mitogen (see bench/README.md)."""
    if strategy == 'linear':
        return {}
    if not (MITOGEN / 'ansible_mitogen').is_dir():
        raise SystemExit('Mitogen is not in %s: .build/venv/bin/pip install --target .build/mitogen mitogen==%s' % (MITOGEN, MITOGEN_VERSION))
    return {'ANSIBLE_STRATEGY_PLUGINS': str(MITOGEN / 'ansible_mitogen' / 'plugins' / 'strategy'), 'ANSIBLE_STRATEGY': strategy,
            'PYTHONPATH': '%s%s%s' % (MITOGEN, os.pathsep, os.environ.get('PYTHONPATH', ''))}


def run_site(lab, inventory, forks, label, strategy='linear'):
    """One ansible-playbook run of site.yml; returns its wall and CPU time and the callback's events."""
    events = WORK / 'runs' / ('%s.jsonl' % label)
    log = WORK / 'runs' / ('%s.log' % label)
    if events.exists():
        events.unlink()
    env = dict(os.environ,
               PATH='%s:%s' % (VENV_BIN, os.environ.get('PATH', '')),
               ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / '.build' / 'collections'),
               ANSIBLE_CALLBACK_PLUGINS=str(BENCH / 'callback_plugins'),
               ANSIBLE_CALLBACKS_ENABLED='gpuops_bench',
               ANSIBLE_FORKS=str(forks),
               GPUOPS_BENCH_EVENTS=str(events),
               K8S_AUTH_KUBECONFIG=str(lab.kubeconfig),
               ANSIBLE_SSH_CONTROL_PATH_DIR=str(SSH_CONTROL_DIR),
               **strategy_environment(strategy))
    cmd = [str(VENV_BIN / 'ansible-playbook'), '-i', str(inventory), str(REPO / 'playbooks' / 'site.yml'), '--skip-tags', 'validation']
    load = os.getloadavg()[0]
    standin_cpu = lab.standin_cpu()
    with log.open('w', encoding='utf-8') as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=str(REPO), env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _children.append(proc)
        # wait4: the CPU of ansible-playbook and of everything it waited for (workers, podman clients, local modules).
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        _children.remove(proc)
    if proc.returncode != 0:
        raise RuntimeError('%s: ansible-playbook failed (exit %d), log: %s\n%s' % (
            label, proc.returncode, log, '\n'.join(log.read_text(encoding='utf-8').splitlines()[-30:])))
    parsed = [json.loads(line) for line in events.read_text(encoding='utf-8').splitlines()]
    masters = end_ssh_masters()
    if lab.connection == 'ssh':
        parsed.append(dict(ev='ssh-masters', cpu=masters))
    return dict(label=label, wall_s=round(wall, 3), cpu_s=round(usage.ru_utime + usage.ru_stime + masters, 3),
                standin_cpu_s=round(lab.standin_cpu() - standin_cpu, 3), load_1m=round(load, 2), log=str(log.relative_to(REPO))), parsed


def end_ssh_masters():
    """CPU seconds of the run's ssh ControlPersist masters, which are then ended.

    A master leaves the worker that started it (it daemonises), so the run's wait4 does not count it; each run
    starts with none, as a run more than ControlPersist (60 s) after the last one does.
    """
    cpu = 0.0
    for proc in pathlib.Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / 'cmdline').read_bytes().split(b'\0')
            if not cmdline or not cmdline[0].endswith(b'ssh') or not any(str(SSH_CONTROL_DIR).encode() in arg for arg in cmdline):
                continue
            fields = (proc / 'stat').read_text().rsplit(')', 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
            os.kill(int(proc.name), signal.SIGTERM)
        except (OSError, IndexError, ValueError):
            continue  # it ended meanwhile
    return cpu


def analyse(events, nodes):
    """Per-node counts and the phase times of one run, from the callback's events."""
    names = {node['name'] for node in nodes}
    tasks = collections.defaultdict(collections.Counter)
    trips = collections.defaultdict(collections.Counter)
    podman = collections.defaultdict(collections.Counter)
    cpu = collections.Counter()
    per_task = collections.OrderedDict()  # node-side task name -> what it runs, its times, its module round trips
    modules_by_task = collections.Counter()
    plays, stats = [], {}
    for event in events:
        kind, host = event['ev'], event.get('host')
        if kind == 'task':
            tasks[host][event['status']] += 1
            tasks[host]['changed'] += event['changed']
            if host in names:
                row = per_task.setdefault(event['task'], dict(action=short_action(event['action']), delegated=event['delegated'], s=[], modules=0))
                row['s'].append(event['s'] or 0)
        elif kind == 'module':
            trips[host]['controller' if event['transport'] == 'local' and host in names else 'node'] += 1
            if host in names:
                modules_by_task[event['task']] += 1
        elif kind == 'podman':
            podman[host][event['sub']] += 1
            cpu['podman clients'] += event['cpu']
        elif kind == 'exec' and event['transport'] == 'local':
            cpu['modules delegated to the controller for the nodes' if host in names else 'cluster modules'] += event['cpu']
        elif kind == 'exec' and event['transport'] == 'ssh':
            cpu['ssh clients'] += event['cpu']
        elif kind == 'ssh-masters':
            cpu['ssh connection masters'] += event['cpu']
        elif kind == 'play':
            plays.append((event['play'], event['t']))
        elif kind == 'stats':
            stats = event
    for task, count in modules_by_task.items():
        if task in per_task:
            per_task[task]['modules'] = count / len(names)
    if 'main_cpu' in stats:
        # The workers' CPU counts the podman or ssh clients and controller-side modules they waited for: take those out.
        started = sum(value for part, value in cpu.items() if part != 'ssh connection masters')
        cpu['ansible workers'] = stats['workers_cpu'] - started
        cpu['ansible-playbook process'] = stats['main_cpu']
    ends = [t for _name, t in plays[1:]] + ([stats['t']] if stats else [])
    phases = [dict(play=name, s=round(end - start, 3)) for (name, start), end in zip(plays, ends)]

    def per_node(counter_by_host, key=None):
        values = [(sum(counter_by_host[n].values()) if key is None else counter_by_host[n][key]) for n in names]
        return round(statistics.mean(values), 2) if values else 0

    ran = {n: tasks[n]['ok'] + tasks[n]['failed'] + tasks[n]['ignored'] for n in names}
    return dict(
        tasks_per_node=round(statistics.mean(ran.values()), 2),
        skipped_per_node=per_node(tasks, 'skipped'),
        module_round_trips_per_node=per_node(trips),
        module_round_trips_on_node=per_node(trips, 'node'),
        module_round_trips_on_controller_for_node=per_node(trips, 'controller'),
        podman_processes_per_node=per_node(podman),
        podman_exec_per_node=per_node(podman, 'exec'),
        cluster_tasks=sum(tasks['localhost'][s] for s in ('ok', 'failed', 'ignored')),
        cluster_module_round_trips=sum(trips['localhost'].values()),
        changed=sum(tasks[h]['changed'] for h in tasks),
        changed_by_host={h: c['changed'] for h, c in stats.get('hosts', {}).items() if c['changed']},
        child_cpu_s={k: round(v, 3) for k, v in cpu.items()},
        phases=phases,
        per_task=per_task,
    )


def node_task_table(analyses):
    """Median time of each node-side task over the runs, with what it runs and its module round trips per node."""
    rows = collections.OrderedDict()
    for analysis in analyses:
        for task, row in analysis['per_task'].items():
            rows.setdefault(task, dict(row, s=[]))['s'].extend(row['s'])
    return [dict(task=task_title(task, row['action']), action=row['action'], where='controller (delegated)' if row['delegated'] else 'node',
                 module_round_trips=row['modules'], median_s=med(row['s'])) for task, row in rows.items()]


def strip_per_task(analysis):
    return {k: v for k, v in analysis.items() if k != 'per_task'}


# ---------------------------------------------------------------- the lab measurements

def cold_converge(lab, node):
    inventory = write_inventory(WORK / 'hosts-cold-1.yml', [node], lab.connection)
    say('==> cold converge of %s' % node['name'])
    run, events = run_site(lab, inventory, 1, 'cold-1')
    analysis = analyse(events, [node])
    package_tasks = [e for e in events if e['ev'] == 'task' and short_action(e['action']) in PACKAGE_ACTIONS and e['status'] != 'skipped']
    package_s = sum(e['s'] or 0 for e in package_tasks)
    node_plays = [p for p in analysis['phases'] if p['play'] in node_play_names()]
    node_s = sum(p['s'] for p in node_plays)
    run.update(strip_per_task(analysis), node_side_s=round(node_s, 3), package_install_s=round(package_s, 3),
               node_side_without_packages_s=round(node_s - package_s, 3),
               package_tasks=[dict(task=e['task'], s=e['s']) for e in package_tasks],
               node_tasks=node_task_table([analysis]))
    say('    %.1f s wall, node-side plays %.1f s of which package installs %.1f s' % (run['wall_s'], node_s, package_s))
    return run


def node_play_names():
    """Names of the site.yml plays that run on gpu_nodes (the node-side roles)."""
    plays = yaml.safe_load((REPO / 'playbooks' / 'site.yml').read_text(encoding='utf-8'))
    return {play['name'] for play in plays if play.get('hosts') == 'gpu_nodes'}


def noop_runs(lab, counts, runs):
    """K no-op runs at each node count, interleaved so that a change of machine load hits every count alike."""
    by_count = {n: [] for n in counts}
    inventories = {n: write_inventory(WORK / ('hosts-%d.yml' % n), lab.nodes[:n], lab.connection) for n in counts}
    for k in range(runs):
        for n in counts:
            run, events = run_site(lab, inventories[n], n, 'noop-%d-%d' % (n, k + 1), lab.strategy)
            analysis = analyse(events, lab.nodes[:n])
            run.update(analysis)
            by_count[n].append(run)
            say('    no-op %d node(s), run %d/%d: %.1f s wall, %.1f s controller CPU, %s changed, load %.1f' % (
                n, k + 1, runs, run['wall_s'], run['cpu_s'], analysis['changed'], run['load_1m']))
    summary = {}
    for n, samples in by_count.items():
        walls = [s['wall_s'] for s in samples]
        cpus = [s['cpu_s'] for s in samples]
        first = samples[0]
        summary[n] = dict(
            nodes=n, forks=n, runs=len(samples),
            wall_s=med(walls), wall_min_s=min(walls), wall_max_s=max(walls),
            cpu_s=med(cpus), cpu_per_node_s=round(med(cpus) / n, 3),
            standin_cpu_s=med([s['standin_cpu_s'] for s in samples]),
            load_1m=[s['load_1m'] for s in samples],
            changed=[s['changed'] for s in samples],
            child_cpu_s={k: med([s['child_cpu_s'].get(k, 0) for s in samples]) for k in first['child_cpu_s']},
            phases=[dict(play=p['play'], s=med([s['phases'][i]['s'] for s in samples])) for i, p in enumerate(first['phases'])],
            samples=[{k: v for k, v in s.items() if k not in ('per_task', 'phases', 'child_cpu_s')} for s in samples],
        )
        for key in ('tasks_per_node', 'skipped_per_node', 'module_round_trips_per_node', 'module_round_trips_on_node',
                    'module_round_trips_on_controller_for_node', 'podman_processes_per_node', 'podman_exec_per_node',
                    'cluster_tasks', 'cluster_module_round_trips'):
            summary[n][key] = first[key]
        if n == 1:
            summary[n]['node_tasks'] = node_task_table(samples)
    low = min(summary)
    for n, row in summary.items():
        # What one more node costs the controller: the cluster plays and ansible's start-up are paid once per run.
        row['cpu_per_added_node_s'] = round((row['cpu_s'] - summary[low]['cpu_s']) / (n - low), 3) if n > low else None
    return summary


# ---------------------------------------------------------------- module timings

def nfd_compute(fixture, runs, kubernetes):
    """nfd_labels apply=false as ansible runs it on a node: a fresh Python reading a JSON args file.

    A GPU node usually has no kubernetes library: unless `kubernetes`, a stub package
    that raises ImportError stands first on the path, as the library's absence would.
    """
    root = FIXTURES / fixture
    work = pathlib.Path(tempfile.mkdtemp(prefix='bench-nfd-'))
    path = [str(REPO / '.build' / 'collections')]
    if not kubernetes:
        (work / 'kubernetes').mkdir()
        (work / 'kubernetes' / '__init__.py').write_text("raise ImportError('no kubernetes library, as on a GPU node')\n", encoding='utf-8')
        path.insert(0, str(work))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), GPUOPS_LAB_GPU_FIXTURE=str(root))
    samples, cpu_samples, labels = [], [], 0
    try:
        args_file = work / 'args.json'
        args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': dict(
            apply=False, sysfs_root=str(root / 'sys'), procfs_root=str(root / 'proc'), nvidia_smi=str(SIMULATOR))}), encoding='utf-8')
        for _run in range(runs + 1):  # the first run fills the page cache and writes .pyc files: not counted
            start, cpu = time.perf_counter(), runtime_config.children_cpu()
            proc = subprocess.run([sys.executable, '-m', NFD_MODULE, str(args_file)], env=env, capture_output=True, text=True, check=False)
            samples.append(time.perf_counter() - start)
            cpu_samples.append(runtime_config.children_cpu() - cpu)
            result = json.loads(proc.stdout or '{}')
            if proc.returncode != 0 or result.get('failed'):
                raise RuntimeError('nfd_labels on %s failed: %s%s' % (fixture, proc.stdout, proc.stderr))
            labels = len(result['labels'])
    finally:
        shutil.rmtree(str(work))
    row = runtime_config.summarize(samples[1:], GOAL_NFD_S if fixture == NFD_FIXTURE and not kubernetes else None, cpu_samples[1:])
    row.update(fixture=fixture, labels=labels)
    return row


def module_timings(args):
    say('==> module timings')
    text = runtime_config.build_config()
    rows = collections.OrderedDict()
    measured = runtime_config.bench_transform(text, args.transform_runs)
    module_wall, module_cpu = runtime_config.bench_module(text, args.module_runs)
    measured.update(module_wall)
    goals = {runtime_config.TRANSFORM: runtime_config.GOAL_TRANSFORM_S, runtime_config.MODULE_CHANGED: runtime_config.GOAL_MODULE_S,
             runtime_config.MODULE_UNCHANGED: runtime_config.GOAL_MODULE_S}
    for name, samples in measured.items():
        rows['containerd_nvidia_runtime: ' + name] = runtime_config.summarize(samples, goals.get(name), module_cpu.get(name))
    for fixture in NODE_FIXTURES:
        rows['nfd_labels compute-only (apply=false), %s' % fixture] = nfd_compute(fixture, args.module_runs, kubernetes=False)
    rows['nfd_labels compute-only, %s, kubernetes library installed' % NFD_FIXTURE] = nfd_compute(NFD_FIXTURE, args.module_runs, kubernetes=True)
    return dict(config_lines=len(text.splitlines()), containerd_options=runtime_config.OPTIONS, rows=rows)


# ---------------------------------------------------------------- report

def goals(report):
    out = []
    noop = report.get('noop') or {}
    if 1 in noop:
        out.append(dict(goal='no-op site.yml, 1 node: wall <= %g s' % GOAL_NOOP_ONE_NODE_S, value='%.1f s' % noop[1]['wall_s'],
                        met=noop[1]['wall_s'] <= GOAL_NOOP_ONE_NODE_S))
    if noop:
        top = noop[max(noop)]
        out.append(dict(goal='no-op, %d node(s): controller CPU per node <= %g s' % (top['nodes'], GOAL_CPU_PER_NODE_S),
                        value='%.2f s' % top['cpu_per_node_s'], met=top['cpu_per_node_s'] <= GOAL_CPU_PER_NODE_S))
        if top['cpu_per_added_node_s'] is not None:
            out.append(dict(goal='no-op: controller CPU per added node (%d to %d nodes) <= %g s' % (min(noop), top['nodes'], GOAL_CPU_PER_NODE_S),
                            value='%.2f s' % top['cpu_per_added_node_s'], met=top['cpu_per_added_node_s'] <= GOAL_CPU_PER_NODE_S))
    for count, factor in sorted(GOAL_SCALE.items()):
        if 1 in noop and count in noop:
            ratio = noop[count]['wall_s'] / noop[1]['wall_s']
            out.append(dict(goal='no-op, %d nodes: wall <= %gx one node' % (count, factor), value='%.2fx' % ratio, met=ratio <= factor))
    for name, row in report['modules']['rows'].items():
        if 'goal_ms' in row:
            out.append(dict(goal='%s: median <= %g ms' % (name, row['goal_ms']), value='%.1f ms' % row['median_ms'], met=row['met']))
    return out


CONNECTIONS = {
    'podman': 'Ansible reaches the nodes with containers.podman.podman (podman exec and podman cp; it cannot pipeline): '
              'the lab\'s connection, not a fleet\'s.',
    'ssh': 'Ansible reaches the nodes over SSH (an OpenSSH server in each node, ansible\'s default ControlPersist, pipelining '
           'on as ansible.cfg sets it), as it reaches a fleet; the ssh clients and ControlPersist masters are counted in the '
           'controller CPU.',
}


def markdown(report):
    env = report['environment']
    lines = ['# site.yml benchmark', '',
             '%s; %d CPUs, load average %s at the start and %s at the end; Python %s, ansible-core %s, %s.' % (
                 env['date'], env['cpus'], env['load_start'], env['load_end'], env['python'], env['ansible_core'], env['podman']),
             'Lab nodes are podman containers on this machine (they share its CPUs with the controller); the Kubernetes API is the '
             'stand-in. Medians of %d runs.' % report['settings']['runs'], '', CONNECTIONS[report['settings'].get('connection', 'podman')], '']
    if report['settings'].get('strategy', 'linear') != 'linear':
        lines += ['The no-op runs use the strategy %s (Mitogen %s: one Python interpreter per node for the whole run); the cold '
                  'converges use ansible\'s linear strategy.' % (report['settings']['strategy'], MITOGEN_VERSION), '']
    lines += ['## Goals', '', '| goal | measured | met |', '|---|---:|---|']
    lines += ['| %s | %s | %s |' % (g['goal'], g['value'], 'yes' if g['met'] else 'NO') for g in report['goals']]
    noop = report.get('noop')
    if noop:
        lines += ['', '## No-op re-converge of site.yml (everything in place), forks = nodes', '',
                  '| nodes | wall s (median) | min-max s | controller CPU s | CPU s per node | CPU s per added node | tasks per node | skipped per node '
                  '| module round trips per node (on node + on controller) | podman processes per node | cluster tasks '
                  '| cluster module round trips | changed | load (1 min) at each run\'s start |',
                  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|']
        for n, r in sorted(noop.items()):
            added = '' if r['cpu_per_added_node_s'] is None else '%.2f' % r['cpu_per_added_node_s']
            lines.append('| %d | %.1f | %.1f-%.1f | %.1f | %.2f | %s | %g | %g | %g (%g + %g) | %g | %d | %d | %s | %s |' % (
                n, r['wall_s'], r['wall_min_s'], r['wall_max_s'], r['cpu_s'], r['cpu_per_node_s'], added, r['tasks_per_node'],
                r['skipped_per_node'], r['module_round_trips_per_node'], r['module_round_trips_on_node'],
                r['module_round_trips_on_controller_for_node'], r['podman_processes_per_node'], r['cluster_tasks'],
                r['cluster_module_round_trips'], ','.join(str(c) for c in r['changed']), ', '.join('%.1f' % x for x in r['load_1m'])))
        one = noop.get(min(noop))
        counts = sorted(noop)
        parts = sorted({part for r in noop.values() for part in r['child_cpu_s']})
        lines += ['', 'Where the controller CPU goes (median s; the podman or ssh clients and the modules run on the controller are '
                  'counted apart from the ansible processes that started them):', '',
                  '| part | %s |' % ' | '.join('%d node(s)' % n for n in counts), '|---|%s' % ('---:|' * len(counts))]
        lines += ['| %s | %s |' % (part, ' | '.join('%.1f' % noop[n]['child_cpu_s'].get(part, 0) for n in counts)) for part in parts]
        lines += ['', 'Plays on %d node(s) (median s): %s.' % (one['nodes'], ', '.join('%s %.1f' % (p['play'], p['s']) for p in one['phases']))]
        if one.get('node_tasks'):
            trips = [t for t in one['node_tasks'] if t['module_round_trips']]
            rest = [t for t in one['node_tasks'] if not t['module_round_trips']]
            lines += ['', '### Node-side tasks of a no-op run on one node that make a module round trip', '',
                      '| task | action | runs on | module round trips | median s |', '|---|---|---|---:|---:|']
            lines += ['| %s | %s | %s | %g | %.2f |' % (t['task'], t['action'], t['where'], t['module_round_trips'], t['median_s'])
                      for t in trips]
            lines += ['', 'The other %d node-side tasks (set_fact, include, argument checks, skipped ones) took %.1f s together.' % (
                len(rest), sum(t['median_s'] for t in rest))]
    cold = report.get('cold')
    if cold:
        lines += ['', '## Cold converge of one node (%s)' % cold['node'], '',
                  '| site.yml wall s | node-side plays s | package installs s | node-side without packages s | controller CPU s '
                  '| tasks on the node | module round trips on the node |',
                  '|---:|---:|---:|---:|---:|---:|---:|',
                  '| %.1f | %.1f | %.1f | %.1f | %.1f | %g | %g |' % (
                      cold['wall_s'], cold['node_side_s'], cold['package_install_s'], cold['node_side_without_packages_s'], cold['cpu_s'],
                      cold['tasks_per_node'], cold['module_round_trips_per_node']),
                  '', 'Package installs: %s.' % ('; '.join('%s %.1f s' % (t['task'], t['s']) for t in cold['package_tasks']) or 'none')]
        if report.get('cold_rest'):
            rest = report['cold_rest']
            lines.append('The other %d nodes, converged together before the no-op runs: %.1f s wall.' % (rest['nodes'], rest['wall_s']))
    mods = report['modules']
    lines += ['', '## Module timings', '',
              'containerd_nvidia_runtime on a %d-line config (containerd 1.7 default + production extras, see bench/README.md); '
              'nfd_labels with apply=false on each GPU fixture, nvidia-smi answered by the lab simulator, without the kubernetes '
              'library (as on a GPU node) unless said. Every fixture is a real one-GPU capture: there is no 8-GPU one, so the goal '
              'is checked on %s (captured by us). Module rows are whole processes (Python start-up included); CPU is the process\'s '
              'user + system time, steadier than wall time on a loaded machine.' % (mods['config_lines'], NFD_FIXTURE),
              '', '| measurement | median ms | min ms | max ms | CPU ms (median) | runs | goal ms | met |', '|---|---:|---:|---:|---:|---:|---:|---|']
    for name, row in mods['rows'].items():
        goal = '%g' % row['goal_ms'] if 'goal_ms' in row else ''
        met = ('yes' if row['met'] else 'NO') if 'met' in row else ''
        cpu = '%.2f' % row['cpu_median_ms'] if 'cpu_median_ms' in row else ''
        lines.append('| %s | %.2f | %.2f | %.2f | %s | %d | %s | %s |' % (
            name, row['median_ms'], row['min_ms'], row['max_ms'], cpu, row['runs'], goal, met))
    return '\n'.join(lines) + '\n'


def plot(noop, path):
    import matplotlib  # bench/requirements.txt; imported here so the rest runs without it
    matplotlib.use('Agg')
    from matplotlib import pyplot

    counts = sorted(noop)
    walls = [noop[n]['wall_s'] for n in counts]
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    axes.errorbar(counts, walls, yerr=[[w - noop[n]['wall_min_s'] for n, w in zip(counts, walls)],
                                       [noop[n]['wall_max_s'] - w for n, w in zip(counts, walls)]],
                  marker='o', capsize=4, label='wall time (median, min-max)')
    axes.plot(counts, [noop[n]['cpu_s'] for n in counts], marker='s', linestyle='--', label='controller CPU seconds (median)')
    axes.axhline(GOAL_NOOP_ONE_NODE_S, color='grey', linewidth=0.8, linestyle=':', label='goal: %g s wall on one node' % GOAL_NOOP_ONE_NODE_S)
    for count, factor in sorted(GOAL_SCALE.items()):
        if 1 in noop and count in noop:
            axes.plot([count], [factor * noop[1]['wall_s']], color='red', marker='v', linestyle='none',
                      label='goal: %d nodes <= %gx one node (at most here)' % (count, factor))
    axes.set_xscale('log', base=2)
    axes.set_xticks(counts)
    axes.set_xticklabels([str(n) for n in counts])
    axes.set_xlabel('lab nodes (forks = nodes)')
    axes.set_ylabel('seconds')
    axes.set_ylim(bottom=0)
    axes.set_title('No-op re-converge of site.yml')
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(str(path), dpi=100)
    pyplot.close(figure)


def environment(load_start):
    def version(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return 'unknown'
    from ansible.release import __version__ as ansible_core  # pylint: disable=import-outside-toplevel
    return dict(date=datetime.datetime.now().strftime('%Y-%m-%d %H:%M'), python=platform.python_version(), ansible_core=ansible_core,
                podman=version(['podman', '--version']), cpus=os.cpu_count(), load_start=load_start,
                load_end=[round(x, 2) for x in os.getloadavg()])


# ---------------------------------------------------------------- main

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--nodes', default='1,2,4,8,16,32', help='node counts of the no-op runs (default 1,2,4,8,16,32)')
    parser.add_argument('--runs', type=int, default=3, help='no-op runs at each node count; the median is reported (default 3)')
    parser.add_argument('--transform-runs', type=int, default=50, help='runs of each pure containerd transform measurement (default 50)')
    parser.add_argument('--module-runs', type=int, default=10, help='runs of each module measurement (default 10)')
    parser.add_argument('--modules-only', action='store_true', help='only the module timings: no lab, no site.yml runs')
    parser.add_argument('--keep', action='store_true', help='leave the nodes and the API stand-in running (then: labctl.py down, standin stop)')
    parser.add_argument('--connection', choices=['podman', 'ssh'], default='podman',
                        help='how ansible reaches the nodes: podman exec (the lab\'s own) or ssh to an OpenSSH server the bench '
                             'installs in each node, with pipelining (default podman)')
    parser.add_argument('--strategy', choices=['linear', 'mitogen_linear'], default='linear',
                        help='ansible strategy of the no-op runs: ansible\'s linear one or Mitogen\'s (installed in .build/mitogen, '
                             'see bench/README.md); the cold converges use linear (default linear)')
    parser.add_argument('--output', help='where results.json, results.md and time_vs_nodes.png go '
                                         '(default bench/results, bench/results/ssh with --connection ssh, '
                                         'with -mitogen_linear added for that strategy)')
    args = parser.parse_args()
    default = RESULTS / 'ssh' if args.connection == 'ssh' else RESULTS
    if args.strategy != 'linear':
        default = default.parent / ('%s-%s' % (default.name, args.strategy))
    args.output = args.output or str(default)
    strategy_environment(args.strategy)  # Mitogen missing: said before anything starts
    try:
        args.counts = sorted({int(n) for n in args.nodes.split(',')})
    except ValueError:
        parser.error('--nodes takes comma-separated numbers')
    if not args.counts or args.counts[0] < 1 or args.runs < 1 or args.module_runs < 1 or args.transform_runs < 1:
        parser.error('node counts and run counts must be at least 1')
    return args


def interrupted(signum, _frame):
    for proc in list(_children):
        proc.terminate()
    raise SystemExit('interrupted by signal %d' % signum)


def main():
    args = parse_args()
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    (WORK / 'runs').mkdir(parents=True, exist_ok=True)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupted)
    load_start = [round(x, 2) for x in os.getloadavg()]
    report = dict(settings=dict(runs=args.runs, node_counts=args.counts, forks='= nodes', skip_tags=['validation'], connection=args.connection,
                                strategy=args.strategy))
    started = time.monotonic()
    if not args.modules_only:
        lab = Lab(lab_nodes(max(args.counts)), args.connection, args.strategy)
        report['nodes'] = lab.nodes
        try:
            report['lab_start_s'] = round(lab.start(), 1)
            report['cold'] = cold_converge(lab, lab.nodes[0])
            report['cold']['node'] = lab.nodes[0]['name']
            if len(lab.nodes) > 1:
                rest = lab.nodes[1:]
                say('==> cold converge of the other %d nodes (not measured as a goal)' % len(rest))
                run, events = run_site(lab, write_inventory(WORK / 'hosts-cold-rest.yml', rest, lab.connection), len(rest), 'cold-rest')
                run.update(nodes=len(rest), changed=analyse(events, rest)['changed'])
                report['cold_rest'] = run
            say('==> no-op runs: %s node(s), %d runs each' % (','.join(map(str, args.counts)), args.runs))
            report['noop'] = noop_runs(lab, args.counts, args.runs)
        finally:
            if args.keep:
                say('==> kept: nodes %s, stand-in pidfile %s' % (' '.join(n['name'] for n in lab.nodes), lab.pidfile))
            else:
                lab.stop()
    report['modules'] = module_timings(args)
    report['environment'] = environment(load_start)
    report['goals'] = goals(report)
    report['elapsed_s'] = round(time.monotonic() - started, 1)
    (output / 'results.json').write_text(json.dumps(report, indent=2, default=str) + '\n', encoding='utf-8')
    text = markdown(report)
    (output / 'results.md').write_text(text, encoding='utf-8')
    if report.get('noop'):
        plot(report['noop'], output / 'time_vs_nodes.png')
    say('')
    say(text)
    say('Results in %s (results.json, results.md%s); %.0f s in all.' % (
        output, ', time_vs_nodes.png' if report.get('noop') else '', report['elapsed_s']))
    return 0 if all(g['met'] for g in report['goals']) else 1


if __name__ == '__main__':
    sys.exit(main())
