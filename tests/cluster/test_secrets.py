"""Secrets stay out of what a run shows and writes: every playbook that takes one, with all the output ansible-playbook can give.

The secrets, each a random value of this test: a registry password (gpu_cluster_base_registry_credentials, in a 0600
inventory); a Kubernetes bearer token (K8S_AUTH_API_KEY); another one in the kubeconfig named by
gpu_node_labels_kubeconfig and in a kubeconfig handed to nfd_labels inline; a 0600 containerd config's registry
password, auth and identitytoken (containerd_nvidia_runtime edits it); a proxy password in a 0600 Docker daemon.json
(docker_nvidia_runtime edits it). Docker's daemon.json takes `proxies.http-proxy` (SOURCE: docker/docs,
content/manuals/engine/daemon/proxy.md, "Daemon configuration"); the proxy URL may carry a user and password.

The runs: site.yml, upgrade.yml, doctor.yml, a play of the node-side modules that edit runtime configs, then uninstall.yml,
in one ansible-playbook, with the drift report callback on: first `--check --diff -v` on a fresh cluster (what AWX's
check job templates run), then `--diff -vvv`, which installs and uninstalls. What default, -v and --diff print is part
of what -vvv with --diff prints of the same run (ansible-core's default callback adds to the output as the verbosity
grows: the results at -v, their `invocation` and `diff` at -vvv; --diff makes the modules compute their diffs and the
callback print them at any verbosity), so two runs hold the output of the five modes default, -v, -vvv, --check -v and
--diff at the cost of two (~75 s of CPU in all; a run per mode costs ~45 s of CPU each). doctor.yml runs its plays in
check mode itself and upgrade.yml takes no secret of its own (the K8S_AUTH_* environment): they are in the second run
only.

Against the stand-in (tests/standin), on one GPU node reached locally whose stages touch nothing of this machine: its
labels come from the H200 capture, the driver is validated from it, the container toolkit stage is off
(container_toolkit_enabled: false), the node files are in this test's directory; the tags toolkit and driver
(uninstall.yml's package removals, which would act on this machine) and validation (the stand-in runs no Pods) are skipped.

Each secret, and its base64 forms (at the three alignments, and again base64-encoded: a docker config's auth field in a
Secret's data), must be absent from each run's output, from the drift and doctor reports (which are 0600), and from
every file written, except the files that held it before (the config files, their backups and undo records, the
inventory), which must be readable by their owner alone.
"""
import base64
import dataclasses
import json
import os
import stat
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from tests.cluster.helpers import GPUS, REPO, nvidia_smi_simulator
from tests.standin.runner import BackgroundStandin, write_kubeconfig

H200 = GPUS / 'h200-x1'
NAMESPACE = 'gpuops-secrets'
NODE = 'gpu-secrets'
NODE_MODULES = 'node_modules.yml'
# (name, options, playbooks): see the docstring for the modes.
RUNS = [('check', ['--check', '--diff', '-v'], ['site.yml', NODE_MODULES, 'uninstall.yml']),
        ('run', ['--diff', '-vvv'], ['site.yml', 'upgrade.yml', 'doctor.yml', NODE_MODULES, 'uninstall.yml'])]
# `containerd --version` of the bookworm lab image (tests/lab/images/recipe.toml), for containerd_nvidia_runtime.
CONTAINERD_VERSION = 'containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3'
NODE_MODULES_PLAY = """
- name: Runtime configs with credentials
  hosts: gpu_nodes
  gather_facts: false
  environment:
    PATH: "{{ secrets_bin }}:/usr/bin:/bin"
  tasks:
    - name: Register the NVIDIA runtime with containerd
      gpuops.gpu_operator.containerd_nvidia_runtime:
        path: "{{ secrets_root }}/containerd/config.toml"
        config_source: file
        set_as_default: true
        backup: true

    - name: Register the NVIDIA runtime with Docker
      gpuops.gpu_operator.docker_nvidia_runtime:
        path: "{{ secrets_root }}/docker/daemon.json"
        set_as_default: true
        backup: true

    - name: Label the Node with an inline kubeconfig
      gpuops.gpu_operator.nfd_labels:
        nodes:
          - name: "{{ gpu_node_labels_node_name }}"
            labels: {gpuops.test/secrets: inline-kubeconfig}
        kubeconfig: "{{ secrets_inline_kubeconfig }}"
      delegate_to: "{{ groups['kube_api'][0] }}"

    - name: Restore the containerd config
      gpuops.gpu_operator.containerd_nvidia_runtime:
        path: "{{ secrets_root }}/containerd/config.toml"
        config_source: file
        state: absent

    - name: Restore the Docker config
      gpuops.gpu_operator.docker_nvidia_runtime:
        path: "{{ secrets_root }}/docker/daemon.json"
        state: absent
"""


