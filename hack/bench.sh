#!/usr/bin/env bash
# `make bench`: the operator against the article-style baseline (benches/baseline_operator.rs), side by side,
# in the same run, on local control planes of its own (the integration tests' cluster in target/local-cluster
# is never touched). benches/RESULTS.md lists the targets and the results.
#
#   1. builds the operator and benches/ (release), and first, with BENCH_PREVIOUS_REV, that revision's
#      operator (the program `previous`),
#   2. for each scenario of BENCH_SCENARIOS, on a fresh cluster of its own:
#      steady:    target/bench-cluster, etcd + kube-apiserver only (LOCAL_CLUSTER_COMPONENTS=apiserver, so the
#                 fixture nodes keep their status): the driver (benches/bench_driver/) for every N in
#                 BENCH_NODES and both programs;
#      heartbeat: target/bench-kwok-cluster, all components (KWOK and the controllers): BENCH_HEARTBEAT_NODES
#                 KWOK nodes heartbeating, each program measured for BENCH_HEARTBEAT_SECS;
#      allocation: target/bench-alloc-cluster, etcd + kube-apiserver only: BENCH_ALLOC_NODES nodes and
#                 BENCH_ALLOC_PODS pods created bound, status set; the operator's allocation accounting, and
#                 a one-shot `scan` against kubectl-view-allocations (installed on first use, below); each
#                 program of BENCH_ALLOC_PROGRAMS in turn on the same fleet (operator, previous), side by side:
#                 latency to the status and to the node's GpuNode, writes per resource and per object;
#      flood:     target/bench-flood-cluster, etcd + kube-apiserver only, once per BENCH_FLOOD_APF_MODES (API
#                 Priority and Fairness on, then off; a fresh cluster each): the operator's change -> status
#                 latency without and with another client hammering the API server (benches/bench_driver/flood.rs),
#      dra:       target/bench-dra-cluster, etcd + kube-apiserver only: BENCH_DRA_NODES nodes with a
#                 ResourceSlice each and BENCH_DRA_CLAIMS claims allocated through the status subresource;
#                 the DRA accounting of each program of BENCH_DRA_PROGRAMS in turn (side by side; every
#                 node's detail in its GpuNode) and a one-shot `scan`;
#      scale:     (not in the default list: hours at its default sizes) target/bench-scale-cluster, etcd +
#                 kube-apiserver only, a fresh cluster for each node count of BENCH_SCALE_NODES: a 65,000-node
#                 cluster's make-up scaled to the count (issue #26; docs/benchmarks.md "Scale scenario": GPU
#                 nodes of five kinds, MIG and time-sliced ones, DRA nodes with slices and claims, 10 % tainted
#                 or cordoned, pods bound with their status, pending GPU pods), the set-up timed, then
#                 BENCH_SCALE_RUNS runs of the operator: convergence, peak RSS per phase, quiet writes and
#                 LISTs, latency under churn, CPU per change, a forced relist of every watch (kube-apiserver
#                 restarted with etcd compacted: hack/local-cluster.sh compact-etcd), `scan` against
#                 kubectl-view-allocations; medians per count, and target/bench/scale.png. The cluster gets
#                 LOCAL_CLUSTER_ETCD_QUOTA_BYTES, LOCAL_CLUSTER_REQUEST_TIMEOUT and LOCAL_CLUSTER_READY_TIMEOUT
#                 from the BENCH_SCALE_ knobs below (the other scenarios' clusters keep the defaults);
#      the cluster is stopped and deleted after its scenario, also on failure or Ctrl-C,
#   3. writes target/bench/results.json (one section per scenario) and prints the table
#      (target/bench/results.txt).
#
# Knobs (environment):
#   BENCH_SCENARIOS      which scenarios                      (default "steady heartbeat allocation dra flood";
#                        scale only when named, e.g. BENCH_SCENARIOS=scale)
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
#   BENCH_ALLOC_NODES          nodes (allocation)             (default 5000)
#   BENCH_ALLOC_GPU_EVERY      every Nth node is a GPU node   (default 5)
#   BENCH_ALLOC_GPUS_PER_NODE  nvidia.com/gpu per GPU node    (default 8)
#   BENCH_ALLOC_PODS           pods in all                    (default 50000)
#   BENCH_ALLOC_GPU_PODS       of which request nvidia.com/gpu (default 10000)
#   BENCH_ALLOC_PENDING        of which are pending, Unschedulable (default 300)
#   BENCH_ALLOC_TAINT_EVERY    every Nth GPU node tainted nvidia.com/gpu:NoSchedule (default 10; 0 none)
#   BENCH_ALLOC_CHANGES        single GPU-pod changes for latency (default 200)
#   BENCH_ALLOC_CHURN_RATE     pod changes per second in churn (default 50)
#   BENCH_ALLOC_CHURN_SECS     churn period, seconds          (default 60)
#   BENCH_ALLOC_PEER_RUNS      runs of scan and of kubectl-view-allocations, alternating (default 3)
#   BENCH_ALLOC_CREATE_CONCURRENCY  pod creates in flight during set-up (default 48)
#   BENCH_DRA_NODES            nodes, one ResourceSlice each (dra) (default 5000)
#   BENCH_DRA_GPUS_PER_NODE    whole-GPU devices per slice    (default 8)
#   BENCH_DRA_CLAIMS           claims, each allocated one device (default 10000)
#   BENCH_DRA_CHANGES          single claim changes for latency (default 100)
#   BENCH_DRA_CHURN_RATE       claim changes per second in churn (default 50)
#   BENCH_DRA_CHURN_SECS       churn period, seconds          (default 60)
#   BENCH_DRA_SCAN_RUNS        runs of the one-shot scan      (default 3)
#   BENCH_DRA_CREATE_CONCURRENCY  creates in flight during set-up (default 48)
#   BENCH_VIEW_ALLOCATIONS_VERSION  kubectl-view-allocations to install (default 3.1.0)
#   BENCH_TOOLS_DIR      where bench-only tools are installed (default ~/.cache/gpu-inventory-operator/tools)
#   BENCH_FLOOD_NODES          nodes (flood)                  (default 500)
#   BENCH_FLOOD_TASKS          flooding loops in flight        (default 64)
#   BENCH_FLOOD_CHANGES        changes timed per phase         (default 40)
#   BENCH_FLOOD_APF_MODES      APF on (1) / off (0) runs       (default "1 0")
#   BENCH_SCALE_NODES          node counts (scale), a fresh cluster each (default "1000 5000 20000 65000")
#   BENCH_SCALE_RUNS           runs of the operator per count, for medians (default 2)
#   BENCH_SCALE_QUIET_SECS     quiet window per run: writes and LISTs, 0 and 0 expected (default 60)
#   BENCH_SCALE_CHURN_RATE     pod changes per second in churn (default 50)
#   BENCH_SCALE_CHURN_SECS     churn period, seconds; longer while the timed changes last (default 600)
#   BENCH_SCALE_CHANGES        single GPU-pod changes timed while the churn runs (default 200)
#   BENCH_SCALE_PEER_RUNS      runs of scan and of kubectl-view-allocations after each run (default 1)
#   BENCH_SCALE_CREATE_CONCURRENCY  creates in flight during set-up (default 48)
#   BENCH_SCALE_SETTLE_SECS    longest wait for convergence and for the relists (default 900)
#   BENCH_SCALE_ETCD_QUOTA_BYTES    LOCAL_CLUSTER_ETCD_QUOTA_BYTES of the scale cluster (default 8589934592, 8 GiB)
#   BENCH_SCALE_REQUEST_TIMEOUT     LOCAL_CLUSTER_REQUEST_TIMEOUT of the scale cluster (default 5m)
#   BENCH_SCALE_READY_TIMEOUT       LOCAL_CLUSTER_READY_TIMEOUT of the scale cluster, for its API server's
#                                   restart with a full etcd (default 600)
#   BENCH_SCALE_READERS        both: the runs without the readers #37-#41 added, then the readers in place (Kueue's
#                              objects, Prometheus with dcgm-exporter's series, the ClusterProperty) and as many runs
#                              with them; on: only those; off: only the first (default both)
#   BENCH_KUEUE_CRDS, BENCH_PROMETHEUS  the readers' Kueue CRDs and prometheus binary (default: built by
#                              hack/build-control-plane.sh kueue / prometheus, cached)
#   BENCH_PROGRAMS       which programs (steady, heartbeat)   (default "operator baseline")
#   BENCH_PREVIOUS_REV   a git revision (b2b174c or newer: it writes GpuNodes) whose operator is built (release) from a git worktree in
#                        target/bench/previous-src, with the same CARGO_TARGET_DIR, and copied to
#                        target/bench/bin/previous-operator before today's is built: the program `previous`
#                        (default: none; the program lists below then cannot name `previous`)
#   BENCH_ALLOC_PROGRAMS which programs (allocation), one after the other on the same fleet: operator and/or
#                        previous (needs BENCH_PREVIOUS_REV)  (default "operator"; e.g. "previous operator")
#   BENCH_DRA_PROGRAMS   the same for the dra scenario        (default "operator")
#   BENCH_ALLOC_QUIET_SECS     quiet window after convergence, per program: its writes (0 expected) (default 60)
#   BENCH_DRA_QUIET_SECS       the same for the dra scenario  (default 60)
#   BENCH_KEEP_CLUSTER=1 leave the bench clusters running afterwards (for poking at them)
#   BENCH_OPERATOR_WRAPPER a command the operators run under, e.g. "heaptrack -o target/bench/heap" (docs/benchmarks.md,
#                        profiling memory); the run's timings and RSS are then the wrapper's, not figures to report
#   BENCH_FIXTURES       node dumps the bench nodes are cloned from (default tests/fixtures)
#   BENCH_CHANGE_GAP_MS, BENCH_NODE_IMAGES, BENCH_SETTLE_SECS and every other knob: the driver's --help
#                        (testkit/src/settings/bench/)
# Side by side with an earlier main (the previous program), e.g.:
#   BENCH_SCENARIOS="allocation dra" BENCH_PREVIOUS_REV=6ee9942 BENCH_ALLOC_PROGRAMS="previous operator" \
#   BENCH_DRA_PROGRAMS="previous operator" hack/bench.sh
# The scale scenario, quick form (a few minutes once built):
#   BENCH_SCENARIOS=scale BENCH_SCALE_NODES=1000 BENCH_SCALE_RUNS=1 BENCH_SCALE_CHURN_SECS=20 \
#   BENCH_SCALE_QUIET_SECS=10 BENCH_SCALE_CHANGES=40 hack/bench.sh
# Quick run: BENCH_NODES=200 BENCH_QUIET_SECS=20 BENCH_CHURN_SECS=10 BENCH_CHANGES=40 BENCH_BURST_CHANGES=100 \
#   BENCH_HEARTBEAT_NODES=500 BENCH_HEARTBEAT_SECS=60 BENCH_ALLOC_NODES=500 BENCH_ALLOC_PODS=5000 \
#   BENCH_ALLOC_GPU_PODS=1000 BENCH_ALLOC_PENDING=40 BENCH_ALLOC_CHANGES=40 BENCH_ALLOC_CHURN_SECS=10 \
#   BENCH_DRA_NODES=500 BENCH_DRA_CLAIMS=1000 BENCH_DRA_CHANGES=40 BENCH_DRA_CHURN_SECS=10 \
#   BENCH_ALLOC_QUIET_SECS=10 BENCH_DRA_QUIET_SECS=10 hack/bench.sh
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT_DIR}"
CARGO="${CARGO:-cargo}"
SCENARIOS="${BENCH_SCENARIOS:-steady heartbeat allocation dra flood}"
FLOOD_APF_MODES="${BENCH_FLOOD_APF_MODES:-1 0}"
SCALE_NODES="${BENCH_SCALE_NODES:-1000 5000 20000 65000}"
for size in ${SCALE_NODES}; do
  [[ "${size}" =~ ^[1-9][0-9]*$ ]] || { printf '[bench] BENCH_SCALE_NODES: %s is no node count\n' "${size}" >&2; exit 1; }
