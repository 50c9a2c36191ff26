//! `plan` without an API server: objects in, the write (or none) and the events out.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResourceExt;
use serde_json::Value;

use super::*;
use crate::crd::GpuInventory;
use crate::inventory::allocation::{DemandScope, GpuPod, NodeFacts};
use crate::inventory::assemble::assemble;
use crate::inventory::dra::DraView;
use crate::inventory::events::{EventBase, transitions_since};
use crate::inventory::model::{
    Amount, Inventory, IssueReason, Mig, MigProfile, NodeInventory, Sharing, Source,
};
use crate::inventory::test_support::{entry, inventory};
use crate::publish::content::status::{NodeList, desired_status};
use crate::publish::content::wire::Detail;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn status(ready: u32) -> GpuInventoryStatus {
    let inventory = Inventory {
        total_gpu_nodes: 4,
        ready_gpu_nodes: ready,
        ..Default::default()
    };
    GpuInventoryStatus {
        observed_generation: Some(1),
        total_gpu_nodes: 4,
        ready_gpu_nodes: ready,
        conditions: crate::publish::content::wire::conditions(&inventory, Some(1)),
        ..Default::default()
    }
}

fn written(plan: Option<GpuInventoryStatus>) -> GpuInventoryStatus {
    plan.expect("expected a write")
}

#[test]
fn first_write_is_stamped_now() {
    let s = written(plan_status(status(0), None, t(100)));
    assert_eq!(s.observed_time, Some(Time(t(100))));
    assert!(
        s.conditions
            .iter()
            .all(|c| c.last_transition_time == Time(t(100)))
    );
}

#[test]
fn unchanged_content_is_skipped_whatever_the_times() {
    let on_server = written(plan_status(status(0), None, t(100)));
    assert_eq!(plan_status(status(0), Some(&on_server), t(200)), None);
}

#[test]
fn change_moves_observed_time_but_only_flipped_conditions() {
    let on_server = written(plan_status(status(0), None, t(100)));
    // 1 of 4 ready: Ready stays False (message changes), so its transition time is carried over.
    let s = written(plan_status(status(1), Some(&on_server), t(200)));
    assert_eq!(s.observed_time, Some(Time(t(200))));
    assert_eq!(s.conditions[0].last_transition_time, Time(t(100)));
    // 4 of 4 ready: Ready flips to True.
    let s2 = written(plan_status(status(4), Some(&s), t(300)));
    assert_eq!(s2.conditions[0].status, "True");
    assert_eq!(s2.conditions[0].last_transition_time, Time(t(300)));
    assert_eq!(
        s2.conditions[1].last_transition_time,
        Time(t(100)),
        "Degraded did not flip"
    );
}

#[test]
fn a_new_generation_is_a_change() {
    let on_server = written(plan_status(status(0), None, t(100)));
    let mut next = status(0);
    next.observed_generation = Some(2);
    assert!(plan_status(next, Some(&on_server), t(200)).is_some());
}

fn node(name: &str, ready: bool) -> NodeInventory {
    let reasons: &[IssueReason] = if ready { &[] } else { &[IssueReason::NotReady] };
    NodeInventory {
        product: Some("NVIDIA-H100-80GB-HBM3".into()),
        ..entry(name, ready, 8, reasons)
    }
}

/// The way linkerd2 tests its status index: feed states in, assert the writes and events that come out.
#[test]
fn a_node_going_not_ready_and_back_is_two_writes_and_two_events() {
    let healthy = inventory(vec![node("a", true), node("b", true)]);
    let broken = inventory(vec![node("a", true), node("b", false)]);
    let status =
        |inventory: &Inventory| desired_status(inventory, Some(1), NodeList::Within(1 << 16));
    let first = written(plan_status(status(&healthy), None, t(10)));
    let reasons = |old: &Inventory, new: &Inventory| -> Vec<String> {
        transitions_since(EventBase::Model(old), new)
            .into_iter()
            .map(|e| e.reason)
            .collect()
    };

    let plan = plan_status(status(&broken), Some(&first), t(20));
    let second = written(plan);
    assert!(reasons(&healthy, &broken).contains(&"GpuNodeNotReady".to_owned()));
    assert_eq!(second.ready_gpu_nodes, 1);

    let again = status(&broken);
    assert_eq!(
        plan_status(again.clone(), Some(&second), t(30)),
        None,
        "a repeat writes nothing"
    );
    assert!(reasons(&broken, &broken).is_empty(), "and tells nothing");

    let plan = plan_status(status(&healthy), Some(&second), t(40));
    let third = written(plan);
    assert!(reasons(&broken, &healthy).contains(&"GpuNodeReady".to_owned()));
    assert_eq!(third.conditions[0].last_transition_time, Time(t(40)));
}