def base64_forms(secret):
    """The strings base64 writes for `secret` wherever it sits in what is encoded: at each of the three alignments, the
    characters that depend on the secret alone; then those encoded once more."""
    def aligned(text):
        # Behind 1 or 2 other bytes, the first 4 characters mix those in; the last 4 may mix in what follows.
        return set(base64.b64encode(b'\0' * pad + text.encode()).decode()[4 if pad else 0:-4] for pad in range(3))
    once = aligned(secret)
    return once.union(*(aligned(form) for form in once))


@dataclasses.dataclass
class Secrets:
    registry_password: str = dataclasses.field(default_factory=lambda: 'registry-' + uuid.uuid4().hex)
    api_key: str = dataclasses.field(default_factory=lambda: 'api-key-' + uuid.uuid4().hex)
    # A token of its own: ansible masks a no_log value wherever the module's output has it, so a kubeconfig holding the
    # api_key's token would be masked by api_key's no_log alone.
    kube_token: str = dataclasses.field(default_factory=lambda: 'kube-token-' + uuid.uuid4().hex)
    config_password: str = dataclasses.field(default_factory=lambda: 'config-' + uuid.uuid4().hex)
    config_token: str = dataclasses.field(default_factory=lambda: 'identity-' + uuid.uuid4().hex)
    proxy_password: str = dataclasses.field(default_factory=lambda: 'proxy-' + uuid.uuid4().hex)

    def needles(self):
        """{string to look for: the secret it gives away}."""
        found = {}
        for secret in dataclasses.astuple(self):
            found[secret] = secret
            found.update((form, secret) for form in base64_forms(secret))
        found.update((form, 'the containerd auth field') for form in base64_forms('robot:' + self.config_password))
        return found


def _kubeconfig(url, token):
    return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'secrets-test',
            'clusters': [{'name': 'secrets-test', 'cluster': {'server': url}}],
            'users': [{'name': 'secrets-test', 'user': {'token': token}}],
            'contexts': [{'name': 'secrets-test', 'context': {'cluster': 'secrets-test', 'user': 'secrets-test'}}]}


def _private(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)


@dataclasses.dataclass
class Runs:
    top: object
    secrets: Secrets
    standin: object  # the stand-in's StandinAPI: every version of every object it stored
    outputs: dict
    seconds: dict
    holders: set  # the files the test wrote with a secret in them

    def reports(self, mode):
        return sorted((self.top / 'reports' / mode).iterdir())


@pytest.fixture(name='runs', scope='module')
def fixture_runs(tmp_path_factory):
    """The runs against a stand-in of their own (with the GPU node's Node)."""
    server = BackgroundStandin(nodes=[NODE])
    url = server.start()
    try:
        top = tmp_path_factory.mktemp('secrets')
        kubeconfig = top / 'standin-kubeconfig'
        write_kubeconfig(str(kubeconfig), url)
        yield _run_all(top, Secrets(), url, kubeconfig, server.api)
    finally:
        server.stop()