done
# The scale cluster's control plane at up to 65,000 nodes and 100,000 pods (docs/benchmarks.md): etcd's quota
# (nodes with their images and pods with their status are more than etcd's 2 GiB with history), the API
# server's time for an unpaginated LIST of every node or pod (kubectl-view-allocations), its readiness after a
# restart that refills its watch cache from a full etcd.
SCALE_CLUSTER_ENV=(
  "LOCAL_CLUSTER_ETCD_QUOTA_BYTES=${BENCH_SCALE_ETCD_QUOTA_BYTES:-8589934592}"
  "LOCAL_CLUSTER_REQUEST_TIMEOUT=${BENCH_SCALE_REQUEST_TIMEOUT:-5m}"
  "LOCAL_CLUSTER_READY_TIMEOUT=${BENCH_SCALE_READY_TIMEOUT:-600}"
)
for scenario in ${SCENARIOS}; do
  case "${scenario}" in
    steady | heartbeat | allocation | dra | flood | scale) ;;
    *) printf '[bench] BENCH_SCENARIOS: unknown scenario %s (steady, heartbeat, allocation, dra, flood, scale)\n' "${scenario}" >&2; exit 1 ;;
  esac
done
# The steady scenario's cluster: etcd + kube-apiserver only, as the recorded baselines were measured: with the
# controllers running, the node lifecycle controller would mark the thousands of fixture nodes Unknown and
# taint them 40s in, adding writes the operator has to process.
STEADY_COMPONENTS="${LOCAL_CLUSTER_COMPONENTS:-apiserver}"
OUT_DIR="${ROOT_DIR}/target/bench"

