//! Fragmentation live (#57): two 8-GPU KWOK nodes holding 3 and 4 GPUs leave 9 free, 5 at most on one node.
//! An 8-GPU pod the real kube-scheduler cannot place is `FragmentedCapacity` in the operator's GpuInventory
//! (`status.fragmentation`); once a small pod goes, the scheduler binds it and the verdict clears.
//! `fit --plan` names the pods whose move makes room, and the real scheduler carries the plan out: with
//! pods of real controllers (Deployments, a DaemonSet), a PodDisruptionBudget and PriorityClasses, the plan
//! leaves the pinned pods and moves the lower-priority one, and fails closed where budgets cannot be read. `kubectl gpu-inventory map` draws the pods
//! placed, one cell per GPU, and the plan over them.

mod common;

use std::time::{Duration, Instant};

use common::allocation::node;
use common::fit_plan_cli::{fit_as, user_without_budgets};
use common::map_cli::{documented, drawn_cells, plugin};
use common::test_env::{DeleteOnDrop, TEST_LABEL};
use common::workloads::Workloads;
use common::{SCHEDULER_MAX_BACKOFF, TestEnv, eventually};
use gpu_inventory_operator::crd::{BlockedPodEntry, GpuInventoryStatus};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use testkit::audit::{AuditTail, audit_offset, is_write};

const CONVERGE: Duration = Duration::from_secs(60);
const H100: &str = "NVIDIA-H100-80GB-HBM3";

/// A pod of `gpus` GPUs for the scheduler to place on a node labelled `selector`.
fn pod(name: &str, gpus: u32, selector: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "nodeSelector": selector,
            "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                             "resources": { "limits": { "nvidia.com/gpu": gpus.to_string() } } }],
        }
    }))
    .unwrap()
}

fn blocked<'s>(status: &'s GpuInventoryStatus, pod: &str) -> Option<&'s BlockedPodEntry> {
    status
        .fragmentation
        .as_ref()?
        .blocked
        .iter()
        .find(|b| b.pod == pod)
}

/// A pod of `gpus` GPUs made as a controller makes it from its template: on this test's nodes, anywhere
/// the scheduler picks (`at`: pinned by `spec.nodeName`, only to lay out the fleet before the plan).
fn replica(name: &str, gpus: u32, id: &str, at: Option<&str>) -> Pod {
    let mut pod = pod(name, gpus, json!({ TEST_LABEL: id }));
    if let Some(node) = at {
        pod.spec.as_mut().unwrap().node_name = Some(node.to_owned());
    }
    pod
}

/// This test's namespace (`<id>-<suffix>`) and 8-GPU H100 KWOK nodes named `names`; the pods' API there.
async fn h100_fleet(
    env: &TestEnv,
    suffix: &str,
    names: &[&str],
) -> (String, Vec<String>, Api<Pod>) {
    let namespace = format!("{}-{suffix}", env.id);
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let ns: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": namespace } })).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let gfd = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": H100,
                      "nvidia.com/gpu.count": "8" });
    let mut nodes = Vec::new();
    for name in names {
        nodes.push(
            env.create_node(node(name, gfd.clone(), &[("nvidia.com/gpu", "8")]))
                .await,
        );
    }
    let pods = Api::namespaced(env.client.clone(), &namespace);
    (namespace, nodes, pods)
}

/// Pods `(name, gpus, node)` laid out by `spec.nodeName`: bound before anything else is made, so the
/// scheduler cannot give a later pod their room first.
async fn lay_out(pods: &Api<Pod>, id: &str, layout: &[(&str, u32, &str)]) {
    for (name, gpus, at) in layout {
        let pod = replica(name, *gpus, id, Some(at));
        eventually(CONVERGE, &format!("creating {name}"), || async {
            pods.create(&PostParams::default(), &pod).await.ok()
        })
        .await;
    }
}

