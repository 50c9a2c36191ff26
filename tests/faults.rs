//! Faults and bad input against the real local control plane: outages, RBAC gaps, deleted objects, foreign
//! writers, oversize content, signals. The tests whose name starts with `fault_` change the shared cluster for
//! everyone (they stop the API server, delete the shared CRD or load it with thousands of nodes): `make test`
//! runs them one at a time, after the others (the fault tier). The rest keep to objects, users and operators
//! of their own and run among the other binaries.

mod common;

use std::time::{Duration, Instant};

use common::{
    CRD_REINSTALL_BACKOFF, Deadline, LOAD_ALLOWANCE, OperatorPeriods, OperatorProcess,
    RECONCILE_BACKOFF, TestEnv, WATCH_BACKOFF, eventually, impersonating_kubeconfig, is_homelab,
    local_cluster,
};
use futures::StreamExt;
use gpu_inventory_operator::crd::{CRD_NAME, GPUNODE_CRD_NAME, GpuInventory};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The operator's CRD reinstall after a deletion: the CRD's termination (its objects deleted first: one
/// reaction of the API server's finalizer), the reinstall's retries meanwhile (the operator's CRD_REINSTALL
/// backoff, at most its delay after that long), and the reinstall itself.
fn crd_reinstall() -> Deadline {
    Deadline::reaction("the CRD's termination")
        .then(CRD_REINSTALL_BACKOFF.next_attempt("the CRD reinstall", LOAD_ALLOWANCE))
}

/// A publisher's next attempt after its requests failed for at most `failing_for` (a refused or failed write
/// waits out its RECONCILE backoff; a failed watch its WATCH backoff, whichever is longer), then its pass.
fn retried_after(operator: &OperatorProcess, what: &str, failing_for: Duration) -> Deadline {
    RECONCILE_BACKOFF
        .next_attempt(what, failing_for)
        .or_longer(WATCH_BACKOFF.next_attempt(what, failing_for))
        .then(operator.periods().follow())
}

/// Stops the local API server; starts it again when dropped, also when the test fails.
struct ApiServerOutage;

impl ApiServerOutage {
    fn start() -> ApiServerOutage {
        local_cluster("stop-apiserver --kill");
        ApiServerOutage
    }
}

impl Drop for ApiServerOutage {
    fn drop(&mut self) {
        local_cluster("start-apiserver");
    }
}

#[tokio::test]
async fn fault_apiserver_outage_is_survived_and_caught_up() {
    let env = TestEnv::new("fault-outage").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let operator = env.start_operator_with("2s", &["--readiness-grace", "5s"]);
    let periods = operator.periods();
    let inv = env.inventory_name();
    env.wait_inventory(&inv, periods.converge(), "converged", is_homelab)
        .await;
    eventually(
        Deadline::reaction("the operator's readiness"),
        "/readyz 200",
        || async { (operator.http_get("/readyz").await.0 == 200).then_some(()) },
    )
    .await;
    let log_before = operator.log().lines().count();

    let stopped = Instant::now();
    let outage = ApiServerOutage::start();
    // The watches fail at once (their connections end with the server), and at their first retry; /readyz
    // turns 503 once that has lasted --readiness-grace.
    let not_ready = Deadline::new(
        periods.readiness_grace,
        format!("--readiness-grace {:?}", periods.readiness_grace),
    )
    .then(Deadline::new(
        WATCH_BACKOFF.first,
        "the watches' first retry (WATCH backoff)",
    ))
    .then(Deadline::reaction("the operator's readiness"));
    let readyz = eventually(not_ready, "/readyz 503 after the grace period", || async {
        let (code, body) = operator.http_get("/readyz").await;
        (code == 503).then_some(body)
    })
    .await;
    assert!(
        stopped.elapsed() >= Duration::from_secs(4),
        "503 only after the 5 s grace: {readyz}"
    );
    assert!(readyz.contains("API server"), "{readyz}");
    assert_eq!(
        operator.http_get("/healthz").await.0,
        200,
        "alive throughout"
    );
    // A long outage: past the grace, and long enough for the watches' backoff to reach its cap and retry at
    // it twice (a short one would not show that the operator is back within one cap of the server).
    let to_cap: Duration = WATCH_BACKOFF
        .delays()
        .take_while(|d| *d < WATCH_BACKOFF.cap)
        .sum();
    let outage_length = periods.readiness_grace + to_cap + 2 * WATCH_BACKOFF.cap;
    tokio::time::sleep(outage_length.saturating_sub(stopped.elapsed())).await;
    drop(outage);

    // A change made as the API server comes back, before the operator's watches have reconnected. What is
    // asserted: a watch reconnects within its backoff cap, and the change is published within as long again.
    let catch_up = Deadline::new(
        2 * WATCH_BACKOFF.cap,
        "the watches' reconnect within their backoff cap (WATCH), and the change's pass within as long",
    );
    let nuc1 = env.node_name("nuc1");
    env.set_ready(&nuc1, "True").await;
    let started = Instant::now();
    env.wait_inventory(&inv, &catch_up, "the change in the status", |s| {
        s.ready_gpu_nodes == 1
    })
    .await;
    env.wait_configmap(&catch_up, "the change in the ConfigMap", |d| {
        d[&nuc1].contains("\"ready\":true")
    })
    .await;
    println!("caught up {:?} after the restart", started.elapsed());
    eventually(&catch_up, "/readyz 200 again", || async {
        (operator.http_get("/readyz").await.0 == 200).then_some(())
    })
    .await;
    let log = operator.log();
    let outage_log: Vec<&str> = log.lines().skip(log_before).collect();
    let warnings = outage_log.iter().filter(|l| l.contains("WARN")).count();
    assert!(
        outage_log
            .iter()
            .any(|l| l.contains("cannot reach the API server")),
        "a clear warning:\n{log}"
    );
    assert!(
        warnings <= 12,
        "warnings are rate-limited, got {warnings}:\n{}",
        outage_log.join("\n")
    );
    assert!(log.contains("API server reachable again"), "{log}");
}

#[tokio::test]
async fn an_unreachable_apiserver_at_startup_is_given_up_after_the_timeout() {
    let mut config = kube::config::Kubeconfig::read_from(common::kubeconfig_path()).unwrap();
    for cluster in &mut config.clusters {
        if let Some(c) = cluster.cluster.as_mut() {
            c.server = Some("https://127.0.0.1:9".to_owned());
        }
    }
    let path = common::write_kubeconfig(&config, "unreachable");
    let args: Vec<String> = [
        "run",
        "--kubeconfig",
        &path.display().to_string(),
        "--startup-timeout",
        "3s",
        "--metrics-addr",
        "",
    ]
    .map(String::from)
    .to_vec();
    let mut operator = OperatorProcess::start("fault-unreachable", &args);
    // It gives up after --startup-timeout, and exits (one reaction).
    let timeout = OperatorPeriods::of(&args).startup_timeout;
    let code = operator
        .wait_exit(timeout + LOAD_ALLOWANCE)
        .expect("gave up in time");
    assert_eq!(code, Some(1));
    let log = operator.log();
    assert!(
        log.contains("API server unreachable") && log.contains("retry_in_secs"),
        "retries with backoff:\n{log}"
    );
    assert!(
        log.contains("--startup-timeout") && log.contains("127.0.0.1:9"),
        "{log}"
    );
}

/// RBAC for `user` with everything the operator needs, minus `missing` (resource, verb).
async fn grant(env: &TestEnv, user: &str, missing: Option<(&str, &str)>) {
    let rules = [
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "get,list,watch,create,patch",
        ),
        ("", "nodes", "get,list,watch"),
        ("", "pods", "list,watch"),
        ("resource.k8s.io", "resourceslices", "list,watch"),
        ("resource.k8s.io", "resourceclaims", "list,watch"),
        ("resource.k8s.io", "deviceclasses", "list,watch"),
        ("resource.k8s.io", "devicetaintrules", "list,watch"),
        (
            "homelab.youngju.dev",
            "gpuinventories",
            "get,list,watch,create,patch",
        ),
        ("homelab.youngju.dev", "gpuinventories/status", "patch"),
        ("", "configmaps", "get,list,watch,create,patch"),
        ("events.k8s.io", "events", "create,patch"),
    ];
    let rules: Vec<serde_json::Value> = rules
        .iter()
        .map(|(group, resource, verbs)| {
            let verbs: Vec<&str> = verbs
                .split(',')
                .filter(|v| missing != Some((resource, v)))
                .collect();
            json!({ "apiGroups": [group], "resources": [resource], "verbs": verbs })
        })
        .filter(|rule| !rule["verbs"].as_array().unwrap().is_empty())
        .collect();
    let name = format!("{}-operator", env.id);
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { common::TEST_LABEL: env.id } }, "rules": rules }))
    .unwrap();
    let roles: Api<ClusterRole> = Api::all(env.client.clone());
    roles
        .patch(
            &name,
            &PatchParams::apply("fault-test").force(),
            &Patch::Apply(&role),
        )
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { common::TEST_LABEL: env.id } },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }] }))
    .unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(env.client.clone());
    bindings
        .patch(
            &name,
            &PatchParams::apply("fault-test").force(),
            &Patch::Apply(&binding),
        )
        .await
        .unwrap();
}

