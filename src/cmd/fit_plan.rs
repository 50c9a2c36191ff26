//! `fit --plan`: when a job of one pod does not fit now, the running pods to move so that it fits on one
//! node (`inventory::fragmentation::plan`), printed after `fit`'s answer and as `plan` in `-o json|yaml`.

use serde::Serialize;

use crate::inventory::Inventory;
use crate::inventory::fragmentation::plan::{Plan, PodTraits, plan};
use crate::inventory::model::NodeInventory;
use crate::inventory::topology::FitAnswer;
use crate::inventory::topology::label_table::HOSTNAME;
use crate::inventory::totals::same_product_key;
use crate::runtime::terminal_text::visible;

/// The plan as JSON prints it: `plan.node`, `plan.displacedGpus`, `plan.moves[]` (namespace, pod, from, to,
/// gpus, gang); or `plan.why` when there is none.
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
}

/// The plan for `answer` over `inventory`, or why there is none (`None`: it fits, no plan is needed).
pub(crate) fn plan_for(inventory: &Inventory, answer: &FitAnswer) -> Option<PlanJson> {
    if answer.fits {
        return None;
    }
    let why = |why: String| {
        Some(PlanJson {
            why: Some(why),
            ..Default::default()
        })
    };
    if answer.level.as_deref().is_some_and(|l| l != HOSTNAME) || answer.gpus_per_pod < answer.gpus {
        return why(format!(
            "a plan is made for a job of one pod on one node; this job is {} pods of {} GPUs (a plan for a \
             gang across nodes is not made yet)",
            answer.gpus.div_ceil(answer.gpus_per_pod.max(1)),
            answer.gpus_per_pod
        ));
    }
    let key = answer.product.as_deref().map(same_product_key);
    let nodes: Vec<std::sync::Arc<NodeInventory>> = inventory
        .nodes
        .iter()
        .filter(|n| {
            key.is_none() || n.product.as_deref().map(same_product_key).as_deref() == key.as_deref()
        })
        .cloned()
        .collect();
    // Pods' priorities, owners and disruption budgets are not read yet: each is a movable pod of priority 0.
    match plan(&nodes, answer.gpus, |_, _| PodTraits::default()) {
        Some(plan) => Some(json(plan)),
        None => why(format!(
            "no set of running pods, moved to where they fit, frees {} GPUs on one node",
            answer.gpus
        )),
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
                m.from.clone(),
                m.to.clone(),
                m.gpus.to_string(),
            ]
        })
        .collect();
    out.push_str(&super::render::aligned(
        &["NAMESPACE", "POD", "FROM", "TO", "GPUS"],
        &rows,
        true,
    ));
    out
}
