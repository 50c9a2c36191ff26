//! `fit --plan`: when a job of one pod does not fit now, the running pods to move so that it fits on one
//! node (`inventory::fragmentation::plan`), printed after `fit`'s answer and as `plan` in `-o json|yaml`.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;

use super::output::stdout::say;
use crate::inventory::Inventory;
use crate::inventory::fragmentation::plan::{Immovable, NoPlan, Plan, PodTraits, needed, plan};
use crate::inventory::model::{Holder, NodeInventory};
use crate::inventory::topology::FitAnswer;
use crate::inventory::topology::label_table::HOSTNAME;
use crate::inventory::totals::same_product_key;
use crate::runtime::terminal_text::visible;
use crate::sources::pod_traits::{PodKey, ReadFrom};

/// The plan as JSON prints it: `plan.node`, `plan.displacedGpus`, `plan.moves[]` (namespace, pod, from, to,
/// gpus, gang, owner, priority); or `plan.why` when there is none.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlanJson {
    // Read by `map --plan`, which draws the moves over the fleet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<String>,
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
    fn why(why: String) -> Planned {
        Planned {
            json: PlanJson {
                why: Some(why),
                ..Default::default()
            },
            refused: false,
        }
    }
}

/// The plan for `answer` over `inventory`, or why there is none (`None`: it fits, no plan is needed). The
/// pods' traits are read from `from` only when moving pods could help; with `-n` (`namespace`) only that
/// namespace's pods may move.
pub(crate) async fn plan_for(
    inventory: &Inventory,
    answer: &FitAnswer,
    from: &ReadFrom,
    namespace: Option<&str>,
) -> Option<Planned> {
    if answer.fits {
        return None;
    }
    if answer.level.as_deref().is_some_and(|l| l != HOSTNAME) || answer.gpus_per_pod < answer.gpus {
        return Some(Planned::why(format!(
            "a plan is made for a job of one pod on one node; this job is {} pods of {} GPUs (a plan for a \
             gang across nodes is not made yet)",
            answer.gpus.div_ceil(answer.gpus_per_pod.max(1)),
            answer.gpus_per_pod
        )));
    }
    let nodes = product_nodes(inventory, answer);
    if let Err(no) = needed(&nodes, answer.gpus) {
        return Some(Planned::why(no_plan(&no, answer.gpus)));
    }
    let read = match from.traits(namespace, &holders(&nodes)).await {
        Ok(read) => read,
        Err(why) => {
            return Some(Planned {
                refused: true,
                ..Planned::why(why)
            });
        }
    };
    for note in &read.notes {
        say(&format!("warning: {}", visible(note)));
    }
    let traits = |ns: &str, pod: &str| match namespace.filter(|n| *n != ns) {
        Some(listed) => PodTraits {
            immovable: Some(Immovable::OutsideNamespace(listed.to_owned())),
            ..Default::default()
        },
        None => {
            let key = (ns.to_owned(), pod.to_owned());
            read.traits.get(&key).cloned().unwrap_or_default()
        }
    };
    Some(match plan(&nodes, answer.gpus, traits) {
        Ok(plan) => Planned {
            json: json(plan),
            refused: false,
        },
        Err(no) => Planned::why(no_plan(&no, answer.gpus)),
    })
}

/// The nodes of the answer's product (every node when it names none).
fn product_nodes(inventory: &Inventory, answer: &FitAnswer) -> Vec<Arc<NodeInventory>> {
    let key = answer.product.as_deref().map(same_product_key);
    inventory
        .nodes
        .iter()
        .filter(|n| {
            key.is_none() || n.product.as_deref().map(same_product_key).as_deref() == key.as_deref()
        })
        .cloned()
        .collect()
}

/// The pods holding GPUs on `nodes`: those whose traits the plan weighs.
fn holders(nodes: &[Arc<NodeInventory>]) -> HashSet<PodKey> {
    let holdings = nodes.iter().flat_map(|n| &n.holdings);
    holdings
        .filter_map(|h| match &h.holder {
            Holder::Pod { namespace, name } => Some((namespace.clone(), name.clone())),
            Holder::Claim(_) => None,
        })
        .collect()
}

/// Why there is no plan, in words.
fn no_plan(no: &NoPlan, gpus: u64) -> String {
    match no {
        NoPlan::FitsNow => format!(
            "a node has {gpus} GPUs free now, yet the job does not fit there (a taint it does not tolerate, or \
             its GPUs per pod): no pod needs to move"
        ),
        NoPlan::NoNode => format!(
            "no Ready, schedulable node has {gpus} GPUs at all: moving pods cannot make room"
        ),
        NoPlan::Stopped(stops) => stops.to_string(),
    }
}

fn json(plan: Plan) -> PlanJson {
    PlanJson {
        node: Some(plan.node),
        displaced_gpus: Some(plan.displaced_gpus),
        moves: plan
            .moves
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
            .collect(),
        why: None,
    }
}

/// The plan under the table's answer.
pub(crate) fn table(plan: &PlanJson) -> String {
    let Some(node) = &plan.node else {
        return format!(
            "PLAN    none: {}\n",
            visible(plan.why.as_deref().unwrap_or("-"))
        );
    };
    let mut out = format!(
        "PLAN    move {} pod(s) ({} GPUs) so that it fits on {}; delete each, its controller recreates it and \
         the scheduler places it where shown\n\n",
        plan.moves.len(),
        plan.displaced_gpus.unwrap_or(0),
        visible(node)
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
