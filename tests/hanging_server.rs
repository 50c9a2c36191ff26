//! Every network wait bounded and said (issue #56): against an API server that accepts connections and never
//! answers (over TLS, and plain HTTP), one whose SYNs are never answered (blackholed) and one that refuses,
//! every one-shot command, the kubectl plugin (table, `--watch`, `fit`) and `run`'s start-up end within
//! `--request-timeout` (or `--startup-timeout`) with a clear error naming the server; a credential plugin
//! that hangs is stopped at the deadline and reaped with its children; and the kubeconfig's errors say what
//! to do. No cluster: local listeners stand in for the servers.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::silent_server::{Blackholed, Hanging, kubeconfig, refused_addr, running, test_dir};

/// The request timeout the tests give, and the margin a command may take past it (start-up, exit).
const TIMEOUT: Duration = Duration::from_secs(2);
const MARGIN: Duration = Duration::from_millis(1500);

/// The binary under its own name, or the plugin's (a symlink in `dir`), with `args`; no home, no colour.
fn cli(dir: &Path, plugin: bool, args: &[&str]) -> (Output, Duration) {
    let program = if plugin {
        let link = dir.join("kubectl-gpu_inventory");
        if !link.exists() {
            let _ = std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpu-inventory-operator"), &link);
        }
        link
    } else {
        env!("CARGO_BIN_EXE_gpu-inventory-operator").into()
    };
    let started = Instant::now();
    let output = Command::new(program)
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (output, started.elapsed())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The one-shot commands, under the binary's name (`false`) or the plugin's (`true`).
const COMMANDS: &[(bool, &[&str])] = &[
    (false, &["scan"]),
    (false, &["fit", "--gpus", "1"]),
    (false, &["quotas"]),
    (
        false,
        &["utilization", "--prometheus-url", "http://127.0.0.1:9"],
    ),
    (false, &["fleet"]),
    (true, &[]),
    (true, &["--watch"]),
    (true, &["fit", "--gpus", "1"]),
];

#[test]
fn every_command_ends_within_the_request_timeout_against_silent_servers() {
    let dir = test_dir("hanging-server");
    let hanging = Hanging::start();
    let blackholed = Blackholed::start();
    let servers = [
        ("hanging TLS", format!("https://{}", hanging.addr)),
        ("hanging HTTP", format!("http://{}", hanging.addr)),
        ("blackholed", format!("https://{}", blackholed.addr)),
    ];
    let mut runs = Vec::new();
    for (i, (what, url)) in servers.into_iter().enumerate() {
        let config = kubeconfig(&dir, &format!("silent-{i}.yaml"), &[("silent", &url)], None);
        for &(plugin, args) in COMMANDS {
            let (dir, config, url) = (dir.clone(), config.clone(), url.clone());
            runs.push(std::thread::spawn(move || {
                let config = config.display().to_string();
                let mut argv = args.to_vec();
                argv.extend(["--kubeconfig", &config, "--request-timeout", "2s"]);
                let (output, took) = cli(&dir, plugin, &argv);
                (what, plugin, args.join(" "), url, output, took)
            }));
        }
    }
    for run in runs {
        let (what, plugin, args, url, output, took) = run.join().unwrap();
        let name = if plugin {
            "kubectl gpu-inventory"
        } else {
            "gpu-inventory-operator"
        };
        let err = stderr(&output);
        eprintln!(
            "{what}: {name} {args}: {:.2} s, exit {:?}",
            took.as_secs_f32(),
            output.status.code()
        );
        assert!(
            took < TIMEOUT + MARGIN,
            "{what}: `{name} {args}` took {took:?}: {err}"
        );
        assert_eq!(
            output.status.code(),
            Some(2),
            "{what}: `{name} {args}`: {err}"
        );
        assert!(
            err.contains(&url),
            "{what}: `{name} {args}` does not name {url}: {err}"
        );
        assert!(
            err.contains("did not answer within 2 s (--request-timeout)"),
            "{what}: `{name} {args}`: {err}"
        );
    }
}

#[test]
fn the_default_bounds_a_silent_server_within_30_seconds() {
    let dir = test_dir("hanging-default");
    let hanging = Hanging::start();
    let url = format!("https://{}", hanging.addr);
    let config = kubeconfig(&dir, "default.yaml", &[("silent", &url)], None);
    let (output, took) = cli(
        &dir,
        false,
        &["scan", "--kubeconfig", config.to_str().unwrap()],
    );
    let err = stderr(&output);
    eprintln!(
        "scan with the default --request-timeout: {:.2} s",
        took.as_secs_f32()
    );
    assert!(
        took < Duration::from_secs(30) + MARGIN,
        "took {took:?}: {err}"
    );
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("the API server at {url}")) && err.contains("within 30 s"),
        "{err}"
    );
    // The wait was said while it lasted.
    assert!(
        err.contains(&format!(
            "waiting for the API server at {url} (3 s of 30 s)..."
        )),
        "{err}"
    );
}

