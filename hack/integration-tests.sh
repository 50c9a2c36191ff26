#!/usr/bin/env bash
# The integration tests (tests/*.rs) against the running cluster, as `make integration-test` runs them:
#   1. the version gates (hack/test-gates.sh: tests that do not apply to the server are not run, listed by name);
#   2. examples/ and every test binary built (`cargo test --no-run`);
#   3. the test binaries concurrently, TEST_JOBS at a time (default 4; 1: one after another), the slowest first (by
#      the times of the last run, target/test-logs/times.txt), each with `--skip fault_` and the gates' skips;
#      most of their time is waiting (quiet windows, watches, the controllers), not CPU. tests/soak.rs runs
#      among them whole, one test at a time: its fault test stops API servers of its own, not the shared one;
#   4. the fault tier: the tests named fault_* of tests/faults.rs and tests/chaos.rs, which stop and start the
#      shared API server, delete its shared CRD or load it to its limits: alone, one test at a time (the other
#      tests of those files ran in step 3);
#   5. last, alone, one binary after another, what changes the shared cluster for everyone: tests/quiet_fleet.rs
#      (4,000 NotReady nodes: for minutes after they are deleted the node lifecycle controller is still busy with
#      them, past other tests' deadlines: seen taints not lifted in 16 s, NotReady not marked in 96 s) and
#      tests/quotas_crds.rs (deletes Kueue's CRDs: another test's operator saw the API vanish and warned).
# Each binary's output is in target/test-logs/<binary>.log; a line per
# binary as it ends; at the end the failed binaries' logs, the slowest binaries, each phase's time (also in
# target/test-logs/phases.txt, which `make test` prints) and a summary naming each failed binary. Every step
# runs; exit 1 if anything failed.
#   hack/integration-tests.sh                 (TEST_JOBS=N: N binaries at once; TEST_JOBS=1: one after another)
#   hack/integration-tests.sh BINARY...       (only these test binaries, e.g. `quotas faults`)
set -euo pipefail
ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT_DIR}"
CARGO="${CARGO:-cargo}"
JOBS="${TEST_JOBS:-4}"
LOGS="target/test-logs"
# The binaries whose tests named fault_* stop and start the shared API server: the fault tier, in this order.
# chaos first: its tests create pods, so they need kube-controller-manager's ServiceAccount controller, which
# needs up to a lease duration (60 s) and more to come back after faults.rs's API-server outage (run last; with
# chaos right after it, a namespace waited past 75 s for its ServiceAccount).
FAULT_BINARIES=(chaos faults)
# Run whole among the others: its fault test's API servers are its own.
OWN_SERVER_BINARIES=(soak)
# Run alone, last (step 5): they change the shared cluster for every test running beside or after them.
ALONE_BINARIES=(quiet_fleet quotas_crds)
[[ "${JOBS}" =~ ^[1-9][0-9]*$ ]] || { echo "integration-tests: TEST_JOBS must be a positive number, not '${JOBS}'" >&2; exit 2; }

mkdir -p "${LOGS}"
times_file="${LOGS}/times.txt"
# Without a last run (a fresh clone): the seconds of the slow ones on 2 cores, one after another (2026-12-07).
previous_times="$(cat "${times_file}" 2>/dev/null ||
  printf '%s\n' 'quiet_fleet 151' 'soak 146' 'fleet_property 104' 'live_cluster 94' 'health 80' 'quotas 78' \
    'reading_fourth 70' 'utilization 66' 'dra 37' 'quotas_crds 34' 'credentials 27' 'gpunodes 25')"
find "${LOGS}" -maxdepth 1 -name '*.log' -delete
rm -f "${LOGS}/results.txt" "${LOGS}/phases.txt"
touch "${LOGS}/results.txt"
failed=()
phase_start=${SECONDS}
phase() { # NAME: the time since the last phase, recorded
  echo "$1 $((SECONDS - phase_start))s" >>"${LOGS}/phases.txt"
  phase_start=${SECONDS}
}

skips="$(hack/test-gates.sh 2>target/not-run.txt)" || { cat target/not-run.txt >&2; exit 1; }
cat target/not-run.txt >&2

# Build: the examples (tests/examples.rs runs them) and the test binaries; cargo's messages name each one.
"${CARGO}" build --locked --examples || failed+=("examples build")
build_json="$("${CARGO}" test --locked --no-run --test '*' --message-format=json-render-diagnostics)" ||
  failed+=("test build")
declare -A exe=()
while read -r name path; do
  [[ -n "${name}" ]] && exe["${name}"]="${path}"
done < <(printf '%s\n' "${build_json}" | grep -F '"reason":"compiler-artifact"' | grep -F '"kind":["test"]' |
  sed -n 's/.*"target":{[^}]*"name":"\([^"]*\)"[^}]*}.*"executable":"\([^"]*\)".*/\1 \2/p')
