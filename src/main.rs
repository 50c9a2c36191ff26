//! Entry point: parse the command line, set up logging, dispatch. Nothing else lives here.

use std::process::ExitCode;

use clap::Parser;
use gpu_inventory_operator::cmd::cli::{Cli, Command};
use gpu_inventory_operator::cmd::{plugin, run, scan};
use gpu_inventory_operator::publish::crd::crd_yaml;
use gpu_inventory_operator::runtime::logging;
use gpu_inventory_operator::runtime::shutdown::Shutdown;

#[tokio::main]
async fn main() -> ExitCode {
    // Run as `kubectl-gpu_inventory` (on PATH, or installed by krew): the kubectl plugin.
    if std::env::args()
        .next()
        .is_some_and(|a| plugin::invoked_as_plugin(&a))
    {
        let args = plugin::PluginArgs::parse();
        if std::env::var_os("RUST_LOG").is_some() {
            logging::init_logging(args.global.log_format);
        }
        return plugin::run(args).await;
    }
    let cli = Cli::parse();
    logging::init_logging(cli.global.log_format);
    match cli.command.unwrap_or(Command::Run(Box::new(cli.run))) {
        Command::Crd => {
            print!("{}", crd_yaml());
            ExitCode::SUCCESS
        }
        Command::Scan(args) => scan::run(&cli.global, &args).await,
        Command::Run(args) => match run::run(&cli.global, *args, Shutdown::on_signals()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(reason = e.metric_label(), "{e}");
                ExitCode::FAILURE
            }
        },
    }
}
