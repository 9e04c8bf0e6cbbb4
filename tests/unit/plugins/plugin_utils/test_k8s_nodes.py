# -*- coding: utf-8 -*-
# Copyright (c) gpuops.gpu_operator contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Nodes as the k8s_nodes plugins see them: which are listed, the groups they make, the events a change gives.

The nodeInfo values are the lab images' own: osImage is /etc/os-release's PRETTY_NAME and containerRuntimeVersion
is "<runtime>://<version>" with the version containerd reports (`containerd --version` in localhost/gpuops-lab:<distro>,
as the kubelet reports them); the kernel is the lab host's (`uname -r`).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest
import urllib3

from ansible_collections.gpuops.gpu_operator.plugins.module_utils.k8s.client import ApiError
from ansible_collections.gpuops.gpu_operator.plugins.plugin_utils import k8s_nodes

ANNOTATION = 'gpuops.io/nfd-labels'
BOOKWORM = {'osImage': 'Debian GNU/Linux 12 (bookworm)', 'kernelVersion': '6.18.44-fc-v595', 'containerRuntimeVersion': 'containerd://1.6.20~ds1'}
SID = {'osImage': 'Debian GNU/Linux forky/sid', 'kernelVersion': '6.18.44-fc-v595', 'containerRuntimeVersion': 'containerd://2.1.9~ds1'}
OURS = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'NVIDIA-H200', 'nvidia.com/gpu.deploy.driver': 'pre-installed',
        'nvidia.com/gpu.deploy.device-plugin': 'true'}


def node(name='gpu-1', labels=None, owned=None, info=None, address=None, ready=None, boot_id=None):
    """A Node as the API returns it; owned: what the annotation records (None: no annotation, a list: an earlier
    release's list of keys)."""
    metadata = {'name': name, 'labels': dict({'kubernetes.io/hostname': name}, **(labels or {}))}
    if owned is not None:
        metadata['annotations'] = {ANNOTATION: json.dumps(owned)}
    status = {}
    if info is not None or boot_id is not None:
        status['nodeInfo'] = dict(info or {}, **({'bootID': boot_id} if boot_id else {}))
    if address:
        status['addresses'] = [{'type': 'Hostname', 'address': name}, {'type': 'InternalIP', 'address': address}]
    if ready is not None:
        status['conditions'] = [{'type': 'MemoryPressure', 'status': 'False'}, {'type': 'Ready', 'status': 'True' if ready else 'Unknown'}]
    return {'metadata': metadata, 'spec': {}, 'status': status}


# (labels, annotation record, examined, nvidia, listed)
@pytest.mark.parametrize('labels, owned, expected', [
    # Never examined: listed once, whatever it is.
    ({}, None, (False, False, True)),
    # Examined, no GPU (nfd_labels set only NFD's kernel label, or nothing when NFD runs): left out.
    ({'feature.node.kubernetes.io/kernel-version.major': '6'}, {'feature.node.kubernetes.io/kernel-version.major': '6'}, (True, False, False)),
    ({}, {}, (True, False, False)),
    # Labelled by us.
    (OURS, OURS, (True, True, True)),
    # Labelled by NFD with one of the Operator's GPU labels, examined or not.
    ({'feature.node.kubernetes.io/pci-10de.present': 'true'}, {}, (True, True, True)),
    ({'feature.node.kubernetes.io/pci-0302_10de.present': 'true'}, None, (False, True, True)),
    ({'feature.node.kubernetes.io/pci-0300_10de.present': 'true'}, {}, (True, True, True)),
    ({'feature.node.kubernetes.io/pci-10de.present': 'false'}, {}, (True, False, False)),
    # Our labels removed by someone: the record still says GPU node.
    ({}, OURS, (True, True, True)),
    ({}, list(OURS), (True, False, False)),
    # The GPU is gone: gpu.present=false, examined: left out.
    ({'nvidia.com/gpu.present': 'false'}, {'nvidia.com/gpu.present': 'false'}, (True, False, False)),
])
def test_which_nodes_are_listed(labels, owned, expected):
    found = node(labels=labels, owned=owned)
    assert (k8s_nodes.examined(found), k8s_nodes.nvidia(found), k8s_nodes.selected(found)) == expected


