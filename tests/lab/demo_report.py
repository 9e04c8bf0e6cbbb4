"""The table `make demo` ends with: per lab node what the API shows, and the ClusterPolicy state.

    python tests/lab/demo_report.py --kubeconfig KUBECONFIG --kubelet KUBELET_SIM_JSON
"""
from __future__ import annotations

import argparse
import json
import sys

from kubernetes import client, config

COLUMNS = ('node', 'GPU', 'deploy.driver', 'driver-ready', 'labels', 'runtime', 'nvidia.com/gpu')


def rows(nodes: list, kubelet: dict) -> list[tuple]:
    """One row per Node named in the kubelet simulator's result."""
    table = []
    for node in nodes:
        name = node.metadata.name
        if name not in kubelet:
            continue
        labels = node.metadata.labels or {}
        product = labels.get('nvidia.com/gpu.product', '-')
        count = labels.get('nvidia.com/gpu.count')
        capacity = (node.status.capacity or {}).get('nvidia.com/gpu', '0')
        table.append((name, '%s x %s' % (count, product) if count else product,
                      labels.get('nvidia.com/gpu.deploy.driver', '-'), 'yes' if kubelet[name]['driver_ready'] else 'no',
                      str(sum(1 for key in labels if key.startswith(('nvidia.com/', 'feature.node.kubernetes.io/')))),
                      'registered' if kubelet[name]['runtime_registered'] else 'missing', capacity))
    return table


def policy_state(custom) -> str:
    try:
        policy = custom.get_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies', 'cluster-policy')
    except client.ApiException as exc:
        return 'absent (%s)' % exc.status
    status = policy.get('status') or {}
    conditions = {c['type']: c for c in status.get('conditions', [])}
    ready = conditions.get('Ready', {})
    if not status.get('state'):
        return 'no status yet (written by the validation stage, which needs a cluster that runs Pods)'
    return '%s (%s: %s)' % (status['state'], ready.get('reason', '-'), ready.get('message', ''))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--kubelet', required=True, help="JSON written by tests/lab/kubelet_sim.py --json")
    args = parser.parse_args(argv)
    with open(args.kubelet, encoding='utf-8') as stream:
        kubelet = json.load(stream)
    api = config.new_client_from_config(config_file=args.kubeconfig)
    table = [COLUMNS] + rows(client.CoreV1Api(api).list_node().items, kubelet)
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    for row in table:
        print('  '.join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    print('ClusterPolicy cluster-policy: %s' % policy_state(client.CustomObjectsApi(api)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