phase build
if ((${#exe[@]} == 0)); then
  printf 'integration-tests: failed: %s\n' "${failed[@]}" "no test binary built" >&2
  exit 1
fi
if (($#)); then
  for name in "$@"; do [[ -n "${exe[${name}]:-}" ]] || { echo "integration-tests: no test binary ${name}" >&2; exit 2; }; done
  wanted=("$@")
else
  wanted=("${!exe[@]}")
fi

# The slowest first, by the last run's times (a binary not timed yet as a middling one).
is_in() { local x="$1"; shift; [[ " $* " == *" ${x} "* ]]; }
last_time() { printf '%s\n' "${previous_times}" | awk -v n="$1" '$1 == n { print $2; found = 1 } END { if (!found) print 20 }'; }
mapfile -t order < <(for name in "${wanted[@]}"; do
  is_in "${name}" "${ALONE_BINARIES[@]}" && continue
  echo "$(last_time "${name}") ${name}"
done | sort -k1,1nr -k2 | awk '{ print $2 }')

# RUN NAME LOG ARGS...: one test binary, from the repository root as cargo runs it; its line in results.txt.
run() {
  # NAME is the binary's, or BINARY@PART for a part of it run on its own (its line says which).
  local name="$1" log="$2" start=${SECONDS} rc=0 counts
  shift 2
  CARGO_MANIFEST_DIR="${ROOT_DIR}" "${exe[${name%%@*}]}" "$@" >"${log}" 2>&1 || rc=$?
  counts="$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "${log}")"
  [[ -n "${counts}" ]] || counts="0 0 0"
  echo "${name} ${rc} $((SECONDS - start)) ${counts} ${log}" >>"${LOGS}/results.txt"
  if ((rc)); then
    echo "FAILED ${name} ($((SECONDS - start)) s, exit ${rc}): ${log}"
  else
    echo "ok     ${name} ($((SECONDS - start)) s, $(cut -d' ' -f1 <<<"${counts}") passed)"
  fi
}

# Concurrent: TEST_JOBS binaries at a time.
if ((${#order[@]})); then
  echo "integration-tests: ${#order[@]} test binaries, ${JOBS} at a time; logs in ${LOGS}/"
  running=0
  for name in "${order[@]}"; do
    if ((running >= JOBS)); then
      wait -n || true
      running=$((running - 1))
    fi
    # shellcheck disable=SC2086 # $skips is a list of `--skip NAME` arguments
    if is_in "${name}" "${OWN_SERVER_BINARIES[@]}"; then
      run "${name}" "${LOGS}/${name}.log" --test-threads=1 ${skips} &
    else
      run "${name}" "${LOGS}/${name}.log" --skip fault_ ${skips} &
    fi
    running=$((running + 1))
  done
fi
wait
phase concurrent

# The fault tier: alone, one test at a time, the tests named fault_* of those binaries (their other tests ran
# among the concurrent ones, with `--skip fault_`).
for name in "${FAULT_BINARIES[@]}"; do
  [[ -n "${exe[${name}]:-}" ]] || continue
  (($# == 0)) || is_in "${name}" "$@" || continue
  # shellcheck disable=SC2086
  run "${name}@fault-tier" "${LOGS}/${name}-fault-tier.log" --test-threads=1 ${skips} fault_
done
phase fault-tier

# Last, alone, one after another.
for name in "${ALONE_BINARIES[@]}"; do
  is_in "${name}" "${wanted[@]}" || continue
  # shellcheck disable=SC2086
  run "${name}" "${LOGS}/${name}.log" --skip fault_ ${skips}
done
phase alone

# Summary.
while read -r name rc secs _ _ _ log; do
  if ((rc)); then
    failed+=("${name} (${log})")
    echo "=== ${log}" >&2
    cat "${log}" >&2
  fi
done <"${LOGS}/results.txt"
read -r passed nfailed ignored < <(awk '{ p += $4; f += $5; i += $6 } END { print p + 0, f + 0, i + 0 }' "${LOGS}/results.txt")
echo "integration-tests: $(wc -l <"${LOGS}/results.txt") test runs, ${passed} tests passed, ${nfailed} failed, ${ignored} ignored"
echo "integration-tests: the slowest binaries: $(sort -k3,3nr "${LOGS}/results.txt" | head -n 8 | awk '{ printf "%s%s %ss", sep, $1, $3; sep = ", " }')"
echo "integration-tests: phases: $(paste -sd' ' "${LOGS}/phases.txt" | sed 's/s /s, /g')"
# The times of this run order the next one (a binary not run this time keeps its last time).
{
  awk '{ print $1, $3 }' "${LOGS}/results.txt"
  printf '%s\n' "${previous_times}"
} | awk 'NF == 2 && !seen[$1]++' >"${times_file}.new" && mv "${times_file}.new" "${times_file}"
if [[ -s target/not-run.txt ]]; then
  echo "integration-tests: not run here ($(grep -c . target/not-run.txt)):" >&2
  cat target/not-run.txt >&2
fi
if ((${#failed[@]})); then
  printf 'integration-tests: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