log() { printf '[bench] %s\n' "$*" >&2; }

# shellcheck source=hack/lib/cargo-executable.sh
source "${ROOT_DIR}/hack/lib/cargo-executable.sh"
# The program lists of the allocation and dra scenarios: known words, and `previous` only with a revision.
PREVIOUS_REV="${BENCH_PREVIOUS_REV:-}"
for knob in BENCH_ALLOC_PROGRAMS BENCH_DRA_PROGRAMS; do
  for program in ${!knob:-operator}; do
    case "${program}" in
      operator) ;;
      previous)
        if [[ -z "${PREVIOUS_REV}" ]]; then
          printf '[bench] %s names previous, but BENCH_PREVIOUS_REV (the revision to build it from) is not set\n' "${knob}" >&2
          exit 1
        fi
        ;;
      *) printf '[bench] %s: unknown program %s (operator, previous)\n' "${knob}" "${program}" >&2; exit 1 ;;
    esac
  done
done
mkdir -p "${OUT_DIR}/bin"
rm -f "${OUT_DIR}/bin/previous-operator"
if [[ -n "${PREVIOUS_REV}" ]]; then
  previous_commit="$(git rev-parse --verify --quiet "${PREVIOUS_REV}^{commit}")" || {
    log "BENCH_PREVIOUS_REV: ${PREVIOUS_REV} is not a commit of this repository"
    exit 1
  }
  # A worktree of its own, re-created each run (a leftover one, registered or not, goes first).
  PREVIOUS_SRC="${OUT_DIR}/previous-src"
  git worktree remove --force "${PREVIOUS_SRC}" >/dev/null 2>&1 || true
  rm -rf "${PREVIOUS_SRC}"
  git worktree prune
  git worktree add --quiet --detach "${PREVIOUS_SRC}" "${previous_commit}"
  log "building the previous operator (${PREVIOUS_REV} = ${previous_commit:0:12}, release) in ${PREVIOUS_SRC}"
  # The same target directory as today's build (the dependencies are reused); the binary is copied out
  # before today's build writes target/release/gpu-inventory-operator again.
  previous_artifacts="$(cd "${PREVIOUS_SRC}" && CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${ROOT_DIR}/target}" \
    "${CARGO}" build --locked --release --bin gpu-inventory-operator --message-format=json-render-diagnostics)"
  cp -f "$(cargo_executable "${previous_artifacts}" gpu-inventory-operator)" "${OUT_DIR}/bin/previous-operator"
  export BENCH_PREVIOUS_BIN="${OUT_DIR}/bin/previous-operator"
  export BENCH_PREVIOUS_LABEL="${PREVIOUS_REV} (${previous_commit:0:12})"
