//! The plugin's command line: kubectl's flags, the subcommands and their own flags.

use super::*;

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
    assert_eq!(args.global.context, ["lab"]);
    assert_eq!(args.selector.as_deref(), Some("pool=a"));
    assert!(args.watch && args.output == OutputFormat::Wide);
    assert!(args.command.is_none(), "no subcommand: the table");
}

#[test]
fn fit_is_a_subcommand_with_fits_flags_and_kubectls_connection_flags() {
    let args = PluginArgs::try_parse_from([
        "kubectl gpu-inventory",
        "--context",
        "lab",
        "fit",
        "--gpus",
        "64",
        "--product",
        "NVIDIA-GB200",
        "--gpus-per-pod",
        "4",
        "--level",
        "nvlink",
        "-o",
        "json",
        "--kubeconfig",
        "/k",
    ])
    .unwrap();
    assert_eq!(args.global.context, ["lab"]);
    assert_eq!(
        args.global.kubeconfig.as_deref(),
        Some(std::path::Path::new("/k"))
    );
    let Some(PluginCommand::Fit(fit)) = &args.command else {
        panic!("not fit: {:?}", args.command);
    };
    assert_eq!((fit.gpus, fit.gpus_per_pod), (Some(64), Some(4)));
    assert_eq!(fit.product.as_deref(), Some("NVIDIA-GB200"));
    assert_eq!(fit.level.as_deref(), Some("nvlink"));
    assert_eq!(fit.output, OutputFormat::Json);
    assert!(table_flags(&args).is_empty());
    // The table's own flags before `fit` are named, to be refused rather than ignored.
    let watch_fit = PluginArgs::try_parse_from([
        "kubectl gpu-inventory",
        "-w",
        "-l",
        "a=b",
        "fit",
        "--gpus",
        "8",
    ])
    .unwrap();
    assert_eq!(table_flags(&watch_fit), ["-l/--selector", "-w/--watch"]);
    assert!(
        PluginArgs::try_parse_from(["kubectl gpu-inventory", "fit"]).is_err(),
        "--gpus is required"
    );
}

#[test]
fn group_by_takes_the_fixed_groupings_and_any_level() {
    let group_by = |value: &str| {
        PluginArgs::try_parse_from(["kubectl gpu-inventory", "--group-by", value])
            .map(|a| a.group_by)
    };
    assert_eq!(group_by("product").unwrap(), GroupBy::Product);
    assert_eq!(
        group_by("nvlink").unwrap(),
        GroupBy::Level("nvlink".to_owned())
    );
    assert_eq!(
        group_by("cloud.google.com/gce-topology-block").unwrap(),
        GroupBy::Level("cloud.google.com/gce-topology-block".to_owned())
    );
    assert!(group_by("").is_err());
    let plain = PluginArgs::try_parse_from(["kubectl gpu-inventory"]).unwrap();
    assert_eq!(plain.group_by, GroupBy::Node);
}

#[test]
fn map_takes_its_own_flags_and_plan_needs_a_job() {
    let args = PluginArgs::try_parse_from([
        "kubectl gpu-inventory",
        "--context",
        "lab",
        "map",
        "--gpus",
        "8",
        "--plan",
        "--group-by",
        "cloud.google.com/gce-topology-block",
        "-o",
        "json",
        "--color",
        "never",
        "--width",
        "120",
    ])
    .unwrap();
    let Some(PluginCommand::Map(map)) = &args.command else {
        panic!("not map: {:?}", args.command);
    };
    assert_eq!((map.gpus, map.plan, map.width), (Some(8), true, 120));
    assert_eq!(
        map.group_by,
        crate::cmd::map::picture::Grouping::Level("cloud.google.com/gce-topology-block".into())
    );
    assert_eq!(
        (map.output.clone(), map.color),
        (OutputFormat::Json, Color::Never)
    );
    assert!(table_flags(&args).is_empty());
    let parse = |argv: &[&str]| {
        PluginArgs::try_parse_from(["kubectl gpu-inventory"].iter().chain(argv)).map(|_| ())
    };
    assert!(parse(&["map", "--plan"]).is_err(), "--plan needs --gpus");
    assert!(parse(&["map", "--width", "20"]).is_err(), "too narrow");
    assert!(parse(&["map", "--group-by", "rack=1"]).is_err());
    let before =
        PluginArgs::try_parse_from(["kubectl gpu-inventory", "-o", "wide", "map"]).unwrap();
    assert_eq!(table_flags(&before), ["-o/--output"], "refused before map");
}
