#!/usr/bin/env bash
# `make soak`: the chaos soak (benches/soak/) on a local control plane of its own (etcd + kube-apiserver,
# target/soak-cluster; the integration tests' cluster in target/local-cluster is never touched).
#
#   1. builds the operator and the soak program (release; SOAK_PROFILE=dev for a debug build),
#   2. starts a fresh cluster (LOCAL_CLUSTER_COMPONENTS=apiserver: nothing but the soak changes the nodes, so
#      a quiet cluster is really quiet),
#   3. runs the soak: SOAK_NODES nodes and their GPU pods, two operators with --leader-elect, SOAK_SECS of
#      steady churn with faults at seeded times (kube-apiserver SIGKILLed and restarted, etcd paused, the
#      leading operator SIGKILLed), then convergence, a quiet period, and a field-by-field comparison with a
#      fresh `scan`,
#   4. writes SOAK_OUT_DIR/report.json, report.txt (printed) and rss.png; exit 0 only when the outputs equal
#      the scan, nothing was written in the quiet period, no log shows a panic and the RSS held,
#   5. stops and deletes the cluster (also on failure or Ctrl-C; a paused etcd is thawed first), keeping the
#      API server log and the audit log (gzipped) in SOAK_OUT_DIR.
#
# Knobs (environment):
#   SOAK_SECS               the soak window, seconds                         (default 1800)
#   SOAK_SEED               the seed of the fault schedule and the churn     (default: drawn, printed, recorded)
#   SOAK_NODES              nodes                                            (default 5000)
#   SOAK_GPU_EVERY          every Nth node is a GPU node                     (default 10)
#   SOAK_PODS_PER_GPU_NODE  one-GPU pods bound to each GPU node at the start (default 2)
#   SOAK_NODE_IMAGES        container images per node, as kubelets report    (default 20)
#   SOAK_DRA_NODES          CPU nodes that also publish a ResourceSlice      (default 100; 0: none)
#   SOAK_DRA_GPUS_PER_NODE  whole GPUs in each of those slices                (default 4)
#   SOAK_CHURN_RATE         changes per second (labels, Ready, pods, DRA)    (default 3)
#   SOAK_FAULT_EVERY_SECS   mean gap between faults                          (default 120)
#   SOAK_FAULTS             which faults                                     (default "apiserver etcd leader")
#   SOAK_STATUS_NODES_BUDGET  the operators' and the scan's --status-nodes-budget (default 64Ki)
#   SOAK_LEASE_SECS         the operators' --lease-duration                  (default 15)
#   SOAK_QUIET_SECS         the quiet period whose writes must be 0          (default 60)
#   SOAK_SETTLE_SECS        the longest wait for convergence                 (default 300)
#   SOAK_RSS_EVERY_SECS     RSS sample period                                (default 10)
#   SOAK_RSS_BASE_SECS      how far into the longest leadership the RSS base sample is (default 300)
#   SOAK_RSS_TOLERANCE      allowed |last/base - 1| over that leadership      (default 0.10)
#   SOAK_OUT_DIR            where the report goes                            (default target/soak)
#   SOAK_PROFILE            cargo profile of the build: release or dev       (default release)
#   SOAK_KEEP_CLUSTER=1     leave the cluster running afterwards
#   LOCAL_CLUSTER_STATE_DIR the soak's cluster                               (default target/soak-cluster)
#   LOCAL_CLUSTER_ETCD_QUOTA_BYTES  etcd's --quota-backend-bytes             (default 8 GiB)
# Quick run (about what tests/soak.rs runs): SOAK_SECS=60 SOAK_NODES=300 SOAK_FAULT_EVERY_SECS=20
#   SOAK_STATUS_NODES_BUDGET=4Ki SOAK_PROFILE=dev hack/soak.sh
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT_DIR}"
CARGO="${CARGO:-cargo}"
PROFILE="${SOAK_PROFILE:-release}"
case "${PROFILE}" in
  release | dev) ;;
  *) printf '[soak] SOAK_PROFILE=%s: expected release or dev\n' "${PROFILE}" >&2; exit 2 ;;
