//! The flags of `kubectl gpu-inventory map`, in a file of their own for the reason `quotas_args.rs` gives.

use clap::Args;

use super::map::picture::Grouping;
use super::output::{OutputFormat, parse_output};
use super::plugin::colour::Color;

/// The narrowest `--width`: a node name of 12 characters, one block of 8 cells and a note.
pub(crate) const MIN_WIDTH: usize = 40;

/// Flags of `map`.
#[derive(Debug, Args, Clone)]
pub(crate) struct MapArgs {
    /// Read nodes and pods from a `kubectl get nodes,pods -A -o yaml|json` dump instead of the cluster; `-`
    /// reads stdin.
    #[arg(long, short = 'f', env = "GPUINV_MAP_FROM_FILE", value_name = "FILE")]
    pub(crate) from_file: Option<String>,
    /// The cap on a `-f` dump.
    #[command(flatten)]
    pub(crate) input: super::input_args::InputArgs,
    /// Only nodes matching this label selector.
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    pub(crate) selector: Option<String>,
    /// Output format: `table` (`wide` is the same: the picture), `json` / `yaml` (the groups, their nodes and
    /// each node's cells, and the job), `name` (`node/NAME` per GPU node, in the map's order) or
    /// `jsonpath=TEMPLATE` (over the `-o json` object).
    #[arg(long, short = 'o', env = "GPUINV_MAP_OUTPUT", value_name = "FORMAT",
          value_parser = parse_output, default_value = "table")]
    pub(crate) output: OutputFormat,
    /// Print only the rows: no title, group lines, legend or job lines (when the map is summarised to one
    /// line per group, those lines are the rows).
    #[arg(long, env = "GPUINV_MAP_NO_HEADERS")]
    pub(crate) no_headers: bool,
    /// The groups: `auto` (the NVLink domain where nodes have one, else the narrowest network block that
    /// groups nodes, else the product), `product`, `nvlink`, or a node label key (a rack label, any key).
    #[arg(long, value_name = "GROUPING", default_value = "auto", value_parser = parse_grouping)]
    pub(crate) group_by: Grouping,
    /// A job of G whole GPUs in one pod: the nodes where it starts now are marked `>`.
    #[arg(long, env = "GPUINV_MAP_GPUS", value_name = "G")]
    pub(crate) gpus: Option<u64>,
    /// The job's GPU model, as `fit --product` takes it. Default: any.
    #[arg(long, value_name = "PRODUCT", requires = "gpus")]
    pub(crate) product: Option<String>,
    /// When the job fits on no node: `fit --plan`'s plan drawn over the map (the GPUs the moved pods leave
    /// `-`, where they go `+`, the node the job then starts on `>`) and its moves listed below.
    #[arg(long, requires = "gpus")]
    pub(crate) plan: bool,
    /// Columns every line fits in (node names are cut, cells wrap).
    #[arg(long, env = "GPUINV_MAP_WIDTH", value_name = "COLUMNS", default_value_t = 80,
          value_parser = parse_width)]
    pub(crate) width: usize,
    /// Colour: `auto` (only on a terminal, and not when NO_COLOR is set or TERM=dumb), `always` or `never`.
    /// The glyphs say everything without it.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub(crate) color: Color,
    /// With `--prometheus-url`, the held GPUs that sat idle are drawn `i` (docs/utilization.md).
    #[command(flatten)]
    pub(crate) utilization: super::utilization_source_args::UtilizationSourceArgs,
}

/// Parses `--group-by`: `auto`, `product`, else `nvlink` or a node label key.
pub(crate) fn parse_grouping(text: &str) -> Result<Grouping, String> {
    let choices = "auto, product, nvlink or a node label key";
    Ok(match text.trim() {
        "auto" => Grouping::Auto,
        "product" => Grouping::Product,
        "" => return Err(format!("empty; name {choices}")),
        level => {
            crate::inventory::selector::valid_key(level)
                .map_err(|e| format!("{e}; name {choices}"))?;
            Grouping::Level(level.to_owned())
        }
    })
}

fn parse_width(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= MIN_WIDTH => Ok(n),
        _ => Err(format!(
            "{text:?}: a number of columns, at least {MIN_WIDTH}"
        )),
    }
}
