//! A referee for the DRA accounting: kube-controller-manager's `resourcepoolstatusrequest-controller`
//! (KEP-5677, `ResourcePoolStatusRequest`, Kubernetes 1.36+ with `DRAResourcePoolStatus`) counts the same
//! pools as `scan -o json`, and its per-pool `totalDevices`, `allocatedDevices`, `availableDevices` and
//! `unavailableDevices` must be ours: claims the real scheduler allocated (a template per pod, one claim
//! shared by two pods, an `adminAccess` claim over every device), a tainted free device, static MIG, and a
//! pool with an old generation left over, and a device a DeviceTaintRule taints. Where the rules differ on
//! purpose (a device both allocated and tainted; a GPU whose MIG device is in use) the difference is
//! asserted exactly. An incomplete pool: upstream writes no status at all, ours says `DraPoolIncomplete` and
//! counts nothing free.
//!
//! Partition counts: where a pool's partition type attribute is known (the request's
//! `defaultPartitionTypeAttribute`, gate `DRAPartitionableDevicesType`, 1.37), upstream's `partitionSummary`
//! (per type: total, and how many more still fit the shared counters) must be ours (the devices per resource,
//! and the node entry's `stillFit`), idle and after the scheduler allocated a partition.
//!
//! One request per pool (`spec.poolName`): a request over the whole driver gets no status while *any* pool of
//! the driver is incomplete, and the other DRA tests running beside this one publish incomplete pools on
//! purpose (tests/dra_pools.rs).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::TestEnv;
use common::dra::{self, DRIVER};
use common::fresh_scan::scan_status as scan;
use common::pool_counts::{
    Counts, entry_sums, node_entry, ours, ours_partitions, partition_table, row, table,
    upstream_pool, upstream_pool_of,
};
use common::pool_status::{PoolStatusRequests, UpstreamPartition};
use k8s_openapi::api::resource::v1::ResourceSlice;
use kube::api::Api;
use serde_json::{Value, json};

fn gpus(node: &str, range: std::ops::Range<u32>) -> Vec<Value> {
    range.map(|i| dra::gpu(i, node)).collect()
}

fn request(class: &str, count: u32) -> Value {
    json!({ "name": "gpu", "exactly": { "deviceClassName": class, "count": count } })
}

const XID_TAINT: &str = "gpu.nvidia.com/xid";