def _run_all(top, secrets, url, kubeconfig, standin):
    holders = set()
    # A 0600 containerd config whose registry credentials (containerd/containerd docs/cri/registry.md, release/1.7) end
    # right above the table the module edits, in the diff's context; a 0600 daemon.json whose proxy URL has a password.
    auth = base64.b64encode(('robot:' + secrets.config_password).encode()).decode()
    config = top / 'node' / 'containerd' / 'config.toml'
    _private(config, 'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example:5000".auth]\n'
                     '  username = "robot"\n  auth = "%s"\n  identitytoken = "%s"\n  password = "%s"\n'
                     '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
                     % (auth, secrets.config_token, secrets.config_password))
    daemon = top / 'node' / 'docker' / 'daemon.json'
    _private(daemon, json.dumps({'proxies': {'http-proxy': 'http://proxy-user:%s@proxy.example:3128' % secrets.proxy_password},
                                 'log-driver': 'json-file'}, indent=4) + '\n')
    token_kubeconfig = top / 'token-kubeconfig'
    _private(token_kubeconfig, yaml.safe_dump(_kubeconfig(url, secrets.kube_token)))
    fake_bin = top / 'bin'
    fake_bin.mkdir()
    (fake_bin / 'containerd').write_text('#!/bin/sh\necho "%s"\n' % CONTAINERD_VERSION)
    (fake_bin / 'containerd').chmod(0o755)
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    node = dict(local, gpu_node_labels_node_name=NODE, gpu_node_labels_sysfs_root=str(H200 / 'sys'), gpu_node_labels_procfs_root=str(H200 / 'proc'),
                gpu_node_labels_nvidia_smi=nvidia_smi_simulator(top / 'nvidia-smi', H200), gpu_node_labels_features_d=str(top / 'node' / 'features.d'),
                nvidia_driver_enabled=False, nvidia_driver_sysfs_root=str(H200 / 'sys'), nvidia_driver_procfs_root=str(H200 / 'proc'),
                nvidia_driver_nvidia_smi=str(top / 'nvidia-smi'), nvidia_driver_validations_dir=str(top / 'node' / 'validations'),
                container_toolkit_enabled=False, secrets_root=str(top / 'node'), secrets_bin=str(fake_bin),
                secrets_inline_kubeconfig=_kubeconfig(url, secrets.kube_token))
    inventory = top / 'hosts.yml'
    _private(inventory, yaml.safe_dump({'all': {
        'vars': {'gpu_cluster_base_namespace': NAMESPACE, 'gpu_cluster_operands_namespace': NAMESPACE, 'gpu_cluster_validator_namespace': NAMESPACE,
                 'gpu_cluster_base_registry_credentials': [{'name': 'mirror-pull', 'registry': 'mirror.example:5000', 'username': 'robot',
                                                            'password': secrets.registry_password}],
                 'gpu_node_labels_kubeconfig': str(token_kubeconfig)},
        'children': {'kube_api': {'hosts': {'api': local}}, 'gpu_nodes': {'hosts': {NODE: node}}}}}))
    holders.update([config, daemon, token_kubeconfig, inventory])
    (top / NODE_MODULES).write_text(NODE_MODULES_PLAY)
    outputs, seconds = {}, {}
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    for mode, options, playbooks in RUNS:
        reports = top / 'reports' / mode
        reports.mkdir(parents=True)
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false',
                   ANSIBLE_DEPRECATION_WARNINGS='false', ANSIBLE_LOCAL_TEMP=str(top / 'tmp'), ANSIBLE_REMOTE_TEMP=str(top / 'tmp'),
                   ANSIBLE_COLLECTIONS_PATH=os.environ.get('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.build' / 'collections')),
                   K8S_AUTH_KUBECONFIG=str(kubeconfig), K8S_AUTH_API_KEY=secrets.api_key,
                   ANSIBLE_CALLBACKS_ENABLED='gpuops.gpu_operator.drift_report', GPUOPS_DRIFT_REPORT_PATH=str(reports / 'drift.json'))
        env.pop('KUBECONFIG', None)
        started = time.monotonic()
        paths = [str(top / name if name == NODE_MODULES else REPO / 'playbooks' / name) for name in playbooks]
        result = subprocess.run([ansible, '-i', str(inventory), *paths, '--skip-tags', 'validation,toolkit,driver',
                                 '-e', f'doctor_report_path={reports / "doctor.json"}', *options],
                                env=env, capture_output=True, text=True, timeout=600, check=False, cwd=top)
        seconds[mode] = round(time.monotonic() - started, 1)
        outputs[mode] = result.stdout + result.stderr
        # Kept for a look when a test fails; a secret in it fails test_files_with_a_secret_are_private too.
        _private(top / f'{mode}-output.txt', outputs[mode])
        assert result.returncode == 0, f'{mode}: {outputs[mode][-8000:]}'
    return Runs(top, secrets, standin, outputs, seconds, holders)