#[test]
fn a_refused_server_is_said_at_once_and_blames_nothing_else() {
    let dir = test_dir("refused");
    let url = format!("https://{}", refused_addr());
    let config = kubeconfig(&dir, "refused.yaml", &[("gone", &url)], None);
    let config = config.to_str().unwrap();
    for (plugin, args) in [
        (false, &["scan"][..]),
        (true, &["--watch"][..]),
        (false, &["quotas"][..]),
    ] {
        let mut argv = args.to_vec();
        argv.extend(["--kubeconfig", config]);
        let (output, took) = cli(&dir, plugin, &argv);
        let err = stderr(&output);
        assert!(took < MARGIN, "took {took:?}: {err}");
        assert_eq!(output.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("connection refused at {url}")),
            "{err}"
        );
        for blamed in ["CRD", "RBAC", "list and watch", "operator retries"] {
            assert!(
                !err.contains(blamed),
                "a refused connection blames {blamed}: {err}"
            );
        }
    }
}

#[test]
fn a_hanging_credential_plugin_is_stopped_at_the_deadline_and_reaped_with_its_children() {
    let dir = test_dir("hanging-plugin");
    let hanging = Hanging::start();
    let url = format!("https://{}", hanging.addr);
    let pids = dir.join("pids");
    let _ = std::fs::remove_file(&pids);
    // A stuck SSO login: the plugin waits on a child of its own, and says both pids.
    let script = format!("sleep 60 &\necho $$ $! >> {}\nwait\n", pids.display());
    let config = kubeconfig(
        &dir,
        "plugin.yaml",
        &[("a", &url), ("b", &url)],
        Some(&script),
    );
    let config = config.to_str().unwrap();
    let (output, took) = cli(
        &dir,
        false,
        &["scan", "--kubeconfig", config, "--request-timeout", "2s"],
    );
    let err = stderr(&output);
    eprintln!(
        "scan with a hanging credential plugin: {:.2} s",
        took.as_secs_f32()
    );
    assert!(took < TIMEOUT + MARGIN, "took {took:?}: {err}");
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the exec credential plugin `sh ") && err.contains("--request-timeout"),
        "{err}"
    );
    assert!(!err.contains("operator retries"), "{err}");
    // Across contexts each cluster's deadline abandons its plugin: killed all the same.
    let (output, took) = cli(
        &dir,
        true,
        &[
            "--kubeconfig",
            config,
            "--all-contexts",
            "--cluster-timeout",
            "2s",
        ],
    );
    eprintln!(
        "the plugin across two contexts with hanging credential plugins: {:.2} s",
        took.as_secs_f32()
    );
    assert!(
        took < TIMEOUT + MARGIN,
        "took {took:?}: {}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(
        text.split_whitespace().count(),
        6,
        "three runs of the plugin, two pids each: {text}"
    );
    for pid in text.split_whitespace() {
        let deadline = Instant::now() + Duration::from_secs(2);
        while running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !running(pid),
            "process {pid} of the credential plugin outlived the command"
        );
    }
}

#[test]
fn run_gives_up_at_its_startup_timeout_from_the_first_attempt() {
    let dir = test_dir("startup-timeout");
    let hanging = Hanging::start();
    let config = kubeconfig(
        &dir,
        "run.yaml",
        &[("silent", &format!("https://{}", hanging.addr))],
        None,
    );
    let args = [
        "run",
        "--kubeconfig",
        config.to_str().unwrap(),
        "--startup-timeout",
        "3s",
        "--metrics-addr",
        "",
    ];
    let (output, took) = cli(&dir, false, &args);
    eprintln!(
        "run --startup-timeout 3s against a hanging server: {:.2} s",
        took.as_secs_f32()
    );
    assert!(
        took < Duration::from_secs(3) + MARGIN,
        "took {took:?}: {}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--startup-timeout"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn kubeconfig_mistakes_say_what_to_do() {
    let dir = test_dir("kubeconfig-errors");
    let url = format!("https://{}", refused_addr());
    let good = kubeconfig(&dir, "good.yaml", &[("lab", &url), ("prod", &url)], None);
    let good = good.to_str().unwrap();
    // A context that is not there: the ones that are.
    let (output, _) = cli(
        &dir,
        false,
        &["scan", "--kubeconfig", good, "--context", "nosuch"],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("context \"nosuch\" is not in the kubeconfig") && err.contains("lab, prod"),
        "{err}"
    );
    // A YAML error keeps its lines.
    let broken = dir.join("broken.yaml");
    std::fs::write(&broken, "apiVersion: v1\nclusters: [\n  - {name: x\n").unwrap();
    let (output, _) = cli(
        &dir,
        false,
        &["scan", "--kubeconfig", broken.to_str().unwrap()],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("broken.yaml") && err.lines().count() > 2 && !err.contains("\\n"),
        "{err}"
    );
    // KUBECONFIG with a missing file: the others are read, as kubectl reads them.
    let missing = dir.join("missing.yaml");
    let output = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(["scan", "--request-timeout", "2s"])
        .env("KUBECONFIG", format!("{}:{good}", missing.display()))
        .env("HOME", "/nonexistent-home")
        .output()
        .unwrap();
    let err = stderr(&output);
    assert!(
        err.contains(&format!("connection refused at {url}")),
        "good.yaml was not read: {err}"
    );
    // --metrics-addr is checked before anything connects (the server here would hang).
    let hanging = Hanging::start();
    let silent = kubeconfig(
        &dir,
        "silent.yaml",
        &[("s", &format!("https://{}", hanging.addr))],
        None,
    );
    let args = [
        "run",
        "--kubeconfig",
        silent.to_str().unwrap(),
        "--metrics-addr",
        "not-an-addr",
    ];
    let (output, took) = cli(&dir, false, &args);
    let err = stderr(&output);
    assert!(took < Duration::from_secs(1), "took {took:?}: {err}");
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not-an-addr") && err.contains("HOST:PORT"),
        "{err}"
    );
}

#[test]
fn cluster_timeout_bounds_one_clusters_command_when_given() {
    let dir = test_dir("cluster-timeout");
    let hanging = Hanging::start();
    let url = format!("https://{}", hanging.addr);
    let config = kubeconfig(&dir, "one.yaml", &[("silent", &url)], None);
    let config = config.to_str().unwrap();
    // No request timeout: only --cluster-timeout ends the wait.
    let bounded = [
        "--kubeconfig",
        config,
        "--request-timeout",
        "0",
        "--cluster-timeout",
        "1s",
    ];
    for args in [&[][..], &["fit", "--gpus", "1"][..]] {
        let (output, took) = cli(&dir, true, &[args, &bounded[..]].concat());
        let err = stderr(&output);
        eprintln!(
            "kubectl gpu-inventory {args:?} --cluster-timeout 1s: {:.2} s",
            took.as_secs_f32()
        );
        assert!(
            took < Duration::from_secs(1) + MARGIN,
            "took {took:?}: {err}"
        );
        assert_eq!(output.status.code(), Some(2), "{err}");
        assert!(
            err.contains("no answer within 1 s (--cluster-timeout)"),
            "{err}"
        );
    }
    // A watch runs until stopped: the deadline is refused, at once.
    let (output, took) = cli(&dir, true, &[&["--watch"][..], &bounded[..]].concat());
    let err = stderr(&output);
    assert!(took < MARGIN, "took {took:?}: {err}");
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("--cluster-timeout bounds a read"), "{err}");
}

#[test]
fn ctrl_c_while_a_credential_plugin_runs_kills_it_with_its_children() {
    let dir = test_dir("interrupted-plugin");
    let hanging = Hanging::start();
    let url = format!("https://{}", hanging.addr);
    let pids = dir.join("pids");
    let _ = std::fs::remove_file(&pids);
    let script = format!("sleep 60 &\necho $$ $! >> {}\nwait\n", pids.display());
    let config = kubeconfig(&dir, "plugin.yaml", &[("a", &url)], Some(&script));
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"));
    command
        .args(["scan", "--kubeconfig", config.to_str().unwrap()])
        .args(["--request-timeout", "60s"])
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&pids).is_ok_and(|t| t.split_whitespace().count() == 2) {
        assert!(
            Instant::now() < deadline,
            "the credential plugin did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The terminal's Ctrl-C: SIGINT to the command (the plugin is in a group of its own).
    let pid = i32::try_from(child.id()).unwrap();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    for pid in std::fs::read_to_string(&pids).unwrap().split_whitespace() {
        let deadline = Instant::now() + Duration::from_secs(2);
        while running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !running(pid),
            "process {pid} of the credential plugin outlived Ctrl-C"
        );
    }
}