async fn revoke_all(env: &TestEnv) {
    let name = format!("{}-operator", env.id);
    let _ = Api::<ClusterRoleBinding>::all(env.client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
    let _ = Api::<ClusterRole>::all(env.client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
}

async fn missing_permission_is_reported_and_recovers(
    test: &str,
    missing: (&str, &str),
    expected: &str,
) {
    let env = TestEnv::new(test).await;
    env.load_fixture("homelab-nodes.yaml").await;
    let user = format!("{}-user", env.id);
    grant(&env, &user, Some(missing)).await;
    let kubeconfig = impersonating_kubeconfig(&user, &env.id);
    let mut args = env.operator_args("2s");
    let at = args.iter().position(|a| a == "--kubeconfig").unwrap();
    args[at + 1] = kubeconfig.display().to_string();
    let operator = OperatorProcess::start(&env.id, &args);
    let started = Instant::now();
    // Its first refused request: a first list or the first write, within its start-up and first pass.
    eventually(
        operator.periods().converge(),
        "an error naming verb, resource and identity",
        || async {
            let log = operator.log();
            (log.contains(expected) && log.contains(&user)).then_some(())
        },
    )
    .await;
    // No tight loop: over 10 s, only a handful of log lines about it; and a missing permission is no outage,
    // so the watches that work do not announce the API server "reachable again" after each retry.
    // Changes keep coming meanwhile (nuc1 cordoned and uncordoned, every 2 s): a change does not make a
    // refused request pass, so it brings no extra attempt.
    // Lines, not occurrences: a refused request's line says "forbidden" twice (the server's words and the
    // reason), and a line still being written when the log is read holds only the first.
    let forbidden_lines = |log: &str| log.lines().filter(|l| l.contains("forbidden")).count();
    let before = forbidden_lines(&operator.log());
    let recovered_before = operator.log().matches("reachable again").count();
    let nuc1 = env.node_name("nuc1");
    for cordon in [true, false, true, false, true, false] {
        env.cordon(&nuc1, cordon).await;
        tokio::time::sleep(Duration::from_millis(1700)).await;
    }
    // The retry backoff (1 s, doubling) allows 4 attempts in 10 s; a change-driven retry would add 6 more.
    let during = forbidden_lines(&operator.log()) - before;
    assert!(
        during <= 6,
        "{during} forbidden lines in 10 s:\n{}",
        operator.log()
    );
    let recovered = operator.log().matches("reachable again").count() - recovered_before;
    assert_eq!(
        recovered,
        0,
        "a missing permission was taken for an outage:\n{}",
        operator.log()
    );

    // Granted: the API server's RBAC cache takes it in (one reaction); the refused request is tried again at
    // its next attempt, which its backoff puts at most one delay away (how long depends on how long it has
    // been refused: since the start at most); then a pass publishes.
    grant(&env, &user, None).await;
    let recovery = Deadline::reaction("the API server's RBAC cache").then(retried_after(
        &operator,
        "the refused request",
        started.elapsed(),
    ));
    env.wait_inventory(
        &env.inventory_name(),
        recovery,
        "recovery once granted",
        is_homelab,
    )
    .await;
    revoke_all(&env).await;
}

#[tokio::test]
async fn without_list_nodes_the_operator_says_so_and_recovers() {
    missing_permission_is_reported_and_recovers(
        "fault-rbac-nodes",
        ("nodes", "list"),
        "cannot list resource \"nodes\"",
    )
    .await;
}

#[tokio::test]
async fn without_list_pods_the_operator_says_so_and_recovers() {
    // An RBAC from before the pod watch: the operator names the missing rule and publishes nothing it
    // cannot know (no allocation from an empty pod list); it converges once the rule is granted.
    missing_permission_is_reported_and_recovers(
        "fault-rbac-pods",
        ("pods", "list"),
        "cannot list resource \"pods\"",
    )
    .await;
}

#[tokio::test]
async fn without_list_resourceclaims_the_operator_says_so_and_recovers() {
    // The same for DRA on a server that serves it: no allocation from an empty claim list.
    let client = common::client().await;
    common::dra::require_dra(&client, "fault-rbac-claims").await;
    missing_permission_is_reported_and_recovers(
        "fault-rbac-claims",
        ("resourceclaims", "list"),
        "cannot list resource \"resourceclaims\"",
    )
    .await;
}

#[tokio::test]
async fn without_status_patch_the_operator_says_so_and_recovers() {
    missing_permission_is_reported_and_recovers(
        "fault-rbac-status",
        ("gpuinventories/status", "patch"),
        "cannot patch resource \"gpuinventories/status\"",
    )
    .await;
}

#[tokio::test]
async fn fault_a_deleted_crd_is_reinstalled_or_reported() {
    let env = TestEnv::new("fault-crd").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let operator = env.start_operator("2s");
    let periods = operator.periods();
    let inv = env.inventory_name();
    env.wait_inventory(&inv, periods.converge(), "converged", is_homelab)
        .await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    crds.delete(CRD_NAME, &DeleteParams::default())
        .await
        .unwrap();
    let deleted = Instant::now();
    eventually(crd_reinstall(), "the reinstall", || async {
        operator
            .log()
            .contains("CustomResourceDefinition reinstalled")
            .then_some(())
    })
    .await;
    // The default inventory created again (one reaction after the reinstall), and its status written: the
    // status writes failed while the CRD was gone, so at the publisher's next attempt.
    let back = Deadline::reaction("the default inventory recreated").then(retried_after(
        &operator,
        "the status write",
        deleted.elapsed(),
    ));
    env.wait_inventory(
        &inv,
        back,
        "the default inventory back, converged",
        is_homelab,
    )
    .await;
    // The GpuNode CRD too: reinstalled, and the GpuNodes (deleted with it) written again.
    let nuc1 = env.node_name("nuc1");
    let before = env
        .wait_gpunode(&nuc1, periods.follow(), "nuc1's GpuNode", |_| true)
        .await
        .metadata
        .uid;
    crds.delete(GPUNODE_CRD_NAME, &DeleteParams::default())
        .await
        .unwrap();
    let deleted = Instant::now();
    eventually(crd_reinstall(), "the GpuNode CRD reinstalled", || async {
        operator
            .log()
            .lines()
            .any(|l| {
                l.contains("CustomResourceDefinition reinstalled") && l.contains(GPUNODE_CRD_NAME)
            })
            .then_some(())
    })
    .await;
    // A new object (the old one went with its CRD), written again: the GpuNode writes failed while the CRD was
    // gone, so at the publisher's next attempt.
    let rewritten = retried_after(&operator, "the GpuNode write", deleted.elapsed());
    eventually(rewritten, "nuc1's GpuNode after the reinstall", || async {
        let node = env.gpunode(&nuc1).await?;
        (node.metadata.uid != before && node.status.is_some()).then_some(())
    })
    .await;
    drop(operator);

    // With --skip-crd-install: reported clearly, and recovered once someone reinstalls it.
    let operator = env.start_operator_with("2s", &["--skip-crd-install"]);
    eventually(
        operator.periods().start_up(),
        "the operator running",
        || async { operator.log().contains("node cache synced").then_some(()) },
    )
    .await;
    crds.delete(CRD_NAME, &DeleteParams::default())
        .await
        .unwrap();
    let deleted = Instant::now();
    eventually(crd_reinstall(), "a clear report", || async {
        operator
            .log()
            .contains("--skip-crd-install is set")
            .then_some(())
    })
    .await;
    // Installed once the old one has terminated, and established (each one reaction).
    gpu_inventory_operator::publish::crd::install_crd(&env.client, 2 * LOAD_ALLOWANCE)
        .await
        .unwrap();
    let api: Api<GpuInventory> = Api::all(env.client.clone());
    let again: GpuInventory = serde_json::from_value(json!({
        "apiVersion": "homelab.youngju.dev/v1", "kind": "GpuInventory",
        "metadata": { "name": inv, "labels": { common::TEST_LABEL: env.id } }, "spec": {} }))
    .unwrap();
    eventually(
        Deadline::reaction("the API server serving the new CRD"),
        "the inventory recreated",
        || async { api.create(&PostParams::default(), &again).await.ok() },
    )
    .await;
    let recovered = retried_after(&operator, "the status write", deleted.elapsed());
    env.wait_inventory(&inv, recovered, "recovered without a restart", is_homelab)
        .await;
}

#[tokio::test]
async fn a_foreign_status_writer_is_undone_without_a_write_war() {
    let env = TestEnv::new("fault-foreign").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let operator = env.start_operator("2s");
    let periods = operator.periods();
    let inv = env.inventory_name();
    env.wait_inventory(&inv, periods.converge(), "converged", is_homelab)
        .await;
    let api: Api<GpuInventory> = Api::all(env.client.clone());
    let intruder = PatchParams {
        field_manager: Some("intruder".into()),
        ..Default::default()
    };
    api.patch_status(
        &inv,
        &intruder,
        &Patch::Merge(json!({ "status": { "totalGpuNodes": 99, "totalGpus": 42 } })),
    )
    .await
    .unwrap();
    // The foreign write comes in through the operator's GpuInventory watch: it follows it as any change.
    env.wait_inventory(&inv, periods.follow(), "our fields restored", is_homelab)
        .await;
    let rv = env.inventory(&inv).await.unwrap().metadata.resource_version;
    // A write war would show as a write at each periodic pass: the quiet period covers three.
    tokio::time::sleep(3 * periods.requeue).await;
    assert_eq!(
        env.inventory(&inv).await.unwrap().metadata.resource_version,
        rv,
        "no write war"
    );
}

/// A fleet far past the old one-object limit (the status stopped listing nodes at ~2,300): every GPU node has
/// its GpuNode, the aggregate's `nodes[]` keeps its byte budget, and the ConfigMap its 1 MiB. Here with the
/// fault tests because it loads the API server for a minute: they run one at a time.
#[tokio::test]
async fn fault_5000_gpu_nodes_each_get_a_gpunode_and_the_aggregates_stay_within_their_limits() {
    let env = TestEnv::new("fault-big").await;
    let mut template = common::fixture_nodes("gfd-nodes.yaml").remove(0);
    let labels = template
        .metadata
        .labels
        .get_or_insert_with(Default::default);
    // A malformed memory label makes every entry carry an InvalidLabel message: well over 1 MiB in all.
    labels.insert("nvidia.com/gpu.memory".into(), "81559MiB-per-device".into());
    // NotReady, so no KWOK kubelet: 5,000 simulated kubelets on 2 cores fall behind and the nodes flap, which
    // would measure KWOK rather than the operator.
    for condition in template
        .status
        .iter_mut()
        .flat_map(|s| s.conditions.iter_mut().flatten())
    {
        if condition.type_ == "Ready" {
            condition.status = "False".into();
        }
    }
    let nodes: Vec<Node> = (0..5000)
        .map(|i| {
            let mut node = template.clone();
            node.metadata.name = Some(format!("gpu-{i:04}"));
            node
        })
        .collect();
    futures::stream::iter(nodes)
        .for_each_concurrent(32, |node| {
            let env = &env;
            async move {
                env.create_node(node).await;
            }
        })
        .await;
    let operator = env.start_operator("30s");
    let periods = operator.periods();
    let started = Instant::now();
    let cm = env
        .wait_configmap(periods.converge(), "a truncated ConfigMap", |d| {
            d.get("_summary")
                .is_some_and(|s| s.contains("\"truncated\":true"))
        })
        .await;
    let data = cm.data.unwrap();
    let size: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum();
    assert!(size <= 1024 * 1024, "{size} bytes");
    let summary: serde_json::Value = serde_json::from_str(&data["_summary"]).unwrap();
    assert_eq!(summary["totalGpuNodes"], 5000);
    let omitted = summary["omittedNodes"].as_u64().unwrap();
    assert_eq!(
        data.len() as u64 - 1 + omitted,
        5000,
        "every node is either in or counted as left out"
    );
    let message = summary["message"].as_str().unwrap();
    assert!(
        message.contains("1 MiB") && message.contains("kubectl get gpunodes"),
        "{message}"
    );
    assert_eq!(
        operator.log().matches("would exceed 1 MiB").count(),
        1,
        "a warning is logged once, not at every write:\n{}",
        operator.log()
    );

    // The aggregate lists what fits its budget (64 KiB by default) and says where the rest is.
    let status = env
        .wait_inventory(
            &env.inventory_name(),
            periods.follow(),
            "the aggregate over 5,000 GPU nodes",
            |s| s.total_gpu_nodes == 5000,
        )
        .await
        .status
        .unwrap();
    let listed_bytes = serde_json::to_vec(&status.nodes).unwrap().len();
    assert!(listed_bytes <= 64 * 1024, "nodes[] is {listed_bytes} bytes");
    assert_eq!(
        status.nodes.len() as u32 + status.omitted_nodes.unwrap(),
        5000
    );
    assert!(
        status
            .nodes_message
            .as_deref()
            .unwrap()
            .contains("kubectl get gpunodes")
    );
    assert_eq!(
        status.problem_node_count, 5000,
        "every node has the InvalidLabel issue"
    );
    assert_eq!(status.problem_nodes.len(), 100, "listed up to the bound");

    // Every node's whole entry is in its GpuNode.
    let gpunodes: Api<gpu_inventory_operator::crd::GpuNode> = Api::all(env.client.clone());
    let params =
        kube::api::ListParams::default().labels(&format!("{}={}", common::TEST_LABEL, env.id));
    // The writes are API-server bound (two requests a node): the wait follows them, and fails only when
    // they stop for longer than a pass takes to resume them (a stalled write stream is picked up again at
    // the next periodic pass). Listed every 2 s, not faster: a list of 5,000 GpuNodes is itself work for the
    // server.
    let written = common::eventually_progressing(
        periods.follow(),
        Duration::from_secs(2),
        "a GpuNode for each of 5,000 nodes",
        || async {
            let Ok(list) = gpunodes.list(&params).await else {
                return common::Progress::Partly(0);
            };
            let written: Vec<_> = list
                .items
                .into_iter()
                .filter(|n| n.status.is_some())
                .collect();
            match written.len() {
                5000 => common::Progress::Done(written),
                n => common::Progress::Partly(n),
            }
        },
    )
    .await;
    eprintln!(
        "5,000 GpuNodes written {:?} after the operator's start",
        started.elapsed()
    );
    let names: std::collections::HashSet<_> = written
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert_eq!(names.len(), 5000);
    assert!(written.iter().all(|n| {
        let status = n.status.as_ref().unwrap();
        status.node.count == 8
            && status
                .issue_reasons
                .as_deref()
                .is_some_and(|r| r.contains("InvalidLabel"))
    }));
}

#[tokio::test]
async fn sigterm_mid_work_exits_0_within_5_s_leaving_valid_objects() {
    let env = TestEnv::new("fault-sigterm").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let mut operator = env.start_operator("2s");
    let inv = env.inventory_name();
    env.wait_inventory(&inv, operator.periods().converge(), "converged", is_homelab)
        .await;
    // Changes in flight while the signal lands.
    for name in ["nuc1", "nuc2", "omen"] {
        env.set_ready(&env.node_name(name), "True").await;
    }
    operator.signal("TERM");
    let signalled = Instant::now();
    let code = operator
        .wait_exit(Duration::from_secs(5))
        .expect("exited within 5 s");
    assert_eq!(code, Some(0), "{}", operator.log());
    println!("exited {:?} after SIGTERM", signalled.elapsed());
    let status = env.inventory(&inv).await.unwrap().status.expect("a status");
    assert_eq!(status.total_gpu_nodes, 4, "a complete, valid status");
    let data = env.configmap().await.unwrap().data.unwrap();
    for (key, value) in &data {
        serde_json::from_str::<serde_json::Value>(value).unwrap_or_else(|e| panic!("{key}: {e}"));
    }
}