fi

log "building release binaries (operator, baseline, driver)"
# The baseline and the driver are `harness = false` bench targets, built to target/release/deps/<name>-<hash>.
# Cargo names each built executable in a compiler-artifact message (one JSON object a line on stdout); the
# diagnostics still go to stderr as usual.
artifacts="$("${CARGO}" build --locked --release --bin gpu-inventory-operator \
  --bench baseline-operator --bench bench-driver --message-format=json-render-diagnostics)"

executable() { cargo_executable "${artifacts}" "$1"; }
# The allocation scenario's peer, kubectl-view-allocations (crates.io), is a bench tool, not a dependency of
# the operator: installed once into a cache outside the repository, with its own lock file, and only when the
# installed one is missing or another version. GNU time measures the peers' peak RSS.
VIEW_ALLOCATIONS_VERSION="${BENCH_VIEW_ALLOCATIONS_VERSION:-3.1.0}"
TOOLS_DIR="${BENCH_TOOLS_DIR:-${HOME}/.cache/gpu-inventory-operator/tools}"
if [[ " ${SCENARIOS} " == *" allocation "* || " ${SCENARIOS} " == *" scale "* ]]; then
  view_allocations="${TOOLS_DIR}/bin/kubectl-view-allocations"
  if [[ "$("${view_allocations}" --version 2>/dev/null)" != "kubectl-view-allocations ${VIEW_ALLOCATIONS_VERSION}" ]]; then
    log "installing kubectl-view-allocations ${VIEW_ALLOCATIONS_VERSION} into ${TOOLS_DIR} (first use only; a few minutes)"
    "${CARGO}" install --locked --quiet kubectl-view-allocations --version "${VIEW_ALLOCATIONS_VERSION}" --root "${TOOLS_DIR}"
  fi
  export BENCH_VIEW_ALLOCATIONS_BIN="${view_allocations}"
