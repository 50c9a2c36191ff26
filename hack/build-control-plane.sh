#!/usr/bin/env bash
# Build (once) the control-plane binaries used by hack/local-cluster.sh:
#   - etcd            from go.etcd.io/etcd/server/v3 (module: hack/go/etcd)
#   - kube-apiserver  from k8s.io/kubernetes/cmd/kube-apiserver (module: hack/go/kube-apiserver)
#
# Binaries are cached outside the repository, keyed by version:
#   ${GPUINV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-inventory-operator}/bin/<name>-<version>/<name>
# and are only rebuilt when missing. If KUBEBUILDER_ASSETS names a directory that
# contains both `etcd` and `kube-apiserver`, those are used and nothing is built.
#
# Usage: hack/build-control-plane.sh [all|etcd|kube-apiserver|paths]
#   all (default)   ensure both binaries exist (build if needed)
#   etcd            ensure etcd only
#   kube-apiserver  ensure kube-apiserver only
#   paths           like `all`, then print ETCD=<path> and KUBE_APISERVER=<path> on stdout
# All progress output goes to stderr; only `paths` writes to stdout.
#
# Environment:
#   ETCD_VERSION         etcd version to build             (default v3.6.16)
#   KUBE_VERSION         kube-apiserver version to build   (default v1.34.4)
#   GPUINV_CACHE_DIR     cache root (see above)
#   KUBEBUILDER_ASSETS   use prebuilt binaries from this directory instead
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GO_DIR="${HACK_DIR}/go"

ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KUBE_VERSION="${KUBE_VERSION:-v1.34.4}"
CACHE_DIR="${GPUINV_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/gpu-inventory-operator}"
BIN_CACHE="${CACHE_DIR}/bin"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }
die() { printf '[build-control-plane] ERROR: %s\n' "$*" >&2; exit 1; }

etcd_path() { printf '%s/etcd-%s/etcd' "${BIN_CACHE}" "${ETCD_VERSION}"; }
apiserver_path() { printf '%s/kube-apiserver-%s/kube-apiserver' "${BIN_CACHE}" "${KUBE_VERSION}"; }

# If KUBEBUILDER_ASSETS holds both binaries, use them.
assets_dir() {
  if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
    if [[ -x "${KUBEBUILDER_ASSETS}/etcd" && -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]]; then
      printf '%s' "${KUBEBUILDER_ASSETS}"
      return 0
    fi
    log "KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS} does not contain executable etcd and kube-apiserver; ignoring it"
  fi
  return 1
}

require_go() {
  if ! command -v go >/dev/null 2>&1; then
    die "'go' is not installed or not on PATH, and $1 is not built yet.
  Either install Go (>= 1.26, https://go.dev/dl/) so the binaries can be built once into ${BIN_CACHE},
  or point KUBEBUILDER_ASSETS at a directory that contains prebuilt 'etcd' and 'kube-apiserver'
  binaries (e.g. from 'setup-envtest use -p path 1.34.x')."
  fi
}

# Check that the Go module proxy (or the module cache) can serve a module.
check_module_available() { # <module@version> <what>
  local mod="$1" what="$2" out
  if ! out="$(cd "${GO_DIR}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "${mod}" 2>&1)"; then
    die "cannot download ${mod} (needed to build ${what}).
  GOPROXY=$(go env GOPROXY) -- is the Go module proxy reachable? Set GOPROXY to a reachable proxy
  (GOPROXY=off only works when the Go module cache already holds every module), or set
  KUBEBUILDER_ASSETS to a directory containing prebuilt 'etcd' and 'kube-apiserver' binaries.
  go said: $(printf '%s' "${out}" | tail -n 5)"
  fi
}

