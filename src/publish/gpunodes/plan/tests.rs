//! GpuNode plans without an API server: what the server holds and what the inventory says in, writes out.

use std::collections::{BTreeMap, HashSet};

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

use super::*;
use crate::crd::GpuNodeSpec;
use crate::inventory::model::{Issue, IssueReason};
use crate::inventory::test_support::entry;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn h100(name: &str, ready: bool) -> NodeInventory {
    let reasons: &[IssueReason] = if ready { &[] } else { &[IssueReason::NotReady] };
    NodeInventory {
        product: Some("NVIDIA H100 80GB HBM3".into()),
        ..entry(name, ready, 8, reasons)
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The object the server would hold after `write`, as the watch brings it back (with a foreign label).
fn as_served(write: &GpuNodeWrite, name: &str) -> GpuNode {
    let mut labels = write.content.labels.clone();
    labels.insert("team".into(), "infra".into());
    GpuNode {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels),
            owner_references: write.content.owner_uid.as_ref().map(|uid| {
                vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: name.into(),
                    uid: uid.clone(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        spec: GpuNodeSpec {
            node_name: name.into(),
        },
        status: Some(write.content.status.clone()),
    }
}

#[test]
fn a_new_gpu_node_gets_its_object_and_status_with_labels_for_kubectl_get_l() {
    let desired = desired(&h100("a", true), &[], Some("uid-a"), None, &[]);
    let write = plan(desired, None, t(10)).expect("a new GpuNode is written");
    assert!(write.object && write.status);
    assert_eq!(write.content.status.observed_time, Some(Time(t(10))));
    assert_eq!(
        write.content.labels,
        labels(&[
            (LABEL_HAS_ISSUES, "false"),
            (LABEL_PRODUCT, "NVIDIA-H100-80GB-HBM3"),
            (LABEL_READY, "true"),
            (LABEL_VENDOR, "nvidia"),
        ])
    );
    assert_eq!(write.content.owner_uid.as_deref(), Some("uid-a"));
    let status = &write.content.status;
    assert_eq!(
        (status.node.count, status.issue_reasons.as_deref()),
        (8, None)
    );
    assert_eq!(status.vendor.as_deref(), Some("nvidia"));
}

#[test]
fn an_unchanged_node_writes_nothing_whatever_the_time() {
    let first = plan(
        desired(&h100("a", true), &[], Some("u"), None, &[]),
        None,
        t(10),
    )
    .unwrap();
    let served = current(&as_served(&first, "a"), &[]);
    let again = desired(&h100("a", true), &[], Some("u"), None, &[]);
    assert_eq!(
        plan(again, Some(&served), t(99)),
        None,
        "foreign labels are not ours to compare"
    );
}

#[test]
fn a_changed_node_writes_its_status_and_the_labels_that_moved() {
    let first = plan(
        desired(&h100("a", true), &[], Some("u"), None, &[]),
        None,
        t(10),
    )
    .unwrap();
    let served = current(&as_served(&first, "a"), &[]);
    let broken = plan(
        desired(&h100("a", false), &[], Some("u"), None, &[]),
        Some(&served),
        t(20),
    )
    .expect("NotReady is a change");
    assert!(broken.object, "ready and has-issues labels moved");
    assert!(broken.status);
    assert_eq!(broken.content.status.observed_time, Some(Time(t(20))));
    assert_eq!(
        broken.content.status.issue_reasons.as_deref(),
        Some("NotReady")
    );
    assert_eq!(broken.content.labels[LABEL_READY], "false");

    // A change no label shows (free GPUs) writes the status alone.
    let served = current(&as_served(&broken, "a"), &[]);
    let mut held = h100("a", false);
    held.issues.push(Issue::new(
        IssueReason::Overcommitted,
        "more held than offered",
    ));
    let write = plan(
        desired(&held, &[], Some("u"), None, &[]),
        Some(&served),
        t(30),
    )
    .unwrap();
    assert_eq!((write.object, write.status), (false, true));
    assert_eq!(
        write.content.status.issue_reasons.as_deref(),
        Some("NotReady,Overcommitted")
    );
}

#[test]
fn a_hand_edited_gpu_node_is_restored() {
    let first = plan(
        desired(&h100("a", true), &[], Some("u"), None, &[]),
        None,
        t(10),
    )
    .unwrap();
    let mut edited = as_served(&first, "a");
    edited.status.as_mut().unwrap().node.count = 1;
    edited
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(LABEL_READY.into(), "false".into());
    let served = current(&edited, &[]);
    let write = plan(
        desired(&h100("a", true), &[], Some("u"), None, &[]),
        Some(&served),
        t(20),
    )
    .expect("a foreign edit of our fields is undone");
    assert!(write.object && write.status);
    assert_eq!(write.content.status.node.count, 8);

    // Our label removed by hand, or an owner reference dropped, is put back too.
    let mut stripped = as_served(&first, "a");
    stripped.metadata.owner_references = None;
    let served = current(&stripped, &[]);
    let write = plan(
        desired(&h100("a", true), &[], Some("u"), None, &[]),
        Some(&served),
        t(20),
    )
    .unwrap();
    assert_eq!((write.object, write.status), (true, false));
}

#[test]
fn scope_labels_are_copied_from_the_node_so_the_same_selector_finds_the_gpu_node() {
    let node_labels = labels(&[("pool", "a100"), ("zone", "z1")]);
    let scope = vec!["pool".to_owned(), "absent".to_owned()];
    let node_labels: crate::inventory::text_map::TextMap = node_labels.iter().collect();
    let content = desired(&h100("a", true), &[], None, Some(&node_labels), &scope);
    assert_eq!(content.labels.get("pool").map(String::as_str), Some("a100"));
    assert!(
        !content.labels.contains_key("zone"),
        "only the selector's keys"
    );
    assert!(
        !content.labels.contains_key("absent"),
        "a key the node lacks stays absent"
    );
    assert_eq!(content.owner_uid, None, "no UID known: no owner reference");
}

#[test]
fn gpu_nodes_of_nodes_gone_or_no_longer_gpu_nodes_are_deleted() {
    let wanted: HashSet<&str> = ["a", "c"].into_iter().collect();
    assert_eq!(stale(["c", "b", "a", "d"], &wanted), ["b", "d"]);
    assert!(stale(["a"], &wanted).is_empty());
}

#[test]
fn what_the_watch_brings_back_digests_like_what_was_written() {
    let first = plan(
        desired(&h100("a", true), &[], Some("u"), None, &[]),
        None,
        t(10),
    )
    .unwrap();
    // The cache's digest of the served object (with a foreign label) is the writer's digest of its write:
    // a pass after the watch catches up plans nothing.
    assert_eq!(
        current(&as_served(&first, "a"), &[]),
        GpuNodeDigest::of(&first.content)
    );
    // A new owner writes the object alone, and the unchanged status keeps the server's time.
    let served = current(&as_served(&first, "a"), &[]);
    let mut relabelled = desired(&h100("a", true), &[], Some("other-uid"), None, &[]);
    relabelled.status.observed_time = None;
    let write = plan(relabelled, Some(&served), t(50)).unwrap();
    assert_eq!((write.object, write.status), (true, false));
    assert_eq!(write.content.status.observed_time, Some(Time(t(10))));
}