#[tokio::test]
async fn upstream_pool_status_agrees_with_ours_pool_by_pool_and_differs_only_where_the_rules_do() {
    let env = TestEnv::new("dra-referee").await;
    dra::require_dra(&env.client, "dra-referee").await;
    common::pool_status::require(&env.client, "dra-referee").await;
    let requests = PoolStatusRequests::new(&env);
    dra::ensure_device_classes(&env.client).await;
    dra::allow_admin_access(&env).await;
    let [whole, mig, xid, parent, rule] = ["whole", "mig", "xid", "parent", "rule"];
    let mut nodes = BTreeMap::new();
    for name in [whole, mig, xid, parent, rule] {
        nodes.insert(name, env.create_node(dra::dra_node(name)).await);
    }
    let node = |name: &str| nodes[name].clone();

    // whole: generation 2 has four GPUs, gpu-3 tainted (a fatal XID) and free; a generation-1 slice with six
    // is left over, which neither side counts.
    let w = node(whole);
    dra::publish_slice(&env, &w, &format!("{w}-gen1"), 1, 1, gpus(&w, 0..6)).await;
    let mut devices = gpus(&w, 0..4);
    devices[3]["taints"] = json!([{ "key": XID_TAINT, "value": "79", "effect": "NoSchedule" }]);
    dra::publish_slice(&env, &w, &format!("{w}-gen2"), 2, 1, devices).await;
    // mig: static MIG on two GPUs that are not published themselves (NVIDIA's driver from v25.12).
    let m = node(mig);
    let (p0, p1) = (format!("GPU-{m}-0"), format!("GPU-{m}-1"));
    let migs = vec![
        dra::mig("gpu-0-mig-1g10gb-19-0", "1g.10gb", &p0),
        dra::mig("gpu-0-mig-1g10gb-19-1", "1g.10gb", &p0),
        dra::mig("gpu-0-mig-1g10gb-19-2", "1g.10gb", &p0),
        dra::mig("gpu-0-mig-2g20gb-14-4", "2g.20gb", &p0),
        dra::mig("gpu-1-mig-3g40gb-9-0", "3g.40gb", &p1),
        dra::mig("gpu-1-mig-3g40gb-9-4", "3g.40gb", &p1),
    ];
    dra::publish_slice(&env, &m, &format!("{m}-gpu"), 1, 1, migs).await;
    // xid: three GPUs; the one a job gets is tainted afterwards (an XID while it runs).
    let x = node(xid);
    dra::publish_slice(&env, &x, &format!("{x}-gpu"), 1, 1, gpus(&x, 0..3)).await;
    // parent: the v25.3 driver's layout, gpu-0 published next to its own two MIG devices, plus gpu-1.
    let p = node(parent);
    let parent_uuid = format!("GPU-{p}-0");
    let devices = vec![
        dra::gpu(0, &p),
        dra::mig("gpu-0-mig-9-0-4", "3g.40gb", &parent_uuid),
        dra::mig("gpu-0-mig-9-4-4", "3g.40gb", &parent_uuid),
        dra::gpu(1, &p),
    ];
    dra::publish_slice(&env, &p, &format!("{p}-gpu"), 1, 1, devices).await;
    // rule: two GPUs, gpu-1 tainted by an admin's DeviceTaintRule rather than by the driver.
    let r = node(rule);
    dra::publish_slice(&env, &r, &format!("{r}-gpu"), 1, 1, gpus(&r, 0..2)).await;
    requests
        .taint_rule(&format!("{r}-gpu-1"), DRIVER, &r, "gpu-1", "NoSchedule")
        .await;

    for name in [whole, mig, xid, parent] {
        env.wait_schedulable(&node(name)).await;
    }
    dra::claim_pod(&env, "train", &w, "gpu.nvidia.com", 1).await;
    dra::shared_claim(&env, "shared", request("gpu.nvidia.com", 1)).await;
    for pod in ["shared-a", "shared-b"] {
        dra::pod_with_claim(&env, pod, &w, json!({ "resourceClaimName": "shared" })).await;
    }
    // A monitoring pod's adminAccess claim over every GPU of the node, the tainted one included: it takes
    // none of them from anyone, so neither side may count it.
    let admin = json!({ "name": "gpu", "exactly": { "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "All", "adminAccess": true,
        "tolerations": [{ "key": XID_TAINT, "operator": "Exists", "effect": "NoSchedule" }] } });
    dra::template_pod(&env, "admin", &w, admin).await;
    dra::claim_pod(&env, "notebook", &m, "mig.nvidia.com", 2).await;
    dra::claim_pod(&env, "job", &x, "gpu.nvidia.com", 1).await;
    dra::claim_pod(&env, "slice-user", &p, "mig.nvidia.com", 1).await;

    let mut admin_devices = dra::pod_claim_devices(&env, "admin").await;
    admin_devices.sort();
    assert_eq!(admin_devices, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]);
    let shared = dra::shared_claim_reserved(&env, "shared", 2).await;
    let train = dra::pod_claim_devices(&env, "train").await;
    assert_ne!(train, shared, "two claims, two GPUs");
    assert_eq!(dra::pod_claim_devices(&env, "notebook").await.len(), 2);
    let parent_claim = dra::pod_claim_devices(&env, "slice-user").await;
    assert!(
        parent_claim[0].starts_with("gpu-0-mig-"),
        "{parent_claim:?}"
    );
    let job = dra::pod_claim_devices(&env, "job").await;
    let mut devices = gpus(&x, 0..3);
    let tainted = devices
        .iter_mut()
        .find(|d| d["name"] == job[0].as_str())
        .unwrap();
    tainted["taints"] = json!([{ "key": XID_TAINT, "value": "48", "effect": "NoSchedule" }]);
    dra::publish_slice(&env, &x, &format!("{x}-gpu"), 1, 1, devices).await;
    let stored = Api::<ResourceSlice>::all(env.client.clone())
        .get(&format!("{x}-gpu"))
        .await
        .unwrap();
    let taints_kept = stored
        .spec
        .devices
        .unwrap_or_default()
        .iter()
        .any(|d| d.taints.is_some());
    assert!(
        taints_kept,
        "the API server dropped the taint (DRADeviceTaints off?)"
    );

    // The state is settled: the controller computes each request once, from the same objects scan lists.
    for name in [whole, mig, xid, parent, rule] {
        requests
            .create(&node(name), DRIVER, Some(&node(name)))
            .await;
    }
    let scanned = scan(&env);
    let mut rows = Vec::new();
    let mut compared = BTreeMap::new();
    for name in [whole, mig, xid, parent, rule] {
        let pool = node(name);
        let up = upstream_pool(&requests, &pool).await;
        let generation = if name == whole { 2 } else { 1 };
        assert_eq!(
            (up.generation, up.slice_count),
            (generation, Some(1)),
            "{up:?}"
        );
        let entry = node_entry(&scanned, &pool);
        let ours = ours(entry, &pool);
        rows.push(row(name, Some(Counts::upstream(&up)), ours));
        compared.insert(name, (Counts::upstream(&up), ours, entry_sums(entry)));
    }
    table(&rows);

    let check = |name: &str, upstream: Counts, ours_kep: Counts, free: i64| {
        let (up, ours, (capacity, allocatable, allocated, entry_free)) = compared[name];
        assert_eq!(up, upstream, "{name}: upstream");
        // Upstream and ours agree exactly on the pools expected to agree, and differ on the others.
        assert_eq!(
            up == ours.kep,
            upstream == ours_kep,
            "{name}: {up:?} vs {:?}",
            ours.kep
        );
        assert_eq!((ours.kep, ours.free), (ours_kep, free), "{name}: ours");
        // The node entry's sums are the same devices seen per resource.
        assert_eq!(capacity, ours.kep.total, "{name}: capacity");
        assert_eq!(
            allocatable,
            ours.kep.total - ours.kep.unavailable,
            "{name}: allocatable"
        );
        assert_eq!(
            (allocated, entry_free),
            (ours.kep.allocated, ours.free),
            "{name}: entry"
        );
    };
    // Agreement: two GPUs allocated (the shared one once, adminAccess not at all), the tainted gpu-3
    // unavailable; the old generation's six ignored.
    check(whole, Counts::kep(4, 2, 1), Counts::kep(4, 2, 1), 1);
    check(mig, Counts::kep(6, 2, 0), Counts::kep(6, 2, 0), 4);
    // Difference 1, documented: the allocated device is also tainted. Upstream subtracts it twice (available
    // 1); ours counts it once, so one more GPU is free than KEP's available says.
    check(xid, Counts::kep(3, 1, 1), Counts::kep(3, 1, 1), 2);
    // Difference 2, documented: upstream ignores what a MIG device takes from its parent; ours knows gpu-0
    // (its parent, by parentUUID) cannot be given out while the MIG device is in use: one fewer free.
    check(parent, Counts::kep(4, 1, 0), Counts::kep(4, 1, 0), 2);
    // Agreement: the DeviceTaintRule's device is unavailable on both sides (ours reads the rules as the
    // scheduler applies them), so one GPU is free.
    check(rule, Counts::kep(2, 0, 1), Counts::kep(2, 0, 1), 1);
    let deleted = requests.delete_all().await;
    assert_eq!(deleted.len(), 6, "five requests and the rule: {deleted:?}");
}

