#!/usr/bin/env bash
# A real, local Kubernetes control plane on loopback, without containers or a real kubelet:
#   etcd + kube-apiserver (RBAC, audit log)              -- the API the operator talks to
#   kube-controller-manager (leader-elected, own identity) -- node lifecycle, GC, namespaces, SAs ...
#   kube-scheduler (leader-elected, own identity)          -- binds pods to nodes
#   KWOK (sigs.k8s.io/kwok)                                -- kubelet simulator for the nodes annotated
#                                                             kwok.x-k8s.io/node=fake: Ready, Lease
#                                                             renewals, status heartbeats, pods Running,
#                                                             deleted pods finish deleting
# Nodes without that annotation behave like nodes whose kubelet died: the node lifecycle controller
# marks them Unknown and taints them node.kubernetes.io/unreachable after the grace period.
# Binaries come from hack/build-control-plane.sh (built once into a cache outside the repo) or
# from $KUBEBUILDER_ASSETS.
#
# Usage: hack/local-cluster.sh <verb>
#   up               build/find binaries, create certs, start all components, wait until they
#                    are healthy, write the kubeconfig (reuses a running cluster, restarts what died)
#   down             stop everything and delete the state dir (succeeds if nothing runs)
#   status           show every component (pid, version, log); exit 1 when one is not running
#   stop-apiserver [--kill]
#                    stop only kube-apiserver (SIGTERM, or SIGKILL with --kill); the rest keeps running
#   start-apiserver  start kube-apiserver again on the same port with the same args, wait for /readyz
#                    (and restart a controller-manager/scheduler that gave up during a long outage)
#   pause-etcd       fault injection: freeze etcd (SIGSTOP); kube-apiserver's requests hang until
#   resume-etcd      it is thawed again (SIGCONT); `down` also thaws it before stopping it
#   compact-etcd     write a key outside the API's prefix and compact etcd's history up to it: between
#                    stop-apiserver and start-apiserver, every watch that resumes from an earlier
#                    resourceVersion (from the restarted API server's watch cache, filled at the new
#                    revision, or from etcd) is told 410 Gone and must relist (the bench's scale scenario)
#   build            only build/find the binaries
#   kubeconfig       print the kubeconfig path
#
# State (certs, etcd data, logs, pids, ports, args, kubeconfigs, audit log) lives in
# <repo>/target/local-cluster/ (or $LOCAL_CLUSTER_STATE_DIR); the lock file sits beside it
# (<repo>/target/.local-cluster.lock by default).
#
# Environment:
#   LOCAL_CLUSTER_STATE_DIR      state directory (default target/local-cluster; a relative path is taken
#                                from the repository root). Clusters with different state dirs are fully
#                                independent (own ports, lock, audit log): `make bench` uses target/bench-cluster.
#   LOCAL_CLUSTER_COMPONENTS     all (default): the five components above; apiserver: only etcd +
#                                kube-apiserver with the ServiceAccount and TaintNodesByCondition
#                                admission plugins off (the envtest-like cluster of earlier versions)
#   K8S_VERSION                  Kubernetes version of kube-apiserver, kube-controller-manager and
#                                kube-scheduler: v1.32.13, v1.34.4 (default) or v1.37.2 (KUBE_VERSION: older name)
#   KUBEBUILDER_ASSETS     directory with prebuilt etcd + kube-apiserver (skips their build)
#   GPUINV_CACHE_DIR       binary cache root (see hack/build-control-plane.sh)
#   ETCD_VERSION, KWOK_VERSION   versions to build (defaults v3.6.16, v0.8.0)
#   LOCAL_CLUSTER_NODE_MONITOR_GRACE_PERIOD
#                                how long a node may miss Lease renewals before the node lifecycle
#                                controller marks it Unknown (default 40s; Kubernetes' default is 50s)
#   LOCAL_CLUSTER_NODE_STATUS_SECS
#                                how often KWOK rewrites a managed node's status (conditions' heartbeat
#                                times), like a kubelet's status update: every N to 2N seconds (default 10,
#                                kubelet's nodeStatusUpdateFrequency; KWOK's own stage waits 10-20 minutes)
#   LOCAL_CLUSTER_READY_TIMEOUT  seconds to wait for readiness (default 90)
#   LOCAL_CLUSTER_ETCD_QUOTA_BYTES
#                                etcd's --quota-backend-bytes (default: etcd's, 2 GiB); `make soak` and the
#                                bench's scale scenario raise it
#   LOCAL_CLUSTER_REQUEST_TIMEOUT
#                                kube-apiserver's --request-timeout, e.g. 5m (default: the release's, 1m): the
#                                longest a request other than a watch may take; the bench's scale scenario raises
#                                it for unpaginated LISTs of 65,000 nodes. Read at `up` (the args are stored).
#   LOCAL_CLUSTER_FEATURE_GATES  extra --feature-gates for kube-apiserver, kube-controller-manager and kube-scheduler
#                                (e.g. DRAPartitionableDevicesType=true), added to the script's own: DRADeviceTaints
#                                on 1.33-1.36, DRAConsumableCapacity on 1.34-1.35, DRAResourcePoolStatus on 1.36-1.37
#                                (see feature_gates)
#   LOCAL_CLUSTER_RUNTIME_CONFIG extra --runtime-config for kube-apiserver, added to the script's own:
#                                resource.k8s.io/v1alpha3=true on 1.33-1.37 (see runtime_config)
#                                Both are read when the components' args are written (`up` of a new cluster).
#   Opt-in kube-apiserver flags, applied at `up`, and by `start-apiserver` whenever one of them is set (so a
#   fault test restarts the API server with them, and without them by setting them to 0):
#   LOCAL_CLUSTER_WATCH_EXPIRY=1 no watch cache for nodes and pods (their watches are served by etcd) and etcd
#                                compacted every LOCAL_CLUSTER_COMPACTION_INTERVAL (default 2s): a watch broken
#                                for a few seconds cannot resume (410 Gone) and must relist
#   LOCAL_CLUSTER_APF=1          API Priority and Fairness on (off by default: --enable-priority-and-fairness=false)
#   The token file pki/tokens.csv (--token-auth-file, always on) holds one token of the user gpuinv-token-user
#   (no permissions of its own; tests of token credentials, e.g. an exec credential plugin, bind it the
#   operator's RBAC) and one of gpuinv-token-nobody (which no test ever grants anything: a token's refusal).
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
K8S_VERSION="${K8S_VERSION:-${KUBE_VERSION:-}}" # empty: the build script's default (or the running cluster's)
COMPONENTS="${LOCAL_CLUSTER_COMPONENTS:-all}"
case "${COMPONENTS}" in
  all | apiserver) ;;
  *) printf '[local-cluster] ERROR: LOCAL_CLUSTER_COMPONENTS=%s: expected all or apiserver\n' "${COMPONENTS}" >&2; exit 1 ;;
