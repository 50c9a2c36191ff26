//! The GPU operators' deploy labels and health controllers' quarantines that outlive their reason (#38 rule 9).

use k8s_openapi::api::core::v1::NodeCondition;

use super::tests::{condition, reading, reasons};
use crate::inventory::model::{IssueReason, Severity};

#[test]
fn operands_the_gpu_operator_will_not_run_are_an_issue_when_they_serve_the_gpus_or_were_cleared() {
    // NVIDIA/gpu-operator#491: the labels emptied, the device plugin never scheduled.
    let cleared = reading(
        &[
            ("nvidia.com/gpu.deploy.device-plugin", ""),
            ("nvidia.com/gpu.deploy.dcgm", ""),
            ("nvidia.com/gpu.deploy.driver", "true"),
        ],
        &[],
        &[],
        false,
    );
    assert_eq!(reasons(&cleared), [IssueReason::OperandsDisabled]);
    let message = &cleared.issues[0].message;
    assert!(
        message.contains(r#"dcgm="", device-plugin="""#) && message.contains("labels were cleared"),
        "{message}"
    );
    assert!(
        cleared.known,
        "the driver label shows the operator manages the node"
    );
    // NVIDIA/gpu-operator#661: every operand switched off.
    let off = reading(
        &[("nvidia.com/gpu.deploy.operands", "false")],
        &[],
        &[],
        false,
    );
    assert_eq!(reasons(&off), [IssueReason::OperandsDisabled]);
    assert!(off.issues[0].message.contains("without the device plugin"));
    assert_eq!(IssueReason::OperandsDisabled.severity(), Severity::Degraded);
    // Drivers installed on the host, no exporter, NVIDIA's own test host's `nvsm=""`: the GPUs stay usable.
    for (choice, value) in [
        ("driver", "false"),
        ("dcgm-exporter", "false"),
        ("nvsm", ""),
    ] {
        let key = format!("nvidia.com/gpu.deploy.{choice}");
        let r = reading(
            &[
                (key.as_str(), value),
                ("nvidia.com/gpu.deploy.device-plugin", "true"),
            ],
            &[],
            &[],
            false,
        );
        assert!(r.issues.is_empty(), "{choice}=false: {:?}", r.issues);
    }
}

fn with_reason(type_: &str, status: &str, reason: &str) -> NodeCondition {
    NodeCondition {
        reason: Some(reason.to_owned()),
        ..condition(type_, status, "No Health Failures")
    }
}

#[test]
fn a_cordon_nvsentinel_holds_after_its_conditions_are_healthy_again_is_a_stale_quarantine() {
    // NVIDIA/NVSentinel#458: still cordoned, its labels on, both syslog checks healthy again.
    let labels = [
        ("k8saas.nvidia.com/cordon-by", "NVSentinel"),
        (
            "k8saas.nvidia.com/cordon-reason",
            "Syslog-fatal-error-ruleset",
        ),
    ];
    let healthy = [
        with_reason("SysLogsXIDError", "False", "SysLogsXIDErrorIsHealthy"),
        with_reason("SysLogsSXIDError", "False", "SysLogsSXIDErrorIsHealthy"),
    ];
    let stale = reading(&labels, &healthy, &[], true);
    assert_eq!(reasons(&stale), [IssueReason::StaleQuarantine]);
    let message = &stale.issues[0].message;
    assert!(
        message.contains("SysLogsSXIDError, SysLogsXIDError False")
            || message.contains("SysLogsXIDError, SysLogsSXIDError False"),
        "{message}"
    );
    assert!(
        stale.cordon_explained,
        "the cordon is NVSentinel's: no plain Unschedulable"
    );
    // One check still failing: the quarantine holds for a reason.
    let failing = [
        with_reason("SysLogsXIDError", "True", "SysLogsXIDErrorIsNotHealthy"),
        with_reason("SysLogsSXIDError", "False", "SysLogsSXIDErrorIsHealthy"),
    ];
    let r = reading(&labels, &failing, &[], true);
    assert!(
        reasons(&r).contains(&IssueReason::GpuNodeQuarantined),
        "{:?}",
        reasons(&r)
    );
    assert!(!reasons(&r).contains(&IssueReason::StaleQuarantine));
    // No NVSentinel condition on the node: nothing to judge staleness by.
    let r = reading(&labels, &[], &[], true);
    assert_eq!(reasons(&r), [IssueReason::GpuNodeQuarantined]);
    // Uncordoned by hand with the labels left (NVIDIA/NVSentinel#1872): no quarantine at all.
    assert!(reading(&labels, &healthy, &[], false).issues.is_empty());
}
