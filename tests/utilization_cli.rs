//! The `idle` command, the plugin's `idle` and the IDLE column of its table, run as a user runs them against the
//! test cluster and a real Prometheus (tests/common/prometheus): the same answers as the operator's, and each
//! fault said with exit 2 (docs/utilization.md, docs/flags.md).

mod common;

use common::TestEnv;
use common::prometheus::utilization_fleet::{GPU, h100_node, held, history};
use common::prometheus::{self, dcgm_labels};
use jiff::ToSpan;

#[tokio::test]
async fn the_idle_command_the_plugin_and_scans_idle_column_read_prometheus_the_same_way() {
    use common::offline_cli::{operator, plugin, row, text};
    let env = TestEnv::new("idle-cli").await;
    let ns = env.namespace.clone();
    let gpus = env.create_node(h100_node("gpus", 8)).await;
    env.wait_schedulable(&gpus).await;
    held(&env, "idle", &gpus, GPU, 2).await;
    held(&env, "busy", &gpus, GPU, 1).await;
    let on = |gpu: u32, pod: &str| dcgm_labels(&gpus, gpu).pod(&ns, pod, "cuda");
    let series = vec![
        history(on(0, "idle").gr_engine_active(), 0.0, 2.hours()),
        history(on(1, "idle").gr_engine_active(), 0.0, 2.hours()),
        history(on(2, "busy").gr_engine_active(), 0.6, 2.hours()),
    ];
    let prometheus = prometheus::start(&env.id, &series);
    let kubeconfig = common::kubeconfig_path().display().to_string();
    let selector = format!("{}={}", common::TEST_LABEL, env.id);
    let url = prometheus.url();
    // The operator takes its connection flags after the subcommand (`run`'s own flags come without one); the
    // plugin, as kubectl's, before it too.
    let connection = ["--kubeconfig", &kubeconfig];

    // `idle`: the namespace's units, then the holder; exit 1 (some idle).
    let out = operator(
        &[
            &["idle"][..],
            &connection,
            &["-l", &selector, "--prometheus-url", &url],
        ]
        .concat(),
    );
    let table = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.starts_with(&format!("Utilization: Current (source {url}, window 30m)")),
        "{table}"
    );
    assert_eq!(row(&table, &ns), vec![ns.as_str(), GPU, "2"]);
    let holder = row(&table, &gpus);
    assert_eq!(
        &holder[..4],
        [gpus.as_str(), &format!("pod {ns}/idle"), GPU, "2"]
    );
    // -o json: the status's shapes.
    let out = plugin(
        &env.id,
        &[
            &connection[..],
            &[
                "idle",
                "-l",
                &selector,
                "--prometheus-url",
                &url,
                "-o",
                "json",
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["utilization"]["state"], "Current");
    assert_eq!(json["namespaces"][0]["idle"][GPU], 2);
    assert_eq!(json["nodes"][0]["idle"][0]["pod"], format!("{ns}/idle"));
    // -n: the namespace's idle holdings (all of them here), or none of another's (exit 0).
    let in_namespace = |namespace: &str| {
        let args = [
            "-l",
            &selector,
            "--prometheus-url",
            &url,
            "-o",
            "json",
            "-n",
            namespace,
        ];
        let out = operator(&[&["idle"][..], &connection, &args].concat());
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), listed)
    };
    // Each node's idle holdings by pod and amount (`idleSince` is read again, a second later or not).
    let held = |listed: &serde_json::Value| -> Vec<(String, String, u64)> {
        let nodes = listed["nodes"].as_array().cloned().unwrap_or_default();
        nodes
            .iter()
            .flat_map(|node| {
                let idle = node["idle"].as_array().cloned().unwrap_or_default();
                let name = node["name"].as_str().unwrap_or_default().to_owned();
                idle.into_iter().map(move |i| {
                    let pod = i["pod"].as_str().unwrap_or_default().to_owned();
                    (name.clone(), pod, i["amount"].as_u64().unwrap_or(0))
                })
            })
            .collect()
    };
    let (code, ours) = in_namespace(&ns);
    assert_eq!(code, Some(1), "{ours}");
    assert_eq!(held(&ours), held(&json), "{ours}");
    assert_eq!(held(&ours).len(), 1, "{ours}");
    let (code, theirs) = in_namespace("kube-system");
    assert_eq!(code, Some(0), "{theirs}");
    assert_eq!(theirs["nodes"], serde_json::json!([]), "{theirs}");
    assert_eq!(theirs["namespaces"], serde_json::json!([]), "{theirs}");
    // The plugin's table: an IDLE column with `--prometheus-url`, none without.
    let plugin_table = || {
        let args = ["-l", selector.as_str(), "--prometheus-url", url.as_str()];
        plugin(&env.id, &[&connection[..], &args].concat())
    };
    let out = plugin_table();
    let table = text(&out);
    let header = table
        .lines()
        .find(|l| l.starts_with("NAME "))
        .unwrap_or_default();
    let at = header
        .split_whitespace()
        .position(|c| c == "IDLE")
        .unwrap_or_else(|| panic!("{table}"));
    assert_eq!(row(&table, &gpus)[at], "2", "{table}");
    let out = plugin(&env.id, &[&connection[..], &["-l", &selector]].concat());
    assert!(!text(&out).contains("IDLE"), "{}", text(&out));

    // Faults, each an Unknown with its reason and exit 2. More idle series than the bound: refused after the
    // count, without fetching them.
    let idle_with = |extra: &[&str]| {
        let base = ["-l", selector.as_str(), "--prometheus-url", url.as_str()];
        operator(&[&["idle"][..], &connection, &base, extra].concat())
    };
    let out = idle_with(&["--utilization-max-series", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let table = text(&out);
    assert!(
        table.contains("2 idle GPU series is more than --utilization-max-series=1; not fetched"),
        "{table}"
    );
    // An error: a selector Prometheus refuses (a regular expression that does not parse).
    let out = idle_with(&["--utilization-selector", r#"pod=~"(""#]);
    assert_eq!(out.status.code(), Some(2));
    let table = text(&out);
    assert!(
        table.contains("Prometheus answered 400: bad_data"),
        "{table}"
    );
    // Slow: a server that takes the connection and never answers, past --prometheus-timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let out = operator(
        &[
            &["idle"][..],
            &connection,
            &[
                "-l",
                &selector,
                "--prometheus-url",
                &silent_url,
                "--prometheus-timeout",
                "1s",
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let table = text(&out);
    assert!(table.contains("no answer within 1s"), "{table}");
    drop(silent);

    // Prometheus gone: `idle` says Unknown and why, exit 2; the table's IDLE cells say `?`.
    drop(prometheus);
    let out = operator(
        &[
            &["idle"][..],
            &connection,
            &["-l", &selector, "--prometheus-url", &url],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let table = text(&out);
    assert!(table.starts_with("Utilization: Unknown"), "{table}");
    assert!(
        table.contains("unreachable") && table.contains("withheld"),
        "{table}"
    );
    let out = plugin_table();
    let table = text(&out);
    assert_eq!(row(&table, &gpus)[at], "?", "{table}");
    // No URL at all: a clear error, exit 2.
    let out = operator(&[&["idle"][..], &connection, &["-l", &selector]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--prometheus-url is required"));
}
