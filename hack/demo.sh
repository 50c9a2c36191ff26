#!/usr/bin/env bash
# The article's home lab on a local control plane: 8 nodes, 4 of them GPU nodes, all 4 NotReady.
# Starts the control plane, loads tests/fixtures/homelab-nodes.yaml (the article's home lab), runs the operator and shows what it
# found. Interactive by default (the operator keeps running until Ctrl-C); `--once` exits after showing the
# result and stops the control plane (CI runs that form).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ONCE=false
[[ "${1:-}" == "--once" ]] && ONCE=true
FIXTURE="${GPUINV_DEMO_FIXTURE:-$ROOT/tests/fixtures/homelab-nodes.yaml}"
export KUBECONFIG="$ROOT/target/local-cluster/kubeconfig"
# etcd + kube-apiserver only: the home lab's nodes must keep the statuses the fixture gives them
# (with the controllers running, nodes without a kubelet turn Unknown after 40s).
export LOCAL_CLUSTER_COMPONENTS="${LOCAL_CLUSTER_COMPONENTS:-apiserver}"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "local control plane"
hack/local-cluster.sh up
if $ONCE; then trap 'hack/local-cluster.sh down >/dev/null 2>&1 || true' EXIT; fi

say "loading the home lab's nodes from ${FIXTURE#"$ROOT/"}"
kubectl create -f "$FIXTURE" 2>&1 | sed 's/^/  /' || echo "  (already loaded)"
kubectl get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.count,nvidia.com/gpu.workload.config

say "building the operator"
cargo build --quiet --locked
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/gpu-inventory-operator"

say "running the operator (logs: target/demo-operator.log)"
"$BIN" run --requeue 30s >"$ROOT/target/demo-operator.log" 2>&1 &
OPERATOR_PID=$!
trap 'kill "$OPERATOR_PID" 2>/dev/null || true; wait "$OPERATOR_PID" 2>/dev/null || true; if $ONCE; then hack/local-cluster.sh down >/dev/null 2>&1 || true; fi' EXIT

for _ in $(seq 1 120); do
  if [[ "$(kubectl get gpuinventory cluster -o jsonpath='{.status.totalGpuNodes}' 2>/dev/null)" != "" ]]; then break; fi
  if ! kill -0 "$OPERATOR_PID" 2>/dev/null; then cat "$ROOT/target/demo-operator.log"; echo "the operator exited" >&2; exit 1; fi
  sleep 0.5
done
kubectl get configmap gpu-node-status >/dev/null 2>&1 || sleep 2

say "kubectl get gpuinventory"
kubectl get gpuinventory

say "kubectl get gpunodes (one per GPU node, with its full detail)"
for _ in $(seq 1 20); do
  [[ -n "$(kubectl get gpunodes -o name 2>/dev/null)" ]] && break
  sleep 0.5
done
kubectl get gpunodes

say "what the operator found (gpu-inventory-operator scan)"
"$BIN" scan || true   # exit code 1 = issues found, which is the point of the demo

say "kubectl describe gpuinventory cluster (conditions and events)"
kubectl describe gpuinventory cluster | sed -n '/Conditions:/,$p'

say "ConfigMap gpu-node-status (keys)"
kubectl get configmap gpu-node-status -o go-template='{{range $k, $v := .data}}{{$k}}{{"\n"}}{{end}}'

total=$(kubectl get gpuinventory cluster -o jsonpath='{.status.totalGpuNodes}/{.status.readyGpuNodes}/{.status.totalGpus}')
if $ONCE; then
  say "demo result: GPU nodes/ready/GPUs = $total (the article found 4/0/1)"
  [[ "$total" == "4/0/1" || -n "${GPUINV_DEMO_FIXTURE:-}" ]] || { echo "unexpected inventory $total" >&2; exit 1; }
  exit 0
fi
say "the operator keeps running; try: kubectl patch node nuc1 --subresource=status ... ; Ctrl-C to stop"
echo "  export KUBECONFIG=$KUBECONFIG; kubectl get gpuinv -w    (make cluster-down stops the control plane)"
tail -f "$ROOT/target/demo-operator.log"
