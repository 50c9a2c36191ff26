//! Entry point: parse the command line, set up logging, dispatch. Nothing else lives here.

use std::process::ExitCode;

use clap::Parser;
use gpu_inventory_operator::cli::{Cli, Command};
use gpu_inventory_operator::shutdown::Shutdown;
use gpu_inventory_operator::{crd_install, operator, scan_cmd, telemetry};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    telemetry::init_logging(cli.global.log_format);
    match cli.command.unwrap_or(Command::Run(cli.run)) {
        Command::Crd => {
            print!("{}", crd_install::crd_yaml());
            ExitCode::SUCCESS
        }
        Command::Scan(args) => scan_cmd::run(&cli.global, &args).await,
        Command::Run(args) => {
            match operator::run(&cli.global, args, Shutdown::on_signals()).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(reason = e.metric_label(), "{e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
