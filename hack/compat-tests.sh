#!/usr/bin/env bash
# Runs the version-sensitive subset of the integration tests (tests/compat-tests.txt) against the running
# cluster, with the version gates applied (hack/test-gates.sh: tests that do not apply are not run and are listed
# by name). The tests of each target run in parallel, except the fault tests (they stop and start the API
# server), which run one at a time after the others. Every step runs; failures are summarised.
#   hack/compat-tests.sh     (used by `make test-compat`, once per version)
set -euo pipefail
ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT_DIR}"
CARGO="${CARGO:-cargo}"
list="tests/compat-tests.txt"

mkdir -p target
skips="$(hack/test-gates.sh 2>target/not-run.txt)" || { cat target/not-run.txt >&2; exit 1; }
cat target/not-run.txt >&2

# Targets whose tests all run (in parallel), and the fault tests (targets faults and chaos, by name filter).
targets=() fault_targets=() faults=()
while read -r target filter _; do
  [[ -z "${target}" || "${target}" == \#* ]] && continue
  [[ -f "tests/${target}.rs" ]] || { echo "compat-tests: ${list} names tests/${target}.rs, which does not exist" >&2; exit 1; }
  case "${target}" in
    faults | chaos)
      [[ "${filter}" == fault_* ]] || { echo "compat-tests: ${list}: ${target}: give a fault test name filter (fault_...), not '${filter}'" >&2; exit 1; }
      [[ " ${fault_targets[*]} " == *" ${target} "* ]] || fault_targets+=(--test "${target}")
      faults+=("${filter}")
      ;;
    *)
      [[ "${filter}" == - ]] || { echo "compat-tests: ${list}: ${target}: only the fault tests (faults, chaos) take a filter" >&2; exit 1; }
      targets+=(--test "${target}")
      ;;
  esac
done <"${list}"

failed=()
# shellcheck disable=SC2086 # $skips is a list of `--skip NAME` arguments
"${CARGO}" test --locked --no-fail-fast "${targets[@]}" -- --skip fault_ ${skips} || failed+=("integration tests")
if ((${#faults[@]})); then
  # shellcheck disable=SC2086
  "${CARGO}" test --locked --no-fail-fast "${fault_targets[@]}" -- --test-threads=1 "${faults[@]}" ${skips} || failed+=("fault tests")
fi
if [[ -s target/not-run.txt ]]; then
  echo "compat-tests: not run here ($(grep -c . target/not-run.txt)):" >&2
  cat target/not-run.txt >&2
fi
echo "compat-tests: ran the version-sensitive subset (${list}); the whole suite runs on the default version in make test" >&2
if ((${#failed[@]})); then
  printf 'compat-tests: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