# Run `go build` in the background, relaying `-v` package names and a heartbeat.
run_go_build() { # <label> <module dir> <output> <ldflags> <package>
  local label="$1" dir="$2" out="$3" ldflags="$4" pkg="$5"
  local start="${SECONDS}" log_file pid n last_pkg hint=""
  log_file="$(mktemp "${TMPDIR:-/tmp}/gpuinv-go-build.XXXXXX")"
  (
    cd "${dir}"
    GOWORK=off CGO_ENABLED=0 exec go build -v -trimpath -buildvcs=false \
      -ldflags "${ldflags}" -o "${out}" "${pkg}"
  ) >"${log_file}" 2>&1 &
  pid=$!
  local ticks=0
  while kill -0 "${pid}" 2>/dev/null; do
    sleep 1
    ticks=$((ticks + 1))
    if ((ticks % 15 == 0)); then
      n="$(wc -l <"${log_file}")"
      last_pkg="$(tail -n 1 "${log_file}" 2>/dev/null || true)"
      log "  still building ${label}... $((SECONDS - start))s, ${n// /} packages compiled${last_pkg:+ (last: ${last_pkg})}"
    fi
  done
  if ! wait "${pid}"; then
    log "go build of ${label} failed; last output:"
    tail -n 40 "${log_file}" >&2
    if grep -qiE 'dial tcp|proxy\.golang|no such host|connection refused|i/o timeout|module lookup disabled' "${log_file}"; then
      hint=" The Go module proxy looks unreachable: check GOPROXY/network, or set KUBEBUILDER_ASSETS to prebuilt binaries."
    fi
    rm -f "${log_file}" "${out}"
    die "building ${pkg} failed (see above).${hint}"
  fi
  rm -f "${log_file}"
  log "  built ${label} in $((SECONDS - start))s"
}

# Install a freshly built temp file atomically.
install_atomically() { # <tmp> <dest>
  chmod 0755 "$1"
  mv -f "$1" "$2"
}

# Prepare the Go module used to build etcd at ETCD_VERSION. Prints the module dir.
etcd_module_dir() {
  local src="${GO_DIR}/etcd" pinned work
  pinned="$(sed -n 's#^require go.etcd.io/etcd/server/v3 \(v[^ ]*\).*#\1#p' "${src}/go.mod")"
  if [[ "${pinned}" == "${ETCD_VERSION}" ]]; then
    printf '%s' "${src}"
    return
  fi
  log "hack/go/etcd pins ${pinned:-?}; generating a module for ${ETCD_VERSION} in a temp dir"
  work="$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-etcd-mod.XXXXXX")"
  cp "${src}/main.go" "${work}/"
  printf 'module gpu-inventory-operator/hack/go/etcd\n\ngo 1.24\n' >"${work}/go.mod"
  (cd "${work}" && GOWORK=off go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2 && GOWORK=off go mod tidy >&2)
  printf '%s' "${work}"
}

build_etcd() {
  local dest tmp dir
  dest="$(etcd_path)"
  if [[ -x "${dest}" ]]; then
    log "etcd ${ETCD_VERSION}: using cached ${dest}"
    return
  fi
  require_go "etcd ${ETCD_VERSION}"
  check_module_available "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" "etcd"
  log "etcd ${ETCD_VERSION}: building into ${dest} (first time only; ~1-2 minutes with a cold Go build cache)"
  mkdir -p "$(dirname "${dest}")"
  dir="$(etcd_module_dir)"
  tmp="$(dirname "${dest}")/.etcd.tmp.$$"
  trap 'rm -f "${tmp}"' EXIT
  run_go_build "etcd ${ETCD_VERSION}" "${dir}" "${tmp}" "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}" "."
  install_atomically "${tmp}" "${dest}"
  trap - EXIT
  log "etcd ${ETCD_VERSION}: $("${dest}" --version | head -n 1)"
}

# Write a go.mod building k8s.io/kubernetes/cmd/kube-apiserver at $1 into dir $2.
# The staging-module replace list is derived from k8s.io/kubernetes's own go.mod.
generate_apiserver_gomod() { # <version> <dir>
  local version="$1" dir="$2" staging gomod
  staging="v0.${version#v1.}"
  gomod="$(cd "${GO_DIR}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${version}" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "${gomod}" ]] || die "could not download the go.mod of k8s.io/kubernetes@${version}"
  {
    printf '// Generated by hack/build-control-plane.sh: builds k8s.io/kubernetes/cmd/kube-apiserver %s.\n' "${version}"
    printf 'module gpu-inventory-operator/hack/go/kube-apiserver\n\ngo 1.24.0\n\ngodebug default=go1.24\n\n'
    printf 'tool k8s.io/kubernetes/cmd/kube-apiserver\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "${version}"
    sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/k8s\.io/.*#\t\1 => \1 '"${staging}"'#p' "${gomod}"
    printf ')\n'
  } >"${dir}/go.mod"
  rm -f "${dir}/go.sum"
  (cd "${dir}" && GOWORK=off go mod tidy >&2)
}

