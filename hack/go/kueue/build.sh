#!/usr/bin/env bash
# Helpers for hack/build-control-plane.sh's `kueue` target (docs/kueue-referee.md says why each exists).
#
#   build.sh overlay <version> <dir> <module dir>
#                                      write a `go build -overlay` file under <dir>/overlay/ and print its path:
#                                      it adds the package ./cmd/kueue to <module dir> (hack/go/kueue)
#   build.sh crds <version> <dir>      copy the module's CRDs into <dir>/crds/ (once)
#
# The overlay. With internalCertManagement off (the only way to run Kueue without webhook configurations and
# CRD conversion webhooks to inject a CA into), cmd/kueue/main.go v0.17 reads the metrics server's certificate
# from a directory fixed in the source, outside any work tree, and exits when it is not there; no flag or
# Configuration field moves it. The overlay is Kueue's main.go with that one literal replaced by a call that
# returns $GPUINV_KUEUE_METRICS_CERT_DIR when set and the literal otherwise, as the package ./cmd/kueue of
# hack/go/kueue (Go refuses overlays of files in the module cache; the package imports only Kueue's public
# packages, so it builds from outside Kueue's module). Nothing else of Kueue changes. The sed is checked to
# have matched exactly once, so a Kueue version whose main.go differs fails the build loudly.
set -euo pipefail

MODULE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { printf '[kueue build] ERROR: %s\n' "$*" >&2; exit 1; }

# The extracted sigs.k8s.io/kueue@<version> in the Go module cache.
kueue_source() { # <version>
  local dir
  dir="$(cd "${MODULE_DIR}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kueue@$1" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -d "${dir}" ]] || die "go mod download sigs.k8s.io/kueue@$1 gave no source directory"
  printf '%s' "${dir}"
}

overlay() { # <version> <dir> <module dir>
  local src out main n pkg="$3/cmd/kueue"
  src="$(kueue_source "$1")"
  out="$2/overlay"
  main="${src}/cmd/kueue/main.go"
  mkdir -p "${out}"
  n="$(grep -c 'metricsCertPath := "[^"]*"$' "${main}" || true)"
  [[ "${n}" == 1 ]] || die "${main}: expected one 'metricsCertPath := \"...\"' line, found ${n}; the overlay needs updating for $1"
  sed 's/metricsCertPath := \("[^"]*"\)$/metricsCertPath := gpuinvMetricsCertDir(\1)/' "${main}" >"${out}/main.go"
  cat >"${out}/zz_gpuinv_metrics_cert_dir.go" <<'GO'
// Added by hack/go/kueue/build.sh (gpu-inventory-operator): see docs/kueue-referee.md.

package main

import "os"

// gpuinvMetricsCertDir is $GPUINV_KUEUE_METRICS_CERT_DIR when set, else Kueue's own directory.
func gpuinvMetricsCertDir(builtIn string) string {
	if dir := os.Getenv("GPUINV_KUEUE_METRICS_CERT_DIR"); dir != "" {
		return dir
	}
	return builtIn
}
GO
  printf '{"Replace": {"%s": "%s", "%s": "%s"}}\n' \
    "${pkg}/main.go" "${out}/main.go" \
    "${pkg}/zz_gpuinv_metrics_cert_dir.go" "${out}/zz_gpuinv_metrics_cert_dir.go" >"${out}/overlay.json"
  printf '%s\n' "${out}/overlay.json"
}

crds() { # <version> <dir>
  local src dest="$2/crds" tmp
  [[ -d "${dest}" ]] && return 0
  src="$(kueue_source "$1")/config/components/crd/bases"
  [[ -d "${src}" ]] || die "no ${src} in sigs.k8s.io/kueue@$1"
  tmp="$(mktemp -d "$2/.crds.XXXXXX")"
  cp "${src}"/*.yaml "${tmp}/"
  # The module cache is read-only, and mktemp made the directory private.
  chmod 0755 "${tmp}" && chmod 0644 "${tmp}"/*.yaml
  # -T: a second caller that lost the race keeps the first one's copy instead of nesting its own inside it.
  mv -T "${tmp}" "${dest}" 2>/dev/null || { rm -rf "${tmp}"; return 0; }
  printf '[kueue build] CRDs of sigs.k8s.io/kueue@%s in %s\n' "$1" "${dest}" >&2
}

case "${1:-}" in
  overlay) [[ $# == 4 ]] || die "usage: $0 overlay <version> <dir> <module dir>"; mkdir -p "$3"; "$@" ;;
  crds) [[ $# == 3 ]] || die "usage: $0 crds <version> <dir>"; mkdir -p "$3"; "$@" ;;
  *) die "usage: $0 overlay|crds <version> <dir> ..." ;;
esac
