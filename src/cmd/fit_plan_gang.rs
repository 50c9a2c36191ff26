//! `fit --plan` for a gang: a job of several pods, or one bound to a level wider than a node
//! (`inventory::fragmentation::gang_plan`), as `plan` prints it: `plan.node` and `plan.domain` the domain,
//! `plan.nodes` the nodes its pods start on, `plan.moves[]` as for one pod.

use std::sync::Arc;

use super::fit_plan_json::{PlanJson, Planned, moves_json};
use super::fit_plan_traits::traits_of;
use crate::inventory::fragmentation::gang_plan::{
    GangJob, GangNoPlan, GangPlan, gang_needed, gang_plan,
};
use crate::inventory::model::NodeInventory;
use crate::inventory::topology::FitAnswer;
use crate::inventory::topology::gang::Toleration;
use crate::sources::pod_traits::ReadFrom;

/// The gang `fit` answered for.
pub(super) struct Gang<'a> {
    pods: u64,
    gpus_per_pod: u64,
    level: Option<&'a str>,
    tolerations: &'a [Toleration],
}

impl<'a> Gang<'a> {
    pub(super) fn of(answer: &'a FitAnswer, tolerations: &'a [Toleration]) -> Gang<'a> {
        let k = answer.gpus_per_pod.max(1);
        Gang {
            pods: answer.gpus.div_ceil(k),
            gpus_per_pod: k,
            level: answer.level.as_deref(),
            tolerations,
        }
    }

    /// Its plan among `nodes` (its product's), or why there is none.
    pub(super) async fn plan(
        &self,
        nodes: &[Arc<NodeInventory>],
        from: &ReadFrom,
        namespace: Option<&str>,
    ) -> Planned {
        let job = GangJob {
            pods: self.pods,
            gpus_per_pod: self.gpus_per_pod,
            level: self.level,
            tolerations: self.tolerations,
        };
        if let Err(no) = gang_needed(nodes, &job) {
            return Planned::why(self.no_plan(&no));
        }
        let traits = match traits_of(nodes, from, namespace).await {
            Ok(traits) => traits,
            Err(refused) => return refused,
        };
        match gang_plan(nodes, &job, traits) {
            Ok(plan) => Planned {
                json: json(plan),
                refused: false,
            },
            Err(no) => Planned::why(self.no_plan(&no)),
        }
    }

    /// Why there is no plan, in words.
    fn no_plan(&self, no: &GangNoPlan) -> String {
        let (pods, k) = (self.pods, self.gpus_per_pod);
        let level = self.level.unwrap_or("any");
        match no {
            GangNoPlan::FitsNow(domain) => format!(
                "{level} domain {} offers {pods} pods of {k} GPUs now, yet the job does not fit there (a taint \
                 it does not tolerate): no pod needs to move",
                domain.as_deref().unwrap_or("-")
            ),
            GangNoPlan::TooSmall { largest_pods } => format!(
                "no {level} domain holds {pods} pods of {k} GPUs even with every GPU free (the largest holds \
                 {largest_pods} on its Ready, schedulable nodes): moving pods cannot make room"
            ),
            GangNoPlan::Stopped(stops) => stops.to_string(),
        }
    }
}

fn json(plan: GangPlan) -> PlanJson {
    PlanJson {
        node: plan.domain.clone(),
        domain: plan.domain,
        nodes: plan.nodes,
        displaced_gpus: Some(plan.displaced_gpus),
        moves: moves_json(plan.moves),
        why: None,
    }
}