esac
# Everything that runs in "all" mode, in start order (down stops them in reverse).
ALL_COMPONENTS="etcd kube-apiserver kube-controller-manager kube-scheduler kwok"
# The annotation KWOK selects the nodes it plays kubelet for by (KWOK's usual one).
KWOK_NODE_SELECTOR="kwok.x-k8s.io/node=fake"
# KWOK reads ~/.kwok/kwok.yaml unless its work dir points elsewhere: keep it in the state dir.
export KWOK_WORKDIR="${STATE_DIR}/kwok"
# Node health timing (see hack/README.md "Timing"): KWOK renews each node's Lease every
# KWOK_LEASE_SECONDS/4 = 5s (kubelet: 40s lease, 10s renewals); the node lifecycle controller checks
# every 2s (default 5s) and marks a node Unknown after NODE_MONITOR_GRACE_PERIOD without a renewal
# (default 50s). 40s is what an API-server outage of the fault tests (~20s down + restart + KWOK's
# next renewal) needs so that KWOK's nodes do not flap to Unknown; tests that only look at dead
# nodes can set LOCAL_CLUSTER_NODE_MONITOR_GRACE_PERIOD lower (e.g. 15s) at `up`.
KWOK_LEASE_SECONDS=20
NODE_MONITOR_PERIOD=1s
NODE_MONITOR_GRACE_PERIOD="${LOCAL_CLUSTER_NODE_MONITOR_GRACE_PERIOD:-40s}"
NODE_STATUS_SECS="${LOCAL_CLUSTER_NODE_STATUS_SECS:-10}"
[[ "${NODE_STATUS_SECS}" =~ ^[1-9][0-9]*$ ]] || { printf '[local-cluster] ERROR: LOCAL_CLUSTER_NODE_STATUS_SECS=%s: expected a whole number of seconds\n' "${NODE_STATUS_SECS}" >&2; exit 1; }
# Leader election of controller-manager and scheduler: renewals may fail for up to 45s before a
# component gives up its lease and exits (default 10s), so an API-server restart (fault tests keep it
# down ~20s) does not take them down. start-apiserver restarts them if a longer outage did.
LEADER_ELECT_FLAGS="--leader-elect=true
--leader-elect-lease-duration=60s
--leader-elect-renew-deadline=45s
--leader-elect-retry-period=2s"

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

# The components this state dir runs (recorded at `up`; LOCAL_CLUSTER_COMPONENTS before that).
components() {
  local mode="${COMPONENTS}"
  [[ -f "${STATE_DIR}/components" ]] && mode="$(cat "${STATE_DIR}/components")"
  if [[ "${mode}" == apiserver ]]; then
    printf 'etcd kube-apiserver'
  else
    printf '%s' "${ALL_COMPONENTS}"
  fi
}

# Find (or build) the binaries; record each one's path and version in the state dir.
resolve_binaries() {
  local out name var bin
  if [[ -n "${K8S_VERSION}" ]]; then export K8S_VERSION; fi
  # shellcheck disable=SC2046 # one argument per component
  out="$("${HACK_DIR}/build-control-plane.sh" paths $(components))" || die "could not build or find the binaries (see above)"
  for name in $(components); do
    var="$(printf '%s' "${name}" | tr 'a-z-' 'A-Z_')"
    bin="$(printf '%s\n' "${out}" | sed -n "s/^${var}=//p")"
    [[ -x "${bin}" ]] || die "${name} binary not found at '${bin}'"
    printf '%s\n' "${bin}" >"${STATE_DIR}/${name}.bin"
    binary_version "${bin}" >"${STATE_DIR}/${name}.version"
  done
}

binary_version() { # <binary>
  local v
  v="$("$1" --version 2>/dev/null | head -n 1)" || true
  v="${v#Kubernetes }"
  v="${v#etcd Version: }"
  v="${v#kwok version }"
  v="${v%% *}"
  printf '%s\n' "${v:-?}"
}

# The Kubernetes minor version of kube-apiserver (32, 34, 37...), for flags that differ per release.
kube_minor() {
  sed -n 's/^v1\.\([0-9]*\)\..*/\1/p' "${STATE_DIR}/kube-apiserver.version"
}