@pytest.mark.parametrize('info, groups', [
    (BOOKWORM, ['os_debian_gnu_linux_12_bookworm', 'kernel_6_18_44_fc_v595', 'runtime_containerd']),
    (SID, ['os_debian_gnu_linux_forky_sid', 'kernel_6_18_44_fc_v595', 'runtime_containerd']),
    (dict(BOOKWORM, containerRuntimeVersion='cri-o://1.29.1'), ['os_debian_gnu_linux_12_bookworm', 'kernel_6_18_44_fc_v595', 'runtime_cri_o']),
    # A Node without nodeInfo (registered, its kubelet has not reported yet) goes in none of them.
    (None, []),
    ({'osImage': 'Ubuntu 24.04.1 LTS', 'kernelVersion': '', 'containerRuntimeVersion': ''}, ['os_ubuntu_24_04_1_lts']),
])
def test_groups_by_os_kernel_and_runtime(info, groups):
    assert k8s_nodes.groups_of(k8s_nodes.summary(node(info=info))) == groups


def test_summary_reads_the_node():
    found = k8s_nodes.summary(node('gpu-7', labels=OURS, owned=OURS, info=BOOKWORM, address='192.0.2.7'))
    assert found == dict(name='gpu-7', address='192.0.2.7', os_image='Debian GNU/Linux 12 (bookworm)', kernel_version='6.18.44-fc-v595',
                         container_runtime='containerd', container_runtime_version='1.6.20~ds1', examined=True, nvidia=True,
                         labels=dict({'kubernetes.io/hostname': 'gpu-7'}, **OURS))