fi
# The allocation, dra and scale scenarios time one-shot runs (scan, the peer) with GNU time, for their peak RSS.
if [[ " ${SCENARIOS} " == *" allocation "* || " ${SCENARIOS} " == *" dra "* || " ${SCENARIOS} " == *" scale "* ]]; then
  if [[ ! -x /usr/bin/time ]] || ! /usr/bin/time -v true 2>/dev/null; then
    log "the allocation, dra and scale scenarios need GNU time at /usr/bin/time (apt-get install time)"
    exit 1
  fi
fi
# The scale scenario's readers (benches/bench_driver/scale_readers.rs; not with BENCH_SCALE_READERS=off): Kueue's
# CRDs and Prometheus with promtool, built once from their Go modules like the tests' (cached outside the
# repository).
if [[ " ${SCENARIOS} " == *" scale "* && "${BENCH_SCALE_READERS:-both}" != off ]]; then
  kueue_bin="$(hack/build-control-plane.sh kueue)"
  export BENCH_KUEUE_CRDS="${BENCH_KUEUE_CRDS:-$(dirname "${kueue_bin}")/crds}"
  export BENCH_PROMETHEUS="${BENCH_PROMETHEUS:-$(hack/build-control-plane.sh prometheus)}"
fi
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
# The scale scenario's relist restarts its cluster's API server (LOCAL_CLUSTER_STATE_DIR names the cluster).
export BENCH_SCALE_CLUSTER_SCRIPT="${ROOT_DIR}/hack/local-cluster.sh"
# Each scenario's driver run adds its section to BENCH_OUT.
rm -f "${BENCH_OUT}" "${BENCH_TABLE}"

status=0
# One run per scenario; the flood scenario once per APF mode (flood:1, flood:0), the scale scenario once per node
# count (scale:1000, ...).
runs=""
for scenario in ${SCENARIOS}; do
  if [[ "${scenario}" == flood ]]; then
    for mode in ${FLOOD_APF_MODES}; do runs="${runs} flood:${mode}"; done
  elif [[ "${scenario}" == scale ]]; then
    for size in ${SCALE_NODES}; do runs="${runs} scale:${size}"; done
  else
    runs="${runs} ${scenario}"
  fi