# ------------------------------------------------------------------- pki --

# A client certificate <name>.crt/.key in the current directory, signed by ca.crt.
client_cert() { # <name> <subject>
  openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}

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
    client_cert admin "/O=system:masters/CN=admin"
    # The standard identities the bootstrap RBAC policy grants controller-manager and scheduler
    # their permissions to (ClusterRoles system:kube-controller-manager / system:kube-scheduler).
    client_cert kube-controller-manager "/CN=system:kube-controller-manager"
    client_cert kube-scheduler "/CN=system:kube-scheduler"
    # KWOK's own identity; hack/kwok/rbac-*.yaml grant it what a kubelet-simulator needs.
    client_cert kwok "/CN=kwok-controller"
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

# A kubeconfig with embedded certificates for the client certificate pki/<cert>.{crt,key}.
write_kubeconfig() { # <port> [<path> <cert name>]
  local port="$1" path="${2:-${KUBECONFIG_PATH}}" cert="${3:-admin}" tmp
  tmp="${path}.tmp.$$"
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
  - name: ${CONTEXT_NAME}-${cert}
    user:
      client-certificate-data: $(base64 -w0 <"${PKI_DIR}/${cert}.crt")
      client-key-data: $(base64 -w0 <"${PKI_DIR}/${cert}.key")
contexts:
  - name: ${CONTEXT_NAME}
    context:
      cluster: ${CONTEXT_NAME}
      user: ${CONTEXT_NAME}-${cert}
      namespace: default
current-context: ${CONTEXT_NAME}
EOF
  )
  mv -f "${tmp}" "${path}"
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
  if [[ -n "${LOCAL_CLUSTER_ETCD_QUOTA_BYTES:-}" ]]; then
    [[ "${LOCAL_CLUSTER_ETCD_QUOTA_BYTES}" =~ ^[0-9]+$ ]] ||
      die "LOCAL_CLUSTER_ETCD_QUOTA_BYTES=${LOCAL_CLUSTER_ETCD_QUOTA_BYTES}: expected a number of bytes"
    printf '%s\n' "--quota-backend-bytes=${LOCAL_CLUSTER_ETCD_QUOTA_BYTES}" >>"${STATE_DIR}/etcd.args"
  fi
}

# compact-etcd: a revision no watch has seen (a key of its own, outside /registry), then etcd's history
# compacted up to it, through etcd's JSON gateway (no etcdctl needed). Physical: the call returns when done.
cmd_compact_etcd() {
  take_lock
  [[ -d "${STATE_DIR}" ]] || die "local cluster is not set up; run 'hack/local-cluster.sh up'"
  component_running etcd || die "etcd is not running"
  local url answer revision
  url="http://127.0.0.1:$(cat "${STATE_DIR}/etcd.port")/v3/kv"
  answer="$(curl -fsS --max-time 30 -X POST "${url}/put" \
    -d "{\"key\":\"$(printf 'local-cluster/compact-etcd' | base64)\",\"value\":\"$(date +%s | base64)\"}")" ||
    die "etcd refused the put before the compaction"
  revision="$(printf '%s' "${answer}" | sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p')"
  [[ -n "${revision}" ]] || die "no revision in etcd's answer: ${answer}"
  curl -fsS --max-time 600 -X POST "${url}/compaction" -d "{\"revision\":\"${revision}\",\"physical\":true}" >/dev/null ||
    die "etcd refused the compaction to revision ${revision}"
  log "etcd compacted up to revision ${revision}: a watch resuming from an earlier one is told 410 Gone"
}

etcd_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$(cat "${STATE_DIR}/etcd.port")/health" 2>/dev/null | grep -q '"health":"true"'; }

# -------------------------------------------------------- kube-apiserver --

# Admission: the defaults of the release. With the controllers running (LOCAL_CLUSTER_COMPONENTS=all)
# that includes ServiceAccount (pods get the namespace's `default` ServiceAccount and a token volume;
# the serviceaccount controller creates it) and TaintNodesByCondition (a new Node gets
# node.kubernetes.io/not-ready:NoSchedule until the node lifecycle controller sees it Ready), as in
# kind or any real cluster. Without controllers (apiserver mode, as envtest) both are off: nothing
# would create the ServiceAccounts or remove the taint, and fixture Nodes are stored as written.
write_apiserver_args() {
  local port etcd_port admission
  port="$(free_port)"
  etcd_port="$(cat "${STATE_DIR}/etcd.port")"
  printf '%s\n' "${port}" >"${STATE_DIR}/kube-apiserver.port"
  admission=""
  if [[ "$(components)" == "etcd kube-apiserver" ]]; then
    admission="--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"
  fi
  {
    cat <<EOF
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
--allow-privileged=true
--audit-policy-file=${STATE_DIR}/audit-policy.yaml
--audit-log-path=${AUDIT_LOG}
--audit-log-format=json
--audit-log-maxsize=0
--profiling=false
--token-auth-file=${PKI_DIR}/tokens.csv
EOF
    [[ -z "${admission}" ]] || printf '%s\n' "${admission}"
    [[ -z "${LOCAL_CLUSTER_REQUEST_TIMEOUT:-}" ]] || printf '%s\n' "--request-timeout=${LOCAL_CLUSTER_REQUEST_TIMEOUT}"
    apiserver_version_flags
    feature_gate_flags
    runtime_config_flags
    apiserver_opt_in_flags
  } >"${STATE_DIR}/kube-apiserver.args"
}

