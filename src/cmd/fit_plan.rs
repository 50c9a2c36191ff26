//! `fit --plan`: when a job of one pod does not fit now, the running pods to move so that it fits on one
//! node (`inventory::fragmentation::plan`); a gang's plan is `fit_plan_gang.rs`'s. Printed after `fit`'s
//! answer and as `plan` in `-o json|yaml` (`fit_plan_json.rs`).

use super::fit_plan_json::moves_json;
pub(crate) use super::fit_plan_json::{MoveJson, PlanJson, Planned, table};
use super::fit_plan_traits::{product_nodes, traits_of};
use crate::inventory::Inventory;
use crate::inventory::fragmentation::plan::{NoPlan, Plan, needed, plan};
use crate::inventory::topology::FitAnswer;
use crate::inventory::topology::gang::Toleration;
use crate::inventory::topology::label_table::HOSTNAME;
use crate::sources::pod_traits::ReadFrom;

/// The plan for `answer` over `inventory`, or why there is none (`None`: it fits, no plan is needed). The
/// pods' traits are read from `from` only when moving pods could help; with `-n` (`namespace`) only that
/// namespace's pods may move. A job of several pods, or one bound to a level wider than a node, gets a gang
/// plan (`fit_plan_gang.rs`) for pods tolerating `tolerations`.
pub(crate) async fn plan_for(
    inventory: &Inventory,
    answer: &FitAnswer,
    from: &ReadFrom,
    namespace: Option<&str>,
    tolerations: &[Toleration],
) -> Option<Planned> {
    if answer.fits {
        return None;
    }
    let nodes = product_nodes(inventory, answer);
    if answer.level.as_deref().is_some_and(|l| l != HOSTNAME) || answer.gpus_per_pod < answer.gpus {
        let gang = super::fit_plan_gang::Gang::of(answer, tolerations);
        return Some(gang.plan(&nodes, from, namespace).await);
    }
    if let Err(no) = needed(&nodes, answer.gpus) {
        return Some(Planned::why(no_plan(&no, answer.gpus)));
    }
    let traits = match traits_of(&nodes, from, namespace).await {
        Ok(traits) => traits,
        Err(refused) => return Some(refused),
    };
    Some(match plan(&nodes, answer.gpus, traits) {
        Ok(plan) => Planned {
            json: json(plan),
            refused: false,
        },
        Err(no) => Planned::why(no_plan(&no, answer.gpus)),
    })
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
        moves: moves_json(plan.moves),
        ..Default::default()
    }
}
