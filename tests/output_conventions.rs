//! No panic on any output, and kubectl's output conventions (#56): every subcommand run with its stdout a
//! closed pipe and `/dev/full`; a 100,000-character cell; `-o name|jsonpath=`, `--no-headers` and a bad
//! template; `completion`; the plugin's table from `-f`; `fit --level` with a typo. Offline on the fixtures,
//! but for `utilization` and `fleet`, which read a live cluster (the local control plane, or
//! GPUINV_TEST_KUBECONFIG).

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_gpu-inventory-operator");

/// 128 + SIGPIPE: how a command ends when its reader closed the pipe (docs/flags.md, "Output flags").
const EXIT_CLOSED_PIPE: i32 = 141;

/// Where stdout goes.
enum Sink {
    /// A pipe whose read end was closed before the command started.
    ClosedPipe,
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// Captured.
    Captured,
}

fn fixture(path: &str) -> String {
    common::fixture_path(path)
}

/// The binary under the plugin's name (a symlink in a directory of this test process's own).
fn plugin_binary() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "target/test-logs/output-conventions-{}-bin",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("kubectl-gpu_inventory");
    if !link.exists() {
        let _ = std::os::unix::fs::symlink(BIN, &link);
    }
    link
}

/// `program args` with stdout to `sink`, offline unless `kubeconfig` is given.
fn run(program: &Path, args: &[&str], sink: Sink, kubeconfig: Option<&Path>) -> Output {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    match sink {
        Sink::ClosedPipe => {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            command.stdout(writer);
        }
        Sink::Full => {
            command.stdout(File::options().write(true).open("/dev/full").unwrap());
        }
        Sink::Captured => {
            command.stdout(Stdio::piped());
        }
    }
    let output = command.output().unwrap();
    // `command` holds the pipe's write end until dropped; the child has ended by now.
    drop(command);
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Each subcommand that reads a dump or nothing, under the operator's name (`false`) or the plugin's.
fn offline_commands() -> Vec<(bool, Vec<String>)> {
    let homelab = fixture("homelab-nodes.yaml");
    let gb200 = fixture("topology/gb200-fleet.yaml");
    let shares = fixture("shares/objects.yaml");
    let kueue = fixture("kueue/quotas.yaml");
    let list = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    vec![
        (false, list(&["scan", "-f", &homelab])),
        (false, list(&["scan", "-f", &homelab, "-o", "wide"])),
        (false, list(&["scan", "-f", &homelab, "-o", "json"])),
        (false, list(&["scan", "-f", &homelab, "-o", "yaml"])),
        (false, list(&["scan", "-f", &homelab, "-o", "name"])),
        (false, list(&["scan", "-f", &gb200, "--group-by", "nvlink"])),
        (false, list(&["fit", "-f", &gb200, "--gpus", "8"])),
        (
            false,
            list(&["fit", "-f", &shares, "--fraction", "0.25", "-o", "json"]),
        ),
        (false, list(&["quotas", "-f", &kueue])),
        (false, list(&["crd"])),
        (false, list(&["crd", "-o", "json"])),
        (false, list(&["completion", "bash"])),
        (false, list(&["completion", "zsh"])),
        (false, list(&["completion", "fish"])),
        (true, list(&["-f", &homelab])),
        (
            true,
            list(&["-f", &homelab, "-o", "jsonpath={.nodes[*].name}"]),
        ),
        (true, list(&["fit", "-f", &gb200, "--gpus", "8"])),
        (true, list(&["quotas", "-f", &kueue])),
        (true, list(&["map", "-f", &gb200])),
        (
            true,
            list(&["map", "-f", &gb200, "--gpus", "8", "--plan", "-o", "yaml"]),
        ),
        (true, list(&["completion", "bash"])),
    ]
}

/// A closed pipe ends a command quietly with 141; a full disk says so and exits 2; neither panics.
fn check_sinks(program: &Path, args: &[&str], kubeconfig: Option<&Path>) {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let captured = run(program, args, Sink::Captured, kubeconfig);
    let printed = !captured.stdout.is_empty();
    let pipe = run(program, args, Sink::ClosedPipe, kubeconfig);
    let full = run(program, args, Sink::Full, kubeconfig);
    for (sink, output) in [("closed pipe", &pipe), ("/dev/full", &full)] {
        assert_ne!(
            output.status.code(),
            Some(101),
            "{shown} > {sink}: {}",
            stderr(output)
        );
        assert!(
            !stderr(output).contains("panicked"),
            "{shown} > {sink}: {}",
            stderr(output)
        );
    }
    if printed {
        assert_eq!(
            pipe.status.code(),
            Some(EXIT_CLOSED_PIPE),
            "{shown} | closed pipe: {}",
            stderr(&pipe)
        );
        assert!(
            !stderr(&pipe).contains("error: writing"),
            "quiet on a closed pipe: {}",
            stderr(&pipe)
        );
        assert_eq!(full.status.code(), Some(2), "{shown} > /dev/full");
        assert!(
            stderr(&full).contains("writing the output to stdout failed: No space left on device"),
            "{shown} > /dev/full: {}",
            stderr(&full)
        );
    } else {
        // Nothing to write (an error before any output): the same code whatever stdout is.
        assert_eq!(pipe.status.code(), captured.status.code(), "{shown}");
        assert_eq!(full.status.code(), captured.status.code(), "{shown}");
    }
}

#[test]
fn every_offline_subcommand_survives_a_closed_pipe_and_a_full_disk() {
    let plugin = plugin_binary();
    for (as_plugin, args) in offline_commands() {
        let program = if as_plugin {
            plugin.as_path()
        } else {
            Path::new(BIN)
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let captured = run(program, &args, Sink::Captured, None);
        assert!(
            !captured.stdout.is_empty(),
            "{args:?} prints something, so the sinks are tried: {}",
            stderr(&captured)
        );
        check_sinks(program, &args, None);
    }
}

#[test]
fn live_subcommands_survive_a_closed_pipe_and_a_full_disk() {
    // `utilization` and `fleet` read a live cluster; this asks the test cluster (a failure if none).
    let kubeconfig = common::cluster_access::kubeconfig_path();
    assert!(
        kubeconfig.exists(),
        "no cluster: {} is missing; start one with `make cluster-up`",
        kubeconfig.display()
    );
    let plugin = plugin_binary();
    // A Prometheus that refuses connections: the state line says Unknown (exit 2) and is printed.
    let idle = [
        "utilization",
        "--prometheus-url",
        "http://127.0.0.1:9",
        "--prometheus-timeout",
        "2s",
    ];
    let idle_output = run(Path::new(BIN), &idle, Sink::Captured, Some(&kubeconfig));
    assert!(
        stdout(&idle_output).contains("Utilization: Unknown"),
        "{}",
        stderr(&idle_output)
    );
    check_sinks(Path::new(BIN), &idle, Some(&kubeconfig));
    check_sinks(Path::new(BIN), &["fleet"], Some(&kubeconfig));
    check_sinks(Path::new(BIN), &["scan", "-o", "wide"], Some(&kubeconfig));
    check_sinks(&plugin, &[], Some(&kubeconfig));
    check_sinks(&plugin, &["fleet", "-o", "json"], Some(&kubeconfig));
}

/// A dump of one GPU node whose product label is `length` characters long.
fn long_label_dump(length: usize) -> PathBuf {
    let product = "P".repeat(length);
    let node = serde_json::json!({
        "apiVersion": "v1", "kind": "List", "items": [{
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-long", "labels": {
                "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "8"}},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }]
    });
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "target/test-logs/output-conventions-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("long-{length}.json"));
    std::fs::write(&path, node.to_string()).unwrap();
    path
}

#[test]
fn a_cell_of_100000_characters_is_cut_with_a_mark() {
    let dump = long_label_dump(100_000);
    let dump = dump.to_str().unwrap();
    for args in [
        vec!["scan", "-f", dump],
        vec!["scan", "-f", dump, "-o", "wide"],
        vec!["scan", "-f", dump, "--group-by", "product"],
    ] {
        let output = run(Path::new(BIN), &args, Sink::Captured, None);
        assert_ne!(
            output.status.code(),
            Some(101),
            "{args:?}: {}",
            stderr(&output)
        );
        let text = stdout(&output);
        let row = text
            .lines()
            .find(|l| l.contains("PPPP"))
            .unwrap_or_else(|| panic!("{args:?}: {text:.300}"));
        assert!(
            row.contains("…(+95904 chars)"),
            "{args:?}: {:.200}",
            &row[row.len() - 200..]
        );
        assert!(
            row.chars().count() < 4_400,
            "{args:?}: {} characters",
            row.chars().count()
        );
    }
    // The JSON keeps the whole value.
    let json = run(
        Path::new(BIN),
        &["scan", "-f", dump, "-o", "jsonpath={.nodes[0].product}"],
        Sink::Captured,
        None,
    );
    assert_eq!(stdout(&json).len(), 100_000);
}

#[test]
fn name_jsonpath_and_no_headers_print_what_scripts_read() {
    let homelab = fixture("homelab-nodes.yaml");
    let names = stdout(&run(
        Path::new(BIN),
        &["scan", "-f", &homelab, "-o", "name"],
        Sink::Captured,
        None,
    ));
    assert_eq!(
        names.lines().next(),
        Some("gpunode.homelab.youngju.dev/nuc1"),
        "{names}"
    );
    let template = "jsonpath={range .nodes[*]}{.name}{\"\\n\"}{end}";
    let listed = stdout(&run(
        Path::new(BIN),
        &["scan", "-f", &homelab, "-o", template],
        Sink::Captured,
        None,
    ));
    let rows = stdout(&run(
        Path::new(BIN),
        &["scan", "-f", &homelab, "--no-headers"],
        Sink::Captured,
        None,
    ));
    let first_cells: Vec<&str> = rows
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let listed: Vec<&str> = listed.lines().collect();
    assert_eq!(
        listed, first_cells,
        "--no-headers: one row per node, nothing else"
    );
    assert_eq!(
        names
            .lines()
            .map(|n| n.rsplit('/').next().unwrap())
            .collect::<Vec<_>>(),
        listed
    );
    // The plugin's table reads the dump and prints what `scan` prints.
    let plugin = stdout(&run(
        &plugin_binary(),
        &["-f", &homelab, "--no-headers"],
        Sink::Captured,
        None,
    ));
    assert_eq!(plugin, rows);
    // A bad template or format: exit 2, saying what is wrong.
    for (output, says) in [
        ("jsonpath={.nodes[*].name", "is not closed"),
        ("jsno", "choose one of table, wide, json, yaml, name"),
    ] {
        for command in [
            vec!["scan", "-f", &homelab],
            vec!["crd"],
            vec!["quotas"],
            vec!["fleet"],
        ] {
            let mut args = command.clone();
            args.extend(["-o", output]);
            let result = run(Path::new(BIN), &args, Sink::Captured, None);
            assert_eq!(result.status.code(), Some(2), "{args:?}");
            assert!(
                stderr(&result).contains(says),
                "{args:?}: {}",
                stderr(&result)
            );
        }
    }
}

#[test]
fn completion_scripts_name_the_subcommands() {
    for (program, shell, name) in [
        (PathBuf::from(BIN), "bash", "gpu-inventory-operator"),
        (PathBuf::from(BIN), "zsh", "gpu-inventory-operator"),
        (PathBuf::from(BIN), "fish", "gpu-inventory-operator"),
        (plugin_binary(), "bash", "kubectl-gpu_inventory"),
    ] {
        let output = run(&program, &["completion", shell], Sink::Captured, None);
        let plugin = name == "kubectl-gpu_inventory";
        assert_eq!(
            output.status.code(),
            Some(0),
            "{shell}: {}",
            stderr(&output)
        );
        let script = stdout(&output);
        assert!(
            script.contains(name) && script.contains("fit"),
            "{shell}: {script:.300}"
        );
        // The plugin's `map` and its own flags complete too.
        assert!(
            !plugin || (script.contains("map") && script.contains("--plan")),
            "{shell}: {script:.300}"
        );
    }
    let wrong = run(
        Path::new(BIN),
        &["completion", "tcsh"],
        Sink::Captured,
        None,
    );
    assert_eq!(wrong.status.code(), Some(2));
}

#[test]
fn fit_level_with_a_typo_is_a_usage_error_naming_the_levels() {
    let gb200 = fixture("topology/gb200-fleet.yaml");
    let output = run(
        Path::new(BIN),
        &["fit", "-f", &gb200, "--gpus", "8", "--level", "nvlnk"],
        Sink::Captured,
        None,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let says = stderr(&output);
    assert!(
        says.contains("--level nvlnk")
            && says.contains("nvlink, cloud.google.com/gce-topology-host"),
        "{says}"
    );
    // A level the nodes carry still answers.
    let known = run(
        Path::new(BIN),
        &["fit", "-f", &gb200, "--gpus", "8", "--level", "nvlink"],
        Sink::Captured,
        None,
    );
    assert_eq!(known.status.code(), Some(0), "{}", stderr(&known));
}
