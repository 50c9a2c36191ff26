#!/usr/bin/env bash
# Build (once) the binaries used by hack/local-cluster.sh, from their Go modules:
#   - etcd                     go.etcd.io/etcd/server/v3             (module: hack/go/etcd)
#   - kube-apiserver           k8s.io/kubernetes/cmd/kube-apiserver   (module: hack/go/kubernetes,
#   - kube-controller-manager  k8s.io/kubernetes/cmd/kube-controller-manager   one module builds
#   - kube-scheduler           k8s.io/kubernetes/cmd/kube-scheduler              all three)
#   - kwok                     sigs.k8s.io/kwok/cmd/kwok              (module: hack/go/kwok)
# and, on request only, developer and test tools:
#   - actionlint               github.com/rhysd/actionlint/cmd/actionlint (module: hack/go/actionlint)
#   - helm                     helm.sh/helm/v3/cmd/helm               (module: hack/go/helm)
#   - kueue                    sigs.k8s.io/kueue/cmd/kueue            (module: hack/go/kueue), with its
#                              CRDs beside it in crds/ (for tests/topology_referee.rs)
#   - prometheus               github.com/prometheus/prometheus/cmd/prometheus (module: hack/go/prometheus),
#                              with promtool (.../cmd/promtool) beside it (tests/common/prometheus), both
#                              built with -tags remove_all_sd: no service-discovery plugins
#
# Binaries are cached outside the repository, keyed by version:
#   ${GPUINV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-inventory-operator}/bin/<name>-<version>/<name>
# and are only rebuilt when missing. A lock per binary and version makes concurrent callers wait
# for one build instead of starting a second one. If KUBEBUILDER_ASSETS names a directory that
# contains `etcd` and `kube-apiserver`, those two are used from there (and kube-controller-manager,
# kube-scheduler and kwok too when that directory has them); the rest is built.
#
# Usage: hack/build-control-plane.sh [all|etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok|actionlint|helm|kueue|prometheus|paths]
#   all (default)   ensure the five cluster binaries exist (build what is missing)
#   <name>          ensure that binary only; `actionlint`, `helm`, `kueue` and `prometheus` also print their path
#                   on stdout (`prometheus` builds promtool too, and prints the path of prometheus)
#   paths [<name>...]
#                   like `all` (or only the named binaries), then print ETCD=, KUBE_APISERVER=,
#                   KUBE_CONTROLLER_MANAGER=, KUBE_SCHEDULER= and KWOK=<path> lines on stdout
#   regenerate-modules
#                   rewrite the pinned modules hack/go/{kubernetes,kwok,actionlint,helm,kueue,prometheus} for
#                   K8S_VERSION, KWOK_VERSION, ACTIONLINT_VERSION, HELM_VERSION, KUEUE_VERSION and
#                   PROMETHEUS_VERSION (after changing a default)
# All progress output goes to stderr; only `paths`, `actionlint`, `helm`, `kueue` and `prometheus` write to stdout.
#
# Environment:
#   K8S_VERSION          Kubernetes version of kube-apiserver, kube-controller-manager and
#                        kube-scheduler (default v1.34.4; tested: v1.32.13, v1.34.4, v1.37.2).
#                        KUBE_VERSION is the older name of the same setting.
#   ETCD_VERSION         etcd version        (default v3.6.16)
#   KWOK_VERSION         KWOK version        (default v0.8.0)
#   ACTIONLINT_VERSION   actionlint version  (default v1.7.12)
#   HELM_VERSION         helm version        (default v3.22.0)
#   KUEUE_VERSION        Kueue version       (default v0.17.0)
#   PROMETHEUS_VERSION   version of the Go module github.com/prometheus/prometheus (default v0.316.0, which is
#                        Prometheus 3.16.0; v0.3XX.Y is 3.XX.Y); it needs Go >= 1.26.7
#   GPUINV_CACHE_DIR     cache root (see above)
#   KUBEBUILDER_ASSETS   use prebuilt binaries from this directory instead
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GO_DIR="${HACK_DIR}/go"

ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
K8S_VERSION="${K8S_VERSION:-${KUBE_VERSION:-v1.34.4}}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
KUEUE_VERSION="${KUEUE_VERSION:-v0.17.0}"
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
SUPPORTED_K8S_VERSIONS="v1.32.13 v1.34.4 v1.37.2"
CACHE_DIR="${GPUINV_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/gpu-inventory-operator}"
BIN_CACHE="${CACHE_DIR}/bin"
# Generated Go modules for versions other than the pinned ones under hack/go/ live here, so a
# second build of the same version does not resolve the module graph again.
MOD_CACHE="${CACHE_DIR}/go"
KUBE_COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }
die() { printf '[build-control-plane] ERROR: %s\n' "$*" >&2; exit 1; }

