//! The plan's types (`plan.rs`): what it knows of a pod, what it proposes, and how it weighs pods while
//! searching; a leaf that the search, the placement and the why all read.

/// What the plan must know of a running pod beyond its holdings. Unknown pods are movable, of priority 0,
/// in no gang and under no budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodTraits {
    /// `spec.priority`.
    pub priority: i32,
    /// Why it must not move.
    pub immovable: Option<Immovable>,
    /// The gang it belongs to (`Job ns/name`, `JobSet ns/name`, ...), whose pods move together.
    pub gang: Option<String>,
    /// The PodDisruptionBudgets that cover it (`ns/name`) and how many of their pods may move at once: a
    /// plan moves at most that many of each budget's pods.
    pub budgets: Vec<(String, u32)>,
    /// Its controller (`ReplicaSet/web-7d9f`), which recreates it once deleted; `None`: no controller.
    pub owner: Option<String>,
}

/// Why a pod must not move: each is a rule the plan's `why` counts pods under.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Immovable {
    /// A DaemonSet's pod (the DaemonSet, `ns/name`): it belongs on its node.
    DaemonSet(String),
    /// A static pod (the kubelet's, seen as its mirror): no API call moves it.
    Static,
    /// A PodDisruptionBudget (`ns/name`) that allows no disruption covers it.
    NoDisruption(String),
    /// It is outside the one namespace the plan may move pods of (`-n`, that namespace).
    OutsideNamespace(String),
    /// Its gang (named) has GPU pods on nodes the plan does not weigh (another product's, or left out by
    /// `-l`): moving the gang would move them too, with no room known for them.
    GangBeyond(String),
}

/// One pod to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// Where it runs.
    pub from: String,
    /// Where it fits afterwards.
    pub to: String,
    /// The GPUs it holds (and frees on `from`).
    pub gpus: u64,
    /// Its gang, when it moves with one.
    pub gang: Option<String>,
    /// Its controller (`kind/name`), which recreates it.
    pub owner: Option<String>,
    /// Its priority.
    pub priority: i32,
}

/// A plan: the node the request starts on once the pods have moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The node that will have the request's GPUs free.
    pub node: String,
    /// The moves, gang by gang, the largest pods first.
    pub moves: Vec<Move>,
    /// GPUs of all moved pods.
    pub displaced_gpus: u64,
    /// The highest priority among the moved pods.
    pub highest_priority: i32,
}

/// A pod on a node, as the plan weighs it.
#[derive(Clone, Debug)]
pub(super) struct Held<'n> {
    pub(super) namespace: &'n str,
    pub(super) pod: &'n str,
    pub(super) node: usize,
    pub(super) gpus: u64,
    pub(super) owner: Option<String>,
    pub(super) priority: i32,
    /// Why it must not move, if it must not.
    pub(super) immovable: Option<Immovable>,
}

impl Held<'_> {
    /// This pod's move to node `to` of `nodes`, with its gang's name.
    pub(super) fn moved_to(
        &self,
        nodes: &[std::sync::Arc<crate::inventory::model::NodeInventory>],
        to: usize,
        gang: Option<String>,
    ) -> Move {
        Move {
            namespace: self.namespace.to_owned(),
            pod: self.pod.to_owned(),
            from: nodes[self.node].name.clone(),
            to: nodes[to].name.clone(),
            gpus: self.gpus,
            gang,
            owner: self.owner.clone(),
            priority: self.priority,
        }
    }
}

/// The pods that move together: one gang, or one pod.
#[derive(Clone, Debug)]
pub(super) struct Unit<'n> {
    pub(super) pods: Vec<Held<'n>>,
    pub(super) gang: Option<String>,
    pub(super) priority: i32,
    /// Why it must not move (the first of its pods' reasons), if it must not.
    pub(super) immovable: Option<Immovable>,
    /// One entry per pod a budget covers: (budget, how many of its pods may move).
    pub(super) budgets: Vec<(String, u32)>,
}