# The opt-in flags (LOCAL_CLUSTER_WATCH_EXPIRY, LOCAL_CLUSTER_APF; see the usage above), one per line. Every
# flag printed here starts with one of OPT_IN_FLAGS, which `start-apiserver` replaces.
OPT_IN_FLAGS="--watch-cache-sizes= --etcd-compaction-interval= --enable-priority-and-fairness="
apiserver_opt_in_flags() {
  local expiry="${LOCAL_CLUSTER_WATCH_EXPIRY:-0}" apf="${LOCAL_CLUSTER_APF:-0}"
  local interval="${LOCAL_CLUSTER_COMPACTION_INTERVAL:-2s}"
  [[ "${expiry}" == 0 || "${expiry}" == 1 ]] || die "LOCAL_CLUSTER_WATCH_EXPIRY=${expiry}: expected 0 or 1"
  [[ "${apf}" == 0 || "${apf}" == 1 ]] || die "LOCAL_CLUSTER_APF=${apf}: expected 0 or 1"
  [[ "${interval}" =~ ^[1-9][0-9]*(ms|s|m)$ ]] || die "LOCAL_CLUSTER_COMPACTION_INTERVAL=${interval}: expected a duration such as 2s"
  if [[ "${expiry}" == 1 ]]; then
    # Only 0 is meaningful in --watch-cache-sizes (it disables the cache); etcd then answers a watch from a
    # compacted revision with 410 Gone.
    printf '%s\n' "--watch-cache-sizes=nodes#0,pods#0" "--etcd-compaction-interval=${interval}"
  fi
  if [[ "${apf}" == 1 ]]; then
    printf '%s\n' "--enable-priority-and-fairness=true"
  else
    printf '%s\n' "--enable-priority-and-fairness=false"
  fi
}

# start-apiserver with an opt-in variable set: the stored args with the opt-in flags replaced.
rewrite_apiserver_opt_in_flags() {
  local args_file="${STATE_DIR}/kube-apiserver.args" flag pattern="" flags
  [[ -v LOCAL_CLUSTER_WATCH_EXPIRY || -v LOCAL_CLUSTER_APF ]] || return 0
  flags="$(apiserver_opt_in_flags)" || exit 1
  for flag in ${OPT_IN_FLAGS}; do pattern="${pattern:+${pattern}|}^${flag}"; done
  { grep -Ev -- "${pattern}" "${args_file}" || true; printf '%s\n' "${flags}"; } >"${args_file}.new"
  mv -f "${args_file}.new" "${args_file}"
  log "kube-apiserver opt-in flags now: $(printf '%s' "${flags}" | tr '\n' ' ')"
}

# pki/tokens.csv for --token-auth-file: one random token of each test user (token,user,uid).
write_token_file() {
  (
    umask 077
    for user in gpuinv-token-user gpuinv-token-nobody; do
      printf '%s,%s,%s\n' "$(openssl rand -hex 24)" "${user}" "${user}"
    done >"${PKI_DIR}/tokens.csv"
  ) || die "writing ${PKI_DIR}/tokens.csv failed"
}

# Flags that differ between the supported releases (see hack/README.md, "Kubernetes versions").
apiserver_version_flags() {
  local minor
  minor="$(kube_minor)"
  # From v1.37 the lease endpoint reconciler refuses a loopback --advertise-address ("cannot use
  # public IP 127.0.0.1 with endpoint reconciler: may not be in the loopback range"). Nothing in
  # this cluster reaches the API server through the `kubernetes` Service, so v1.37+ runs without
  # reconciling its endpoints; earlier releases keep the default (lease, endpoints 127.0.0.1).
  if [[ -n "${minor}" ]] && ((minor >= 37)); then
    printf '%s\n' "--endpoint-reconciler-type=none"
  fi
}

# Feature gates, the same for kube-apiserver, kube-controller-manager and kube-scheduler: the
# release's defaults below, then LOCAL_CLUSTER_FEATURE_GATES (opt-in; a gate named twice takes the
# later value). DRADeviceTaints on 1.33-1.36 (alpha there, off by default): without it the API
# server drops spec.devices[].taints from ResourceSlices, so NVIDIA's health taints
# (gpu.nvidia.com/xid) reach nobody; 1.37 keeps taints by default. The gate also needs the
# v1alpha3 DeviceTaintRule API served, or kube-scheduler schedules nothing (see runtime_config).
# DRAConsumableCapacity on 1.34-1.35 (KEP-5075, alpha there, off by default; beta, on, from 1.36): without
# it kube-apiserver drops a slice's allowMultipleAllocations and capacity requestPolicy and a claim's
# capacity requests, so no device is shared by several claims; kube-scheduler allocates such claims (and
# writes each result's shareID and consumedCapacity) only with it (tests/shares_dra.rs).
# DRAResourcePoolStatus on 1.36-1.37 (KEP-5677, alpha since 1.36, off by default): the referee test
# (tests/dra_referee.rs) compares the operator's per-pool counts with those of kube-controller-manager's
# resourcepoolstatusrequest-controller, which only runs with the gate; kube-apiserver needs it too (it
# creates the controller's bootstrap ClusterRole only then). DRAPartitionableDevicesType on 1.37 (alpha,
# off by default): kube-apiserver drops a request's spec.defaultPartitionTypeAttribute (and a slice's
# spec.partitionTypeAttribute) without it, so the controller never reports partitionSummary, which the
# referee compares with the operator's stillFit. 1.38+ is not known yet: add it when it is.
feature_gates() {
  local minor gates=()
  minor="$(kube_minor)"
  if [[ -n "${minor}" ]] && ((minor >= 33 && minor <= 36)); then
    gates+=("DRADeviceTaints=true")
  fi
  if [[ -n "${minor}" ]] && ((minor >= 34 && minor <= 35)); then
    gates+=("DRAConsumableCapacity=true")
  fi
  if [[ -n "${minor}" ]] && ((minor >= 36 && minor <= 37)); then
    gates+=("DRAResourcePoolStatus=true")
  fi
  if [[ -n "${minor}" ]] && ((minor == 37)); then
    gates+=("DRAPartitionableDevicesType=true")
  fi
  [[ -z "${LOCAL_CLUSTER_FEATURE_GATES:-}" ]] || gates+=("${LOCAL_CLUSTER_FEATURE_GATES}")
  local IFS=,
  printf '%s' "${gates[*]}"
}

