#!/usr/bin/env bash
# `make bench`: the operator against the article-style baseline (benches/baseline_operator.rs), side by side,
# in the same run, on local control planes of its own (the integration tests' cluster in target/local-cluster
# is never touched). benches/RESULTS.md lists the targets and the results.
#
#   1. builds the operator and benches/ (release),
#   2. for each scenario of BENCH_SCENARIOS, on a fresh cluster of its own:
#      steady:    target/bench-cluster, etcd + kube-apiserver only (LOCAL_CLUSTER_COMPONENTS=apiserver, so the
#                 fixture nodes keep their status): the driver (benches/bench_driver/) for every N in
#                 BENCH_NODES and both programs;
#      heartbeat: target/bench-kwok-cluster, all components (KWOK and the controllers): BENCH_HEARTBEAT_NODES
#                 KWOK nodes heartbeating, each program measured for BENCH_HEARTBEAT_SECS;
#      the cluster is stopped and deleted after its scenario, also on failure or Ctrl-C,
#   3. writes target/bench/results.json (one section per scenario) and prints the table
#      (target/bench/results.txt).
#
# Knobs (environment):
#   BENCH_SCENARIOS      which scenarios                      (default "steady heartbeat")
#   BENCH_NODES          node counts (steady)                 (default "1000 5000")
#   BENCH_QUIET_SECS     quiet period per run, seconds        (default 300)
#   BENCH_CHURN_SECS     churn period per run, seconds        (default 60)
#   BENCH_CHURN_RATE     label changes per second in churn    (default 20)
#   BENCH_CHANGES        single-node changes for latency      (default 200)
#   BENCH_BURST_CHANGES  label changes before the 2nd RSS     (default 1000)
#   BENCH_HEARTBEAT_NODES      KWOK nodes (heartbeat)         (default 5000)
#   BENCH_HEARTBEAT_GPU_EVERY  every Nth KWOK node is a GPU node (default 5)
#   BENCH_HEARTBEAT_SECS       measured window per program    (default 300)
#   LOCAL_CLUSTER_NODE_STATUS_SECS  KWOK status heartbeat every N..2N s (heartbeat; default 10)
#   BENCH_PROGRAMS       which programs                       (default "operator baseline")
#   BENCH_KEEP_CLUSTER=1 leave the bench clusters running afterwards (for poking at them)
#   BENCH_FIXTURES       node dumps the bench nodes are cloned from (default tests/fixtures)
#   BENCH_CHANGE_GAP_MS, BENCH_NODE_IMAGES, BENCH_SETTLE_SECS: see benches/bench_driver/main.rs
# Quick run: BENCH_NODES=200 BENCH_QUIET_SECS=20 BENCH_CHURN_SECS=10 BENCH_CHANGES=40 BENCH_BURST_CHANGES=100 \
#   BENCH_HEARTBEAT_NODES=500 BENCH_HEARTBEAT_SECS=60 hack/bench.sh
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT_DIR}"
CARGO="${CARGO:-cargo}"
SCENARIOS="${BENCH_SCENARIOS:-steady heartbeat}"
for scenario in ${SCENARIOS}; do
  case "${scenario}" in
    steady | heartbeat) ;;
    *) printf '[bench] BENCH_SCENARIOS: unknown scenario %s (steady, heartbeat)\n' "${scenario}" >&2; exit 1 ;;
  esac
done
# The steady scenario's cluster: etcd + kube-apiserver only, as the recorded baselines were measured: with the
# controllers running, the node lifecycle controller would mark the thousands of fixture nodes Unknown and
# taint them 40s in, adding writes the operator has to process.
STEADY_COMPONENTS="${LOCAL_CLUSTER_COMPONENTS:-apiserver}"
OUT_DIR="${ROOT_DIR}/target/bench"

log() { printf '[bench] %s\n' "$*" >&2; }

log "building release binaries (operator, baseline, driver)"
# The baseline and the driver are `harness = false` bench targets, built to target/release/deps/<name>-<hash>.
# Cargo names each built executable in a compiler-artifact message (one JSON object a line on stdout); the
# diagnostics still go to stderr as usual.
artifacts="$("${CARGO}" build --locked --release --bin gpu-inventory-operator \
  --bench baseline-operator --bench bench-driver --message-format=json-render-diagnostics)"

# executable TARGET: the path of TARGET's executable in cargo's messages.
executable() {
  local path
  path="$(printf '%s\n' "${artifacts}" | grep -F '"reason":"compiler-artifact"' | grep -F "\"name\":\"$1\"" |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)"
  if [[ -z "${path}" || ! -x "${path}" ]]; then
    log "cargo reported no executable for ${1}"
    exit 1
  fi
  printf '%s\n' "${path}"
}
OPERATOR_BUILT="$(executable gpu-inventory-operator)"
BASELINE_BUILT="$(executable baseline-operator)"
DRIVER_BUILT="$(executable bench-driver)"