# <name> -> the version it is built at.
version_of() {
  case "$1" in
    etcd) printf '%s' "${ETCD_VERSION}" ;;
    kube-apiserver | kube-controller-manager | kube-scheduler) printf '%s' "${K8S_VERSION}" ;;
    kwok) printf '%s' "${KWOK_VERSION}" ;;
    actionlint) printf '%s' "${ACTIONLINT_VERSION}" ;;
    helm) printf '%s' "${HELM_VERSION}" ;;
    kueue) printf '%s' "${KUEUE_VERSION}" ;;
    prometheus | promtool) printf '%s' "${PROMETHEUS_VERSION}" ;;
    *) die "internal: unknown binary '$1'" ;;
  esac
}

# <name> -> the name of its cache directory (without the version): its own, except promtool's, which
# lies beside prometheus.
cache_dir_name() {
  case "$1" in
    promtool) printf 'prometheus' ;;
    *) printf '%s' "$1" ;;
  esac
}

cache_path() { # <name>
  printf '%s/%s-%s/%s' "${BIN_CACHE}" "$(cache_dir_name "$1")" "$(version_of "$1")" "$1"
}

# Where a binary comes from: KUBEBUILDER_ASSETS when it holds it (etcd and kube-apiserver must
# both be there for the directory to count), else the cache.
binary_path() { # <name>
  if [[ -n "${ASSETS_DIR:-}" && -x "${ASSETS_DIR}/$1" ]]; then
    printf '%s/%s' "${ASSETS_DIR}" "$1"
  else
    cache_path "$1"
  fi
}

# If KUBEBUILDER_ASSETS holds etcd and kube-apiserver, use it.
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
  or point KUBEBUILDER_ASSETS at a directory that contains prebuilt binaries
  (e.g. etcd and kube-apiserver from 'setup-envtest use -p path 1.34.x')."
  fi
}