# kube-apiserver's --runtime-config: the release's defaults, then LOCAL_CLUSTER_RUNTIME_CONFIG.
# resource.k8s.io/v1alpha3 (off by default) on 1.33-1.37: DeviceTaintRules for DRADeviceTaints on
# 1.33-1.36 (see feature_gates), and ResourcePoolStatusRequests (served from 1.36) for the referee test
# on 1.36-1.37.
runtime_config() {
  local minor config=()
  minor="$(kube_minor)"
  if [[ -n "${minor}" ]] && ((minor >= 33 && minor <= 37)); then
    config+=("resource.k8s.io/v1alpha3=true")
  fi
  [[ -z "${LOCAL_CLUSTER_RUNTIME_CONFIG:-}" ]] || config+=("${LOCAL_CLUSTER_RUNTIME_CONFIG}")
  local IFS=,
  printf '%s' "${config[*]}"
}

feature_gate_flags() {
  local gates
  gates="$(feature_gates)"
  [[ -z "${gates}" ]] || printf '%s\n' "--feature-gates=${gates}"
}

runtime_config_flags() {
  local config
  config="$(runtime_config)"
  [[ -z "${config}" ]] || printf '%s\n' "--runtime-config=${config}"
}

readyz_ok() { # <port>
  curl -fsS --max-time 2 --cacert "${PKI_DIR}/ca.crt" \
    --cert "${PKI_DIR}/admin.crt" --key "${PKI_DIR}/admin.key" \
    "https://127.0.0.1:$1/readyz" 2>/dev/null | grep -qx ok
}

apiserver_ready() { readyz_ok "$(cat "${STATE_DIR}/kube-apiserver.port")"; }

# An admin request to the API server: <method> <path> [curl args...]; prints the body.
api() { # <method> <path> [curl args...]
  local method="$1" path="$2"
  shift 2
  curl -sS --max-time 10 --cacert "${PKI_DIR}/ca.crt" --cert "${PKI_DIR}/admin.crt" --key "${PKI_DIR}/admin.key" \
    -X "${method}" "https://127.0.0.1:$(cat "${STATE_DIR}/kube-apiserver.port")${path}" "$@"
}

# Create (once) the RBAC objects for KWOK's identity from hack/kwok/ (kubectl is not required).
apply_kwok_rbac() {
  local f path code
  for f in rbac-clusterrole.yaml rbac-clusterrolebinding.yaml; do
    case "${f}" in
      rbac-clusterrole.yaml) path=/apis/rbac.authorization.k8s.io/v1/clusterroles ;;
      *) path=/apis/rbac.authorization.k8s.io/v1/clusterrolebindings ;;
    esac
    code="$(api POST "${path}" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/yaml' \
      --data-binary "@${HACK_DIR}/kwok/${f}")" || true
    [[ "${code}" == 201 || "${code}" == 409 ]] || die "creating hack/kwok/${f} failed (HTTP ${code:-none})"
  done
}

# ------------------------------------------- controller-manager, scheduler --

# controller-manager: the real controllers (node lifecycle, garbage collector, namespace,
# serviceaccount + token, deployment/replicaset/job ..., CSR signing), each with its own
# ServiceAccount credentials (--use-service-account-credentials), as kubeadm runs it.
write_controller_manager_args() {
  local port kc="${STATE_DIR}/kube-controller-manager.kubeconfig"
  port="$(free_port)"
  printf '%s\n' "${port}" >"${STATE_DIR}/kube-controller-manager.port"
  cat >"${STATE_DIR}/kube-controller-manager.args" <<EOF
--kubeconfig=${kc}
--authentication-kubeconfig=${kc}
--authorization-kubeconfig=${kc}
--bind-address=127.0.0.1
--secure-port=${port}
--cert-dir=${STATE_DIR}/kube-controller-manager-certs
${LEADER_ELECT_FLAGS}
--use-service-account-credentials=true
--service-account-private-key-file=${PKI_DIR}/sa.key
--root-ca-file=${PKI_DIR}/ca.crt
--cluster-signing-cert-file=${PKI_DIR}/ca.crt
--cluster-signing-key-file=${PKI_DIR}/ca.key
--cluster-name=local-cluster
--node-monitor-period=${NODE_MONITOR_PERIOD}
--node-monitor-grace-period=${NODE_MONITOR_GRACE_PERIOD}
--profiling=false
EOF
  feature_gate_flags >>"${STATE_DIR}/kube-controller-manager.args"
}

