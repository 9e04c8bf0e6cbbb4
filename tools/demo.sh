#!/usr/bin/env bash
# make demo: start the API stand-in and the lab nodes named in
# inventory/lab/hosts.yml, then run playbooks/site.yml against them. Both are
# left running for a look around; `tools/demo.sh down` (make demo-down) stops them.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
demo=.build/demo
inventory=inventory/lab/hosts.yml
pidfile=$demo/standin.pid
kubeconfig=$PWD/$demo/kubeconfig
mkdir -p "$demo"

# One line per lab node: name distro fixture (from the inventory's host vars).
lab_nodes() {
  ansible-inventory -i "$inventory" --list | python -c '
import json, sys
inv = json.load(sys.stdin)
for name in inv["gpu_nodes"]["hosts"]:
    hv = inv["_meta"]["hostvars"][name]
    print(name, hv["gpuops_lab_distro"], hv.get("gpuops_lab_fixture", ""), hv.get("gpu_node_labels_nvidia_smi", "nvidia-smi"))
'
}

stop_standin() {
  if [[ -f $pidfile ]]; then
    python -m tests.standin stop --pidfile "$pidfile" --missing-ok
  fi
}

mapfile -t nodes < <(lab_nodes)
names=()
for line in "${nodes[@]}"; do names+=("${line%% *}"); done

if [[ ${1:-} == down ]]; then
  stop_standin
  python tests/lab/labctl.py down "${names[@]}"
  exit 0
fi

echo "==> Kubernetes API stand-in"
stop_standin
node_args=()
for n in "${names[@]}"; do node_args+=(--node "$n"); done
setsid python -m tests.standin serve --kubeconfig "$kubeconfig" --pidfile "$pidfile" "${node_args[@]}" \
  >"$demo/standin.log" 2>&1 < /dev/null &
for _ in $(seq 100); do
  grep -q '^ready ' "$demo/standin.log" && break
  sleep 0.2
done
grep '^ready ' "$demo/standin.log" || { echo "API stand-in did not start:" >&2; cat "$demo/standin.log" >&2; exit 1; }

echo "==> lab nodes"
for line in "${nodes[@]}"; do
  read -r name distro fixture _smi <<<"$line"
  python tests/lab/labctl.py up "$name" --distro "$distro" ${fixture:+--fixture "tests/fixtures/gpus/$fixture"}
done

# The stand-in has no kubelet or scheduler, so the validator Pods could never
# run here: that stage is left out rather than shown failing.
echo "==> ansible-playbook playbooks/site.yml --skip-tags validation"
K8S_AUTH_KUBECONFIG=$kubeconfig ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags validation

# The lab has no kubelet: the simulator sets each Node's nvidia.com/gpu capacity
# where a real kubelet would get it, and says why not elsewhere.
echo
echo "==> kubelet simulator (lab only): Node capacity where the device plugin would run"
sim_args=()
for line in "${nodes[@]}"; do
  read -r name _distro _fixture smi <<<"$line"
  sim_args+=("$name=$smi")
done
python tests/lab/kubelet_sim.py --kubeconfig "$kubeconfig" --output "$demo/kubelet.json" "${sim_args[@]}"

echo
echo "==> what the API shows"
python tests/lab/demo_report.py --kubeconfig "$kubeconfig" --kubelet "$demo/kubelet.json"

echo
echo "==> ansible-playbook playbooks/site.yml --check --diff (a converged lab: expect no change)"
check_log=$demo/check-diff.log
K8S_AUTH_KUBECONFIG=$kubeconfig ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags validation \
  --check --diff >"$check_log" 2>&1 || { cat "$check_log"; exit 1; }
sed -n '/PLAY RECAP/,$p' "$check_log"
if grep -qE 'changed=[1-9]' "$check_log"; then
  echo "--check --diff on the converged lab reports changes (full log: $check_log):" >&2
  grep -E -B2 -A20 '^(changed|---|\+\+\+)' "$check_log" | head -80 >&2
  exit 1
fi

echo
echo "Lab nodes and the API stand-in are still running (KUBECONFIG=$kubeconfig); 'make demo-down' stops them."
