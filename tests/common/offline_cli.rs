//! The binary run offline, as a user runs it on a dump: no kubeconfig, no home, no colour; under its own name
//! or the kubectl plugin's; and the cells of a row of the table it prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `program` with `args`, offline.
pub fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// `gpu-inventory-operator` with `args`, offline.
pub fn operator(args: &[&str]) -> Output {
    run(
        Path::new(env!("CARGO_BIN_EXE_gpu-inventory-operator")),
        args,
    )
}

/// The binary under the plugin's name (a symlink, as `make install-plugin` makes it, in a directory of this
/// test process's own, named by `tag`), with `args`, offline.
pub fn plugin(tag: &str, args: &[&str]) -> Output {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/test-logs/{tag}-{}-bin", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link: PathBuf = dir.join("kubectl-gpu_inventory");
    if !link.exists() {
        // Tests run in parallel: another may have made it between the check and here.
        let _ = std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpu-inventory-operator"), &link);
    }
    run(&link, args)
}

/// `scan -f - -o json` of `dump` (a List, as `kubectl get -o json` prints it) fed on stdin, offline: the
/// status it prints.
pub fn scan_json(dump: &serde_json::Value) -> serde_json::Value {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(["scan", "-f", "-", "-o", "json"])
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dump.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "scan -f -: {e}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// What it printed on stdout.
pub fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The cells of the table row that starts with `first` (cells are two or more spaces apart).
pub fn row<'t>(text: &'t str, first: &str) -> Vec<&'t str> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{first} ")))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{text}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}
