//! The flags of `crd` and `completion`, in a file of their own for the reason `quotas_args.rs` gives: the
//! command line names them, and the commands name the command line (to write its completion).

use clap::{Args, ValueEnum};

use super::output::{OutputFormat, parse_output};

/// Flags of `crd`.
#[derive(Debug, Args, Clone)]
pub struct CrdArgs {
    /// Output format: `yaml` (the default: the CRDs as documents for `kubectl apply -f -`), `json` (a v1
    /// List of them), `name` (`customresourcedefinition.apiextensions.k8s.io/NAME`), `jsonpath=TEMPLATE`
    /// (over the `-o json` List), or `table`/`wide` (one row per CRD).
    #[arg(long, short = 'o', value_name = "FORMAT", value_parser = parse_output, default_value = "yaml")]
    pub output: OutputFormat,
    /// With `-o table|wide`: no header line.
    #[arg(long)]
    pub no_headers: bool,
}

/// Flags of `completion`.
#[derive(Debug, Args, Clone)]
pub struct CompletionArgs {
    /// The shell: `bash`, `zsh` or `fish`.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The shells a completion script is written for (kubectl's choices less PowerShell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// `source <(gpu-inventory-operator completion bash)`, or into /etc/bash_completion.d/.
    Bash,
    /// `source <(gpu-inventory-operator completion zsh)`, or as `_gpu-inventory-operator` on `$fpath`.
    Zsh,
    /// `gpu-inventory-operator completion fish | source`, or into ~/.config/fish/completions/.
    Fish,
}