#[tokio::test]
async fn an_incomplete_pool_gets_no_upstream_status_and_no_free_devices_of_ours_until_its_last_slice()
 {
    let env = TestEnv::new("dra-referee-half").await;
    dra::require_dra(&env.client, "dra-referee-half").await;
    common::pool_status::require(&env.client, "dra-referee-half").await;
    let requests = PoolStatusRequests::new(&env);
    let half = env.create_node(dra::dra_node("half")).await;
    let full = env.create_node(dra::dra_node("full")).await;
    dra::publish_slice(&env, &half, &format!("{half}-a"), 1, 2, gpus(&half, 0..2)).await;
    dra::publish_slice(&env, &full, &format!("{full}-gpu"), 1, 1, gpus(&full, 0..2)).await;

    let all = format!("{}-all", env.id);
    requests.create(&half, DRIVER, Some(&half)).await;
    requests.create(&all, DRIVER, None).await;
    // The control: a request of a complete pool made at the same moment completes, so the controller was
    // working; it requeues the others five times within a second and then drops them without a status.
    requests.create(&full, DRIVER, Some(&full)).await;
    let up_full = upstream_pool(&requests, &full).await;
    assert_eq!(Counts::upstream(&up_full), Counts::kep(2, 0, 0));
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        requests.status(&half).await,
        None,
        "no status for a request of an incomplete pool"
    );
    assert_eq!(
        requests.status(&all).await,
        None,
        "nor for one of the whole driver"
    );

    let scanned = scan(&env);
    let entry = node_entry(&scanned, &half);
    let reasons: Vec<&str> = entry.issues.iter().map(|i| i.reason.as_str()).collect();
    assert_eq!(reasons, ["DraPoolIncomplete"]);
    assert!(
        entry.devices.iter().all(|d| d.pool_incomplete),
        "{:?}",
        entry.devices
    );
    assert_eq!(
        entry_sums(entry),
        (2, 0, 0, 0),
        "seen, nothing allocatable or free"
    );
    let before = ours(entry, &half);

    // The last slice lands. The controller does not look again by itself (it reacts to requests only):
    // still no status, until the request is touched.
    dra::publish_slice(&env, &half, &format!("{half}-b"), 1, 2, gpus(&half, 2..4)).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        requests.status(&half).await,
        None,
        "a new slice does not re-trigger the request"
    );
    requests.poke(&half).await;
    let up = upstream_pool(&requests, &half).await;
    assert_eq!((up.generation, up.slice_count), (1, Some(2)));
    let scanned = scan(&env);
    let entry = node_entry(&scanned, &half);
    let after = ours(entry, &half);
    table(&[
        row("half, 1 of 2 slices", None, before),
        row("half, complete", Some(Counts::upstream(&up)), after),
    ]);
    assert_eq!(before.free, 0);
    assert_eq!(Counts::upstream(&up), Counts::kep(4, 0, 0));
    assert_eq!((after.kep, after.free), (Counts::kep(4, 0, 0), 4));
    assert!(entry.issues.is_empty(), "{:?}", entry.issues);
    assert_eq!(entry_sums(entry), (4, 4, 0, 4));
    let deleted = requests.delete_all().await;
    assert_eq!(deleted.len(), 3, "{deleted:?}");
}

