//! The tools the tests run that `hack/build-control-plane.sh` builds once from their Go modules (helm, Kueue,
//! Prometheus): from an environment variable naming the binary, else from the script, which prints the
//! cached binary's path (building it the first time).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

/// [`tool_binary`], asked once per tool for the whole test process (tests needing different tools do not wait
/// for each other's builds); panics with its error, saying `for_what` needs it.
pub fn cached_tool(name: &str, variable: &str, instead: &str, for_what: &str) -> PathBuf {
    type Found = Arc<OnceLock<Result<PathBuf, String>>>;
    static TOOLS: Mutex<Option<HashMap<String, Found>>> = Mutex::new(None);
    let cell: Found = TOOLS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .entry(name.to_owned())
        .or_default()
        .clone();
    match cell.get_or_init(|| tool_binary(name, variable, instead)) {
        Ok(path) => path.clone(),
        Err(e) => panic!("no {name} for {for_what}: {e}"),
    }
}

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
