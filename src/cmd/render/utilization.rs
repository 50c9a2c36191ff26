//! `idle`'s tables: the state, the idle units per namespace, then each idle holding with its node.

use super::columns::columns;
use crate::cmd::utilization_args::UtilizationJson;
use crate::runtime::terminal_text::visible;

/// The state line, then the two tables (or a line saying none is idle).
pub(crate) fn utilization(report: &UtilizationJson) -> String {
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
    let holdings: Vec<Vec<String>> = report
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
        .collect();
    text.push('\n');
    text.push_str(&columns(
        &["NODE", "HOLDER", "RESOURCE", "IDLE", "IDLE SINCE"],
        &holdings,
    ));
    text
}
