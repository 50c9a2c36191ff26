//! `kubectl gpu-inventory`: the same binary run under the name `kubectl-gpu_inventory` (a symlink or copy on
//! PATH; `make install-plugin`, or krew) is a kubectl plugin. It prints `scan`'s live view of the cluster
//! (tables from `cmd::render`, the listing of [`super::scan`]), in colour on a terminal, and with
//! `--watch` follows the operator's own sources (one node watch, one pod watch) and redraws on each change.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use crate::inventory::selector::LabelSelector;
use clap::{Parser, ValueEnum};

use super::cli::{DEFAULT_CHUNK_SIZE, GlobalArgs, GroupBy, OutputFormat, ScanArgs};
use super::scan::{EXIT_ERROR, exit_code, format_status, scan_status, status_of};
use crate::crd::GpuInventoryStatus;
use crate::error::{Error, Result};
use crate::inventory::selector::parse_selector;
use crate::runtime::client::connect;
use crate::runtime::health::Health;
use crate::runtime::metrics::Metrics;
use crate::sources::{Sources, SourcesConfig};

/// The executable name kubectl looks for to run `kubectl gpu-inventory`.
pub(crate) const PLUGIN_NAME: &str = "kubectl-gpu_inventory";

/// How long `--watch` waits for the first full list of nodes and pods.
const FIRST_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// GPU nodes of the cluster: product, GPUs, free, Ready, issues. Exit code: 0 every GPU node healthy, 1 some
/// issue, 2 error (as `gpu-inventory-operator scan`).
#[derive(Debug, Parser)]
#[command(name = "kubectl gpu-inventory", version)]
pub struct PluginArgs {
    /// Output format: `table`, `wide` (adds allocated, MIG/sharing, sources, notes), `json` or `yaml` (the
    /// GpuInventory status object).
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,
    /// Only nodes matching this label selector.
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    pub(crate) selector: Option<String>,
    /// Keep watching nodes and pods and redraw on every change (Ctrl-C stops).
    #[arg(long, short = 'w')]
    pub(crate) watch: bool,
    /// Rows of the table: one per GPU node, per GPU model, or per namespace.
    #[arg(long, value_enum, default_value_t = GroupBy::Node)]
    pub(crate) group_by: GroupBy,
    /// Colour: `auto` (only on a terminal, and not when NO_COLOR is set), `always` or `never`.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub(crate) color: Color,
    /// kubectl's --kubeconfig, --context (and --log-format, for RUST_LOG diagnostics).
    #[command(flatten)]
    pub global: GlobalArgs,
}

/// When to colour the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Color {
    /// On a terminal, unless NO_COLOR is set to anything but "".
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Whether the process was started as the kubectl plugin (its name, without directory, is
/// `kubectl-gpu_inventory`).
pub fn invoked_as_plugin(argv0: &str) -> bool {
    let name = std::path::Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name == PLUGIN_NAME || name.strip_suffix(".exe") == Some(PLUGIN_NAME)
}

/// Runs the plugin.
pub async fn run(args: PluginArgs) -> ExitCode {
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let result = if args.watch {
        watch(&args, color).await
    } else {
        once(&args, color).await
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "error: {}",
                crate::runtime::terminal_text::visible(&e.to_string())
            );
            ExitCode::from(EXIT_ERROR)
        }
    }
}

async fn once(args: &PluginArgs, color: bool) -> Result<ExitCode> {
    let scan_args = ScanArgs {
        from_file: None,
        output: args.output,
        selector: args.selector.clone(),
        group_by: args.group_by,
        chunk_size: DEFAULT_CHUNK_SIZE,
        status_nodes_budget: None,
    };
    let status = scan_status(&args.global, &scan_args).await?;
    print!("{}", shown(&status, args, color));
    Ok(exit_code(&status))
}

/// The text for `status`, coloured when asked (tables only).
fn shown(status: &GpuInventoryStatus, args: &PluginArgs, color: bool) -> String {
    let text = format_status(status, args.output, args.group_by);
    let table = matches!(args.output, OutputFormat::Table | OutputFormat::Wide);
    if color && table {
        colourise(&text)
    } else {
        text
    }
}