# `go mod download -json <module@version>`, run outside any workspace.
mod_download_json() { # <module@version>
  (cd "${GO_DIR}/etcd" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1")
}

# Check that the Go module proxy (or the module cache) can serve a module.
check_module_available() { # <module@version> <what>
  local mod="$1" what="$2" out
  if ! out="$(mod_download_json "${mod}" 2>&1)"; then
    die "cannot download ${mod} (needed to build ${what}).
  GOPROXY=$(go env GOPROXY) -- is the Go module proxy reachable? Set GOPROXY to a reachable proxy
  (GOPROXY=off only works when the Go module cache already holds every module), or set
  KUBEBUILDER_ASSETS to a directory containing prebuilt binaries.
  go said: $(printf '%s' "${out}" | tail -n 5)"
  fi
}

# The "Time" of a module version (from its .info file): a reproducible build date.
module_time() { # <module@version>
  local info
  info="$(mod_download_json "$1" | sed -n 's/^[[:space:]]*"Info": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "${info}" ]] && sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "${info}"
}

# Run `go build` in the background, relaying `-v` package names and a heartbeat.
run_go_build() { # <label> <module dir> <output> <ldflags> <package>
  local label="$1" dir="$2" out="$3" ldflags="$4" pkg="$5"
  local start="${SECONDS}" log_file pid n last_pkg hint=""
  log_file="$(mktemp "${TMPDIR:-/tmp}/gpuinv-go-build.XXXXXX")"
  (
    cd "${dir}"
    # GO_BUILD_EXTRA_FLAGS: one more flag (build_kueue's -overlay=...).
    GOWORK=off CGO_ENABLED=0 exec go build -v -trimpath -buildvcs=false ${GO_BUILD_EXTRA_FLAGS:+"${GO_BUILD_EXTRA_FLAGS}"} \
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

# --------------------------------------------------------- Go modules --

# The module pinned under hack/go/<dir> when it requires <module> at <version>, else a module
# generated (once) by <generator> into the cache. Prints the module dir.
module_dir_for() { # <hack/go subdir> <module> <version> <generator>
  local sub="$1" module="$2" version="$3" generator="$4" pinned dir tmp
  pinned="$(sed -n "s#^[[:space:]]*\(require \)\{0,1\}${module//./\\.} \(v[^ ]*\).*#\2#p" "${GO_DIR}/${sub}/go.mod" 2>/dev/null | head -n 1)"
  if [[ "${pinned}" == "${version}" ]]; then
    printf '%s' "${GO_DIR}/${sub}"
    return
  fi
  dir="${MOD_CACHE}/${sub}-${version}"
  if [[ -f "${dir}/go.sum" ]]; then
    log "hack/go/${sub} pins ${pinned:-?}; using the module generated for ${version} in ${dir}"
    printf '%s' "${dir}"
    return
  fi
  log "hack/go/${sub} pins ${pinned:-?}; generating a module for ${module} ${version} in ${dir}"
  mkdir -p "${MOD_CACHE}"
  tmp="$(mktemp -d "${MOD_CACHE}/.${sub}-${version}.XXXXXX")"
  "${generator}" "${version}" "${tmp}" || { rm -rf "${tmp}"; die "generating the Go module for ${module} ${version} failed (see above)"; }
  rm -rf "${dir}"
  mv "${tmp}" "${dir}"
  printf '%s' "${dir}"
}

# The version of staging module <module> to build with: <staging version> (v0.34.4 for v1.34.4)
# when the module proxy has it. Some proxies miss single staging releases (k8s.io/endpointslice
# v0.32.13 is one); then the newest earlier patch release of the same minor is used, with a warning,
# so the build still works. Modules not imported by the three commands (k8s.io/sample-*) are
# never downloaded by `go mod tidy`, so a missing one does not matter: it keeps <staging version>.
staging_module_version() { # <module> <staging version>
  local m="$1" want="$2" prefix fallback
  if mod_download_json "${m}@${want}" >/dev/null 2>&1 || [[ "${m}" == k8s.io/sample-* ]]; then
    printf '%s' "${want}"
    return
  fi
  prefix="${want%.*}."
  # The release just before <staging version> among the minor's published ones.
  fallback="$( (cd "${GO_DIR}/etcd" && GOWORK=off go list -m -versions "${m}" 2>/dev/null | tr ' ' '\n' |
    grep -E "^${prefix//./\\.}[0-9]+$"; printf '%s\n' "${want}") | sort -uV | grep -B1 -xF "${want}" | grep -vxF "${want}" || true)"
  if [[ -z "${fallback}" ]]; then
    printf '%s' "${want}" # let `go mod tidy` report the missing module if it is needed
    return
  fi
  log "warning: ${m}@${want} is not available from the module proxy ($(go env GOPROXY)); using ${fallback}, the newest earlier ${prefix}x release"
  printf '%s' "${fallback}"
}

# A go.mod building k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler}
# at <version> in <dir>. k8s.io/kubernetes points its staging modules (k8s.io/api, k8s.io/client-go,
# ...) at ./staging/src/..., which only works inside its own repository; as a dependency they must be
# replaced by the published k8s.io/X v0.<minor>.<patch> modules. That list is derived from
# k8s.io/kubernetes's own go.mod (it grows between releases: v1.37 added k8s.io/streaming and
# k8s.io/cri-streaming), and so are the go directive and the godebug defaults.
generate_kubernetes_gomod() { # <version> <dir>
  local version="$1" dir="$2" staging gomod go_version c m
  staging="v0.${version#v1.}"
  gomod="$(mod_download_json "k8s.io/kubernetes@${version}" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "${gomod}" ]] || die "could not download the go.mod of k8s.io/kubernetes@${version}"
  go_version="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "${gomod}")"
  # `tool` directives need go >= 1.24 (v1.32 still says go 1.23.0).
  if [[ "$(printf '%s\n1.24.0\n' "${go_version}" | sort -V | head -n 1)" != 1.24.0 ]]; then
    go_version=1.24.0
  fi
  {
    printf '// Generated by hack/build-control-plane.sh: builds kube-apiserver, kube-controller-manager\n'
    printf '// and kube-scheduler of k8s.io/kubernetes %s.\n' "${version}"
    printf 'module gpu-inventory-operator/hack/go/kubernetes\n\ngo %s\n\n' "${go_version}"
    grep '^godebug ' "${gomod}" || true
    printf '\n'
    for c in ${KUBE_COMPONENTS}; do printf 'tool k8s.io/kubernetes/cmd/%s\n' "${c}"; done
    printf '\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "${version}"
    for m in $(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/k8s\.io/.*#\1#p' "${gomod}"); do
      printf '\t%s => %s %s\n' "${m}" "${m}" "$(staging_module_version "${m}" "${staging}")"
    done
    printf ')\n'
  } >"${dir}/go.mod"
  rm -f "${dir}/go.sum"
  (cd "${dir}" && GOWORK=off go mod tidy >&2)
}

# A go.mod with one `tool` (<package>) from <module>@<version>; `go get` picks the go directive.
generate_tool_gomod() { # <module> <package> <version> <dir>
  generate_tools_gomod "$1" "$3" "$4" "$(basename "$2")" "$2"
}
# The same with several `tool` lines, one per <package>, in module gpu-inventory-operator/hack/go/<name>.
generate_tools_gomod() { # <module> <version> <dir> <name> <package>...
  local module="$1" version="$2" dir="$3" name="$4" pkgs
  shift 4
  pkgs="$(printf '%s\n// and ' "$@")" # one package a line
  {
    printf '// Generated by hack/build-control-plane.sh: builds %s %s.\n' "${pkgs%$'\n'// and }" "${version}"
    printf 'module gpu-inventory-operator/hack/go/%s\n\ngo 1.24.0\n\n' "${name}"
    printf 'tool %s\n' "$@"
  } >"${dir}/go.mod"
  (cd "${dir}" && GOWORK=off go get "${module}@${version}" >&2 && GOWORK=off go mod tidy >&2)
}
generate_kwok_gomod() { generate_tool_gomod sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok "$@"; }
generate_actionlint_gomod() { generate_tool_gomod github.com/rhysd/actionlint github.com/rhysd/actionlint/cmd/actionlint "$@"; }
generate_helm_gomod() { generate_tool_gomod helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "$@"; }
generate_kueue_gomod() { generate_tool_gomod sigs.k8s.io/kueue sigs.k8s.io/kueue/cmd/kueue "$@"; }
generate_prometheus_gomod() { # <version> <dir>
  generate_tools_gomod github.com/prometheus/prometheus "$1" "$2" prometheus \
    github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
}

generate_etcd_gomod() { # <version> <dir>
  cp "${GO_DIR}/etcd/main.go" "$2/"
  printf 'module gpu-inventory-operator/hack/go/etcd\n\ngo 1.24\n' >"$2/go.mod"
  (cd "$2" && GOWORK=off go get "go.etcd.io/etcd/server/v3@$1" >&2 && GOWORK=off go mod tidy >&2)
}

# ------------------------------------------------------------- building --

# Build <name> from <package> in the module at <module dir> into the cache, unless it is there.
# Holds ${BIN_CACHE}/.<name>-<version>.lock meanwhile, so a parallel caller waits for this build.
ensure_binary() { # <name> <module@version to check> <module dir function> <package> <ldflags> <hint>
  local name="$1" mod="$2" dir_fn="$3" pkg="$4" ldflags="$5" hint="$6"
  local version dest tmp dir lock
  version="$(version_of "${name}")"
  dest="$(binary_path "${name}")"
  if [[ -x "${dest}" ]]; then
    log "${name} ${version}: using ${dest}"
    return
  fi
  mkdir -p "$(dirname "${dest}")"
  lock="${BIN_CACHE}/.${name}-${version}.lock"
  exec 8>"${lock}"
  if command -v flock >/dev/null 2>&1 && ! flock -n 8; then
    log "${name} ${version}: another build of it is running; waiting for it (${lock})"
    flock 8
  fi
  if [[ -x "${dest}" ]]; then
    exec 8>&-
    log "${name} ${version}: using ${dest} (built meanwhile)"
    return
  fi
  require_go "${name} ${version}"
  check_module_available "${mod}" "${name}"
  log "${name} ${version}: building into ${dest} (first time only; ${hint} on 2 cores with a cold Go build cache)"
  dir="$("${dir_fn}")"
  tmp="$(dirname "${dest}")/.${name}.tmp.$$"
  trap 'rm -f "${tmp}"' EXIT
  run_go_build "${name} ${version}" "${dir}" "${tmp}" "${ldflags}" "${pkg}"
  chmod 0755 "${tmp}"
  mv -f "${tmp}" "${dest}"
  trap - EXIT
  exec 8>&-
  # helm has a `version` command rather than a --version flag; kueue has neither (it would start).
  [[ "${name}" == kueue ]] ||
    log "${name} ${version}: $("${dest}" "$([[ "${name}" == helm ]] && echo version || echo --version)" 2>&1 | head -n 1)"
}

etcd_module_dir() { module_dir_for etcd go.etcd.io/etcd/server/v3 "${ETCD_VERSION}" generate_etcd_gomod; }
kubernetes_module_dir() { module_dir_for kubernetes k8s.io/kubernetes "${K8S_VERSION}" generate_kubernetes_gomod; }
kwok_module_dir() { module_dir_for kwok sigs.k8s.io/kwok "${KWOK_VERSION}" generate_kwok_gomod; }
actionlint_module_dir() { module_dir_for actionlint github.com/rhysd/actionlint "${ACTIONLINT_VERSION}" generate_actionlint_gomod; }
helm_module_dir() { module_dir_for helm helm.sh/helm/v3 "${HELM_VERSION}" generate_helm_gomod; }
kueue_module_dir() { module_dir_for kueue sigs.k8s.io/kueue "${KUEUE_VERSION}" generate_kueue_gomod; }
prometheus_module_dir() {
  module_dir_for prometheus github.com/prometheus/prometheus "${PROMETHEUS_VERSION}" generate_prometheus_gomod
}

build_etcd() {
  ensure_binary etcd "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" etcd_module_dir . \
    "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}" "~1-2 minutes"
}

# kube-apiserver, kube-controller-manager or kube-scheduler at K8S_VERSION. The version ldflags
# (as Kubernetes' own hack/lib/version.sh sets them) make /version and --version report it.
build_kube() { # <component>
  local c="$1" minor build_date ldflags p hint
  minor="$(printf '%s' "${K8S_VERSION#v}" | cut -d. -f2)"
  build_date="$(module_time "k8s.io/kubernetes@${K8S_VERSION}" 2>/dev/null || true)"
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${p}.gitVersion=${K8S_VERSION} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}"
    ldflags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=${build_date:-1970-01-01T00:00:00Z}"
  done
  case "${c}" in
    kube-apiserver) hint="~5 minutes" ;;
    kube-controller-manager) hint="~3 minutes after kube-apiserver" ;;
    *) hint="~1-2 minutes after kube-apiserver" ;;
  esac
  ensure_binary "${c}" "k8s.io/kubernetes@${K8S_VERSION}" kubernetes_module_dir "k8s.io/kubernetes/cmd/${c}" "${ldflags}" "${hint}"
}