done
for run in ${runs}; do
  scenario="${run%%:*}"
  unset LOCAL_CLUSTER_APF
  # The scale cluster's own control-plane settings; none for the others.
  cluster_env=()
  if [[ "${scenario}" == steady ]]; then
    LOCAL_CLUSTER_STATE_DIR="target/bench-cluster"
    export LOCAL_CLUSTER_COMPONENTS="${STEADY_COMPONENTS}"
    suffix=""
  elif [[ "${scenario}" == allocation ]]; then
    # Pods created bound with their status set: with no scheduler, kubelet or controllers, nothing
    # reschedules, runs or deletes them, and no node turns Unknown.
    LOCAL_CLUSTER_STATE_DIR="target/bench-alloc-cluster"
    export LOCAL_CLUSTER_COMPONENTS="apiserver"
    suffix="-allocation"
  elif [[ "${scenario}" == flood ]]; then
    # APF on or off (hack/local-cluster.sh LOCAL_CLUSTER_APF); the driver records which.
    LOCAL_CLUSTER_STATE_DIR="target/bench-flood-cluster"
    export LOCAL_CLUSTER_COMPONENTS="apiserver"
    export LOCAL_CLUSTER_APF="${run#flood:}"
    export BENCH_FLOOD_APF="${LOCAL_CLUSTER_APF}"
    suffix="-flood-apf${LOCAL_CLUSTER_APF}"
  elif [[ "${scenario}" == scale ]]; then
    # Like the allocation scenario's, at one node count, with room for it.
    LOCAL_CLUSTER_STATE_DIR="target/bench-scale-cluster"
    export LOCAL_CLUSTER_COMPONENTS="apiserver"
    export BENCH_SCALE_NODES="${run#scale:}"
    cluster_env=("${SCALE_CLUSTER_ENV[@]}")
    suffix="-scale-${BENCH_SCALE_NODES}"
  elif [[ "${scenario}" == dra ]]; then
    # Claims allocated by the driver through the status subresource: with no scheduler or resourceclaim
    # controller, nothing allocates, clears or deletes them but the driver.
    LOCAL_CLUSTER_STATE_DIR="target/bench-dra-cluster"
    export LOCAL_CLUSTER_COMPONENTS="apiserver"
    suffix="-dra"
  else
    # KWOK plays kubelet for the fleet; the node lifecycle controller marks a node whose Lease lags Unknown.
    LOCAL_CLUSTER_STATE_DIR="target/bench-kwok-cluster"
    export LOCAL_CLUSTER_COMPONENTS="all"
    suffix="-heartbeat"
  fi
  log "scenario ${scenario}: cluster ${LOCAL_CLUSTER_STATE_DIR} (LOCAL_CLUSTER_COMPONENTS=${LOCAL_CLUSTER_COMPONENTS}${LOCAL_CLUSTER_APF:+, LOCAL_CLUSTER_APF=${LOCAL_CLUSTER_APF}}${cluster_env[*]:+, ${cluster_env[*]}})"
  # A fresh cluster per scenario: etcd and the audit log start empty.
  hack/local-cluster.sh down
  env "${cluster_env[@]}" hack/local-cluster.sh up
  export BENCH_CLUSTER_DIR="${ROOT_DIR}/${LOCAL_CLUSTER_STATE_DIR}"
  export BENCH_KUBECONFIG="${BENCH_CLUSTER_DIR}/kubeconfig"
  export BENCH_AUDIT_LOG="${BENCH_CLUSTER_DIR}/audit.log"
  env "${cluster_env[@]}" BENCH_SCENARIOS="${scenario}" "${OUT_DIR}/bin/bench-driver" || status=$?
  stop_cluster
done

if [[ -f "${BENCH_TABLE}" ]]; then
  printf '\n'
  cat "${BENCH_TABLE}"
  printf '\nresults: %s\nprogram logs: %s/logs\n' "${BENCH_OUT}" "${OUT_DIR}"
fi
exit "${status}"