esac
export SOAK_OUT_DIR="${SOAK_OUT_DIR:-${ROOT_DIR}/target/soak}"
[[ "${SOAK_OUT_DIR}" == /* ]] || SOAK_OUT_DIR="${ROOT_DIR}/${SOAK_OUT_DIR}"
export LOCAL_CLUSTER_STATE_DIR="${LOCAL_CLUSTER_STATE_DIR:-target/soak-cluster}"
[[ "${LOCAL_CLUSTER_STATE_DIR}" == /* ]] || LOCAL_CLUSTER_STATE_DIR="${ROOT_DIR}/${LOCAL_CLUSTER_STATE_DIR}"
export LOCAL_CLUSTER_COMPONENTS=apiserver
# The run rewrites the status and the ConfigMap (hundreds of KiB each) a few times a second: etcd's bbolt file
# grows ~75 MB/min at the default churn and reaches etcd's default 2 GiB quota at ~27 minutes (a database over
# its quota refuses writes: NOSPACE), though the API server compacts it. A real cluster defragments; the soak
# gives etcd room instead (LOCAL_CLUSTER_ETCD_QUOTA_BYTES, 8 GiB by default).
export LOCAL_CLUSTER_ETCD_QUOTA_BYTES="${LOCAL_CLUSTER_ETCD_QUOTA_BYTES:-8589934592}"

log() { printf '[soak] %s\n' "$*" >&2; }

log "building the operator and the soak program (${PROFILE})"
# Cargo names each built executable in a compiler-artifact message (one JSON object a line on stdout).
artifacts="$("${CARGO}" build --locked --profile "${PROFILE}" --bin gpu-inventory-operator --bench soak \
  --message-format=json-render-diagnostics)"
# shellcheck source=hack/lib/cargo-executable.sh
source "${ROOT_DIR}/hack/lib/cargo-executable.sh"
executable() { cargo_executable "${artifacts}" "$1"; }
rm -rf "${SOAK_OUT_DIR}"
mkdir -p "${SOAK_OUT_DIR}/bin" "${SOAK_OUT_DIR}/logs"
# Private copies: a concurrent build must not swap a binary in the middle of a 30-minute run.
cp -f "$(executable gpu-inventory-operator)" "${SOAK_OUT_DIR}/bin/gpu-inventory-operator"
cp -f "$(executable soak)" "${SOAK_OUT_DIR}/bin/soak"
export SOAK_OPERATOR_BIN="${SOAK_OUT_DIR}/bin/gpu-inventory-operator"
export SOAK_CLUSTER_DIR="${LOCAL_CLUSTER_STATE_DIR}"
export SOAK_KUBECONFIG="${LOCAL_CLUSTER_STATE_DIR}/kubeconfig"

cleanup() {
  local status=$?
  if [[ "${SOAK_KEEP_CLUSTER:-0}" == 1 ]]; then
    log "leaving the soak cluster running (SOAK_KEEP_CLUSTER=1); stop it with: LOCAL_CLUSTER_STATE_DIR=${LOCAL_CLUSTER_STATE_DIR} hack/local-cluster.sh down"
  elif [[ -d "${LOCAL_CLUSTER_STATE_DIR}" ]]; then
    hack/local-cluster.sh resume-etcd >/dev/null 2>&1 || true
    cp -f "${LOCAL_CLUSTER_STATE_DIR}/kube-apiserver.log" "${SOAK_OUT_DIR}/logs/" 2>/dev/null || true
    # shellcheck disable=SC2011,SC2012 # names without spaces, made by kube-apiserver
    ls -tr "${LOCAL_CLUSTER_STATE_DIR}"/audit*.log 2>/dev/null | xargs -r cat | gzip -c >"${SOAK_OUT_DIR}/logs/audit.log.gz" || true
    hack/local-cluster.sh down || true
  fi
  exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

hack/local-cluster.sh down
hack/local-cluster.sh up
"${SOAK_OUT_DIR}/bin/soak"