# The cluster of the scenario running now (empty between scenarios).
export LOCAL_CLUSTER_STATE_DIR=""
cleanup() {
  local status=$?
  if [[ -n "${LOCAL_CLUSTER_STATE_DIR}" ]]; then
    stop_cluster
  fi
  exit "${status}"
}
# Keeps the audit log, the API server log and KWOK's log of the scenario (file names with ${suffix}), then
# stops and deletes its cluster.
suffix=""
stop_cluster() {
  if [[ "${BENCH_KEEP_CLUSTER:-0}" == 1 ]]; then
    log "leaving the bench cluster running (BENCH_KEEP_CLUSTER=1); stop it with: LOCAL_CLUSTER_STATE_DIR=${LOCAL_CLUSTER_STATE_DIR} hack/local-cluster.sh down"
  else
    if [[ -d "${LOCAL_CLUSTER_STATE_DIR}" ]]; then
      cp -f "${LOCAL_CLUSTER_STATE_DIR}/kube-apiserver.log" "${OUT_DIR}/kube-apiserver${suffix}.log" 2>/dev/null || true
      cp -f "${LOCAL_CLUSTER_STATE_DIR}/kwok.log" "${OUT_DIR}/kwok${suffix}.log" 2>/dev/null || true
      # kube-apiserver rotates its audit log at 100 MB (audit-<time>.log beside it): keep all, oldest first.
      # shellcheck disable=SC2012 # names without spaces, made by kube-apiserver
      ls -tr "${LOCAL_CLUSTER_STATE_DIR}"/audit*.log 2>/dev/null | xargs -r cat | gzip -c >"${OUT_DIR}/audit${suffix}.log.gz" || true
    fi
    hack/local-cluster.sh down || true
  fi
  LOCAL_CLUSTER_STATE_DIR=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "${OUT_DIR}/logs"
# Private copies: a concurrent `cargo build --release` must not swap a binary in the middle of the run.
mkdir -p "${OUT_DIR}/bin"
cp -f "${OPERATOR_BUILT}" "${OUT_DIR}/bin/gpu-inventory-operator"
cp -f "${BASELINE_BUILT}" "${OUT_DIR}/bin/baseline-operator"
cp -f "${DRIVER_BUILT}" "${OUT_DIR}/bin/bench-driver"
export BENCH_OPERATOR_BIN="${OUT_DIR}/bin/gpu-inventory-operator"
export BENCH_BASELINE_BIN="${OUT_DIR}/bin/baseline-operator"
export BENCH_FIXTURES="${BENCH_FIXTURES:-${ROOT_DIR}/tests/fixtures}"
export BENCH_OUT="${OUT_DIR}/results.json"
export BENCH_TABLE="${OUT_DIR}/results.txt"
export BENCH_LOG_DIR="${OUT_DIR}/logs"
# Each scenario's driver run adds its section to BENCH_OUT.
rm -f "${BENCH_OUT}" "${BENCH_TABLE}"

status=0
for scenario in ${SCENARIOS}; do
  if [[ "${scenario}" == steady ]]; then
    LOCAL_CLUSTER_STATE_DIR="target/bench-cluster"
    export LOCAL_CLUSTER_COMPONENTS="${STEADY_COMPONENTS}"
    suffix=""
  else
    # KWOK plays kubelet for the fleet; the node lifecycle controller marks a node whose Lease lags Unknown.
    LOCAL_CLUSTER_STATE_DIR="target/bench-kwok-cluster"
    export LOCAL_CLUSTER_COMPONENTS="all"
    suffix="-heartbeat"
  fi
  log "scenario ${scenario}: cluster ${LOCAL_CLUSTER_STATE_DIR} (LOCAL_CLUSTER_COMPONENTS=${LOCAL_CLUSTER_COMPONENTS})"
  # A fresh cluster per scenario: etcd and the audit log start empty.
  hack/local-cluster.sh down
  hack/local-cluster.sh up
  export BENCH_CLUSTER_DIR="${ROOT_DIR}/${LOCAL_CLUSTER_STATE_DIR}"
  export BENCH_KUBECONFIG="${BENCH_CLUSTER_DIR}/kubeconfig"
  export BENCH_AUDIT_LOG="${BENCH_CLUSTER_DIR}/audit.log"
  BENCH_SCENARIOS="${scenario}" "${OUT_DIR}/bin/bench-driver" || status=$?
  stop_cluster
done

if [[ -f "${BENCH_TABLE}" ]]; then
  printf '\n'
  cat "${BENCH_TABLE}"
  printf '\nresults: %s\nprogram logs: %s/logs\n' "${BENCH_OUT}" "${OUT_DIR}"
fi
exit "${status}"
