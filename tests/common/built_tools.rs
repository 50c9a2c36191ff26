//! The tools the tests run that `hack/build-control-plane.sh` builds once from their Go modules (helm, Kueue,
//! Prometheus): from an environment variable naming the binary, else from the script, which prints the
//! cached binary's path (building it the first time).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `$<variable>` when set, else the path `hack/build-control-plane.sh <name>` prints; an error says what
/// failed and what `instead` a user can do.
pub fn tool_binary(name: &str, variable: &str, instead: &str) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(variable).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/build-control-plane.sh");
    let out = Command::new(&script)
        .arg(name)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && Path::new(&path).is_file() {
        Ok(PathBuf::from(path))
    } else {
        Err(format!(
            "`hack/build-control-plane.sh {name}` failed ({}): needs Go and the Go module proxy once; see its \
             output above, or set {variable} to {instead}",
            out.status
        ))
    }
}