write_scheduler_args() {
  local port kc="${STATE_DIR}/kube-scheduler.kubeconfig"
  port="$(free_port)"
  printf '%s\n' "${port}" >"${STATE_DIR}/kube-scheduler.port"
  cat >"${STATE_DIR}/kube-scheduler.args" <<EOF
--kubeconfig=${kc}
--authentication-kubeconfig=${kc}
--authorization-kubeconfig=${kc}
--bind-address=127.0.0.1
--secure-port=${port}
--cert-dir=${STATE_DIR}/kube-scheduler-certs
${LEADER_ELECT_FLAGS}
--profiling=false
EOF
  feature_gate_flags >>"${STATE_DIR}/kube-scheduler.args"
}

# KWOK: plays kubelet for the nodes annotated kwok.x-k8s.io/node=fake with the stages copied from
# KWOK's module into hack/kwok/ (node: fast + heartbeat-with-lease, pod: fast). Its own server
# (healthz only here) listens on loopback. Pod IPs come from 10.244.0.0/16 (KWOK's default,
# 10.0.0.0/24, is this cluster's service range). KWOK_WORKDIR keeps ~/.kwok/kwok.yaml out.
write_kwok_args() {
  local port f
  port="$(free_port)"
  printf '%s\n' "${port}" >"${STATE_DIR}/kwok.port"
  mkdir -p "${STATE_DIR}/kwok"
  cp "${HACK_DIR}"/kwok/node-*.yaml "${HACK_DIR}"/kwok/pod-*.yaml "${STATE_DIR}/kwok/"
  # Status heartbeats every NODE_STATUS_SECS..2*NODE_STATUS_SECS (the stage's delay and jitter bound), so a
  # test sees heartbeats within a minute: the operator must ignore them.
  sed -i -e "s/durationMilliseconds: 600000/durationMilliseconds: $((NODE_STATUS_SECS * 1000))/" \
    -e "s/jitterDurationMilliseconds: 610000/jitterDurationMilliseconds: $((NODE_STATUS_SECS * 2000))/" \
    "${STATE_DIR}/kwok/node-heartbeat-with-lease.yaml"
  grep -q "durationMilliseconds: $((NODE_STATUS_SECS * 1000))$" "${STATE_DIR}/kwok/node-heartbeat-with-lease.yaml" ||
    die "hack/kwok/node-heartbeat-with-lease.yaml no longer has the delay this script rewrites (600000 ms)"
  {
    cat <<EOF
--kubeconfig=${STATE_DIR}/kwok.kubeconfig
--manage-all-nodes=false
--manage-nodes-with-annotation-selector=${KWOK_NODE_SELECTOR}
--node-lease-duration-seconds=${KWOK_LEASE_SECONDS}
--node-ip=127.0.0.1
--cidr=10.244.0.0/16
--server-address=127.0.0.1:${port}
EOF
    for f in "${STATE_DIR}"/kwok/node-*.yaml "${STATE_DIR}"/kwok/pod-*.yaml; do
      printf -- '--config=%s\n' "${f}"
    done
  } >"${STATE_DIR}/kwok.args"
}

# Health of a component: <name> -> exit 0 when it answers.
component_healthy() { # <name>
  local port
  port="$(cat "${STATE_DIR}/$1.port" 2>/dev/null || true)"
  [[ -n "${port}" ]] || return 1
  case "$1" in
    etcd) etcd_healthy ;;
    kube-apiserver) readyz_ok "${port}" ;;
    # Self-signed serving certificates (--cert-dir); /healthz is always allowed.
    kube-controller-manager | kube-scheduler)
      curl -fsSk --max-time 2 "https://127.0.0.1:${port}/healthz" 2>/dev/null | grep -qx ok ;;
    kwok) curl -fsS --max-time 2 "http://127.0.0.1:${port}/healthz" >/dev/null 2>&1 ;;
  esac
}

component_running() { pid_alive "${STATE_DIR}/$1.pid" "$1"; }

# A controller-manager or scheduler that died (e.g. "leaderelection lost" after a long API-server
# outage) leaves its leader Lease in kube-system behind; a new instance would wait a full lease
# duration (60s) before it takes over, with no controllers running meanwhile. The holder is known
# to be gone (we only start what is not running), so delete the Lease and let the new one take it.
release_stale_leader_lease() { # <name>
  local code
  code="$(api DELETE "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$1" -o /dev/null -w '%{http_code}')" || true
  if [[ "${code}" == 200 ]]; then
    log "deleted the leader Lease kube-system/$1 left by the previous $1"
  fi
}

# Start <name> from its stored binary and args and wait until it is healthy.
start_component() { # <name>
  local name="$1" bin port i start="${SECONDS}" log_file="${STATE_DIR}/$1.log" pidfile="${STATE_DIR}/$1.pid"
  case "${name}" in
    kube-controller-manager | kube-scheduler) release_stale_leader_lease "${name}" ;;
  esac
  bin="$(cat "${STATE_DIR}/${name}.bin")"
  port="$(cat "${STATE_DIR}/${name}.port")"
  # The port may still be held for a moment by a just-killed instance.
  for ((i = 0; i < 100; i++)); do
    port_in_use "${port}" || break
    sleep 0.1
  done
  if port_in_use "${port}"; then
    die "${name} port ${port} is already in use by another process; run 'hack/local-cluster.sh down' and 'up' again"
  fi
  log "starting ${name} $(cat "${STATE_DIR}/${name}.version") (port ${port}), log: ${log_file}"
  start_process "${bin}" "${STATE_DIR}/${name}.args" "${log_file}" "${pidfile}"
  for ((i = 0; i < READY_TIMEOUT * 5; i++)); do
    # (kill -0, not pid_alive: right after the fork the cmdline is not yet the binary's.)
    if ! kill -0 "$(read_pid "${pidfile}")" 2>/dev/null; then
      show_log_tail "${log_file}"
      rm -f "${pidfile}"
      die "${name} exited during startup (log: ${log_file})"
    fi
    if component_healthy "${name}"; then
      [[ "${name}" == etcd ]] || log "${name} is ready ($((SECONDS - start))s)"
      return 0
    fi
    sleep 0.2
  done
  show_log_tail "${log_file}"
  stop_process "${pidfile}" "${name}" kill
  die "${name} did not become healthy within ${READY_TIMEOUT}s (log: ${log_file})"
}

