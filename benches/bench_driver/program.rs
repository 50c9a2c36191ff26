//! The two programs under test: starting one as a child process and stopping it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::Res;
use crate::settings::Settings;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    Operator,
    Baseline,
}

impl Program {
    /// A word of BENCH_PROGRAMS.
    pub fn parse(word: &str) -> Self {
        match word {
            "operator" => Program::Operator,
            "baseline" => Program::Baseline,
            other => panic!("BENCH_PROGRAMS: unknown program {other}"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Program::Operator => "operator",
            Program::Baseline => "baseline",
        }
    }

    pub fn user_agent_prefix(self) -> &'static str {
        match self {
            Program::Operator => "gpu-inventory-operator/",
            Program::Baseline => "gpu-inventory-baseline/",
        }
    }
}

/// Starts `program` for `namespace` and `inventory`, its stdout and stderr going to `log_path`.
pub fn spawn_program(
    s: &Settings,
    program: Program,
    namespace: &str,
    inventory: &str,
    log_path: &Path,
) -> Res<Child> {
    let log_file = std::fs::File::create(log_path)?;
    let mut cmd = match program {
        Program::Operator => {
            let mut c = Command::new(&s.operator_bin);
            c.arg("run");
            // The metrics endpoint is off so the bench never collides with a test's operator on 8080.
            c.env("GPUINV_METRICS_ADDR", "");
            c
        }
        Program::Baseline => Command::new(&s.baseline_bin),
    };
    cmd.arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .arg("--namespace")
        .arg(namespace)
        .arg("--default-inventory")
        .arg(inventory)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    Ok(cmd.spawn()?)
}

/// SIGTERM, up to 10 s to exit, then SIGKILL.
pub fn stop_program(child: &mut Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    for _ in 0..100 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}