def test_inventory_of_a_mixed_node_list():
    nodes = [node('gpu-b', labels=OURS, owned=OURS, info=SID, address='192.0.2.2'),
             node('new-1', info=BOOKWORM, address='192.0.2.3'),  # not examined yet
             node('cpu-1', owned={}, info=BOOKWORM, address='192.0.2.4'),  # examined, no GPU
             node('gpu-a', labels={'feature.node.kubernetes.io/pci-10de.present': 'true'}, info=BOOKWORM)]  # NFD's, no InternalIP
    found = k8s_nodes.inventory(nodes)
    assert found['groups'] == {
        'kube_api': ['localhost'], 'gpu_nodes': ['gpu-a', 'gpu-b', 'new-1'],
        'os_debian_gnu_linux_12_bookworm': ['gpu-a', 'new-1'], 'kernel_6_18_44_fc_v595': ['gpu-a', 'gpu-b', 'new-1'],
        'runtime_containerd': ['gpu-a', 'gpu-b', 'new-1'], 'os_debian_gnu_linux_forky_sid': ['gpu-b']}
    assert found['children'] == {'gpu_nodes': ['kernel_6_18_44_fc_v595', 'os_debian_gnu_linux_12_bookworm', 'os_debian_gnu_linux_forky_sid',
                                               'runtime_containerd']}
    assert found['hosts']['localhost'] == {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    assert found['hosts']['gpu-b']['ansible_host'] == '192.0.2.2' and 'ansible_host' not in found['hosts']['gpu-a']
    assert found['hosts']['new-1']['gpu_node_labels_node_name'] == 'new-1' and found['hosts']['new-1']['k8s_node']['examined'] is False
    assert 'cpu-1' not in found['hosts']


def test_another_api_host_gets_no_connection_variables():
    found = k8s_nodes.inventory([], api_host='bastion-1')
    assert found == {'hosts': {}, 'groups': {'kube_api': ['bastion-1'], 'gpu_nodes': []}, 'children': {'gpu_nodes': []}}


# ---- events ------------------------------------------------------------------------------------------------

JOINED, READY, LABELS, MIG = 'joined', 'ready', 'labels', 'mig'
GPU = dict(labels=OURS, owned=OURS)
DELIBERATE = dict(OURS, **{'nvidia.com/gpu.deploy.device-plugin': 'false'})


def mig(state, **more):
    """A GPU node as the MIG manager leaves it while it applies nvidia.com/mig.config (its state label; pending while it
    works, with the deploy labels of the GPU clients paused: NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go)."""
    labels = dict(OURS, **{'nvidia.com/mig.config': 'all-1g.10gb', 'nvidia.com/mig.config.state': state}, **more)
    return node(labels=labels, owned=OURS)


# Successive looks at one Node (None: the first look is the next one) and the reasons each gives.
@pytest.mark.parametrize('looks, reasons', [
    # A new Node: joined once, also while it becomes Ready for the first time; then labelled by site.yml: nothing.
    ([node(ready=False), node(ready=True), node(ready=True, **GPU)], [[JOINED], [], []]),
    # A node without a GPU that was examined: nothing, whatever happens to it.
    ([node(owned={}, ready=True, boot_id='b1'), node(owned={}, ready=True, boot_id='b2')], [[], []]),
    # Ready after a reboot: the boot ID changed since it was last Ready, seen NotReady in between or not.
    ([node(ready=True, boot_id='b1', **GPU), node(ready=False, boot_id='b1', **GPU), node(ready=True, boot_id='b2', **GPU)], [[], [], [READY]]),
    ([node(ready=True, boot_id='b1', **GPU), node(ready=True, boot_id='b2', **GPU), node(ready=True, boot_id='b2', **GPU)], [[], [READY], []]),
    # NotReady and back with the same boot ID (the network, the kubelet restarted): no reboot.
    ([node(ready=True, boot_id='b1', **GPU), node(ready=False, boot_id='b1', **GPU), node(ready=True, boot_id='b1', **GPU)], [[], [], []]),
    # Without boot IDs: Ready after NotReady counts.
    ([node(ready=True, **GPU), node(ready=False, **GPU), node(ready=True, **GPU)], [[], [], [READY]]),
    # A node first seen NotReady, Ready later: it was never Ready before, no reboot to react to.
    ([node(ready=False, boot_id='b1', **GPU), node(ready=True, boot_id='b2', **GPU)], [[], []]),
    # Labels lost: once, again only when the drift changes, nothing once restored.
    ([node(ready=True, **GPU), node(ready=True, labels={'nvidia.com/gpu.present': 'true'}, owned=OURS),
      node(ready=True, labels={'nvidia.com/gpu.present': 'true'}, owned=OURS), node(ready=True, labels={}, owned=OURS), node(ready=True, **GPU)],
     [[], [LABELS], [], [LABELS], []]),
    # Labels changed; a deploy label set to another non-empty value is someone's decision (the Operator keeps it).
    ([node(**GPU), node(labels=dict(OURS, **{'nvidia.com/gpu.product': 'Tesla-T4'}), owned=OURS)], [[], [LABELS]]),
    ([node(**GPU), node(labels=DELIBERATE, owned=OURS)], [[], []]),
    ([node(**GPU), node(labels=dict(OURS, **{'nvidia.com/gpu.deploy.device-plugin': ''}), owned=OURS)], [[], [LABELS]]),
    # Drift already there at the first look (the source started after it happened).
    ([node(labels={}, owned=OURS)], [[LABELS]]),
    # The annotation removed: not examined any more, joined again.
    ([node(**GPU), node(labels=OURS)], [[], [JOINED]]),
    # The MIG manager applied a layout: once, when its state label becomes success (GFD relabels on its next look).
    ([node(**GPU), mig('pending', **{'nvidia.com/gpu.deploy.device-plugin': 'paused-for-mig-change'}), mig('success'), mig('success')],
     [[], [], [MIG], []]),
    ([node(**GPU), mig('success')], [[], [MIG]]),
    ([mig('success'), mig('failed'), mig('rebooting'), mig('success')], [[], [], [], [MIG]]),
    # Success at the first look: applied before the source watched, maybe labelled by the run since; no event.
    ([mig('success')], [[]]),
    # A reboot that also lost labels: one event with both reasons.
    ([node(ready=True, boot_id='b1', **GPU), node(ready=True, boot_id='b2', labels={}, owned=OURS)], [[], [READY, LABELS]]),
])
def test_reasons_of_successive_looks(looks, reasons):
    state, found = None, []
    for look in looks:
        state, why, _details = k8s_nodes.observe(state, look)
        found.append(why)
    assert found == reasons


def test_details_name_the_labels_and_the_boot():
    labels = {key: value for key, value in OURS.items() if key != 'nvidia.com/gpu.present'}
    labels['nvidia.com/gpu.product'] = 'Tesla-T4'
    _state, reasons, details = k8s_nodes.observe(None, node(labels=labels, owned=OURS, boot_id='b9'))
    assert reasons == [LABELS]
    assert details == {'labels_lost': ['nvidia.com/gpu.present'], 'labels_changed': ['nvidia.com/gpu.product'], 'boot_id': 'b9',
                       'mig_config': None}
    state = k8s_nodes.observe(None, mig('pending'))[0]
    assert k8s_nodes.observe(state, mig('success'))[1:] == ([MIG], {'labels_lost': [], 'labels_changed': [], 'boot_id': None,
                                                                    'mig_config': 'all-1g.10gb'})


def test_observer_events_limit_the_run_to_the_node_and_the_api_host():
    observer = k8s_nodes.Observer(['kube_api'])
    events = observer.listed([node('gpu-1', **GPU), node('new-1')])
    assert events == [{'node': 'new-1', 'reasons': [JOINED], 'labels_lost': [], 'labels_changed': [], 'boot_id': None, 'mig_config': None,
                       'meta': {'hosts': ['new-1', 'kube_api']}}]
    assert observer.watched('MODIFIED', node('gpu-1', labels={}, owned=OURS))['labels_lost'] == sorted(OURS)
    assert observer.watched('DELETED', node('gpu-1')) is None and 'gpu-1' not in observer.states
    # A Node registered again under the same name is new.
    assert observer.watched('ADDED', node('gpu-1'))['reasons'] == [JOINED]
    # A listing forgets the Nodes that are gone.
    assert observer.listed([node('gpu-1', **GPU)]) == [] and set(observer.states) == {'gpu-1'}


# ---- following the API -------------------------------------------------------------------------------------

class FakeApi(object):
    """Answers read_nodes and watch_nodes from scripts: each list answer is (nodes, version) or an exception, each
    watch a list of (type, node) changes or an exception raised after them."""

    def __init__(self, lists, watches):
        self.lists, self.watches, self.listed = list(lists), list(watches), 0

    def read_nodes(self, _api):
        self.listed += 1
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def watch_nodes(self, _api, _version):
        for item in self.watches.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item


def follow(monkeypatch, lists, watches, stop_after):
    """Run follow() on a FakeApi until `stop_after` events came; returns (events, sleeps, lists made)."""
    fake = FakeApi(lists, watches)
    monkeypatch.setattr(k8s_nodes, 'read_nodes', fake.read_nodes)
    monkeypatch.setattr(k8s_nodes, 'watch_nodes', fake.watch_nodes)
    events, sleeps = [], []
    k8s_nodes.follow(None, k8s_nodes.Observer(['kube_api']), events.append, lambda: len(events) >= stop_after, sleep=sleeps.append)
    return [(found['node'], found['reasons']) for found in events], sleeps, fake.listed


def test_follow_lists_again_after_an_expired_watch_without_repeating_events(monkeypatch):
    new, gpu = node('new-1'), node('gpu-1', **GPU)
    events, sleeps, listed = follow(monkeypatch, lists=[([new, gpu], '1'), ([new, gpu, node('new-2')], '9')],
                                    watches=[[('BOOKMARK', {'metadata': {'resourceVersion': '5'}})] + [k8s_nodes.WatchExpired('gone', 410)],
                                             [('MODIFIED', node('gpu-1', labels={}, owned=OURS))]],
                                    stop_after=3)
    assert events == [('new-1', [JOINED]), ('new-2', [JOINED]), ('gpu-1', [LABELS])] and sleeps == [] and listed == 2


def test_follow_waits_longer_while_the_api_fails_and_stops_on_refused_credentials(monkeypatch):
    lists = [ApiError('cannot list Node : API answered 503', 503), ApiError('unreachable', None), ([node('new-1')], '1'),
             ApiError('cannot list Node : API answered 503', 503), ApiError('cannot list Node : API answered 403', 403)]
    cut = urllib3.exceptions.ProtocolError('Connection broken: IncompleteRead')
    with pytest.raises(ApiError, match='403'):
        follow(monkeypatch, lists, watches=[[cut]], stop_after=99)
    # The sleeps of that run: 1 and 2 s before the listing that worked, then from 1 s again after the cut stream.
    events, sleeps, _listed = follow(monkeypatch, lists[:3] + [([node('new-1'), node('new-2')], '2')], watches=[[cut], []], stop_after=2)
    assert events == [('new-1', [JOINED]), ('new-2', [JOINED])] and sleeps == [1, 2, 1]


def test_follow_raises_what_is_no_api_fault(monkeypatch):
    with pytest.raises(KeyError):
        follow(monkeypatch, lists=[([node('new-1')], '1')], watches=[[KeyError('a bug')]], stop_after=99)