# Start every component of this state dir that is not running (etcd first, KWOK last).
start_missing_components() {
  local name
  for name in $(components); do
    if ! component_running "${name}"; then
      start_component "${name}"
    fi
  done
}

# Pods can only be created once the serviceaccount controller made `default` in their namespace
# (ServiceAccount admission); wait for it in `default` so a test may create pods right after `up`.
wait_default_serviceaccount() {
  local i
  for ((i = 0; i < READY_TIMEOUT * 5; i++)); do
    if api GET /api/v1/namespaces/default/serviceaccounts/default -o /dev/null -f 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  die "the ServiceAccount default/default did not appear within ${READY_TIMEOUT}s; see ${STATE_DIR}/kube-controller-manager.log"
}

# ----------------------------------------------------------------- verbs --

print_usage_hint() {
  printf 'kubeconfig: %s\n' "${KUBECONFIG_PATH}"
  printf 'export KUBECONFIG=%s\n' "${KUBECONFIG_PATH}"
}

all_running() {
  local name
  for name in $(components); do
    component_running "${name}" || return 1
  done
  apiserver_ready
}

# Refuse to reuse a cluster of another version or component set than asked for explicitly.
check_reuse() {
  local running
  running="$(cat "${STATE_DIR}/kube-apiserver.version" 2>/dev/null || true)"
  if [[ -n "${K8S_VERSION}" && -n "${running}" && "${running}" != "${K8S_VERSION}" ]]; then
    die "the cluster in ${STATE_DIR} runs Kubernetes ${running}, not K8S_VERSION=${K8S_VERSION}; run 'hack/local-cluster.sh down' first"
  fi
  if [[ -n "${LOCAL_CLUSTER_COMPONENTS:-}" && -f "${STATE_DIR}/components" && "$(cat "${STATE_DIR}/components")" != "${COMPONENTS}" ]]; then
    die "the cluster in ${STATE_DIR} was created with LOCAL_CLUSTER_COMPONENTS=$(cat "${STATE_DIR}/components"), not ${COMPONENTS}; run 'hack/local-cluster.sh down' first"
  fi
  local flag
  for flag in $(feature_gate_flags) $(runtime_config_flags); do
    grep -qxF -- "${flag}" "${STATE_DIR}/kube-apiserver.args" ||
      die "the cluster in ${STATE_DIR} was not started with ${flag}; run 'hack/local-cluster.sh down' first"
  done
  local name
  for name in $(components); do
    [[ -f "${STATE_DIR}/${name}.args" ]] ||
      die "${STATE_DIR} has no ${name}.args (created by an older hack/local-cluster.sh?); run 'hack/local-cluster.sh down' and 'up' again"
  done
}

cmd_up() {
  take_lock
  local start="${SECONDS}" name
  if [[ -f "${STATE_DIR}/kube-apiserver.args" ]]; then
    check_reuse
    if all_running; then
      log "local cluster is already running (https://127.0.0.1:$(cat "${STATE_DIR}/kube-apiserver.port"), Kubernetes $(cat "${STATE_DIR}/kube-apiserver.version")); reusing it"
      print_usage_hint
      return 0
    fi
    # Partially running (or stopped after a reboot): restart from the stored state.
    log "found existing state in ${STATE_DIR} but the cluster is not fully running; restarting what is missing with the same data and ports"
    if component_running kube-apiserver && ! apiserver_ready; then
      stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver
    fi
    # Use the recorded version, not the default, unless K8S_VERSION says otherwise (checked above).
    K8S_VERSION="${K8S_VERSION:-$(cat "${STATE_DIR}/kube-apiserver.version")}"
    resolve_binaries
    start_missing_components
    write_kubeconfig "$(cat "${STATE_DIR}/kube-apiserver.port")"
    log "local cluster is up ($((SECONDS - start))s)"
    print_usage_hint
    return 0
  fi

  # Fresh start. Clean out leftovers of a half-finished earlier `up`.
  for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop_process "${STATE_DIR}/${name}.pid" "${name}"
  done
  rm -rf "${STATE_DIR}"
  mkdir -p "${STATE_DIR}"
  printf '%s\n' "${COMPONENTS}" >"${STATE_DIR}/components"
  resolve_binaries
  log "creating certificates in ${PKI_DIR}"
  gen_certs
  write_token_file
  write_audit_policy
  write_etcd_args
  start_component etcd
  write_apiserver_args
  start_component kube-apiserver
  write_kubeconfig "$(cat "${STATE_DIR}/kube-apiserver.port")"
  if [[ "${COMPONENTS}" == all ]]; then
    local port
    port="$(cat "${STATE_DIR}/kube-apiserver.port")"
    write_kubeconfig "${port}" "${STATE_DIR}/kube-controller-manager.kubeconfig" kube-controller-manager
    write_kubeconfig "${port}" "${STATE_DIR}/kube-scheduler.kubeconfig" kube-scheduler
    write_kubeconfig "${port}" "${STATE_DIR}/kwok.kubeconfig" kwok
    apply_kwok_rbac
    write_controller_manager_args
    write_scheduler_args
    write_kwok_args
    start_component kube-controller-manager
    start_component kube-scheduler
    start_component kwok
    wait_default_serviceaccount
  fi
  log "local cluster is up ($((SECONDS - start))s): Kubernetes $(cat "${STATE_DIR}/kube-apiserver.version"), etcd $(cat "${STATE_DIR}/etcd.version")$([[ "${COMPONENTS}" == all ]] && printf ', KWOK %s' "$(cat "${STATE_DIR}/kwok.version")")"
  log "audit log: ${AUDIT_LOG}"
  print_usage_hint
}

