#!/usr/bin/env bash
# A real, local Kubernetes control plane (etcd + kube-apiserver), started the way
# controller-runtime's envtest does it: no kubelet, no scheduler, no controllers.
# No container engine is needed. Binaries come from hack/build-control-plane.sh
# (built once into a cache outside the repo) or from $KUBEBUILDER_ASSETS.
#
# Usage: hack/local-cluster.sh <verb>
#   up               build/find binaries, create certs, start etcd + kube-apiserver,
#                    wait for /readyz, write the kubeconfig (reuses a running cluster)
#   down             stop everything and delete the state dir (succeeds if nothing runs)
#   status           show what runs; exit 1 when the cluster is not (fully) running
#   stop-apiserver [--kill]
#                    stop only kube-apiserver (SIGTERM, or SIGKILL with --kill); etcd keeps running
#   start-apiserver  start kube-apiserver again on the same port with the same args, wait for /readyz
#   build            only build/find the binaries
#   kubeconfig       print the kubeconfig path
#
# State (certs, etcd data, logs, pids, ports, args, kubeconfig, audit log) lives in
# <repo>/target/local-cluster/ (or $LOCAL_CLUSTER_STATE_DIR); the lock file sits beside it
# (<repo>/target/.local-cluster.lock by default).
#
# Environment:
#   LOCAL_CLUSTER_STATE_DIR      state directory (default target/local-cluster; a relative path is taken
#                                from the repository root). Clusters with different state dirs are fully
#                                independent (own ports, lock, audit log): `make bench` uses target/bench-cluster.
#   KUBEBUILDER_ASSETS     directory with prebuilt etcd + kube-apiserver (skips the build)
#   GPUINV_CACHE_DIR       binary cache root (see hack/build-control-plane.sh)
#   ETCD_VERSION, KUBE_VERSION   versions to build (defaults v3.6.16, v1.34.4)
#   LOCAL_CLUSTER_READY_TIMEOUT  seconds to wait for readiness (default 90)
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "${HACK_DIR}/.." && pwd)"
STATE_DIR="${LOCAL_CLUSTER_STATE_DIR:-target/local-cluster}"
[[ "${STATE_DIR}" == /* ]] || STATE_DIR="${ROOT_DIR}/${STATE_DIR}"
STATE_DIR="${STATE_DIR%/}"
[[ -n "${STATE_DIR}" && "${STATE_DIR}" != "${ROOT_DIR}" ]] || { printf '[local-cluster] ERROR: LOCAL_CLUSTER_STATE_DIR must name a directory of its own\n' >&2; exit 1; }
PKI_DIR="${STATE_DIR}/pki"
KUBECONFIG_PATH="${STATE_DIR}/kubeconfig"
AUDIT_LOG="${STATE_DIR}/audit.log"
# One lock per state dir: target/local-cluster -> target/.local-cluster.lock (as before).
LOCK_FILE="$(dirname "${STATE_DIR}")/.$(basename "${STATE_DIR}").lock"
READY_TIMEOUT="${LOCAL_CLUSTER_READY_TIMEOUT:-90}"
STOP_GRACE_SECONDS=5
CONTEXT_NAME="local-cluster"

log() { printf '[local-cluster] %s\n' "$*" >&2; }
die() { printf '[local-cluster] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- helpers --

# Serialise verbs that change state (parallel test processes may call `up`).
# The lock fd (9) is closed for every child we start, so daemons never hold it.
take_lock() {
  mkdir -p "$(dirname "${LOCK_FILE}")"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"${LOCK_FILE}"
    if ! flock -w 300 9; then
      die "timed out waiting for ${LOCK_FILE} (another local-cluster.sh is running)"
    fi
  fi
}

# Print a free TCP port on 127.0.0.1.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  local port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 40000))
    if ! port_in_use "${port}"; then
      printf '%s\n' "${port}"
      return
    fi
  done
  die "could not find a free port"
}

port_in_use() { # <port>
  if command -v ss >/dev/null 2>&1; then
    ss -Htln "sport = :$1" 2>/dev/null | grep -q .
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

# Is the process in <pidfile> alive and is it <name>?
pid_alive() { # <pidfile> <name>
  local pid
  [[ -f "$1" ]] || return 1
  pid="$(cat "$1" 2>/dev/null || true)"
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  kill -0 "${pid}" 2>/dev/null || return 1
  # Guard against PID reuse: the command line must mention the binary.
  if [[ -r "/proc/${pid}/cmdline" ]]; then
    tr '\0' ' ' <"/proc/${pid}/cmdline" | grep -q -- "$2" || return 1
  fi
  return 0
}

read_pid() { cat "$1" 2>/dev/null || true; }

# Stop the process in <pidfile>: SIGTERM (or SIGKILL if <mode> is kill), then SIGKILL.
stop_process() { # <pidfile> <name> [term|kill]
  local pidfile="$1" name="$2" mode="${3:-term}" pid i
  if ! pid_alive "${pidfile}" "${name}"; then
    rm -f "${pidfile}"
    return 0
  fi
  pid="$(read_pid "${pidfile}")"
  if [[ "${mode}" == kill ]]; then
    log "killing ${name} (pid ${pid}, SIGKILL)"
    kill -KILL "${pid}" 2>/dev/null || true
  else
    log "stopping ${name} (pid ${pid})"
    kill -TERM "${pid}" 2>/dev/null || true
  fi
  for ((i = 0; i < STOP_GRACE_SECONDS * 10; i++)); do
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "${pid}" 2>/dev/null; then
    log "${name} (pid ${pid}) did not exit after ${STOP_GRACE_SECONDS}s; sending SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "${pidfile}"
}

# Start <binary> with the args in <argsfile> (one per line), detached, logging to <logfile>.
start_process() { # <binary> <argsfile> <logfile> <pidfile>
  local bin="$1" argsfile="$2" logfile="$3" pidfile="$4" args=()
  mapfile -t args <"${argsfile}"
  printf '\n===== %s starting %s =====\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(basename "${bin}")" >>"${logfile}"
  # setsid: own session, so Ctrl-C / the test harness' process group does not hit it.
  # (Not `setsid -f`: without the fork, $! is the daemon's own pid.)
  setsid nohup "${bin}" "${args[@]}" </dev/null >>"${logfile}" 2>&1 9>&- &
  printf '%s\n' "$!" >"${pidfile}"
}

show_log_tail() { # <logfile>
  if [[ -f "$1" ]]; then
    log "last 30 lines of $1:"
    tail -n 30 "$1" | sed 's/^/    /' >&2
  fi
}

# -------------------------------------------------------------- binaries --

resolve_binaries() {
  local out
  out="$("${HACK_DIR}/build-control-plane.sh" paths)" || die "could not build or find the control-plane binaries (see above)"
  ETCD_BIN="$(printf '%s\n' "${out}" | sed -n 's/^ETCD=//p')"
  APISERVER_BIN="$(printf '%s\n' "${out}" | sed -n 's/^KUBE_APISERVER=//p')"
  [[ -x "${ETCD_BIN}" ]] || die "etcd binary not found at '${ETCD_BIN}'"
  [[ -x "${APISERVER_BIN}" ]] || die "kube-apiserver binary not found at '${APISERVER_BIN}'"
  printf '%s\n' "${ETCD_BIN}" >"${STATE_DIR}/etcd.bin"
  printf '%s\n' "${APISERVER_BIN}" >"${STATE_DIR}/kube-apiserver.bin"
}

# ------------------------------------------------------------------- pki --

gen_certs() {
  command -v openssl >/dev/null 2>&1 || die "openssl is required to create the cluster certificates"
  mkdir -p "${PKI_DIR}"
  chmod 0700 "${PKI_DIR}"
  local d="${PKI_DIR}"
  (
    cd "${d}"
    umask 077
    # CA
    openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
    openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=local-cluster-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
      -out ca.crt 2>/dev/null
    # kube-apiserver serving certificate
    openssl ecparam -name prime256v1 -genkey -noout -out apiserver.key 2>/dev/null
    openssl req -new -key apiserver.key -subj "/CN=kube-apiserver" -out apiserver.csr 2>/dev/null
    cat >apiserver.ext <<'EOF'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    # admin client certificate (cluster-admin through the system:masters group)
    openssl ecparam -name prime256v1 -genkey -noout -out admin.key 2>/dev/null
    openssl req -new -key admin.key -subj "/O=system:masters/CN=admin" -out admin.csr 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
      -extfile admin.ext -out admin.crt 2>/dev/null
    # service-account token signing key pair
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr ./*.ext ca.srl
  ) || die "creating certificates with openssl failed"
}

write_audit_policy() {
  # Every request at Metadata level. RequestReceived is omitted so each request
  # yields one line (ResponseComplete; long-running watches also ResponseStarted).
  cat >"${STATE_DIR}/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
  - RequestReceived
rules:
  - level: Metadata
EOF
}

write_kubeconfig() {
  local port="$1" tmp
  tmp="${KUBECONFIG_PATH}.tmp.$$"
  (
    umask 077
    cat >"${tmp}" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: ${CONTEXT_NAME}
    cluster:
      server: https://127.0.0.1:${port}
      certificate-authority-data: $(base64 -w0 <"${PKI_DIR}/ca.crt")
users:
  - name: ${CONTEXT_NAME}-admin
    user:
      client-certificate-data: $(base64 -w0 <"${PKI_DIR}/admin.crt")
      client-key-data: $(base64 -w0 <"${PKI_DIR}/admin.key")
contexts:
  - name: ${CONTEXT_NAME}
    context:
      cluster: ${CONTEXT_NAME}
      user: ${CONTEXT_NAME}-admin
      namespace: default
current-context: ${CONTEXT_NAME}
EOF
  )
  mv -f "${tmp}" "${KUBECONFIG_PATH}"
}

# ------------------------------------------------------------------ etcd --

write_etcd_args() {
  local client_port peer_port
  client_port="$(free_port)"
  peer_port="$(free_port)"
  while [[ "${peer_port}" == "${client_port}" ]]; do peer_port="$(free_port)"; done
  printf '%s\n' "${client_port}" >"${STATE_DIR}/etcd.port"
  printf '%s\n' "${peer_port}" >"${STATE_DIR}/etcd-peer.port"
  cat >"${STATE_DIR}/etcd.args" <<EOF
--name=local-cluster
--data-dir=${STATE_DIR}/etcd-data
--listen-client-urls=http://127.0.0.1:${client_port}
--advertise-client-urls=http://127.0.0.1:${client_port}
--listen-peer-urls=http://127.0.0.1:${peer_port}
--initial-advertise-peer-urls=http://127.0.0.1:${peer_port}
--initial-cluster=local-cluster=http://127.0.0.1:${peer_port}
--initial-cluster-state=new
--unsafe-no-fsync=true
--log-level=warn
EOF
}

start_etcd() {
  local bin port i
  bin="$(cat "${STATE_DIR}/etcd.bin")"
  port="$(cat "${STATE_DIR}/etcd.port")"
  if port_in_use "${port}"; then
    die "etcd port ${port} is already in use by another process; run 'hack/local-cluster.sh down' and 'up' again"
  fi
  log "starting etcd on 127.0.0.1:${port} (peer $(cat "${STATE_DIR}/etcd-peer.port")), log: ${STATE_DIR}/etcd.log"
  start_process "${bin}" "${STATE_DIR}/etcd.args" "${STATE_DIR}/etcd.log" "${STATE_DIR}/etcd.pid"
  for ((i = 0; i < READY_TIMEOUT * 5; i++)); do
    # (kill -0, not pid_alive: right after the fork the cmdline is not yet the binary's.)
    if ! kill -0 "$(read_pid "${STATE_DIR}/etcd.pid")" 2>/dev/null; then
      show_log_tail "${STATE_DIR}/etcd.log"
      rm -f "${STATE_DIR}/etcd.pid"
      die "etcd exited during startup"
    fi
    if curl -fsS --max-time 2 "http://127.0.0.1:${port}/health" 2>/dev/null | grep -q '"health":"true"'; then
      return 0
    fi
    sleep 0.2
  done
  show_log_tail "${STATE_DIR}/etcd.log"
  stop_process "${STATE_DIR}/etcd.pid" etcd kill
  die "etcd did not become healthy within ${READY_TIMEOUT}s"
}

# -------------------------------------------------------- kube-apiserver --

# Admission: ServiceAccount is off (as in envtest: no token controller runs), and so is
# TaintNodesByCondition, which would add node.kubernetes.io/not-ready:NoSchedule to every
# created Node (no node-lifecycle controller runs here to remove it again), so fixture
# Nodes are stored exactly as written.
write_apiserver_args() {
  local port etcd_port
  port="$(free_port)"
  etcd_port="$(cat "${STATE_DIR}/etcd.port")"
  printf '%s\n' "${port}" >"${STATE_DIR}/kube-apiserver.port"
  cat >"${STATE_DIR}/kube-apiserver.args" <<EOF
--advertise-address=127.0.0.1
--bind-address=127.0.0.1
--secure-port=${port}
--cert-dir=${PKI_DIR}
--tls-cert-file=${PKI_DIR}/apiserver.crt
--tls-private-key-file=${PKI_DIR}/apiserver.key
--client-ca-file=${PKI_DIR}/ca.crt
--etcd-servers=http://127.0.0.1:${etcd_port}
--service-cluster-ip-range=10.0.0.0/24
--service-account-issuer=https://kubernetes.default.svc
--service-account-key-file=${PKI_DIR}/sa.pub
--service-account-signing-key-file=${PKI_DIR}/sa.key
--authorization-mode=RBAC
--disable-admission-plugins=ServiceAccount,TaintNodesByCondition
--allow-privileged=true
--enable-priority-and-fairness=false
--audit-policy-file=${STATE_DIR}/audit-policy.yaml
--audit-log-path=${AUDIT_LOG}
--audit-log-format=json
--audit-log-maxsize=0
--profiling=false
EOF
}

readyz_ok() { # <port>
  curl -fsS --max-time 2 --cacert "${PKI_DIR}/ca.crt" \
    --cert "${PKI_DIR}/admin.crt" --key "${PKI_DIR}/admin.key" \
    "https://127.0.0.1:$1/readyz" 2>/dev/null | grep -qx ok
}

start_apiserver() {
  local bin port i start="${SECONDS}"
  bin="$(cat "${STATE_DIR}/kube-apiserver.bin")"
  port="$(cat "${STATE_DIR}/kube-apiserver.port")"
  # The port may still be held for a moment by a just-killed instance.
  for ((i = 0; i < 100; i++)); do
    port_in_use "${port}" || break
    sleep 0.1
  done
  if port_in_use "${port}"; then
    die "kube-apiserver port ${port} is already in use by another process; run 'hack/local-cluster.sh down' and 'up' again"
  fi
  log "starting kube-apiserver on https://127.0.0.1:${port}, log: ${STATE_DIR}/kube-apiserver.log"
  start_process "${bin}" "${STATE_DIR}/kube-apiserver.args" "${STATE_DIR}/kube-apiserver.log" "${STATE_DIR}/kube-apiserver.pid"
  for ((i = 0; i < READY_TIMEOUT * 5; i++)); do
    if ! kill -0 "$(read_pid "${STATE_DIR}/kube-apiserver.pid")" 2>/dev/null; then
      show_log_tail "${STATE_DIR}/kube-apiserver.log"
      rm -f "${STATE_DIR}/kube-apiserver.pid"
      die "kube-apiserver exited during startup"
    fi
    if readyz_ok "${port}"; then
      log "kube-apiserver is ready ($((SECONDS - start))s)"
      return 0
    fi
    sleep 0.2
  done
  show_log_tail "${STATE_DIR}/kube-apiserver.log"
  stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver kill
  die "kube-apiserver did not report /readyz ok within ${READY_TIMEOUT}s"
}

# ----------------------------------------------------------------- verbs --

etcd_running() { pid_alive "${STATE_DIR}/etcd.pid" etcd; }
apiserver_running() { pid_alive "${STATE_DIR}/kube-apiserver.pid" kube-apiserver; }

print_usage_hint() {
  printf 'kubeconfig: %s\n' "${KUBECONFIG_PATH}"
  printf 'export KUBECONFIG=%s\n' "${KUBECONFIG_PATH}"
}

cmd_up() {
  take_lock
  local start="${SECONDS}"
  if [[ -f "${STATE_DIR}/kube-apiserver.args" ]]; then
    if etcd_running && apiserver_running && readyz_ok "$(cat "${STATE_DIR}/kube-apiserver.port")"; then
      log "local cluster is already running (https://127.0.0.1:$(cat "${STATE_DIR}/kube-apiserver.port")); reusing it"
      print_usage_hint
      return 0
    fi
    # Partially running (or stopped after a reboot): restart from the stored state.
    log "found existing state in ${STATE_DIR} but the cluster is not fully running; restarting it with the same data and ports"
    stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver
    mkdir -p "${STATE_DIR}"
    resolve_binaries
    if ! etcd_running; then start_etcd; fi
    start_apiserver
    write_kubeconfig "$(cat "${STATE_DIR}/kube-apiserver.port")"
    log "local cluster is up ($((SECONDS - start))s)"
    print_usage_hint
    return 0
  fi

  # Fresh start. Clean out leftovers of a half-finished earlier `up`.
  stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver
  stop_process "${STATE_DIR}/etcd.pid" etcd
  rm -rf "${STATE_DIR}"
  mkdir -p "${STATE_DIR}"
  resolve_binaries
  log "creating certificates in ${PKI_DIR}"
  gen_certs
  write_audit_policy
  write_etcd_args
  start_etcd
  write_apiserver_args
  start_apiserver
  write_kubeconfig "$(cat "${STATE_DIR}/kube-apiserver.port")"
  log "local cluster is up ($((SECONDS - start))s): $("${APISERVER_BIN}" --version), etcd $("${ETCD_BIN}" --version | sed -n 's/^etcd Version: //p')"
  log "audit log: ${AUDIT_LOG}"
  print_usage_hint
}

cmd_down() {
  take_lock
  if [[ -d "${STATE_DIR}" ]]; then
    stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver
    stop_process "${STATE_DIR}/etcd.pid" etcd
    rm -rf "${STATE_DIR}"
    log "local cluster is down; removed ${STATE_DIR}"
  else
    log "local cluster is not running (no ${STATE_DIR})"
  fi
}

cmd_status() {
  local rc=0 port
  if [[ ! -d "${STATE_DIR}" ]]; then
    printf 'local cluster: not running (no state in %s)\n' "${STATE_DIR}"
    return 1
  fi
  if etcd_running; then
    printf 'etcd:           running  pid %s  client http://127.0.0.1:%s  peer 127.0.0.1:%s\n' \
      "$(read_pid "${STATE_DIR}/etcd.pid")" "$(cat "${STATE_DIR}/etcd.port")" "$(cat "${STATE_DIR}/etcd-peer.port")"
  else
    printf 'etcd:           NOT running\n'
    rc=1
  fi
  port="$(cat "${STATE_DIR}/kube-apiserver.port" 2>/dev/null || echo '?')"
  if apiserver_running; then
    if readyz_ok "${port}"; then
      printf 'kube-apiserver: running  pid %s  https://127.0.0.1:%s  (readyz ok)\n' "$(read_pid "${STATE_DIR}/kube-apiserver.pid")" "${port}"
    else
      printf 'kube-apiserver: running  pid %s  https://127.0.0.1:%s  (NOT ready)\n' "$(read_pid "${STATE_DIR}/kube-apiserver.pid")" "${port}"
      rc=1
    fi
  else
    printf 'kube-apiserver: NOT running  (port %s)\n' "${port}"
    rc=1
  fi
  printf 'kubeconfig:     %s\n' "${KUBECONFIG_PATH}"
  printf 'audit log:      %s\n' "${AUDIT_LOG}"
  printf 'logs:           %s/etcd.log, %s/kube-apiserver.log\n' "${STATE_DIR}" "${STATE_DIR}"
  return "${rc}"
}

cmd_stop_apiserver() {
  local mode="term"
  case "${1:-}" in
    "") ;;
    --kill) mode="kill" ;;
    *) die "unknown option '$1' for stop-apiserver (expected --kill)" ;;
  esac
  take_lock
  [[ -d "${STATE_DIR}" ]] || die "local cluster is not set up; run 'hack/local-cluster.sh up'"
  if ! apiserver_running; then
    log "kube-apiserver is not running"
    return 0
  fi
  stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver "${mode}"
  log "kube-apiserver stopped (etcd keeps running); 'hack/local-cluster.sh start-apiserver' starts it on port $(cat "${STATE_DIR}/kube-apiserver.port") again"
}

cmd_start_apiserver() {
  take_lock
  [[ -f "${STATE_DIR}/kube-apiserver.args" ]] || die "local cluster is not set up; run 'hack/local-cluster.sh up'"
  etcd_running || die "etcd is not running; run 'hack/local-cluster.sh up' (it restarts both from the stored state)"
  if apiserver_running; then
    if readyz_ok "$(cat "${STATE_DIR}/kube-apiserver.port")"; then
      log "kube-apiserver is already running"
      return 0
    fi
    stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver
  fi
  start_apiserver
}

cmd_build() {
  "${HACK_DIR}/build-control-plane.sh" all
}

main() {
  local verb="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "${verb}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    stop-apiserver) cmd_stop_apiserver "$@" ;;
    start-apiserver) cmd_start_apiserver ;;
    build) cmd_build ;;
    kubeconfig) printf '%s\n' "${KUBECONFIG_PATH}" ;;
    -h | --help | help | "")
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      [[ -n "${verb}" ]]
      ;;
    *)
      log "unknown verb '${verb}'"
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
      return 2
      ;;
  esac
}

main "$@"