build_kwok() {
  ensure_binary kwok "sigs.k8s.io/kwok@${KWOK_VERSION}" kwok_module_dir sigs.k8s.io/kwok/cmd/kwok \
    "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION}" "~2-3 minutes"
}

build_actionlint() {
  ensure_binary actionlint "github.com/rhysd/actionlint@${ACTIONLINT_VERSION}" actionlint_module_dir \
    github.com/rhysd/actionlint/cmd/actionlint \
    "-s -w -X github.com/rhysd/actionlint.version=${ACTIONLINT_VERSION#v}" "~1 minute"
}

# helm, for the chart's tests (helm lint, template, install). The ldflags are the ones helm's own Makefile
# sets: its version (`helm version`, `.Capabilities.HelmVersion`), and the Kubernetes version `helm template`
# and `helm lint` assume without a cluster (1.<minor of k8s.io/client-go>; unset, it is v1.20.0).
build_helm() {
  local client_go minor ldflags p
  client_go="$(sed -n 's#^[[:space:]]*k8s\.io/client-go \(v[^ ]*\).*#\1#p' "$(helm_module_dir)/go.mod" | head -n 1)"
  minor="$(printf '%s' "${client_go}" | cut -d. -f2)"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X ${p}.k8sVersionMajor=1 -X ${p}.k8sVersionMinor=${minor:?no k8s.io/client-go in the helm module}"
  done
  ensure_binary helm "helm.sh/helm/v3@${HELM_VERSION}" helm_module_dir helm.sh/helm/v3/cmd/helm "${ldflags}" "~3 minutes"
}