cmd_down() {
  take_lock
  local name
  if [[ -d "${STATE_DIR}" ]]; then
    # A paused etcd (pause-etcd) would ignore SIGTERM until thawed.
    if component_running etcd; then kill -CONT "$(read_pid "${STATE_DIR}/etcd.pid")" 2>/dev/null || true; fi
    for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
      stop_process "${STATE_DIR}/${name}.pid" "${name}"
    done
    rm -rf "${STATE_DIR}"
    log "local cluster is down; removed ${STATE_DIR}"
  else
    log "local cluster is not running (no ${STATE_DIR})"
  fi
}

cmd_status() {
  local rc=0 name port state health
  if [[ ! -d "${STATE_DIR}" ]]; then
    printf 'local cluster: not running (no state in %s)\n' "${STATE_DIR}"
    return 1
  fi
  printf '%-24s %-12s %-8s %-10s %-32s %s\n' COMPONENT STATE PID VERSION ENDPOINT LOG
  for name in $(components); do
    port="$(cat "${STATE_DIR}/${name}.port" 2>/dev/null || echo '?')"
    case "${name}" in
      etcd) port="http://127.0.0.1:${port}" ;;
      kwok) port="http://127.0.0.1:${port}" ;;
      *) port="https://127.0.0.1:${port}" ;;
    esac
    if component_running "${name}"; then
      if component_healthy "${name}"; then health="running"; else health="NOT-HEALTHY"; rc=1; fi
      state="$(read_pid "${STATE_DIR}/${name}.pid")"
    else
      health="NOT-RUNNING"
      state="-"
      rc=1
    fi
    printf '%-24s %-12s %-8s %-10s %-32s %s\n' "${name}" "${health}" "${state}" \
      "$(cat "${STATE_DIR}/${name}.version" 2>/dev/null || echo '?')" "${port}" "${STATE_DIR}/${name}.log"
  done
  printf 'kubeconfig: %s\n' "${KUBECONFIG_PATH}"
  printf 'audit log:  %s\n' "${AUDIT_LOG}"
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
  if ! component_running kube-apiserver; then
    log "kube-apiserver is not running"
    return 0
  fi
  stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver "${mode}"
  log "kube-apiserver stopped (the other components keep running); 'hack/local-cluster.sh start-apiserver' starts it on port $(cat "${STATE_DIR}/kube-apiserver.port") again"
}

cmd_start_apiserver() {
  take_lock
  [[ -f "${STATE_DIR}/kube-apiserver.args" ]] || die "local cluster is not set up; run 'hack/local-cluster.sh up'"
  component_running etcd || die "etcd is not running; run 'hack/local-cluster.sh up' (it restarts everything from the stored state)"
  if component_running kube-apiserver; then
    if apiserver_ready; then
      log "kube-apiserver is already running"
    else
      stop_process "${STATE_DIR}/kube-apiserver.pid" kube-apiserver
    fi
  fi
  if ! component_running kube-apiserver; then
    rewrite_apiserver_opt_in_flags
    start_component kube-apiserver
  fi
  # controller-manager and scheduler exit when they cannot renew their leader lease for 45s;
  # a kubelet would restart them, here this does.
  local name
  for name in $(components); do
    if ! component_running "${name}"; then
      log "${name} is not running (it gives up after 45s without the API server); restarting it"
      start_component "${name}"
    fi
  done
}

# pause-etcd / resume-etcd: a frozen etcd (a stalled disk, a VM pause) rather than a dead one. The process stays,
# its connections stay open, every request to it waits: what the API server does with that is the fault.
cmd_signal_etcd() { # STOP|CONT
  [[ -d "${STATE_DIR}" ]] || die "local cluster is not set up; run 'hack/local-cluster.sh up'"
  component_running etcd || die "etcd is not running"
  kill "-$1" "$(read_pid "${STATE_DIR}/etcd.pid")"
  log "etcd (pid $(read_pid "${STATE_DIR}/etcd.pid")) $([[ "$1" == STOP ]] && printf 'paused (SIGSTOP); resume-etcd thaws it' || printf 'resumed (SIGCONT)')"
}

cmd_build() {
  if [[ -n "${K8S_VERSION}" ]]; then export K8S_VERSION; fi
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
    pause-etcd) cmd_signal_etcd STOP ;;
    resume-etcd) cmd_signal_etcd CONT ;;
    compact-etcd) cmd_compact_etcd ;;
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