fn partitions(rows: &[(&str, i64, i64)]) -> Vec<UpstreamPartition> {
    rows.iter()
        .map(|(kind, total, allocatable)| UpstreamPartition {
            kind: (*kind).to_owned(),
            total: *total,
            allocatable: *allocatable,
        })
        .collect()
}

#[tokio::test]
async fn upstream_partition_counts_agree_with_what_ours_says_still_fits() {
    let env = TestEnv::new("dra-referee-parts").await;
    dra::require_dra(&env.client, "dra-referee-parts").await;
    common::pool_status::require(&env.client, "dra-referee-parts").await;
    let requests = PoolStatusRequests::new(&env);
    let class = format!("{}-amd-partition", env.id);
    let selects = "device.driver == 'gpu.amd.com' && device.attributes['gpu.amd.com'].type == 'amdgpu-partition'";
    let _class = dra::test_device_class(
        &env,
        &class,
        json!({ "selectors": [{ "cel": { "expression": selects } }] }),
    )
    .await;
    let node = env.create_node(dra::dra_node("mi300x-parts")).await;
    let (counters, devices) = dra::amd_partitionable_gpu("42");
    let types: BTreeMap<String, String> = devices
        .iter()
        .map(|d| {
            let name = d["name"].as_str().unwrap().to_owned();
            let kind = d["attributes"]["partitionProfile"]["string"]
                .as_str()
                .unwrap();
            (name, kind.to_owned())
        })
        .collect();
    let pool = || dra::Pool {
        driver: dra::AMD_DRIVER,
        generation: 1,
        slice_count: 2,
    };
    dra::publish_counter_slice(&env, &node, &format!("{node}-counters"), pool(), counters).await;
    dra::publish_pool_slice(&env, &node, &format!("{node}-devices"), pool(), devices).await;
    env.wait_schedulable(&node).await;
    let attribute = format!("{}/partitionProfile", dra::AMD_DRIVER);
    let compare = |case: &str, request: String| {
        let (env, requests, node, types, attribute) = (&env, &requests, &node, &types, &attribute);
        let case = case.to_owned();
        async move {
            requests
                .create_partitioned(&request, dra::AMD_DRIVER, node, attribute)
                .await;
            let up = upstream_pool_of(requests, &request, node).await;
            let entry = node_entry(&scan(env), node).clone();
            let ours = ours_partitions(&entry, dra::AMD_DRIVER, node, types);
            partition_table(&case, &up.partitions, &ours);
            (up.partitions, ours, entry)
        }
    };

    // Idle: every type fits as many times as it has devices.
    let (up, ours, entry) = compare("idle", format!("{node}-idle")).await;
    let idle = partitions(&[("cpx_nps1", 8, 8), ("dpx_nps1", 2, 2), ("spx_nps1", 1, 1)]);
    assert_eq!(up, idle, "upstream, idle");
    assert_eq!(ours, idle, "ours, idle");
    assert_eq!(entry.count, 1, "one physical GPU, not one per alternative");

    // The scheduler gives a job one half: four XCDs are left, so four eighths or one half still fit, and no
    // whole GPU; both sides measure each type on its own against what remains.
    let request = json!({ "name": "gpu", "exactly": { "deviceClassName": class, "count": 1,
        "selectors": [{ "cel": { "expression": "device.attributes['gpu.amd.com'].partitionProfile == 'dpx_nps1'" } }] } });
    dra::template_pod(&env, "half", &node, request).await;
    dra::claims_allocated(&env, &["half"]).await;
    let (up, ours, entry) = compare("one dpx_nps1 allocated", format!("{node}-used")).await;
    let used = partitions(&[("cpx_nps1", 8, 4), ("dpx_nps1", 2, 1), ("spx_nps1", 1, 0)]);
    assert_eq!(up, used, "upstream, one half allocated");
    assert_eq!(ours, used, "ours, one half allocated");
    assert_eq!(
        entry.allocated.get("gpu.amd.com/dpx_nps1"),
        Some(&1),
        "{entry:?}"
    );
    let deleted = requests.delete_all().await;
    assert_eq!(deleted.len(), 2, "{deleted:?}");
}