# Kueue (tests/topology_referee.rs, docs/kueue-referee.md): its controller manager, built with one overlay made
# by hack/go/kueue/build.sh (the metrics certificate directory from an environment variable: it is a fixed
# path outside any work tree otherwise), and its CRDs copied beside the binary, in crds/.
build_kueue() {
  local dir
  dir="$(dirname "$(cache_path kueue)")"
  GO_BUILD_EXTRA_FLAGS="-overlay=${dir}/overlay/overlay.json" ensure_binary kueue "sigs.k8s.io/kueue@${KUEUE_VERSION}" \
    kueue_overlaid_module_dir ./cmd/kueue "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=${KUEUE_VERSION}" "~5 minutes"
  "${GO_DIR}/kueue/build.sh" crds "${KUEUE_VERSION}" "${dir}"
}
# The module to build Kueue in, with the overlay written beside the binary first: ensure_binary calls it under
# the binary's lock, so a second caller never rewrites the overlay while the first one's build reads it.
kueue_overlaid_module_dir() {
  local module
  module="$(kueue_module_dir)"
  "${GO_DIR}/kueue/build.sh" overlay "${KUEUE_VERSION}" "$(dirname "$(cache_path kueue)")" "${module}" >/dev/null
  printf '%s' "${module}"
}