async fn watch(args: &PluginArgs, color: bool) -> Result<ExitCode> {
    let selector = match &args.selector {
        Some(text) => parse_selector(text).map_err(|e| Error::InvalidFlag(format!("-l: {e}")))?,
        None => LabelSelector::default(),
    };
    let connection = connect(&args.global.client_config()).await?;
    let health = Health::new(Metrics::new().watch_restarts.clone());
    let config = SourcesConfig {
        node_label_selector: args.selector.clone(),
        dra_drivers: args.global.dra_drivers(),
        health: args.global.health_table(),
        topology_labels: args.global.topology_labels.clone(),
    };
    let (sources, feed) = Sources::start(connection.client, &config, health.clone());
    let feed = tokio::spawn(feed);
    let mut changes = sources.changes();
    if tokio::time::timeout(FIRST_LIST_TIMEOUT, sources.wait_until_ready())
        .await
        .is_err()
    {
        feed.abort();
        let why = health.readiness(Duration::ZERO).err().unwrap_or_default();
        return Err(Error::InvalidFlag(format!(
            "no full list of nodes and pods from {} within {FIRST_LIST_TIMEOUT:?} ({why}); the plugin needs \
             list and watch on nodes and pods, and on resourceslices, resourceclaims, deviceclasses and \
             devicetaintrules where resource.k8s.io serves them (--dra-driver= skips DRA)",
            connection.cluster_url
        )));
    }
    let terminal = std::io::stdout().is_terminal();
    let mut shown_status: Option<GpuInventoryStatus> = None;
    let mut last = ExitCode::SUCCESS;
    loop {
        let inventory = sources
            .snapshot()
            .scan(&selector, sources.node_universe(), None);
        // Planned against what is on screen, as the operator plans against the server: unchanged content
        // (heartbeats, a pod that changed nothing visible) draws nothing.
        if let Some(status) = status_of(&inventory, shown_status.as_ref()) {
            draw(&shown(&status, args, color), terminal);
            last = exit_code(&status);
            shown_status = Some(status);
        }
        tokio::select! {
            more = changes.next() => if !more { break },
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    feed.abort();
    Ok(last)
}

/// On a terminal: clear the screen and draw from the top. Elsewhere (a pipe, a file): append, one block per
/// change, separated by a blank line.
fn draw(text: &str, terminal: bool) {
    let mut out = std::io::stdout().lock();
    let now = jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M:%S UTC");
    let header = format!("kubectl gpu-inventory --watch  {now}  (Ctrl-C to stop)\n");
    let _ = if terminal {
        write!(out, "\x1b[H\x1b[2J{header}{text}")
    } else {
        writeln!(out, "{header}{text}")
    };
    let _ = out.flush();
}

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Colours a node table: READY green or red, a non-empty ISSUES cell red, the header bold, issue lines
/// yellow. Columns are found from the header (render aligns every cell under its header name).
pub(crate) fn colourise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    let mut columns: Option<Vec<(usize, String)>> = None;
    let mut in_issues = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let newline = &line[body.len()..];
        if body.is_empty() {
            columns = None;
            in_issues = false;
            out += line;
        } else if body.starts_with("NAME ") && body.contains(" READY ") {
            columns = Some(column_starts(body));
            out += &format!("{BOLD}{body}{RESET}{newline}");
        } else if body == "issues:" {
            in_issues = true;
            out += &format!("{BOLD}{body}{RESET}{newline}");
        } else if in_issues {
            out += &format!("{YELLOW}{body}{RESET}{newline}");
        } else if let Some(cols) = columns.as_ref().filter(|c| is_row(body, c)) {
            out += &colour_row(body, cols);
            out += newline;
        } else {
            out += line;
        }
    }
    out
}

/// (char offset, name) of each column of a header line: names are single words two or more spaces apart.
fn column_starts(header: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = header.chars().collect();
    let mut starts = Vec::new();
    for (i, c) in chars.iter().enumerate() {
        let starts_word = !c.is_whitespace()
            && (i == 0 || (i >= 2 && chars[i - 1] == ' ' && chars[i - 2] == ' '));
        if starts_word {
            let name: String = chars[i..]
                .iter()
                .take_while(|c| !c.is_whitespace())
                .collect();
            starts.push((i, name));
        }
    }
    starts
}