#[test]
fn configmap_data_is_written_only_when_it_differs() {
    let data = |v: &str| BTreeMap::from([("a".to_owned(), v.to_owned())]);
    assert_eq!(plan_configmap(data("1"), None), Some(data("1")));
    assert_eq!(plan_configmap(data("1"), Some(&data("1"))), None);
    assert_eq!(plan_configmap(data("2"), Some(&data("1"))), Some(data("2")));
    let mut extra = data("1");
    extra.insert("b".into(), "x".into());
    assert_eq!(plan_configmap(data("1"), Some(&extra)), Some(data("1")));
}

/// A status with every field set, nested ones included.
fn full_status() -> GpuInventoryStatus {
    let mut entry = node("a", false);
    entry.issues[0].since = Some("2026-11-30T10:00:00Z".into());
    entry.memory_mib = Some(81559);
    entry.workload_config = Some("container".into());
    entry.sharing = Some(Sharing {
        strategy: Some("time-slicing".into()),
        replicas: Some(4),
        renamed_resource: true,
    });
    entry.mig = Some(Mig {
        strategy: Some("mixed".into()),
        config: Some("all-balanced".into()),
        config_state: Some("success".into()),
        count_meaning: Some("physical GPUs".into()),
        devices: vec![MigProfile {
            profile: "1g.10gb".into(),
            count: 2,
            memory_mib: Some(9728),
            resource: Some("nvidia.com/mig-1g.10gb".into()),
        }],
    });
    entry.capacity = crate::inventory::model::ResourceMap::from_iter([(
        "nvidia.com/gpu".into(),
        Amount::parse("8"),
    )]);
    entry.allocatable = crate::inventory::model::ResourceMap::from_iter([(
        "nvidia.com/gpu".into(),
        Amount::parse("7"),
    )]);
    entry.unschedulable = true;
    entry.sources = vec![Source::DevicePlugin, Source::Labels];
    entry.derived_from = crate::inventory::model::ResourceMap::from_iter([(
        "memoryMiB".into(),
        "nvidia.com/gpu.memory (bytes)".into(),
    )]);
    entry.notes = vec!["label nvidia.com/gpu.memory=85520809984 is in bytes".into()];
    entry.dra_extended = BTreeMap::from([("nvidia.com/gpu".into(), "gpu.nvidia.com".into())]);
    entry.still_fit = BTreeMap::from([("gpu.nvidia.com/mig-1g.10gb".into(), 3)]);
    entry.product = Some("NVIDIA-H100-80GB-HBM3".into());
    entry.topology = crate::inventory::model::NodeTopology {
        nvlink: Some((crate::inventory::model::GPU_CLIQUE, "7c7f4a1e.32766".into())),
        network: vec![(
            "cloud.google.com/gce-topology-block".into(),
            "block-a".into(),
        )],
    };
    entry.ready = true;
    entry.unschedulable = false;
    let gpu_pod = |name: &str, node: Option<&str>| GpuPod {
        namespace: "ml".into(),
        name: name.into(),
        node: node.map(str::to_owned),
        phase: "Running".into(),
        unschedulable: node.is_none(),
        requests: [("nvidia.com/gpu".to_owned(), 2)].into_iter().collect(),
        node_selector: BTreeMap::new(),
        claims: Vec::new(),
        ..Default::default()
    };
    let pods = [gpu_pod("running", Some("a")), gpu_pod("waiting", None)];
    let inventory = assemble(
        vec![entry],
        &[&pods[0], &pods[1]],
        DemandScope { all_nodes: true },
        &DraView::default(),
        |_| NodeFacts {
            labels: None,
            allocatable_known: true,
        },
    );
    let mut status = desired_status(&inventory, Some(3), NodeList::All(Detail::Counts));
    // Both ends of the flags: the accounting needs a Ready, schedulable node for free GPUs.
    status.nodes[0].unschedulable = true;
    status.nodes[0].ready = false;
    status.omitted_nodes = Some(1);
    status.nodes_message = Some("1 of 2 GPU nodes are not listed here".into());
    // The inventory's nodes[] never carries devices (they are the GpuNode's), but the type allows them.
    status.nodes[0].devices = vec![crate::crd::DraDeviceEntry {
        driver: "gpu.nvidia.com".into(),
        pool: "a".into(),
        name: "gpu-0".into(),
        resource: "gpu.nvidia.com/gpu".into(),
        product: Some("NVIDIA H100 80GB HBM3".into()),
        memory_mib: Some(81559),
        allocated_to: vec!["ml/claim".into()],
        free: false,
        taints: vec!["gpu.nvidia.com/xid=79:NoSchedule".into()],
        pool_incomplete: true,
        capacity: BTreeMap::from([("memory".into(), "80Gi".into())]),
        consumed_capacity: BTreeMap::from([("memory".into(), "20Gi".into())]),
    }];
    // Nor the holders and their sum (the GpuNode's too).
    status.nodes[0].gpu_equivalents = Some("2".into());
    status.nodes[0].holders = vec![crate::crd::HolderEntry {
        kind: "Pod".into(),
        namespace: "ml".into(),
        name: "running".into(),
        resource: "nvidia.com/gpu".into(),
        amount: 2,
        gpu_equivalents: "2".into(),
        basis: "whole GPUs".into(),
    }];
    // The aggregate's entries carry no places (they are the GpuNode's), but the type allows them.
    status.nodes[0].topology = BTreeMap::from([("nvlink".into(), "7c7f4a1e.32766".into())]);
    // A degraded partition needs members at fault, which the accounting above would not leave free.
    status.topology[0].degraded_domains = 1;
    status.topology[0].problems = vec![crate::crd::DomainProblemEntry {
        reason: "NvlinkDomainDegraded".into(),
        domain: "7c7f4a1e.32766".into(),
        nodes: vec!["b".into()],
        message: "NVLink partition 7c7f4a1e.32766 (rack 7c7f4a1e): 1 of 2 nodes usable".into(),
    }];
    // Kueue's quotas: an entry with every optional part, and a workload that cannot fit.
    status.quotas = vec![crate::crd::QuotaEntry {
        flavor: "gb200".into(),
        resource: "nvidia.com/gpu".into(),
        nominal_quota: 600,
        borrowing_limit: Some(8),
        cluster_queues: vec!["research".into()],
        cohorts: vec!["org".into()],
        nodes: 150,
        gpus: 600,
        healthy_gpus: 564,
        free_gpus: 100,
        issues: vec![crate::crd::QuotaIssueEntry {
            reason: "QuotaExceedsCapacity".into(),
            message: "flavor gb200: nominal quota 600 is above the 564 healthy".into(),
        }],
    }];
    status.workload_issues = vec![crate::crd::WorkloadIssueEntry {
        workload: "ml/train".into(),
        cluster_queue: "research".into(),
        reason: "WorkloadCannotFit".into(),
        message: "PodSet main asks for 80 nvidia.com/gpu in one rack".into(),
    }];
    status.workload_issue_count = 1;
    // The schema walk reads each list's first item: it names both holders (a real entry names one).
    status.nodes[0].idle = vec![
        crate::crd::IdleEntry {
            pod: Some("ml/train".into()),
            claim: Some("ml/c0".into()),
            resource: "nvidia.com/gpu".into(),
            amount: 2,
            gpu_equivalents: Some("2".into()),
            idle_since: "2026-12-05T01:00:00Z".into(),
        },
        crate::crd::IdleEntry {
            pod: None,
            claim: Some("ml/c1".into()),
            resource: "gpu.nvidia.com/gpu".into(),
            amount: 1,
            gpu_equivalents: None,
            idle_since: "2026-12-05T01:00:00Z".into(),
        },
    ];
    status.utilization = Some(crate::crd::UtilizationStatus {
        source: "http://prometheus:9090".into(),
        window: "30m".into(),
        state: "Current".into(),
        message: "idle: below 1% through 30m".into(),
        idle: BTreeMap::from([("nvidia.com/gpu".into(), 2)]),
        busy_shared_gpus: 1,
    });
    for namespace in &mut status.namespaces {
        namespace.idle = BTreeMap::from([("nvidia.com/gpu".into(), 2)]);
        namespace.idle_gpu_equivalents = Some("2".into());
        namespace.idle_gpu_equivalents_by_product =
            BTreeMap::from([("NVIDIA-H100-80GB-HBM3".into(), "2".into())]);
    }
    // Fragmentation with every part: a size asked for first (the walk reads each list's first item), a
    // level, and a pod blocked.
    let size = |gpus, usable_gpus, asked| crate::crd::SizeUseEntry {
        gpus,
        usable_gpus,
        asked,
    };
    status.fragmentation = Some(crate::crd::FragmentationStatus {
        products: vec![crate::crd::ProductFragmentationEntry {
            product: "NVIDIA-H100-80GB-HBM3".into(),
            free_gpus: 16,
            largest_piece: 5,
            pieces: 4,
            sizes: vec![size(8, 0, true), size(1, 16, false)],
            levels: vec![crate::crd::LevelFragmentationEntry {
                level: "nvlink".into(),
                gpus_per_pod: 8,
                largest_piece: 8,
                sizes: vec![size(8, 8, true)],
            }],
        }],
        blocked_pods: 1,
        blocked: vec![crate::crd::BlockedPodEntry {
            reason: "FragmentedCapacity".into(),
            namespace: "ml".into(),
            pod: "trainer-0".into(),
            gpus: 8,
            product: "NVIDIA-H100-80GB-HBM3".into(),
            free_gpus: 16,
            largest_piece: 5,
        }],
    });
    assert!(!status.problem_nodes.is_empty() && status.problem_node_count > 0);
    written(plan_status(status, None, t(100)))
}

