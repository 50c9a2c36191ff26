# Sourced by hack/bench.sh and hack/soak.sh (which define `log`).
# cargo_executable ARTIFACTS TARGET: the path of TARGET's executable among cargo's build messages ARTIFACTS
# (`--message-format=json-render-diagnostics`: one JSON object a line, a compiler-artifact message per built
# target). Bench targets (`harness = false`) have no stable path: cargo names them deps/<name>-<hash>.
cargo_executable() {
  local path
  path="$(printf '%s\n' "$1" | grep -F '"reason":"compiler-artifact"' | grep -F "\"name\":\"$2\"" |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)"
  if [[ -z "${path}" || ! -x "${path}" ]]; then
    log "cargo reported no executable for $2"
    exit 1
  fi
  printf '%s\n' "${path}"
}
