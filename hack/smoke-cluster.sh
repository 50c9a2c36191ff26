#!/usr/bin/env bash
# Smoke test of a running hack/local-cluster.sh cluster (all components), as documented in
# hack/README.md: a KWOK node goes Ready and renews its Lease; the real scheduler binds a GPU pod
# to it and KWOK runs it; a 99-GPU pod stays Unschedulable; deleting a running pod finishes; a
# node nobody plays kubelet for turns Unknown and gets the node.kubernetes.io/unreachable taint.
# Creates nodes smoke-kwok-0 and smoke-dead-0 and pods smoke-gpu-1/smoke-gpu-99 in `default`,
# and deletes them again at the end.
#
# Usage: hack/smoke-cluster.sh [--quick]     (--quick: skip the dead-node check, which waits
#                                             for the node monitor grace period, 40s by default)
# Uses $KUBECONFIG, else the kubeconfig of $LOCAL_CLUSTER_STATE_DIR (default target/local-cluster).
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
QUICK=0
[[ "${1:-}" == --quick ]] && QUICK=1
: "${KUBECONFIG:=$("${HACK_DIR}/local-cluster.sh" kubeconfig)}"
export KUBECONFIG
command -v kubectl >/dev/null 2>&1 || { echo "smoke: kubectl is required" >&2; exit 1; }
[[ -f "${KUBECONFIG}" ]] || { echo "smoke: no kubeconfig at ${KUBECONFIG}; run 'hack/local-cluster.sh up' first" >&2; exit 1; }
FAILED=0

say() { printf '%s %s\n' "$(date +%T)" "$*"; }

# Poll <check...> once a second for up to <timeout> seconds; report how long it took.
wait_for() { # <timeout> <description> <check...>
  local timeout="$1" what="$2" start="${SECONDS}"
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS - start > timeout)); then
      say "FAIL: ${what} (not within ${timeout}s)"
      FAILED=1
      return 0
    fi
    sleep 1
  done
  say "ok: ${what} ($((SECONDS - start))s)"
}

ready_is() { [[ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == "$2" ]]; }
lease_renewed() { [[ "$(kubectl -n kube-node-lease get lease "$1" -o jsonpath='{.spec.renewTime}')" != "$2" ]]; }
no_taints() { [[ -z "$(kubectl get node "$1" -o jsonpath='{.spec.taints}')" ]]; }
pod_phase_is() { [[ "$(kubectl get pod "$1" -o jsonpath='{.status.phase}')" == "$2" ]]; }
unschedulable() { [[ "$(kubectl get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" == Unschedulable ]]; }
unreachable_tainted() { kubectl get node "$1" -o jsonpath='{.spec.taints[*].key}' | grep -qw node.kubernetes.io/unreachable; }

# Remove what an earlier run may have left.
cleanup() {
  kubectl delete pod smoke-gpu-1 smoke-gpu-99 --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete node smoke-kwok-0 smoke-dead-0 --ignore-not-found >/dev/null 2>&1 || true
}

gpu_pod() { # <name> <gpus>
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  containers:
    - name: cuda
      image: registry.invalid/cuda:none   # never pulled: KWOK runs no containers
      resources: {limits: {nvidia.com/gpu: $2}}
EOF
}

main() {
  cleanup
  kubectl version 2>/dev/null | sed -n 's/^Server Version: /server: /p'

  # 1. A node KWOK plays kubelet for, with 8 GPUs.
  kubectl create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: smoke-kwok-0
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: smoke-kwok-0}
status:
  capacity: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
EOF
  wait_for 30 "KWOK node smoke-kwok-0 Ready" ready_is smoke-kwok-0 True
  local renew
  renew="$(kubectl -n kube-node-lease get lease smoke-kwok-0 -o jsonpath='{.spec.renewTime}' 2>/dev/null || true)"
  wait_for 20 "Lease kube-node-lease/smoke-kwok-0 renewed (was ${renew:-absent})" lease_renewed smoke-kwok-0 "${renew}"
  wait_for 20 "smoke-kwok-0 has no taints (not-ready taint removed)" no_taints smoke-kwok-0
  say "smoke-kwok-0 capacity: $(kubectl get node smoke-kwok-0 -o jsonpath='{.status.capacity}')"

  # 2. A node nobody renews a Lease for.
  if ((QUICK == 0)); then
    local now
    now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: smoke-dead-0
  labels: {kubernetes.io/hostname: smoke-dead-0}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}
  conditions:
    - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status, lastHeartbeatTime: "${now}", lastTransitionTime: "${now}"}
EOF
  fi

  # 3. Scheduling: 1 GPU fits on smoke-kwok-0, 99 GPUs fit nowhere.
  gpu_pod smoke-gpu-1 1 | kubectl create -f - >/dev/null
  gpu_pod smoke-gpu-99 99 | kubectl create -f - >/dev/null
  wait_for 30 "pod smoke-gpu-1 Running" pod_phase_is smoke-gpu-1 Running
  say "smoke-gpu-1: $(kubectl get pod smoke-gpu-1 -o jsonpath='node={.spec.nodeName} podIP={.status.podIP} hostIP={.status.hostIP} serviceAccount={.spec.serviceAccountName}')"
  wait_for 30 "pod smoke-gpu-99 PodScheduled=False reason Unschedulable" unschedulable smoke-gpu-99
  say "smoke-gpu-99: $(kubectl get pod smoke-gpu-99 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')"
  local start="${SECONDS}"
  if kubectl delete pod smoke-gpu-1 --wait=true --timeout=30s >/dev/null; then
    say "ok: running pod smoke-gpu-1 deleted ($((SECONDS - start))s)"
  else
    say "FAIL: deleting running pod smoke-gpu-1 did not finish within 30s"
    FAILED=1
  fi

  # 4. The dead node: Unknown and tainted after the grace period.
  if ((QUICK == 0)); then
    wait_for 120 "node smoke-dead-0 Ready=Unknown" ready_is smoke-dead-0 Unknown
    wait_for 20 "node smoke-dead-0 tainted node.kubernetes.io/unreachable" unreachable_tainted smoke-dead-0
    say "smoke-dead-0 taints: $(kubectl get node smoke-dead-0 -o jsonpath='{.spec.taints}')"
    if ready_is smoke-kwok-0 True; then say "ok: smoke-kwok-0 still Ready"; else say "FAIL: smoke-kwok-0 no longer Ready"; FAILED=1; fi
  fi
  cleanup
  if ((FAILED)); then
    say "smoke test FAILED"
    return 1
  fi
  say "smoke test passed"
}

main "$@"