/// Every leaf of a JSON value, as a path of keys and indexes.
fn leaves(value: &Value, path: Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                leaves(v, [path.clone(), vec![k.clone()]].concat(), out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                leaves(v, [path.clone(), vec![i.to_string()]].concat(), out);
            }
        }
        _ => out.push(path),
    }
}

fn changed(value: &Value) -> Value {
    match value {
        Value::Bool(b) => Value::Bool(!b),
        Value::Number(n) => Value::from(n.as_u64().map_or(1, |n| n + 1)),
        Value::String(s) if s.ends_with('Z') => Value::from("2001-02-03T04:05:06Z"),
        Value::String(s) => Value::from(format!("{s}x")),
        other => panic!("the full status has an empty or null leaf: {other}"),
    }
}

fn is_bookkeeping(path: &[String]) -> bool {
    path == ["observedTime"]
        || (path.first().is_some_and(|p| p == "conditions")
            && path.last().is_some_and(|p| p == "lastTransitionTime"))
}

/// Any change to any field is a write, except the bookkeeping times. The fields are not listed here: they
/// are found by walking the serialized status, so a field added later is covered without touching this.
#[test]
fn every_field_but_bookkeeping_takes_part_in_the_comparison() {
    let on_server = full_status();
    let json = serde_json::to_value(&on_server).unwrap();
    let mut paths = Vec::new();
    leaves(&json, Vec::new(), &mut paths);
    assert!(paths.len() > 30, "{} leaves", paths.len());
    for path in paths {
        let mut edited = json.clone();
        let leaf = path.iter().fold(&mut edited, |v, key| match v {
            Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
            other => &mut other[key.as_str()],
        });
        *leaf = changed(leaf);
        let desired: GpuInventoryStatus = serde_json::from_value(edited).unwrap();
        let plan = plan_status(desired, Some(&on_server), t(200));
        assert_eq!(
            plan.is_none(),
            is_bookkeeping(&path),
            "changing {} must {}be a write",
            path.join("."),
            if is_bookkeeping(&path) { "not " } else { "" }
        );
    }
}

