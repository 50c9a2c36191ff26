//! `fit --plan`'s answer as it prints: `plan` in `-o json|yaml` and the lines under the table, for a plan of
//! one pod (`fit_plan.rs`) and of a gang (`fit_plan_gang.rs`) alike.

use serde::Serialize;

use crate::inventory::fragmentation::plan::Move;
use crate::runtime::terminal_text::visible;

/// At most this many of a gang's nodes are named in the table's line (all in `-o json`).
const NODES_NAMED: usize = 8;

/// The plan as JSON prints it: `plan.node` (a gang's: its domain, with `plan.domain` and its `plan.nodes`),
/// `plan.displacedGpus`, `plan.moves[]` (namespace, pod, from, to,
/// gpus, gang, owner, priority); or `plan.why` when there is none.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlanJson {
    // Read by `map --plan`, which draws the moves over the fleet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<String>,
    /// A gang's domain (the level's value), when the gang asked for a level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) domain: Option<String>,
    /// A gang's nodes: where its pods start once the pods have moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) nodes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) displaced_gpus: Option<u64>,
    pub(crate) moves: Vec<MoveJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
}

impl PlanJson {
    /// Why there is no plan, if there is none.
    pub(crate) fn why(&self) -> Option<&str> {
        self.why.as_deref()
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MoveJson {
    pub(crate) namespace: String,
    pub(crate) pod: String,
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) gpus: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gang: Option<String>,
    /// `kind/name` of its controller; null when none (nothing recreates it once deleted).
    pub(crate) owner: Option<String>,
    pub(crate) priority: i32,
}

/// A plan, or why there is none; `refused` when the pods' traits could not be read whole, so that no plan
/// is made (fail closed) and `fit` exits with its error code.
#[derive(Debug)]
pub(crate) struct Planned {
    pub(crate) json: PlanJson,
    pub(crate) refused: bool,
}

impl Planned {
    pub(super) fn why(why: String) -> Planned {
        Planned {
            json: PlanJson {
                why: Some(why),
                ..Default::default()
            },
            refused: false,
        }
    }
}

/// The moves as JSON prints them.
pub(super) fn moves_json(moves: Vec<Move>) -> Vec<MoveJson> {
    moves
        .into_iter()
        .map(|m| MoveJson {
            namespace: m.namespace,
            pod: m.pod,
            from: m.from,
            to: m.to,
            gpus: m.gpus,
            gang: m.gang,
            owner: m.owner,
            priority: m.priority,
        })
        .collect()
}

/// The plan under the table's answer.
pub(crate) fn table(plan: &PlanJson) -> String {
    let target = match (&plan.why, &plan.node) {
        (None, _) if !plan.nodes.is_empty() => target(plan),
        (None, Some(node)) => format!("it fits on {}", visible(node)),
        _ => {
            return format!(
                "PLAN    none: {}\n",
                visible(plan.why.as_deref().unwrap_or("-"))
            );
        }
    };
    let mut out = format!(
        "PLAN    move {} pod(s) ({} GPUs) so that {target}; delete each, its controller recreates it and the \
         scheduler places it where shown\n\n",
        plan.moves.len(),
        plan.displaced_gpus.unwrap_or(0),
    );
    let rows: Vec<Vec<String>> = plan
        .moves
        .iter()
        .map(|m| {
            vec![
                m.namespace.clone(),
                m.pod.clone(),
                m.owner.clone().unwrap_or_else(|| "-".to_owned()),
                m.priority.to_string(),
                m.from.clone(),
                m.to.clone(),
                m.gpus.to_string(),
            ]
        })
        .collect();
    out.push_str(&super::render::aligned(
        &[
            "NAMESPACE",
            "POD",
            "OWNER",
            "PRIORITY",
            "FROM",
            "TO",
            "GPUS",
        ],
        &rows,
        true,
    ));
    if plan.moves.iter().any(|m| m.owner.is_none()) {
        out.push_str(
            "\nA pod whose OWNER is - has no controller: once deleted, nothing recreates it; create it again \
             yourself.\n",
        );
    }
    out
}

/// Where a gang's plan makes room, for the table's line: its domain and nodes.
fn target(plan: &PlanJson) -> String {
    let mut named: Vec<&str> = plan
        .nodes
        .iter()
        .take(NODES_NAMED)
        .map(String::as_str)
        .collect();
    if plan.nodes.len() > NODES_NAMED {
        named.push("...");
    }
    let domain = match &plan.domain {
        Some(domain) => format!(" in domain {}", visible(domain)),
        None => String::new(),
    };
    format!(
        "the gang fits{domain} on {} node(s) ({})",
        plan.nodes.len(),
        visible(&named.join(", "))
    )
}
