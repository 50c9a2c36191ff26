//! Running it like a production operator: health endpoints, metrics that match the inventory, leader election.

mod common;

use std::time::{Duration, Instant};

use common::{OperatorProcess, TestEnv, eventually, metric};

const CONVERGE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn readyz_turns_200_after_sync_and_metrics_match_the_inventory() {
    let env = TestEnv::new("ops-metrics").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let operator = env.start_operator("2s");
    assert_eq!(operator.http_get("/healthz").await.0, 200);
    let inv = env.inventory_name();
    env.wait_inventory(&inv, CONVERGE, "the home-lab inventory", |s| {
        s.total_gpu_nodes == 4
    })
    .await;
    eventually(CONVERGE, "/readyz 200", || async {
        (operator.http_get("/readyz").await.0 == 200).then_some(())
    })
    .await;

    // The reconcile is counted when it returns, after its write (and its events): the status can be seen
    // before the counter moves, so the scrape waits for both.
    let text = eventually(CONVERGE, "metrics for the inventory", || async {
        let (code, text) = operator.http_get("/metrics").await;
        (code == 200
            && text.contains(&format!("gpu_inventory_gpu_nodes{{inventory=\"{inv}\"}}"))
            && text.contains("gpu_inventory_reconciles_total{controller=\"inventory\"}"))
        .then_some(text)
    })
    .await;
    let series = |name: &str| format!("{name}{{inventory=\"{inv}\"}}");
    assert_eq!(
        metric(&text, &series("gpu_inventory_gpu_nodes")),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &series("gpu_inventory_ready_gpu_nodes")),
        Some(0.0)
    );
    assert_eq!(metric(&text, &series("gpu_inventory_gpus")), Some(1.0));
    let nuc1 = env.node_name("nuc1");
    assert_eq!(
        metric(
            &text,
            &format!("gpu_inventory_node_gpu_memory_bytes{{inventory=\"{inv}\",node=\"{nuc1}\"}}")
        ),
        Some(8188.0 * 1024.0 * 1024.0)
    );
    assert_eq!(
        metric(
            &text,
            &format!("gpu_inventory_node_issues{{inventory=\"{inv}\",reason=\"NotReady\"}}")
        ),
        Some(4.0)
    );
    assert!(text.contains("gpu_inventory_guard_skipped_writes_total{target=\"status\"}"));
    assert_eq!(metric(&text, "gpu_inventory_leader"), Some(1.0));
    assert!(text.ends_with("# EOF\n"));
}

fn leader_args(env: &TestEnv, lease: &str) -> Vec<String> {
    let mut args = env.operator_args("2s");
    args.extend(
        [
            "--leader-elect",
            "--lease-name",
            lease,
            "--lease-duration",
            "6s",
        ]
        .map(String::from),
    );
    args
}

#[tokio::test]
async fn one_leader_writes_and_a_standby_takes_over_after_sigkill() {
    let env = TestEnv::new("ops-leader").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let lease = format!("{}-lease", env.id);
    let first = OperatorProcess::start(&format!("{}-a", env.id), &leader_args(&env, &lease));
    let inv = env.inventory_name();
    env.wait_inventory(&inv, CONVERGE, "converged under the first leader", |s| {
        s.total_gpu_nodes == 4
    })
    .await;
    let second = OperatorProcess::start(&format!("{}-b", env.id), &leader_args(&env, &lease));
    eventually(CONVERGE, "the standby waiting for the lease", || async {
        second
            .log()
            .contains("waiting for the leader lease")
            .then_some(())
    })
    .await;
    env.set_ready(&env.node_name("nuc1"), "True").await;
    env.wait_inventory(&inv, Duration::from_secs(5), "the leader's write", |s| {
        s.ready_gpu_nodes == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(first.log().contains("became leader"), "{}", first.log());
    assert!(
        !second.log().contains("became leader"),
        "exactly one leader:\n{}",
        second.log()
    );
    assert!(
        !second.log().contains("reconciled GpuInventory"),
        "the standby wrote:\n{}",
        second.log()
    );
    assert_eq!(
        second
            .http_get("/metrics")
            .await
            .1
            .lines()
            .find(|l| l.starts_with("gpu_inventory_leader ")),
        Some("gpu_inventory_leader 0")
    );

    first.signal("KILL");
    let killed = Instant::now();
    eventually(
        Duration::from_secs(20),
        "the standby to take over",
        || async { second.log().contains("became leader").then_some(()) },
    )
    .await;
    let takeover = killed.elapsed();
    assert!(
        takeover <= Duration::from_secs(8),
        "took over after {takeover:?}; lease duration is 6 s"
    );
    env.set_ready(&env.node_name("nuc2"), "True").await;
    env.wait_inventory(
        &inv,
        Duration::from_secs(5),
        "the new leader's write",
        |s| s.ready_gpu_nodes == 2,
    )
    .await;
    drop(first);
}

#[tokio::test]
async fn a_leader_that_loses_its_lease_stops_its_controllers_and_exits() {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Api, Patch, PatchParams};
    let env = TestEnv::new("ops-lease-loss").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let lease = format!("{}-lease", env.id);
    let mut leader = OperatorProcess::start(&env.id, &leader_args(&env, &lease));
    env.wait_inventory(&env.inventory_name(), CONVERGE, "converged", |s| {
        s.total_gpu_nodes == 4
    })
    .await;
    // Another identity takes the Lease over, as a partitioned leader would find after its lease expired.
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), &env.namespace);
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(jiff::Timestamp::now());
    let takeover = serde_json::json!({ "spec": {
        "holderIdentity": "someone-else", "leaseDurationSeconds": 3600,
        "acquireTime": now, "renewTime": now } });
    leases
        .patch(
            &lease,
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": { "name": lease },
            "spec": takeover["spec"] })),
        )
        .await
        .expect("take the lease");
    let code = leader
        .wait_exit(Duration::from_secs(20))
        .expect("the old leader exits");
    assert_eq!(code, Some(1));
    let log = leader.log();
    assert!(
        log.contains("lost the leader lease; stopping controllers"),
        "{log}"
    );
    assert!(
        log.contains("inventory controller stopped")
            && log.contains("node-status controller stopped"),
        "{log}"
    );
}
