"""kubelet simulator for the lab: reflects what a kubelet would advertise once the device plugin ran on a lab node.

The lab has no kubelet, so no device plugin Pod ever runs and no Node gains `nvidia.com/gpu` capacity. This
simulator does the kubelet's part of that, and only when a real kubelet would get there:
  1. the device plugin DaemonSet exists and its nodeSelector matches the Node's labels (the labels stage ran),
  2. the node's real containerd has the DaemonSet's runtime handler (`containerd config dump`: the toolkit stage
     registered it; the Pod runs with that RuntimeClass),
  3. the driver stage validated the driver (/run/nvidia/validations/driver-ready, which the device plugin's
     init containers wait for; toolkit-ready is not required: the lab cannot install nvidia-container-runtime, as
     the toolkit stage reports),
  4. the node's nvidia-smi lists GPUs (`-L`, else `-q -x`; in the lab the simulator serving captured fixtures).
It then sets the Node's status capacity/allocatable `nvidia.com/gpu` to the number of GPUs listed (times the
time-slicing replicas the Node is labelled with), and removes it when a condition fails, printing why.
It also says which DaemonSets of the namespace select the Node (their Pod's nodeSelector matches its labels), the
operands whose Pod the DaemonSet controller would schedule there (`selected_by`).
It never runs the device plugin and never claims the Pod ran: the Pod objects stay as the stand-in has them.

    python tests/lab/kubelet_sim.py --kubeconfig KUBECONFIG [--output FILE.json] NODE=NVIDIA_SMI ...
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET

from kubernetes import client, config

RESOURCE = 'nvidia.com/gpu'
DAEMONSET = 'nvidia-device-plugin-daemonset'
DRIVER_READY = '/run/nvidia/validations/driver-ready'


def node_exec(node: str, *argv: str) -> subprocess.CompletedProcess:
    """Run a command in a lab node (a podman container), C locale."""
    return subprocess.run(['podman', 'exec', '-e', 'LC_ALL=C', node, *argv],
                          capture_output=True, text=True, timeout=60, check=False)


def runtime_handlers(dump: str) -> set[str]:
    """Runtime handler names of the CRI plugin in a `containerd config dump` (config versions 2 and 3)."""
    plugins = tomllib.loads(dump).get('plugins', {})
    handlers = set()
    for section in ('io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.runtime'):
        handlers.update(plugins.get(section, {}).get('containerd', {}).get('runtimes', {}))
    return handlers


def gpu_count(listing: str) -> int:
    """GPUs in `nvidia-smi -L` output (MIG device lines are indented and not counted)."""
    return sum(1 for line in listing.splitlines() if line.startswith('GPU '))


def xml_gpu_count(report: str) -> int:
    """GPUs listed in `nvidia-smi -q -x` output."""
    return len(ET.fromstring(report).findall('gpu'))


def list_gpus(node: str, nvidia_smi: str) -> tuple[int, str]:
    """(GPUs the node's nvidia-smi lists, error text); some fixtures hold only `-q -x`, not `-L`."""
    listing = node_exec(node, nvidia_smi, '-L')
    if listing.returncode == 0:
        return gpu_count(listing.stdout), ''
    report = node_exec(node, nvidia_smi, '-q', '-x')
    if report.returncode == 0:
        return xml_gpu_count(report.stdout), ''
    return 0, listing.stderr.strip() or listing.stdout.strip()


def selector_matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def selecting(daemonsets: list, labels: dict) -> list[str]:
    """The names of the DaemonSets whose Pod's nodeSelector matches `labels`, sorted."""
    return sorted(ds.metadata.name for ds in daemonsets if selector_matches(ds.spec.template.spec.node_selector or {}, labels))


def reflect(core, apps, namespace: str, node: str, nvidia_smi: str) -> dict:
    """Update one Node's status; return what was found: capacity, runtime_registered, gpus_listed, why, selected_by."""
    labels = core.read_node(node).metadata.labels or {}
    try:
        pod = apps.read_namespaced_daemon_set(DAEMONSET, namespace).spec.template.spec
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        pod = None
    dump = node_exec(node, 'containerd', 'config', 'dump')
    listed, smi_error = list_gpus(node, nvidia_smi)
    handler = pod.runtime_class_name if pod else 'nvidia'
    found = {
        'runtime_registered': dump.returncode == 0 and handler in runtime_handlers(dump.stdout),
        'driver_ready': node_exec(node, 'test', '-f', DRIVER_READY).returncode == 0,
        'gpus_listed': listed,
        'capacity': 0,
        'selected_by': selecting(apps.list_namespaced_daemon_set(namespace).items, labels),
    }
    if pod is None:
        found['why'] = 'no device plugin DaemonSet %s/%s' % (namespace, DAEMONSET)
    elif not selector_matches(pod.node_selector or {}, labels):
        found['why'] = 'device plugin nodeSelector %s does not match the Node labels' % pod.node_selector
    elif dump.returncode != 0:
        found['why'] = 'containerd config dump failed: %s' % dump.stderr.strip()
    elif not found['runtime_registered']:
        found['why'] = 'containerd has no %r runtime handler (RuntimeClass of the device plugin)' % handler
    elif not found['driver_ready']:
        found['why'] = 'the driver is not validated (%s missing): see the driver stage' % DRIVER_READY
    elif not found['gpus_listed']:
        found['why'] = 'nvidia-smi lists no GPU: %s' % smi_error
    else:
        replicas = int(labels.get('nvidia.com/gpu.replicas', '1'))  # 0: MIG on every GPU under mig.strategy none
        found['capacity'] = found['gpus_listed'] * replicas
        found['why'] = 'device plugin would run: runtime %s registered, %d GPU(s) listed x gpu.replicas %d' % (
            handler, found['gpus_listed'], replicas)
    value = str(found['capacity']) if found['capacity'] else None  # None removes the resource, as a kubelet does
    core.patch_node_status(node, {'status': {'capacity': {RESOURCE: value}, 'allocatable': {RESOURCE: value}}})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--namespace', default='gpu-operator')
    parser.add_argument('--output', help='also write the findings per node to this JSON file')
    parser.add_argument('nodes', nargs='+', metavar='NODE=NVIDIA_SMI', help='lab node and the nvidia-smi it has')
    args = parser.parse_args(argv)
    api = config.new_client_from_config(config_file=args.kubeconfig)
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    result = {}
    for spec in args.nodes:
        node, _sep, nvidia_smi = spec.partition('=')
        result[node] = reflect(core, apps, args.namespace, node, nvidia_smi or 'nvidia-smi')
        selected_by = ', '.join(result[node]['selected_by']) or 'none'
        print('kubelet-sim %s: %s=%d (%s); DaemonSets selecting it: %s' % (node, RESOURCE, result[node]['capacity'], result[node]['why'], selected_by))
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as stream:
            json.dump(result, stream, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
