//! Each signal on its own, from the shapes the monitors and operators document.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeCondition;

use super::*;
use crate::inventory::model::IssueReason;
use crate::inventory::text_map::TextMap;

pub(super) fn condition(type_: &str, status: &str, message: &str) -> NodeCondition {
    serde_json::from_value(serde_json::json!({
        "type": type_, "status": status, "reason": "Checked", "message": message,
        "lastTransitionTime": "2026-11-30T10:00:00Z", "lastHeartbeatTime": "2026-12-01T00:00:00Z"
    }))
    .unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub(super) fn reading(
    pairs: &[(&str, &str)],
    conditions: &[NodeCondition],
    taints: &[(&str, &str, &str)],
    cordoned: bool,
) -> HealthReading {
    let map: TextMap = labels(pairs).iter().collect();
    let mut reader = LabelReader::new(Some(&map));
    // As the node cache holds them.
    let table = HealthTable::defaults();
    let conditions: Vec<Condition> = conditions
        .iter()
        .map(|c| crate::sources::convert::k8s_node::read_condition(c, table))
        .collect();
    let taints: Vec<(String, String, String)> = taints
        .iter()
        .map(|(k, v, e)| ((*k).to_owned(), (*v).to_owned(), (*e).to_owned()))
        .collect();
    read(
        &mut reader,
        &conditions,
        &taints,
        cordoned,
        HealthTable::defaults(),
    )
}

pub(super) fn reasons(reading: &HealthReading) -> Vec<IssueReason> {
    reading.issues.iter().map(|i| i.reason).collect()
}

#[test]
fn every_documented_condition_type_is_named_with_its_reporter() {
    let table = HealthTable::defaults();
    for (type_, reporter) in [
        ("GpuMemWatch", "NVSentinel"),
        ("GpuThermalWatch", "NVSentinel"),
        ("GpuPcieWatch", "NVSentinel"),
        ("GpuNvlinkWatch", "NVSentinel"),
        ("SysLogsXIDError", "NVSentinel"),
        ("SysLogsSXIDError", "NVSentinel"),
        ("SysLogsGPUFallenOff", "NVSentinel"),
        ("NVSwitchFatalError", "NVSentinel"),
        ("NVSwitchDown", "NVSentinel"),
        ("GPUMissing", "AKS"),
        ("XIDErrors", "AKS"),
        ("GPUXIDErrors", "AKS"),
        ("NVLinkStatusInactive", "AKS"),
        ("IBLinkFlapping", "AKS"),
        ("XidCriticalError", "GKE"),
        ("GcmXidErrorsProblem", "Meta GCM"),
        ("GcmSmiEccProblem", "Meta GCM"),
        ("NebiusGPUError", "Nebius"),
        ("AMDGPUUnhealthy", "AMD"),
    ] {
        assert!(table.names(type_), "{type_}");
        let r = reading(&[], &[condition(type_, "True", "bad")], &[], false);
        assert_eq!(reasons(&r), [IssueReason::GpuHealthCheckFailed], "{type_}");
        assert!(
            r.issues[0].message.contains(reporter),
            "{type_}: {}",
            r.issues[0].message
        );
        assert!(r.issues[0].message.contains(type_));
        assert_eq!(r.issues[0].since.as_deref(), Some("2026-11-30T10:00:00Z"));
    }
}

#[test]
fn kubelet_and_unknown_conditions_are_never_guessed_at() {
    let table = HealthTable::defaults();
    for type_ in [
        "Ready",
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "NetworkUnavailable",
        "KernelDeadlock",
        "Gpu",
        "GpuWatchdog",
        "XidCritical",
    ] {
        assert!(!table.names(type_), "{type_}");
        let r = reading(&[], &[condition(type_, "True", "bad")], &[], false);
        assert!(r.issues.is_empty(), "{type_}: {:?}", r.issues);
        assert!(!r.known, "{type_}");
    }
}

#[test]
fn a_condition_clears_when_false_or_unknown_but_still_marks_a_gpu_node() {
    for status in ["False", "Unknown"] {
        let r = reading(&[], &[condition("GpuMemWatch", status, "ok")], &[], false);
        assert!(r.issues.is_empty(), "{status}");
        assert_eq!(r.vendor, Some(Vendor::Nvidia));
        assert!(r.known);
    }
    let amd = reading(
        &[],
        &[condition("AMDGPUUnhealthy", "False", "")],
        &[],
        false,
    );
    assert_eq!(amd.vendor, Some(Vendor::Amd));
}

#[test]
fn hostile_condition_text_is_cut_and_kept_as_data() {
    let long = format!("\u{1b}[31m{}", "x".repeat(5000));
    let r = reading(&[], &[condition("XIDErrors", "True", &long)], &[], false);
    assert!(
        r.issues[0].message.len() < 1000,
        "{}",
        r.issues[0].message.len()
    );
}

#[test]
fn user_patterns_extend_the_table_and_bad_ones_are_refused() {
    let table =
        HealthTable::with_conditions(&["AcmeGpuBroken".into(), "Acme*Problem".into()]).unwrap();
    assert!(table.names("AcmeGpuBroken"));
    assert!(table.names("AcmeFanProblem"));
    assert!(!table.names("AcmeFan"));
    assert!(table.names("XIDErrors"), "defaults stay");
    for bad in ["*", "a b", "x**y", "bad;type"] {
        let error = HealthTable::with_conditions(&[bad.into()]).unwrap_err();
        assert!(error.contains("condition type"), "{bad}: {error}");
    }
    assert_eq!(
        &HealthTable::with_conditions(&[]).unwrap(),
        HealthTable::defaults()
    );
}

#[test]
fn remediation_taints_and_cordon_labels_name_who_and_why() {
    let r = reading(
        &[
            ("k8saas.nvidia.com/cordon-by", "nvsentinel"),
            ("k8saas.nvidia.com/cordon-reason", "GpuXidError-79"),
        ],
        &[],
        &[("nvidia.com/gpu-xid-error", "79", "NoSchedule")],
        true,
    );
    assert_eq!(reasons(&r), [IssueReason::GpuNodeQuarantined]);
    let message = &r.issues[0].message;
    assert!(
        message.contains("nvidia.com/gpu-xid-error=79:NoSchedule"),
        "{message}"
    );
    assert!(
        message.contains("cordoned by NVIDIA NVSentinel"),
        "{message}"
    );
    assert!(message.contains("GpuXidError-79"), "{message}");
    assert!(r.cordon_explained);

    let amd = reading(&[], &[], &[("amd-gpu-unhealthy", "", "NoSchedule")], false);
    assert_eq!(reasons(&amd), [IssueReason::GpuNodeQuarantined]);
    assert!(!amd.cordon_explained, "not cordoned");

    // Cordon labels left on an uncordoned node explain nothing; an administrator's cordon has none.
    let stale = reading(
        &[("k8saas.nvidia.com/cordon-by", "nvsentinel")],
        &[],
        &[],
        false,
    );
    assert!(stale.issues.is_empty());
    let admin = reading(
        &[],
        &[],
        &[("node.kubernetes.io/unschedulable", "", "NoSchedule")],
        true,
    );
    assert!(admin.issues.is_empty() && !admin.cordon_explained);
}

#[test]
fn a_monitor_counting_fewer_gpus_than_expected_is_gpus_missing() {
    let r = reading(
        &[
            ("nvsentinel.dgxc.nvidia.com/gpu.count.current", "7"),
            ("nvsentinel.dgxc.nvidia.com/gpu.count.expected", "8"),
        ],
        &[],
        &[],
        false,
    );
    assert_eq!(reasons(&r), [IssueReason::GpusMissing]);
    assert!(
        r.issues[0].message.contains("7 of the 8"),
        "{}",
        r.issues[0].message
    );
    let fine = reading(
        &[
            ("nvsentinel.dgxc.nvidia.com/gpu.count.current", "8"),
            ("nvsentinel.dgxc.nvidia.com/gpu.count.expected", "8"),
        ],
        &[],
        &[],
        false,
    );
    assert!(fine.issues.is_empty());
}

#[test]
fn gke_maintenance_is_information() {
    let r = reading(
        &[("cloud.google.com/scheduled-maintenance-time", "1767225600")],
        &[],
        &[],
        false,
    );
    assert_eq!(reasons(&r), [IssueReason::MaintenanceScheduled]);
    assert!(
        r.issues[0].message.contains("2026-01-01T00:00:00Z"),
        "{}",
        r.issues[0].message
    );
    assert_eq!(
        r.issues[0].severity(),
        crate::inventory::model::Severity::Info
    );
}

#[test]
fn driver_upgrade_states_walk_from_information_to_done_or_failed() {
    let key = "nvidia.com/gpu-driver-upgrade-state";
    for state in [
        "upgrade-required",
        "cordon-required",
        "drain-required",
        "validation-required",
        "uncordon-required",
    ] {
        let r = reading(&[(key, state)], &[], &[], true);
        assert_eq!(
            reasons(&r),
            [IssueReason::DriverUpgradeInProgress],
            "{state}"
        );
        assert!(
            r.cordon_explained,
            "{state}: the upgrade's cordon is its own"
        );
        assert_eq!(r.vendor, Some(Vendor::Nvidia));
    }
    let done = reading(&[(key, "upgrade-done")], &[], &[], false);
    assert!(done.issues.is_empty());
    assert!(done.known, "the label still marks a GPU node");
    let failed = reading(&[(key, "upgrade-failed")], &[], &[], false);
    assert_eq!(reasons(&failed), [IssueReason::DriverUpgradeFailed]);

    let amd = "operator.amd.com/gpu-driver-upgrade-state";
    assert_eq!(
        reasons(&reading(&[(amd, "Upgrade-In-Progress")], &[], &[], false)),
        [IssueReason::DriverUpgradeInProgress]
    );
    assert_eq!(
        reasons(&reading(&[(amd, "Drain-Failed")], &[], &[], false)),
        [IssueReason::DriverUpgradeFailed]
    );
    assert!(
        reading(&[(amd, "Upgrade-Complete")], &[], &[], false)
            .issues
            .is_empty()
    );
    // A state no table lists is not judged.
    assert!(
        reading(&[(key, "upgrade-sideways")], &[], &[], false)
            .issues
            .is_empty()
    );
}

#[test]
fn paused_operands_are_shown() {
    let paused = [
        (
            "nvidia.com/gpu.deploy.device-plugin",
            "paused-for-driver-upgrade",
        ),
        (
            "nvidia.com/gpu.deploy.dcgm-exporter",
            "paused-for-driver-upgrade",
        ),
    ];
    let alone = reading(&paused, &[], &[], false);
    assert_eq!(reasons(&alone), [IssueReason::OperandsPaused]);
    assert!(alone.issues[0].message.contains("device-plugin"));
    let mut upgrading = paused.to_vec();
    upgrading.push((
        "nvidia.com/gpu-driver-upgrade-state",
        "pod-restart-required",
    ));
    let r = reading(&upgrading, &[], &[], false);
    assert_eq!(reasons(&r), [IssueReason::DriverUpgradeInProgress]);
    assert!(
        r.issues[0]
            .message
            .contains("operands paused: dcgm-exporter, device-plugin")
    );
    // `false` deploy labels (operands switched off) mark nothing.
    let off = reading(
        &[("nvidia.com/gpu.deploy.operands", "false")],
        &[],
        &[],
        false,
    );
    assert!(!off.known && off.vendor.is_none());
}