# Prepare the Go module used to build kube-apiserver at KUBE_VERSION. Prints the module dir.
apiserver_module_dir() {
  local src="${GO_DIR}/kube-apiserver" pinned work
  pinned="$(sed -n 's#^[[:space:]]*k8s.io/kubernetes \(v[^ ]*\).*#\1#p' "${src}/go.mod" 2>/dev/null | head -n 1)"
  if [[ "${pinned}" == "${KUBE_VERSION}" ]]; then
    printf '%s' "${src}"
    return
  fi
  log "hack/go/kube-apiserver pins ${pinned:-?}; generating a module for ${KUBE_VERSION} in a temp dir"
  work="$(mktemp -d "${TMPDIR:-/tmp}/gpuinv-kas-mod.XXXXXX")"
  generate_apiserver_gomod "${KUBE_VERSION}" "${work}"
  printf '%s' "${work}"
}

build_apiserver() {
  local dest tmp dir v minor build_date ldflags pkg info
  dest="$(apiserver_path)"
  if [[ -x "${dest}" ]]; then
    log "kube-apiserver ${KUBE_VERSION}: using cached ${dest}"
    return
  fi
  require_go "kube-apiserver ${KUBE_VERSION}"
  check_module_available "k8s.io/kubernetes@${KUBE_VERSION}" "kube-apiserver"
  log "kube-apiserver ${KUBE_VERSION}: building into ${dest} (first time only; ~5 minutes on 2 cores with a cold Go build cache)"
  mkdir -p "$(dirname "${dest}")"
  dir="$(apiserver_module_dir)"
  v="${KUBE_VERSION#v}"
  minor="$(printf '%s' "${v}" | cut -d. -f2)"
  # The release time of the module is the reproducible "build date".
  info="$(cd "${GO_DIR}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}")"
  build_date="$(printf '%s' "${info}" | sed -n 's/^[[:space:]]*"Time": "\(.*\)",\{0,1\}$/\1/p' | head -n 1)"
  build_date="${build_date:-1970-01-01T00:00:00Z}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
  done
  tmp="$(dirname "${dest}")/.kube-apiserver.tmp.$$"
  trap 'rm -f "${tmp}"' EXIT
  run_go_build "kube-apiserver ${KUBE_VERSION}" "${dir}" "${tmp}" "${ldflags}" "k8s.io/kubernetes/cmd/kube-apiserver"
  install_atomically "${tmp}" "${dest}"
  trap - EXIT
  log "kube-apiserver ${KUBE_VERSION}: $("${dest}" --version)"
}

main() {
  local what="${1:-all}" assets
  case "${what}" in
    all | etcd | kube-apiserver | paths) ;;
    -h | --help | help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      return 0
      ;;
    *) die "unknown argument '${what}' (expected all|etcd|kube-apiserver|paths)" ;;
  esac
  if assets="$(assets_dir)"; then
    log "using prebuilt binaries from KUBEBUILDER_ASSETS=${assets}"
    if [[ "${what}" == paths ]]; then
      printf 'ETCD=%s\nKUBE_APISERVER=%s\n' "${assets}/etcd" "${assets}/kube-apiserver"
    fi
    return 0
  fi
  case "${what}" in
    etcd) build_etcd ;;
    kube-apiserver) build_apiserver ;;
    all | paths)
      build_etcd
      build_apiserver
      ;;
  esac
  if [[ "${what}" == paths ]]; then
    printf 'ETCD=%s\nKUBE_APISERVER=%s\n' "$(etcd_path)" "$(apiserver_path)"
  fi
}

main "$@"