# Prometheus and promtool (tests/common/prometheus: a real Prometheus with back-filled dcgm-exporter history),
# side by side in the cache, each under its own lock; promtool reuses prometheus's compiled packages. The tag
# remove_all_sd leaves out every service-discovery plugin (the tests scrape nothing); without the tag
# builtinassets, which needs the web UI built by npm, the UI is absent but the HTTP API is all there. The version
# ldflags are those of Prometheus's .promu.yml: Version is the release (3.16.0 for module v0.316.0).
build_prometheus() {
  local minor release build_date ldflags name p="github.com/prometheus/common/version"
  # Module v0.<minor>.<patch>: Prometheus 3.x is v0.3xx (v0.316.0 is 3.16.0), 2.x was v0.<x>.
  minor="$(printf '%s' "${PROMETHEUS_VERSION}" | cut -d. -f2)"
  if [[ "${minor}" =~ ^[0-9]+$ ]] && ((minor >= 300)); then
    release="$((minor / 100)).$((minor % 100)).${PROMETHEUS_VERSION#v0.*.}"
  else
    release="2.${PROMETHEUS_VERSION#v0.}"
  fi
  build_date="$(module_time "github.com/prometheus/prometheus@${PROMETHEUS_VERSION}" 2>/dev/null || true)"
  ldflags="-s -w -X ${p}.Version=${release} -X ${p}.Revision=${PROMETHEUS_VERSION} -X ${p}.Branch=HEAD"
  ldflags+=" -X ${p}.BuildUser=hack/build-control-plane.sh -X ${p}.BuildDate=${build_date:-unknown}"
  for name in prometheus promtool; do
    GO_BUILD_EXTRA_FLAGS="-tags=remove_all_sd" ensure_binary "${name}" \
      "github.com/prometheus/prometheus@${PROMETHEUS_VERSION}" prometheus_module_dir \
      "github.com/prometheus/prometheus/cmd/${name}" "${ldflags}" \
      "$([[ "${name}" == prometheus ]] && echo "~2 minutes" || echo "~1 minute after prometheus")"
  done
}