/// Whether `line` is a row of the table under `columns`: every cell is padded to its column's width, so two
/// spaces precede each column start (legend lines under the table are prose).
fn is_row(line: &str, columns: &[(usize, String)]) -> bool {
    let chars: Vec<char> = line.chars().collect();
    columns
        .iter()
        .filter(|(start, _)| *start >= 2 && *start < chars.len())
        .all(|(start, _)| chars[start - 1] == ' ' && chars[start - 2] == ' ')
}

fn colour_row(row: &str, columns: &[(usize, String)]) -> String {
    let chars: Vec<char> = row.chars().collect();
    let mut out = String::new();
    for (n, (start, name)) in columns.iter().enumerate() {
        let end = columns
            .get(n + 1)
            .map_or(chars.len(), |c| c.0)
            .min(chars.len());
        let cell: String = chars[(*start).min(chars.len())..end].iter().collect();
        let (value, pad) = cell.split_at(cell.trim_end().len());
        let colour = match (name.as_str(), value) {
            ("READY", "true") => Some(GREEN),
            ("READY", _) => Some(RED),
            ("ISSUES", v) if v != "-" && !v.is_empty() => Some(RED),
            _ => None,
        };
        match colour {
            Some(colour) => out += &format!("{colour}{value}{RESET}{pad}"),
            None => out += &cell,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "total_gpu_nodes: 2  ready_gpu_nodes: 1\n\
        NAME  READY  PRODUCT      GPUS  FREE  MEMORY  WORKLOAD  ISSUES\n\
        a     true   NVIDIA A100  8     8     -       -         -\n\
        bb    false  T4           1     0     -       -         NotReady\n\
        \n\
        issues:\n  bb: NotReady: Ready condition is False\n";

    #[test]
    fn legend_lines_under_the_table_are_not_rows() {
        let text = "NAME  READY  PRODUCT  ISSUES\na     false  x*       -\n* product named by a cloud-provider label\n";
        let coloured = colourise(text);
        assert!(
            coloured.ends_with("* product named by a cloud-provider label\n"),
            "{coloured}"
        );
    }

    #[test]
    fn the_plugin_answers_to_its_kubectl_name_only() {
        assert!(invoked_as_plugin(
            "/home/u/.local/bin/kubectl-gpu_inventory"
        ));
        assert!(invoked_as_plugin("kubectl-gpu_inventory"));
        assert!(!invoked_as_plugin("/usr/bin/gpu-inventory-operator"));
        assert!(!invoked_as_plugin("kubectl-gpu_inventory-old"));
    }

    #[test]
    fn colour_marks_ready_and_issues_and_keeps_the_text() {
        let coloured = colourise(TABLE);
        assert!(
            coloured.contains(&format!("{GREEN}true{RESET}")),
            "{coloured}"
        );
        assert!(
            coloured.contains(&format!("{RED}false{RESET}")),
            "{coloured}"
        );
        assert!(
            coloured.contains(&format!("{RED}NotReady{RESET}")),
            "{coloured}"
        );
        assert!(
            coloured.contains(&format!("{YELLOW}  bb: NotReady")),
            "{coloured}"
        );
        // A product with a space stays one cell; the summary line is untouched.
        assert!(coloured.contains("NVIDIA A100  8"), "{coloured}");
        let plain: String = coloured
            .replace(GREEN, "")
            .replace(RED, "")
            .replace(YELLOW, "")
            .replace(BOLD, "")
            .replace(RESET, "");
        assert_eq!(plain, TABLE);
    }

    #[test]
    fn flags_are_kubectls() {
        let args = PluginArgs::try_parse_from([
            "kubectl gpu-inventory",
            "--context",
            "lab",
            "--kubeconfig",
            "/k",
            "-l",
            "pool=a",
            "-o",
            "wide",
            "-w",
        ])
        .unwrap();
        assert_eq!(args.global.context.as_deref(), Some("lab"));
        assert_eq!(args.selector.as_deref(), Some("pool=a"));
        assert!(args.watch && args.output == OutputFormat::Wide);
    }
}
