#!/usr/bin/env bash
# Runs every test and quality gate; called by `make test` (which has set up the
# venv, the collections and the lab images). Every gate runs even when an
# earlier one failed, so one run shows everything that is wrong.
# GATES="pytest lint" limits the run to the named gates.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$PWD
build=$repo/.build
# a+b,c: gate a runs beside gates b then c, their logs follow one another. Three lanes on
# CI's two cores: pytest (CPU); lint, sanity, importer, the parity tests, then molecule; the
# lab tests, then the demo. Molecule, the lab tests and the demo mostly wait on containers
# booting and on the package mirror, so their lanes overlap those waits. Their lab nodes
# have names of their own (scenario, test or demo prefixes), so they can run side by side.
# The parity tests and the slowest cluster test (AWX's sliced validation, about 5 minutes
# each) run in the second lane so that the three lanes end at about the same time.
all_gates=(changelog 'pytest+lint,sanity,importer,parity,sliced,molecule+lab,demo')
# The tests that start lab nodes: gate lab, not gate pytest.
lab_tests=(tests/slicing tests/drift tests/eda tests/lab)
parity_tests=(tests/cluster/test_parity.py)
sliced_tests=(tests/cluster/test_gpu_validation.py::test_sliced_job_validates_each_slice_and_reports_the_whole_cluster)
read -r -a gates <<<"${GATES:-${all_gates[*]}}"

gate_changelog() {
  antsibull-changelog lint
}

gate_pytest() {
  python -m pytest tests -q --durations=10 "${lab_tests[@]/#/--ignore=}" "${parity_tests[@]/#/--ignore=}" \
    "${sliced_tests[@]/#/--deselect=}"
}

gate_parity() {
  python -m pytest "${parity_tests[@]}" -q --durations=5
}

gate_sliced() {
  python -m pytest "${sliced_tests[@]}" -q
}

gate_lab() {
  python -m pytest "${lab_tests[@]}" -q --durations=5
}

gate_lint() {
  ansible-lint --profile production --offline
}

# ansible-test needs the collection at ansible_collections/<ns>/<name> as a real
# directory, so sanity runs on a copy of the files git would commit.
gate_sanity() {
  local top root pip_version rc
  top=$(mktemp -d "$build/sanity.XXXXXX")
  root=$top/ansible_collections/gpuops/gpu_operator
  mkdir -p "$root"
  # Captured sysfs trees keep real PCI addresses (0000:00:09.0); the colons are
  # illegal in Windows file names, so they stay out of sanity and the tarball.
  git ls-files -co --exclude-standard -z | grep -zv '^tests/fixtures/gpus/[^/]*/sys/' |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$root" -xf -
  pip_version=$(python - <<'PY'
import pathlib, re, ansible_test
src = pathlib.Path(ansible_test.__file__).parent.joinpath("_internal", "python_requirements.py").read_text()
print(re.search(r"pip='([^']+)'", src).group(1))
PY
)
  # ansible-test lists the collection's files with git.
  (cd "$root" && git init -q && git add -A) || return 1
  install -D -m 0644 tools/get-pip-standin.py ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
  (cd "$root" && ansible-test sanity --python 3.11 --color no)
  rc=$?
  rm -rf "$top"
  return $rc
}

gate_importer() {
  local dist=$build/dist
  rm -rf "$dist" && mkdir -p "$dist"
  ansible-galaxy collection build --force --output-path "$dist" >/dev/null &&
    (cd "$dist" && GALAXY_IMPORTER_CONFIG=$repo/tools/galaxy-importer.cfg python -m galaxy_importer.main gpuops-gpu_operator-*.tar.gz)
}

gate_molecule() {
  molecule test --all
}

# The demo, then the site playbook once more: a converged lab must report no change.
gate_demo() {
  local rc=0 out
  tools/demo.sh || rc=1
  if ((rc == 0)); then
    out=$(K8S_AUTH_KUBECONFIG=$build/demo/kubeconfig ansible-playbook -i inventory/lab/hosts.yml playbooks/site.yml \
      --skip-tags validation 2>&1) || rc=1
    printf '%s\n' "$out" | sed -n '/PLAY RECAP/,$p'
    if printf '%s\n' "$out" | grep -qE 'changed=[1-9]'; then
      echo "second run of site.yml changed something" >&2
      rc=1
    fi
  fi
  tools/demo.sh down
  return $rc
}

passed=() failed=() failed_names=()
record() {  # gate rc seconds
  if (($2 == 0)); then passed+=("$1 ($3s)"); else failed+=("$1 ($3s)") failed_names+=("$1"); fi
}
for spec in "${gates[@]}"; do
  IFS=+ read -r -a lanes <<<"$spec"
  if [[ $spec != *[+,]* ]]; then
    echo
    echo "=== gate: $spec"
    start=$SECONDS
    "gate_$spec" 2>&1 | tee "$build/gate-$spec.log"
    record "$spec" "${PIPESTATUS[0]}" $((SECONDS - start))
    continue
  fi
  pids=()
  for lane in "${lanes[@]}"; do
    (
      IFS=, read -r -a seq <<<"$lane"
      for g in "${seq[@]}"; do
        start=$SECONDS
        "gate_$g" >"$build/gate-$g.log" 2>&1
        echo "$? $((SECONDS - start))" >"$build/gate-$g.rc"
      done
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  for g in ${spec//[+,]/ }; do
    echo
    echo "=== gate: $g (lanes run at the same time: ${spec//+/ | }, a lane's gates one after another)"
    cat "$build/gate-$g.log"
    read -r rc secs <"$build/gate-$g.rc"
    record "$g" "$rc" "$secs"
  done
done
# CI shows only the end of this output: the lines that say why each gate failed go last.
for g in "${failed_names[@]}"; do
  echo
  echo "=== why $g failed (last error lines of .build/gate-$g.log)"
  grep -aE 'fatal:|FAILED|ERROR|CRITICAL|Traceback|Error:|not found|failed=[1-9]|msg' "$build/gate-$g.log" | cut -c1-400 | tail -n 12
done
echo
echo "=== passed: ${passed[*]:-none}"
echo "=== failed: ${failed[*]:-none}"
echo "gates: ${#passed[@]} passed, ${#failed[@]} failed"
((${#failed[@]} == 0))