check_k8s_version() {
  [[ "${K8S_VERSION}" =~ ^v1\.[0-9]+\.[0-9]+$ ]] ||
    die "K8S_VERSION='${K8S_VERSION}' is not a Kubernetes release like v1.34.4 (supported: ${SUPPORTED_K8S_VERSIONS})"
  if [[ " ${SUPPORTED_K8S_VERSIONS} " != *" ${K8S_VERSION} "* ]]; then
    log "warning: K8S_VERSION=${K8S_VERSION} is not one of the tested versions (${SUPPORTED_K8S_VERSIONS}); trying anyway"
  fi
}

main() {
  local what="${1:-all}"
  case "${what}" in
    all | etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kwok | actionlint | helm | kueue | prometheus | paths) ;;
    regenerate-modules)
      check_k8s_version
      generate_kubernetes_gomod "${K8S_VERSION}" "${GO_DIR}/kubernetes"
      generate_kwok_gomod "${KWOK_VERSION}" "${GO_DIR}/kwok"
      generate_actionlint_gomod "${ACTIONLINT_VERSION}" "${GO_DIR}/actionlint"
      generate_helm_gomod "${HELM_VERSION}" "${GO_DIR}/helm"
      generate_kueue_gomod "${KUEUE_VERSION}" "${GO_DIR}/kueue"
      generate_prometheus_gomod "${PROMETHEUS_VERSION}" "${GO_DIR}/prometheus"
      log "regenerated hack/go/kubernetes (${K8S_VERSION}), hack/go/kwok (${KWOK_VERSION}), hack/go/actionlint (${ACTIONLINT_VERSION}), hack/go/helm (${HELM_VERSION}), hack/go/kueue (${KUEUE_VERSION}), hack/go/prometheus (${PROMETHEUS_VERSION})"
      return 0
      ;;
    -h | --help | help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      return 0
      ;;
    *) die "unknown argument '${what}' (expected all|etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok|actionlint|helm|kueue|prometheus|paths|regenerate-modules)" ;;
  esac
  check_k8s_version
  if ASSETS_DIR="$(assets_dir)"; then
    log "using prebuilt binaries from KUBEBUILDER_ASSETS=${ASSETS_DIR} where present"
  else
    ASSETS_DIR=""
  fi
  local names="etcd ${KUBE_COMPONENTS} kwok" name var
  if [[ "${what}" == paths && $# -gt 1 ]]; then
    shift
    names="$*"
  fi
  case "${what}" in
    actionlint | helm | kueue | prometheus)
      "build_${what}"
      printf '%s\n' "$(cache_path "${what}")"
      return 0
      ;;
    all | paths) ;;
    *) names="${what}" ;;
  esac
  for name in ${names}; do
    case "${name}" in
      etcd) build_etcd ;;
      kube-apiserver | kube-controller-manager | kube-scheduler) build_kube "${name}" ;;
      kwok) build_kwok ;;
      *) die "unknown binary '${name}' (expected etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok)" ;;
    esac
  done
  if [[ "${what}" == paths ]]; then
    for name in ${names}; do
      var="$(printf '%s' "${name}" | tr 'a-z-' 'A-Z_')"
      printf '%s=%s\n' "${var}" "$(binary_path "${name}")"
    done
  fi
}

main "$@"
