#!/usr/bin/env bash
# Which integration tests do not apply to the server under test (tests/version-gates.txt): prints cargo test's
# `--skip NAME` arguments for them on stdout, and each as "NOT RUN on Kubernetes vX.Y.Z: NAME (needs ...)" on
# stderr, so they are reported by name and never counted as passed.
#   hack/test-gates.sh [KUBECONFIG]   (default: $GPUINV_TEST_KUBECONFIG, else the local cluster's)
set -euo pipefail
ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The local cluster's state directory as hack/local-cluster.sh and tests/common take it (relative to the repo).
state_dir="${LOCAL_CLUSTER_STATE_DIR:-target/local-cluster}"
[[ "${state_dir}" == /* ]] || state_dir="${ROOT_DIR}/${state_dir}"
kubeconfig="${1:-${GPUINV_TEST_KUBECONFIG:-${state_dir}/kubeconfig}}"
gates="${ROOT_DIR}/tests/version-gates.txt"

version_json="$(kubectl --kubeconfig "${kubeconfig}" version -o json 2>/dev/null)" || {
  echo "test-gates: cannot ask the server under test its version (kubeconfig ${kubeconfig}); is the cluster up?" >&2
  exit 1
}
server="$(printf '%s' "${version_json}" | tr -d '\n' | sed -n 's/.*"serverVersion": *{[^}]*"gitVersion": *"\([^"]*\)".*/\1/p')"
minor="$(printf '%s' "${server}" | sed -n 's/^v1\.\([0-9][0-9]*\).*/\1/p')"
if [[ -z "${minor}" ]]; then
  echo "test-gates: no server version in \`kubectl version -o json\` (${kubeconfig})" >&2
  exit 1
fi

while read -r name since why; do
  [[ -z "${name}" || "${name}" == \#* ]] && continue
  needs_minor="${since#1.}"
  if ((minor < needs_minor)); then
    echo "NOT RUN on Kubernetes ${server}: ${name} (needs ${since}+: ${why})" >&2
    printf -- '--skip %s ' "${name}"
  fi
done <"${gates}"
