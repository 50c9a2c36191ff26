//! Entry point: parse the command line, set up logging, pick the runtime, dispatch. Nothing else lives here.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use gpu_inventory_operator::cmd::cli::{Cli, Command};
use gpu_inventory_operator::cmd::{completion, fit, fleet, plugin, quotas, run, scan, utilization};
use gpu_inventory_operator::runtime::logging;
use gpu_inventory_operator::runtime::shutdown::Shutdown;

fn main() -> ExitCode {
    // Run as `kubectl-gpu_inventory` (on PATH, or installed by krew): the kubectl plugin.
    if std::env::args()
        .next()
        .is_some_and(|a| plugin::invoked_as_plugin(&a))
    {
        let args = plugin::PluginArgs::parse();
        if std::env::var_os("RUST_LOG").is_some() {
            logging::init_logging(args.global.log_format);
        }
        return once(plugin::run(args));
    }
    let cli = Cli::parse();
    logging::init_logging(cli.global.log_format);
    if let Err(e) = cli.global.one_cluster("gpu-inventory-operator") {
        return scan::failed(&e);
    }
    match cli.command.unwrap_or(Command::Run(Box::new(cli.run))) {
        Command::Crd(args) => completion::crd(&args),
        Command::Completion(args) => {
            completion::completion(&args, Cli::command(), "gpu-inventory-operator")
        }
        Command::Scan(args) => once(scan::run(&cli.global, &args)),
        Command::Fit(args) => once(fit::run(&cli.global, &args)),
        Command::Quotas(args) => once(quotas::run(&cli.global, &args)),
        Command::Utilization(args) => once(utilization::run(&cli.global, &args)),
        Command::Fleet(args) => once(fleet::hub::run(&cli.global, &args)),
        Command::Run(args) => {
            // The signal handlers are tasks: they are set up inside the runtime.
            let operator = async { run::run(&cli.global, *args, Shutdown::on_signals()).await };
            match service().block_on(operator) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(reason = e.metric_label(), "{e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// The operator: watches, publishers and the HTTP server run side by side on every core.
fn service() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}

/// Runs a one-shot command to its end; whatever still runs then (a credential plugin past its cluster's
/// deadline, on the blocking pool) is not waited for.
fn once(command: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    let runtime = one_shot();
    let code = runtime.block_on(command);
    runtime.shutdown_background();
    code
}

/// `scan` and the plugin: one request at a time, then one computation. On one thread the response body
/// reaches the decoder without a wake-up of another thread per chunk read (on two worker threads a
/// 5,000-node scan made ~160,000 futex calls and ~236,000 context switches).
fn one_shot() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}
