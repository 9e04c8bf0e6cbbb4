"""Each lab node boots systemd and runs the containerd its Debian release ships."""

import re

# Fixed per distro (what Debian ships), deliberately not read from the nodes.
EXPECTED_CONTAINERD = {
    'lab-bookworm': ('bookworm', '1.6'),
    'lab-trixie': ('trixie', '1.7'),
    'lab-sid': ('sid', '2.1'),
}

testinfra_hosts = [f'podman://{name}' for name in EXPECTED_CONTAINERD]


def node(host):
    return host.backend.get_hostname()


def test_systemd_is_running(host):
    state = host.run('systemctl is-system-running')
    assert state.stdout.strip() == 'running', host.run('systemctl --failed --no-pager').stdout


def test_containerd_enabled_and_active(host):
    containerd = host.service('containerd')
    assert containerd.is_enabled
    assert containerd.is_running


def test_containerd_daemon_version(host):
    # The server half of `ctr version` proves the daemon answers on its socket.
    server = host.check_output('ctr version').split('Server:', 1)[1]
    version = re.search(r'Version:\s*(\S+)', server).group(1)
    assert '.'.join(version.split('.')[:2]) == EXPECTED_CONTAINERD[node(host)][1]


def test_apt_sources_have_every_component(host):
    sources = host.file('/etc/apt/sources.list.d/debian.sources').content_string
    suite = EXPECTED_CONTAINERD[node(host)][0]
    assert f'Suites: {suite}\n' in sources
    assert 'Components: main contrib non-free non-free-firmware\n' in sources
    assert not host.file('/etc/apt/sources.list').exists