def _found(text, needles):
    """The secrets `text` gives away, each with a line that shows where."""
    found = {}
    for needle, secret in needles.items():
        at = text.find(needle)
        if at >= 0:
            start = text.rfind('\n', 0, at) + 1
            found.setdefault(secret, text[start:text.find('\n', at) if '\n' in text[at:] else len(text)][:300])
    return found


@pytest.mark.parametrize('mode', [mode for mode, _options, _playbooks in RUNS])
def test_no_secret_in_the_output(runs, mode):
    assert _found(runs.outputs[mode], runs.secrets.needles()) == {}


@pytest.mark.parametrize('mode, playbooks', [(mode, playbooks) for mode, _options, playbooks in RUNS])
def test_reports_show_no_secret_and_are_private(runs, mode, playbooks):
    reports = runs.reports(mode)
    assert [path.name for path in reports] == (['doctor.json', 'doctor.txt'] if 'doctor.yml' in playbooks else []) + ['drift.json', 'drift.txt']
    for path in reports:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert _found(path.read_text(), runs.secrets.needles()) == {}, path


def test_files_with_a_secret_are_private(runs):
    """The config files, their backups and undo records hold the credentials they held before, readable by root alone;
    no other file written holds one."""
    needles = runs.secrets.needles()
    holding = {}
    for root, _dirs, names in os.walk(runs.top):
        for name in names:
            path = runs.top / os.path.relpath(os.path.join(root, name), runs.top)
            if _found(path.read_bytes().decode('utf-8', 'replace'), needles):
                holding[str(path.relative_to(runs.top))] = stat.S_IMODE(path.stat().st_mode)
    sources = [str(path.relative_to(runs.top)) for path in runs.holders]
    assert all(any(name.startswith(source) for source in sources) for name in holding), holding
    assert {name: mode for name, mode in holding.items() if mode & 0o077} == {}
    # The modules ran with backup: the backups are there, as private as their files.
    assert any(name.startswith('node/containerd/config.toml.') and name.endswith('~') for name in holding), holding
    assert any(name.startswith('node/docker/daemon.json.') and name.endswith('~') for name in holding), holding


def test_the_secrets_went_where_they_belong(runs):
    """The runs did handle the secrets, so their absence above means something: the check run named the pull Secret, the
    run gave it the password and removed it again, the diffs and the invocations show where the secrets are, masked."""
    words = {mode: ' '.join(out.split()) for mode, out in runs.outputs.items()}
    assert f'Secret {NAMESPACE}/mirror-pull would be created' in words['check'], runs.outputs['check']
    pull = [version for key, stored in runs.standin.objects.items() if 'mirror-pull' in str(key) for version in stored.history
            if version and version.get('kind') == 'Secret']
    assert pull and all(runs.secrets.registry_password in base64.b64decode(version['data']['.dockerconfigjson']).decode() for version in pull)
    for mode in ('check', 'run'):
        # --diff: the containerd config's credentials in the diff's context, the proxy URL, redacted.
        assert 'password = "********"' in runs.outputs[mode] and 'http://proxy-user:********@proxy.example:3128' in runs.outputs[mode], mode
    # -vvv: the invocations name the inline kubeconfig and the token of K8S_AUTH_API_KEY without their values.
    for option in ('kubeconfig', 'api_key'):
        assert f'{option}: VALUE_SPECIFIED_IN_NO_LOG_PARAMETER' in runs.outputs['run'], option
    report = json.loads((runs.top / 'reports' / 'run' / 'drift.json').read_text())['hosts']['api']['stages']['gpu_cluster_base']
    assert {'Apply image pull secrets for private registries', 'Remove the image pull Secrets this role created (also those no longer listed)'} <= {
        change['task'] for change in report}, report
    # absent gave the configs back as they were, with their modes.
    config = runs.top / 'node' / 'containerd' / 'config.toml'
    assert 'default_runtime_name = "runc"' in config.read_text() and stat.S_IMODE(config.stat().st_mode) == 0o600
    print('seconds per run:', runs.seconds, 'in all:', round(sum(runs.seconds.values()), 1))
