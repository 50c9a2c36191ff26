//! `idle`'s tables: the state, the idle units per namespace, then each idle holding with its node.

use super::columns::{aligned, columns};
use crate::cmd::utilization_args::UtilizationJson;
use crate::runtime::terminal_text::visible;

/// The state line, then the two tables (or a line saying none is idle); unless `headers`, only the rows of
/// the idle holdings (`--no-headers`).
pub(crate) fn utilization(report: &UtilizationJson, headers: bool) -> String {
    if !headers {
        return aligned(&HOLDINGS, &holdings(report), false);
    }
    let u = &report.utilization;
    let mut text = format!(
        "Utilization: {} (source {}, window {})\n  {}\n",
        u.state,
        visible(&u.source),
        u.window,
        visible(&u.message)
    );
    if u.state != "Current" {
        text.push_str("Idle figures are withheld until Prometheus answers.\n");
        return text;
    }
    if report.nodes.is_empty() {
        text.push_str("No held GPU sat idle through the window.\n");
        return text;
    }
    let namespaces: Vec<Vec<String>> = report
        .namespaces
        .iter()
        .flat_map(|n| {
            n.idle
                .iter()
                .map(|(resource, units)| vec![n.name.clone(), resource.clone(), units.to_string()])
        })
        .collect();
    text.push('\n');
    text.push_str(&columns(&["NAMESPACE", "RESOURCE", "IDLE"], &namespaces));
    text.push('\n');
    text.push_str(&columns(&HOLDINGS, &holdings(report)));
    text
}

/// The header of the idle holdings.
const HOLDINGS: [&str; 5] = ["NODE", "HOLDER", "RESOURCE", "IDLE", "IDLE SINCE"];

/// One row per idle holding: its node, pod or claim, resource, units and since when.
fn holdings(report: &UtilizationJson) -> Vec<Vec<String>> {
    report
        .nodes
        .iter()
        .flat_map(|n| {
            n.idle.iter().map(|i| {
                let holder = match (&i.pod, &i.claim) {
                    (Some(pod), _) => format!("pod {pod}"),
                    (None, Some(claim)) => format!("claim {claim}"),
                    (None, None) => "-".to_owned(),
                };
                vec![
                    n.name.clone(),
                    holder,
                    i.resource.clone(),
                    i.amount.to_string(),
                    i.idle_since.clone(),
                ]
            })
        })
        .collect()
}
