//! The programs under test: the operator, the article-style baseline, and the previous operator (an earlier
//! revision's `gpu-inventory-operator`, built by hack/bench.sh from BENCH_PREVIOUS_REV, the same flags as
//! today's for what the bench uses; `testkit::settings::bench::Program`, which the knobs name): starting one as a
//! child process and stopping it.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use testkit::settings::bench::{Program, Settings};

use crate::Res;

/// Starts `program` for `namespace` and `inventory`, its stdout and stderr going to `log_path`.
pub fn spawn_program(
    s: &Settings,
    program: Program,
    namespace: &str,
    inventory: &str,
    log_path: &Path,
) -> Res<Child> {
    spawn_program_with(s, program, (namespace, inventory), log_path, "", &[])
}

/// [`spawn_program`], an operator's metrics endpoint on `metrics_addr` (`127.0.0.1:0`: a free port, which its
/// log names; "": none, so the bench never collides with a test's operator on 8080) and `args` after the
/// others (an operator's only).
pub fn spawn_program_with(
    s: &Settings,
    program: Program,
    (namespace, inventory): (&str, &str),
    log_path: &Path,
    metrics_addr: &str,
    args: &[String],
) -> Res<Child> {
    let log_file = std::fs::File::create(log_path)?;
    let mut cmd = match program {
        Program::Operator | Program::Previous => {
            let bin = match program {
                Program::Previous => s.previous_bin.as_deref().ok_or(
                    "the previous program needs BENCH_PREVIOUS_BIN (hack/bench.sh sets it from BENCH_PREVIOUS_REV)",
                )?,
                _ => s.operator_bin.as_path(),
            };
            if !bin.exists() {
                return Err(
                    format!("{}: no such program ({})", bin.display(), program.name()).into(),
                );
            }
            let mut c = match s.operator_wrapper.split_first() {
                Some((wrapper, args)) => {
                    let mut c = Command::new(wrapper);
                    c.args(args).arg(bin);
                    c
                }
                None => Command::new(bin),
            };
            c.arg("run").args(args);
            c.env("GPUINV_METRICS_ADDR", metrics_addr);
            c
        }
        Program::Baseline => Command::new(&s.baseline_bin),
    };
    // A group of its own (its id the child's), so that [`stop_program`] stops a wrapper's children too.
    cmd.process_group(0);
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

/// SIGTERM to the program's process group, up to 10 s to exit, then SIGKILL to the group. The group, not the
/// process: under `BENCH_OPERATOR_WRAPPER` the child is the wrapper (heaptrack is a shell script), and the
/// operator it started kept running, and profiling, after the run when only the wrapper was signalled.
pub fn stop_program(child: &mut Child) {
    let group = format!("-{}", child.id());
    let signal_group = |signal: &str| {
        let _ = Command::new("kill").args([signal, "--", &group]).status();
    };
    signal_group("-TERM");
    for _ in 0..100 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    signal_group("-KILL");
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs each program of a scenario in turn on its fleet, each from the same state: the GpuNodes an earlier one
/// wrote deleted and today's CRDs installed again (an older operator applies its own). `run` measures one
/// program and hands the fleet's state (`state`: what the driver expects of it) to the next. A failed program
/// is logged and recorded in `failures`, and the next one still runs. Returns each program's figures by name.
pub async fn each_program<S>(
    client: &kube::Client,
    s: &Settings,
    scenario: &str,
    programs: &[Program],
    state: S,
    failures: &mut Vec<serde_json::Value>,
    mut run: impl AsyncFnMut(Program, S) -> (Res<serde_json::Value>, S),
) -> serde_json::Map<String, serde_json::Value> {
    let runs: Vec<(String, Program)> = programs.iter().map(|p| (p.name().to_owned(), *p)).collect();
    let each = async |_: usize, program: Program, state: S| run(program, state).await;
    each_run(client, s, scenario, &runs, state, failures, each)
        .await
        .0
}

/// [`each_program`] over labelled runs (the same program may run more than once: the scale scenario's runs
/// `run1`, `run2`, ...), `run` told the run's number (from 1); returns each run's figures by label, and the
/// fleet's state after the last.
pub async fn each_run<S>(
    client: &kube::Client,
    s: &Settings,
    scenario: &str,
    runs: &[(String, Program)],
    mut state: S,
    failures: &mut Vec<serde_json::Value>,
    mut run: impl AsyncFnMut(usize, Program, S) -> (Res<serde_json::Value>, S),
) -> (serde_json::Map<String, serde_json::Value>, S) {
    let mut out = serde_json::Map::new();
    for (k, (label, program)) in runs.iter().enumerate() {
        let prepared = async {
            crate::gpunode_watch::delete_all(client).await?;
            testkit::lib_api::install_crd(client, Duration::from_secs(60)).await?;
            std::fs::create_dir_all(&s.log_dir)?;
            Res::Ok(())
        }
        .await;
        let result = match prepared {
            Ok(()) => {
                let (result, after) = run(k + 1, *program, state).await;
                state = after;
                result
            }
            Err(e) => Err(format!("preparing the cluster: {e}").into()),
        };
        let value = result.unwrap_or_else(|e| {
            crate::log(format!("FAILED {scenario} {label}: {e}"));
            failures.push(serde_json::json!({ "part": label, "error": e.to_string() }));
            serde_json::Value::Null
        });
        out.insert(label.clone(), value);
    }
    (out, state)
}