/// The status a user could add a field to is the CRD's: every property of its schema, nested ones too,
/// must be set in [`full_status`], so the test above really walks every field.
#[test]
fn the_full_status_sets_every_property_of_the_crd_schema() {
    let crd = serde_json::to_value(GpuInventory::crd()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
    let json = serde_json::to_value(full_status()).unwrap();
    let mut missing = Vec::new();
    covered(schema, &json, "status", &mut missing);
    assert!(
        missing.is_empty(),
        "full_status() leaves unset: {missing:?}"
    );
}

fn covered(schema: &Value, value: &Value, path: &str, missing: &mut Vec<String>) {
    if let Some(properties) = schema["properties"].as_object() {
        for (name, sub) in properties {
            match value.get(name) {
                None | Some(Value::Null) => missing.push(format!("{path}.{name}")),
                Some(v) => covered(sub, v, &format!("{path}.{name}"), missing),
            }
        }
    } else if let Some(items) = schema.get("items") {
        match value.as_array().and_then(|a| a.first()) {
            Some(first) => covered(items, first, &format!("{path}[0]"), missing),
            None => missing.push(format!("{path}[]")),
        }
    }
}

/// The test the architecture issue asked for, spelled out: a status value gains a field (here a new node
/// resource, the kind of addition the allocation work makes) and the guard sees the difference.
#[test]
fn a_field_added_to_a_status_value_is_seen() {
    let on_server = full_status();
    let mut desired = on_server.clone();
    desired.observed_time = None;
    desired.nodes[0]
        .capacity
        .insert("nvidia.com/mig-1g.10gb".into(), "0".into());
    assert!(plan_status(desired, Some(&on_server), t(300)).is_some());
}
