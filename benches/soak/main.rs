//! `make soak` (hack/soak.sh): the chaos soak, a `harness = false` bench target (`cargo build --release
//! --bench soak`). The promise it checks: after any sequence of faults, once the cluster is quiet, the
//! inventory status, the ConfigMap and the leader's /metrics equal a fresh `scan` of the same cluster, with no
//! write in the quiet period, no panic, and no growth in memory.
//!
//! 1. creates the fleet (fleet.rs) on the etcd + kube-apiserver cluster hack/soak.sh started, and starts two
//!    operators with `--leader-elect` (operators.rs); waits until their outputs equal a scan;
//! 2. for SOAK_SECS: the churn (churn.rs) at a steady rate, the faults (faults.rs) at seeded times, the last one
//!    ending with the window; RSS of both replicas every SOAK_RSS_EVERY_SECS; replicas that exit are restarted;
//! 3. stops the churn; the time until the outputs equal a fresh scan is `convergedAfterLastFaultSecs`;
//! 4. a quiet period (SOAK_QUIET_SECS): the operators' writes in it, from the audit log (Lease renewals aside);
//! 5. a fresh scan again, compared field by field with the outputs (compare.rs); panics in the operators' logs;
//! 6. report.json, report.txt and rss.png in SOAK_OUT_DIR (report.rs, plot.rs); exit 1 unless all held.
//!
//! From the test kit (`testkit/`, shared with the bench driver and the integration tests): the fleet's node
//! templates and writes (`testkit::cluster`), the Ready condition (`testkit::nodes`), the pod objects and writes
//! (`testkit::pods`), the DRA objects (`testkit::dra_objects`), the audit-log counts (`testkit::audit`), the RSS
//! samples and the leak check (`testkit::rss`), the GET of /metrics (`testkit::http`), the library imports
//! (`testkit::lib_api`) and the knobs (`testkit::settings::soak`: each a SOAK_* variable and an option;
//! `--help` lists them, hack/soak.sh's header too).

mod churn;
mod compare;
mod dra;
mod faults;
mod fleet;
mod operators;
mod phases;
mod plot;
mod report;
mod rng;

use std::process::ExitCode;

use jiff::Timestamp;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use testkit::settings::soak::Settings;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, BoxError>;

/// The soak's own requests carry this User-Agent, so the audit counts of the operators' writes skip them.
const SOAK_UA: &str = "gpu-inventory-soak/0.1.0";

fn log(msg: impl AsRef<str>) {
    eprintln!(
        "[soak {}] {}",
        Timestamp::now().strftime("%H:%M:%S"),
        msg.as_ref()
    );
}

#[tokio::main]
async fn main() -> ExitCode {
    // A plain `cargo bench` runs every bench target with `--bench`; this one needs the cluster hack/soak.sh sets up.
    if std::env::args().skip(1).any(|a| a == "--bench") {
        eprintln!("soak: run by hack/soak.sh (`make soak`), not by `cargo bench`; skipping");
        return ExitCode::SUCCESS;
    }
    let s: Settings = testkit::settings::parse();
    if let Err(e) = s.check() {
        log(format!("error: {e}"));
        return ExitCode::from(2);
    }
    log(format!(
        "seed {} ({}); repeat with SOAK_SEED={}",
        s.seed(),
        if s.seed_given() {
            "from SOAK_SEED"
        } else {
            "drawn"
        },
        s.seed()
    ));
    // On SIGINT/SIGTERM the run is dropped, and with it the replicas (Operators kills them when dropped):
    // none is left running against a cluster hack/soak.sh is about to delete.
    let outcome = tokio::select! {
        r = soak(&s) => r,
        signal = stopped() => {
            log(format!("{signal}: stopping the replicas (seed {})", s.seed()));
            return ExitCode::from(130);
        }
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            log(format!("error: {e} (seed {})", s.seed()));
            ExitCode::from(2)
        }
    }
}

/// Waits for SIGINT or SIGTERM; names it.
async fn stopped() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}

/// The whole run; Ok(passed).
async fn soak(s: &Settings) -> Res<bool> {
    std::fs::create_dir_all(s.out_dir.join("logs"))?;
    let client = client(s).await?;
    let outcome = phases::run(s, &client).await?;
    let doc = report::json(s, &outcome);
    std::fs::write(
        s.out_dir.join("report.json"),
        serde_json::to_string_pretty(&doc)?,
    )?;
    let table = report::table(s, &outcome);
    std::fs::write(s.out_dir.join("report.txt"), &table)?;
    let png = s.out_dir.join("rss.png");
    let leak = outcome.leak(s);
    match plot::rss_png(
        &png,
        &outcome.rss,
        &outcome.faults,
        leak.as_ref(),
        s.rss_tolerance,
        s.secs as f64,
    ) {
        Ok(text) => log(format!(
            "RSS graph: {}{}",
            png.display(),
            if text { "" } else { " (no font: no text)" }
        )),
        Err(e) => log(format!("RSS graph not drawn: {e}")),
    }
    println!("\n{table}");
    log(format!(
        "report: {}",
        s.out_dir.join("report.json").display()
    ));
    Ok(outcome.passed(s))
}

/// A client for SOAK_KUBECONFIG whose requests carry the soak's User-Agent.
async fn client(s: &Settings) -> Res<Client> {
    let kubeconfig = Kubeconfig::read_from(&s.kubeconfig)
        .map_err(|e| format!("kubeconfig {}: {e}", s.kubeconfig.display()))?;
    let mut config =
        Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(SOAK_UA),
    ));
    Ok(Client::try_from(config)?)
}
