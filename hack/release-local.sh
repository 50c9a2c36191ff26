#!/usr/bin/env bash
# `make release-local`: the release's static musl binary for linux x86_64, built here with nothing but
# Debian packages (rustup cannot download the x86_64-unknown-linux-musl standard library on this machine;
# the release workflow uses rustup's target and cargo-zigbuild instead). Output, as the release attaches it:
#   dist/gpu-inventory-operator-v<version>-x86_64-unknown-linux-musl.tar.gz (+ .sha256)
#
# How, since Debian ships no Rust standard library for musl:
#   - rustc-web / cargo-web (Rust 1.96, /usr/bin/rustc and /usr/bin/cargo) with rust-web-src (the standard
#     library's source): the standard library is compiled for the musl target (`-Zbuild-std`, allowed on a
#     release compiler by RUSTC_BOOTSTRAP=1: the only unstable thing used);
#   - musl-tools: musl-gcc, musl's libc.a and start files, linking (`-Clink-self-contained=no`);
#   - libunwind-14-dev: LLVM's libunwind.a, which the standard library links on musl. Debian built it
#     against glibc with _FORTIFY_SOURCE, so it calls __fprintf_chk (in its debug logging); a 5-line shim
#     compiled here with musl-gcc forwards that to musl's vfprintf. It is its only glibc-only symbol.
# Missing packages are installed with apt-get when run as root on Debian; otherwise the script says which.
# Environment: DIST_DIR (default dist), MUSL_TARGET_DIR (default target/musl).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TARGET=x86_64-unknown-linux-musl
DIST_DIR="${DIST_DIR:-dist}"
TARGET_DIR="${MUSL_TARGET_DIR:-target/musl}"
PACKAGES="musl-tools rustc-web cargo-web rust-web-src libunwind-14-dev"
LIBUNWIND_DIR=/usr/lib/llvm-14/lib
STD_SRC=/usr/lib/rustlib/src/rust/library

log() { printf '[release-local] %s\n' "$*" >&2; }
die() { printf '[release-local] ERROR: %s\n' "$*" >&2; exit 1; }

have_all() {
  [[ -x /usr/bin/rustc && -x /usr/bin/cargo && -d "${STD_SRC}/std" && -f "${LIBUNWIND_DIR}/libunwind.a" ]] &&
    command -v musl-gcc >/dev/null
}

if ! have_all; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    log "installing ${PACKAGES} (Debian packages)"
    apt-get update -qq >&2 || true
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${PACKAGES} >&2 ||
      die "apt-get could not install ${PACKAGES}: the musl x86_64 build needs them (no rustup target download here)"
  fi
  have_all || die "the musl x86_64 build needs the Debian packages ${PACKAGES}
  (Rust 1.96 with its standard library's source, musl-gcc, LLVM's libunwind.a); install them, or use the
  release workflow's way: rustup target add ${TARGET} && cargo zigbuild --target ${TARGET}"
fi
/usr/bin/rustc --version | grep -q '^rustc 1\.' || die "/usr/bin/rustc is not a Rust compiler"
log "$(/usr/bin/rustc --version), $(musl-gcc --version 2>&1 | head -n 1 || true)"

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
shim_dir="${TARGET_DIR}/shim"
mkdir -p "${shim_dir}" "${DIST_DIR}"
cat >"${shim_dir}/fortify.c" <<'EOF'
/* glibc's fortified fprintf, called by Debian's LLVM libunwind.a; musl has no such symbol. */
#include <stdarg.h>
#include <stdio.h>
int __fprintf_chk(FILE *stream, int flag, const char *format, ...) {
  (void)flag;
  va_list ap;
  va_start(ap, format);
  int n = vfprintf(stream, format, ap);
  va_end(ap);
  return n;
}
EOF
musl-gcc -O2 -c "${shim_dir}/fortify.c" -o "${shim_dir}/fortify.o"

started=${SECONDS}
log "building gpu-inventory-operator ${version} for ${TARGET} (release; the standard library too)"
RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc CC_x86_64_unknown_linux_musl=musl-gcc \
  /usr/bin/cargo build --release --locked --bin gpu-inventory-operator \
  --target "${TARGET}" --target-dir "${TARGET_DIR}" -Zbuild-std=std,panic_abort \
  --config "target.${TARGET}.linker=\"musl-gcc\"" \
  --config "target.${TARGET}.rustflags=[\"-Clink-self-contained=no\", \"-Ctarget-feature=+crt-static\", \"-Crelocation-model=static\", \"-Lnative=${LIBUNWIND_DIR}\", \"-Clink-arg=$(pwd)/${shim_dir}/fortify.o\"]" \
  --config "profile.release.strip=\"debuginfo\""
log "built in $((SECONDS - started)) s"

bin="${TARGET_DIR}/${TARGET}/release/gpu-inventory-operator"
if ldd "${bin}" >/dev/null 2>&1; then
  die "${bin} is dynamically linked: $(ldd "${bin}" 2>&1 | tr '\n' ' ')"
fi
"${bin}" --version >&2
# The same file answers as the kubectl plugin when called kubectl-gpu_inventory.
ln -sf gpu-inventory-operator "${TARGET_DIR}/${TARGET}/release/kubectl-gpu_inventory"
"${TARGET_DIR}/${TARGET}/release/kubectl-gpu_inventory" --help | head -n 1 | grep -q 'GPU nodes' ||
  die "the binary does not answer as kubectl-gpu_inventory"

name="gpu-inventory-operator-v${version}-${TARGET}"
stage="${TARGET_DIR}/${name}"
rm -rf "${stage}"
mkdir -p "${stage}"
cp "${bin}" README.md "${stage}/"
cp -R docs "${stage}/docs"
ln -s gpu-inventory-operator "${stage}/kubectl-gpu_inventory"
tar -C "${TARGET_DIR}" -czf "${DIST_DIR}/${name}.tar.gz" "${name}"
(cd "${DIST_DIR}" && sha256sum "${name}.tar.gz" >"${name}.tar.gz.sha256")
log "$(file -b "${bin}" | cut -d, -f1-5)"
log "${DIST_DIR}/${name}.tar.gz ($(du -h "${DIST_DIR}/${name}.tar.gz" | cut -f1)): $(cat "${DIST_DIR}/${name}.tar.gz.sha256")"