/// The operator's passes so far over every inventory (`gpu_inventory_reconciles_total{controller="inventory"}`).
async fn inventory_passes(operator: &common::OperatorProcess) -> u64 {
    let (status, text) = operator.http_get("/metrics").await;
    assert_eq!(status, 200, "GET /metrics: {text}");
    text.lines()
        .find_map(|l| l.strip_prefix("gpu_inventory_reconciles_total{controller=\"inventory\"} "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no inventory reconciles in /metrics:\n{text}"))
}

/// The operator's writes about this test in the audit log past `tail`, received between `from` and `to`: to
/// its GpuInventory, its nodes' GpuNodes, or an Event in `namespace`.
fn writes_about(
    tail: &mut AuditTail,
    env: &TestEnv,
    namespace: &str,
    (from, to): (jiff::Timestamp, jiff::Timestamp),
) -> Vec<String> {
    let inventory = env.inventory_name();
    let mut writes = Vec::new();
    tail.read_new(&["gpuinventories", "gpunodes", "events"], |line| {
        let object = &line["objectRef"];
        let name = object["name"].as_str().unwrap_or_default();
        let verb = line["verb"].as_str().unwrap_or_default();
        let resource = object["resource"].as_str().unwrap_or_default();
        let at: Option<jiff::Timestamp> = line["requestReceivedTimestamp"]
            .as_str()
            .and_then(|t| t.parse().ok());
        let ours = name == inventory
            || name.starts_with(&env.id)
            || object["namespace"].as_str() == Some(namespace);
        if line["userAgent"]
            .as_str()
            .is_some_and(|a| a.starts_with("gpu-inventory-operator/"))
            && line["stage"].as_str() == Some("ResponseComplete")
            && is_write(&format!("{verb} {resource}"))
            && ours
            && at.is_some_and(|at| at >= from && at <= to)
        {
            writes.push(format!("{verb} {resource} {name}"));
        }
    });
    writes
}

/// Through a quiet minute (requeue 2 s: some 30 passes), the operator makes no write about this test,
/// counted from the local API server's audit log (every request is there, a write that changed nothing
/// too). Returns the tail and the window's end, for the caller to see the next change written (the check
/// sees writes); `None` off the local cluster.
async fn quiet_minute_writes_nothing(
    env: &TestEnv,
    operator: &common::OperatorProcess,
    namespace: &str,
) -> Option<(AuditTail, jiff::Timestamp)> {
    const QUIET: Duration = Duration::from_secs(60);
    if !common::is_local_cluster() {
        eprintln!(
            "the quiet minute is counted from the local cluster's audit log: not counted here"
        );
        return None;
    }
    // Settle: the verdict's Event and status were just written.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let audit_log = common::cluster_access::local_cluster_dir().join("audit.log");
    let mut tail = AuditTail::at(&audit_log, audit_offset(&audit_log));
    let before = inventory_passes(operator).await;
    let from = jiff::Timestamp::now();
    tokio::time::sleep(QUIET).await;
    let to = jiff::Timestamp::now();
    let passes = inventory_passes(operator).await - before;
    assert!(
        passes >= 10,
        "only {passes} passes in the quiet minute: it proves nothing"
    );
    // Requests received by `to` are in the audit log a moment later.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let writes = writes_about(&mut tail, env, namespace, (from, to));
    assert!(
        writes.is_empty(),
        "{} writes in a quiet minute over {passes} passes: {writes:?}",
        writes.len()
    );
    eprintln!("quiet minute with a pod blocked by fragmentation: {passes} passes, no write");
    Some((tail, to))
}

/// Deletes the test's namespace (its pods with it).
async fn delete_namespace(env: &TestEnv, namespace: &str) {
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
}

#[tokio::test]
async fn an_eight_gpu_pod_waiting_on_pieces_is_fragmented_capacity_until_a_node_frees_up() {
    let env = TestEnv::new("fragmentation").await;
    let (namespace, nodes, pods) = h100_fleet(&env, "frag", &["a", "b"]).await;
    let (a, b) = (&nodes[0], &nodes[1]);
    lay_out(&pods, &env.id, &[("small-a", 3, a), ("small-b", 4, b)]).await;
    // Only this test's nodes may hold it: other tests' nodes never make it fit.
    let big = pod("big", 8, json!({ TEST_LABEL: env.id }));
    pods.create(&PostParams::default(), &big).await.unwrap();

    let _operator = env.start_operator("2s");
    let inventory = env.inventory_name();
    let status = env
        .wait_inventory(&inventory, CONVERGE, "big blocked by fragmentation", |s| {
            blocked(s, "big").is_some()
        })
        .await
        .status
        .unwrap();
    let verdict = blocked(&status, "big").unwrap();
    assert_eq!(
        (
            verdict.reason.as_str(),
            verdict.namespace.as_str(),
            verdict.gpus,
            verdict.product.as_str(),
            verdict.free_gpus,
            verdict.largest_piece
        ),
        ("FragmentedCapacity", namespace.as_str(), 8, H100, 9, 5),
        "{verdict:?}"
    );
    let product = &status.fragmentation.as_ref().unwrap().products[0];
    assert_eq!(
        (product.free_gpus, product.largest_piece, product.pieces),
        (9, 5, 2)
    );
    let eight = product
        .sizes
        .iter()
        .find(|s| s.gpus == 8)
        .expect("8 on the ladder");
    assert!(eight.asked && eight.usable_gpus == 0, "{:?}", product.sizes);

    // A quiet minute with the pod blocked: the operator passes again and again and writes nothing (no
    // status, no GpuNode, no Event).
    let quiet = quiet_minute_writes_nothing(&env, &_operator, &namespace).await;

    // A small pod goes: node a has 8 free, the scheduler binds big there, and the verdict clears.
    pods.delete("small-a", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let status = env
        .wait_inventory(&inventory, CONVERGE, "big placed, nothing blocked", |s| {
            blocked(s, "big").is_none()
                && s.nodes
                    .iter()
                    .any(|n| n.name == *a && n.free.get("nvidia.com/gpu") == Some(&0))
        })
        .await
        .status
        .unwrap();
    let bound = pods.get("big").await.unwrap();
    assert_eq!(
        bound.spec.and_then(|s| s.node_name).as_deref(),
        Some(a.as_str()),
        "the scheduler placed big where the inventory said 8 are free"
    );
    let product = &status.fragmentation.as_ref().unwrap().products[0];
    assert_eq!((product.free_gpus, product.largest_piece), (4, 4));
    // The change after the quiet minute is written, and seen by the same count: it could have failed.
    if let Some((mut tail, quiet_end)) = quiet {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let window = (quiet_end, jiff::Timestamp::now());
        let writes = writes_about(&mut tail, &env, &namespace, window);
        assert!(
            writes.iter().any(|w| w.contains("gpuinventories")),
            "the verdict's clearing was not seen written: {writes:?}"
        );
    }

    delete_namespace(&env, &namespace).await;
    env.cleanup().await;
}

/// Runs `fit` against the local cluster (as `gpu-inventory-operator fit ...`) and returns its JSON answer.
fn fit_json(args: &[&str]) -> serde_json::Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .arg("fit")
        .args(args)
        .args(["-o", "json"])
        .env("KUBECONFIG", common::cluster_access::kubeconfig_path())
        .output()
        .expect("run fit");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "fit {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("fit -o json prints JSON")
}

#[tokio::test]
async fn fit_plan_moves_pods_so_that_the_real_scheduler_places_the_waiting_pod() {
    let env = TestEnv::new("fit-plan").await;
    let (namespace, nodes, pods) = h100_fleet(&env, "plan", &["p", "q", "r"]).await;
    // 3 + 2 on p, 5 on q, 4 on r: 3, 3 and 4 free (10), 4 at most on a node.
    let layout = [("p-3", 3, 0), ("p-2", 2, 0), ("q-5", 5, 1), ("r-4", 4, 2)];
    let placed: Vec<(&str, u32, &str)> = layout
        .iter()
        .map(|(name, gpus, at)| (*name, *gpus, nodes[*at].as_str()))
        .collect();
    lay_out(&pods, &env.id, &placed).await;
    let big = pod("big", 8, json!({ TEST_LABEL: env.id }));
    pods.create(&PostParams::default(), &big).await.unwrap();
    let selector = format!("{TEST_LABEL}={}", env.id);
    let answer = eventually(CONVERGE, "all four pods held and a plan", || async {
        let answer = fit_json(&["--gpus", "8", "--plan", "-l", &selector]);
        answer["plan"]["moves"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
            .then_some(answer)
    })
    .await;
    assert_eq!(answer["fits"], json!(false), "{answer}");
    // The cheapest: p's 3 and 2 (5 GPUs) to q's 3 and r's 4; emptying r (4) needs a place for 4: p and q
    // have 3 each. Emptying q (5) needs 5 elsewhere: none.
    let plan = &answer["plan"];
    assert_eq!(plan["node"], json!(nodes[0]), "{answer}");
    assert_eq!(plan["displacedGpus"], json!(5), "{answer}");
    let moved: Vec<(String, String)> = plan["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["pod"].as_str().unwrap().to_owned(),
                m["to"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        moved,
        [
            ("p-3".to_owned(), nodes[1].clone()),
            ("p-2".to_owned(), nodes[2].clone())
        ],
        "{answer}"
    );

    // Carry it out: delete each named pod. The replacements a controller would make are made here once the
    // scheduler has bound big (the test stands in for the controller, and so leaves out the race with the
    // scheduler's back-off that the test with real Deployments below waits out); the real scheduler places
    // them in what the plan said stays free.
    for (name, _) in &moved {
        pods.delete(name, &DeleteParams::default().grace_period(0))
            .await
            .unwrap();
    }
    let bound = |name: String| {
        let pods = pods.clone();
        async move { pods.get(&name).await.ok()?.spec?.node_name }
    };
    let big_on = eventually(CONVERGE, "the scheduler binding big", || {
        bound("big".into())
    })
    .await;
    assert_eq!(
        big_on, nodes[0],
        "the scheduler put big where the plan freed room"
    );
    for (name, _) in &moved {
        let gpus = layout.iter().find(|(n, ..)| n == name).unwrap().1;
        let again = replica(&format!("{name}-new"), gpus, &env.id, None);
        eventually(CONVERGE, &format!("recreating {name}"), || async {
            pods.create(&PostParams::default(), &again).await.ok()
        })
        .await;
    }
    // The scheduler scores nodes its own way: a replacement may take the other free piece than the plan's
    // best fit; the plan holds if every replacement is placed, and none on the freed node.
    for (name, _) in &moved {
        let on = eventually(CONVERGE, &format!("{name}-new bound"), || {
            bound(format!("{name}-new"))
        })
        .await;
        assert_ne!(
            on, nodes[0],
            "{name}'s replacement took the room the plan freed"
        );
    }

    delete_namespace(&env, &namespace).await;
    env.cleanup().await;
}

#[tokio::test]
async fn the_map_draws_the_pods_placed_and_the_plan_over_them() {
    let env = TestEnv::new("map").await;
    let (namespace, nodes, pods) = h100_fleet(&env, "map", &["m", "n", "o", "p"]).await;
    let (m, n, o, p) = (&nodes[0], &nodes[1], &nodes[2], &nodes[3]);
    // 3 + 2 on m, 5 on n, 4 on o: 3, 3 and 4 free; p cordoned, holding 1.
    let layout = [
        ("m-3", 3, m),
        ("m-2", 2, m),
        ("n-5", 5, n),
        ("o-4", 4, o),
        ("p-1", 1, p),
    ];
    let placed: Vec<(&str, u32, &str)> = layout
        .iter()
        .map(|(a, g, at)| (*a, *g, at.as_str()))
        .collect();
    lay_out(&pods, &env.id, &placed).await;
    env.cordon(p, true).await;
    let selector = format!("{TEST_LABEL}={}", env.id);
    let want = |cells: [&str; 4]| -> Vec<(String, String)> {
        nodes
            .iter()
            .cloned()
            .zip(cells.map(str::to_owned))
            .collect()
    };
    let map = eventually(CONVERGE, "the map showing every pod placed", || async {
        let out = plugin(&["map", "-l", &selector, "-o", "json"]);
        let map: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (drawn_cells(&map) == want(["#####...", "#####...", "####....", "xxxxxxxx"])).then_some(map)
    })
    .await;
    assert_eq!(
        (map["groupedBy"].as_str(), map["gpus"].as_u64()),
        (Some("product"), Some(32))
    );
    assert_eq!(map["groups"][0]["product"], json!(H100), "{map}");

    // The picture: one row per node, its cells, the cordoned node said; exit 0 without a job.
    let out = plugin(&["map", "-l", &selector]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for (name, cells) in want(["#####...", "#####...", "####....", "xxxxxxxx"]) {
        assert!(
            text.contains(&format!("  {name}  {cells}")),
            "{name}:\n{text}"
        );
    }
    assert!(
        text.contains("cordoned") && text.contains("legend: # held"),
        "{text}"
    );
    let names = plugin(&["map", "-l", &selector, "-o", "name"]);
    let listed: Vec<String> = nodes.iter().map(|n| format!("node/{n}")).collect();
    assert_eq!(
        String::from_utf8_lossy(&names.stdout)
            .lines()
            .collect::<Vec<_>>(),
        listed
    );

    // An 8-GPU pod fits nowhere (exit 1); fit's plan empties m: its 3 go to n's 3, its 2 to o's 4.
    let out = plugin(&[
        "map", "-l", &selector, "--gpus", "8", "--plan", "-o", "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let planned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(planned["job"]["plan"]["node"], json!(m), "{planned}");
    assert_eq!(
        drawn_cells(&planned),
        want(["-----...", "#####+++", "####++..", "xxxxxxxx"])
    );
    assert_eq!(
        planned["groups"][0]["nodes"][0]["job"],
        json!(true),
        "{planned}"
    );
    let out = plugin(&[
        "map", "-l", &selector, "--gpus", "8", "--plan", "--width", "200",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("> {m}  -----...")), "{text}");
    assert!(
        text.contains(&format!("{namespace}/m-3 (3 GPUs): {m} -> {n}")),
        "{text}"
    );

    delete_namespace(&env, &namespace).await;
    env.cleanup().await;
}

#[tokio::test]
async fn fit_plan_leaves_daemon_set_and_budgeted_pods_and_moves_the_lower_priority_one() {
    let env = TestEnv::new("fit-rules").await;
    let (namespace, nodes, pods) = h100_fleet(&env, "rules", &["a", "b", "c", "d"]).await;
    // Also after a failed assertion: its Deployments would recreate pods for nodes long gone.
    let _namespace = DeleteOnDrop(vec![format!("namespace/{namespace}")]);
    let work = Workloads::new(&env.client, &env.id, &namespace, &nodes);
    // `big` is placed first and preempts nobody: the plan, not preemption, makes its room.
    let _classes = work
        .priority_classes(&[("lo", 100, true), ("hi", 1000, true), ("big", 2000, false)])
        .await;
    let class = |suffix: &str| format!("{}-{suffix}", env.id);
    // 4 of 8 GPUs held on each node: a DaemonSet's pod on d, db (a budget allows no disruption) on a, hi on
    // b, lo on c. db's and the DaemonSet's pods are of priority 0: were the rules ignored, they would move.
    work.daemon_set("agent", 4, &nodes[3]).await;
    work.place(&work.deployment("db", 4, None), &nodes[0]).await;
    work.place(&work.deployment("hi", 4, Some(&class("hi"))), &nodes[1])
        .await;
    let lo = work
        .place(&work.deployment("lo", 4, Some(&class("lo"))), &nodes[2])
        .await;
    work.uncordon().await;
    assert_eq!(work.budget("db", "db", 1).await, 0);
    let mut big = pod("big", 8, json!({ TEST_LABEL: env.id }));
    big.spec.as_mut().unwrap().priority_class_name = Some(class("big"));
    pods.create(&PostParams::default(), &big).await.unwrap();
    let big_created = Instant::now();

    let selector = format!("{TEST_LABEL}={}", env.id);
    let ask = ["--gpus", "8", "--plan", "-l", &selector];
    let answer = eventually(CONVERGE, "four pods held and a plan", || async {
        let answer = fit_json(&ask);
        answer["plan"]["moves"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
            .then_some(answer)
    })
    .await;
    let plan = &answer["plan"];
    assert_eq!(plan["node"], json!(nodes[2]), "{answer}");
    let moves = plan["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 1, "{answer}");
    let (to, owner) = (moves[0]["to"].as_str().unwrap(), &moves[0]["owner"]);
    assert_eq!(
        (
            moves[0]["pod"].as_str(),
            moves[0]["from"].as_str(),
            &moves[0]["priority"]
        ),
        (Some(lo.as_str()), Some(nodes[2].as_str()), &json!(100)),
        "{answer}"
    );
    assert!(
        owner
            .as_str()
            .is_some_and(|o| o.starts_with("ReplicaSet/lo-")),
        "{answer}"
    );
    assert_ne!(to, nodes[2]);

    // Fail closed: a user who may not list PodDisruptionBudgets gets no plan, exit 2, and what to grant.
    let (user, _rbac) = user_without_budgets(&env.client, &env.id).await;
    let mut as_user = ask.to_vec();
    as_user.push("--dra-driver=");
    let refused = eventually(CONVERGE, "the budgets refused", || async {
        let run = fit_as(&as_user, Some(&user));
        run.stderr.contains("poddisruptionbudgets").then_some(run)
    })
    .await;
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    let why = refused.answer["plan"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("grant list on poddisruptionbudgets"), "{why}");
    assert_eq!(refused.answer["plan"]["moves"], json!([]));

    // Carry it out as a user would: delete the pod; its ReplicaSet makes another, which the real
    // scheduler places with the waiting pod. kube-scheduler tries the pod of the highest priority first, but
    // only among those not waiting out a back-off (up to 10 s after a failed try): until then the
    // replacement, tried first, would take the freed room (docs/fragmentation.md says the same to users).
    tokio::time::sleep(SCHEDULER_MAX_BACKOFF.saturating_sub(big_created.elapsed())).await;
    pods.delete(&lo, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let (_, replaced_on) = work.bound_pod("lo", Some(&lo)).await;
    let big_on = eventually(CONVERGE, "the scheduler binding big", || async {
        pods.get("big").await.ok()?.spec?.node_name
    })
    .await;
    assert_eq!(
        big_on, nodes[2],
        "the scheduler put big where the plan freed room"
    );
    assert_ne!(
        replaced_on, nodes[2],
        "lo's replacement took the room the plan freed"
    );
    // Nothing else moved: the pinned pods are where they were.
    assert_eq!(work.bound_pod("db", None).await.1, nodes[0]);
    assert_eq!(work.bound_pod("agent", None).await.1, nodes[3]);

    delete_namespace(&env, &namespace).await;
    env.cleanup().await;
}

/// The pictures README.md and docs/fragmentation.md paste are what the command prints for their fleet.
#[test]
fn the_maps_in_the_docs_are_what_the_command_draws() {
    let fleet = common::fixture_path("fragmentation/map-fleet.yaml");
    for (page, command) in [
        ("README.md", "kubectl gpu-inventory map"),
        ("docs/fragmentation.md", "kubectl gpu-inventory map"),
        (
            "docs/fragmentation.md",
            "kubectl gpu-inventory map --gpus 8 --plan",
        ),
    ] {
        let mut args: Vec<&str> = command.split(' ').skip(2).collect();
        args.extend(["-f", &fleet]);
        let out = plugin(&args);
        let drawn = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            drawn.lines().collect::<Vec<_>>(),
            documented(page, command),
            "{page}: `{command}` draws\n{drawn}"
        );
    }
}
