//! A running pod's traits for `fit --plan` ([`PodTraits`]): its priority, its controller, whether it may
//! move at all, the gang it moves with and the PodDisruptionBudgets (policy/v1) that bound how many of their
//! pods one plan moves. Read from the `Pod` and its namespace's budgets; pure.
//!
//! The tables below are the rules as data: which controllers pin a pod to its node, which make a gang, and
//! which labels name a gang that no single controller owns (JobSet, LeaderWorkerSet, Kueue pod groups).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::{Selector, SelectorExt};

use crate::inventory::fragmentation::plan::{Immovable, PodTraits};

/// The annotation the kubelet puts on the API server's mirror of a static pod.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Controller kinds whose pods stay on their node: a DaemonSet's pod belongs there, and a pod a Node
/// controls is a static pod's mirror.
const PINNING_OWNERS: [&str; 2] = ["DaemonSet", "Node"];

/// Controller kinds whose pods are one gang, named `<kind> ns/name`.
const GANG_OWNERS: [&str; 1] = ["Job"];

/// A label whose value names a gang: `<kind> ns/value`, and `group <part>` where the gang is one part of
/// the object (a LeaderWorkerSet's replica group).
struct GangLabel {
    label: &'static str,
    kind: &'static str,
    part: Option<&'static str>,
}

/// The labels that name a gang, the widest first: a JobSet's pods are also its Jobs' (owned by a Job), and
/// a LeaderWorkerSet's group may be a Kueue pod group too; the first label a pod carries names its gang.
/// Names as the projects set them: JobSet's `jobset.sigs.k8s.io/jobset-name`, LeaderWorkerSet's
/// `leaderworkerset.sigs.k8s.io/name` and `group-index`, Kueue's plain-pod groups' `pod-group-name`.
const GANG_LABELS: [GangLabel; 3] = [
    GangLabel {
        label: "jobset.sigs.k8s.io/jobset-name",
        kind: "JobSet",
        part: None,
    },
    GangLabel {
        label: "leaderworkerset.sigs.k8s.io/name",
        kind: "LeaderWorkerSet",
        part: Some("leaderworkerset.sigs.k8s.io/group-index"),
    },
    GangLabel {
        label: "kueue.x-k8s.io/pod-group-name",
        kind: "Kueue pod group",
        part: None,
    },
];

/// One PodDisruptionBudget, as a plan weighs it.
#[derive(Debug)]
struct Budget {
    /// `ns/name`.
    name: String,
    /// The pods it covers: `None` covers none (policy/v1's null selector). A selector kube cannot read (no
    /// API server accepts one; a hand-edited dump may hold it) covers every pod of the namespace: a plan
    /// must not move a pod a budget may protect.
    selector: Option<Selector>,
    /// `status.disruptionsAllowed`; 0 when the disruption controller has not written it yet, as the
    /// eviction API refuses then too.
    allowed: u32,
}

/// The namespaces' PodDisruptionBudgets.
#[derive(Debug, Default)]
pub struct Budgets {
    by_namespace: HashMap<String, Vec<Budget>>,
}

impl Budgets {
    /// The budgets of `pdbs` (policy/v1), by namespace.
    pub fn new<'a>(pdbs: impl IntoIterator<Item = &'a PodDisruptionBudget>) -> Budgets {
        let mut by_namespace: HashMap<String, Vec<Budget>> = HashMap::new();
        for pdb in pdbs {
            let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
            let name = format!(
                "{namespace}/{}",
                pdb.metadata.name.as_deref().unwrap_or_default()
            );
            let selector = pdb
                .spec
                .as_ref()
                .and_then(|s| s.selector.clone())
                .map(|s| Selector::try_from(s).unwrap_or_default());
            let allowed = pdb
                .status
                .as_ref()
                .and_then(|s| s.disruptions_allowed)
                .unwrap_or(0);
            by_namespace.entry(namespace).or_default().push(Budget {
                name,
                selector,
                allowed: u32::try_from(allowed).unwrap_or(0),
            });
        }
        Budgets { by_namespace }
    }

    /// How many budgets there are.
    pub fn len(&self) -> usize {
        self.by_namespace.values().map(Vec::len).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The budgets of `namespace` that cover a pod labelled `labels`.
    fn covering<'b>(
        &'b self,
        namespace: &str,
        labels: &'b BTreeMap<String, String>,
    ) -> impl Iterator<Item = &'b Budget> + 'b {
        self.by_namespace
            .get(namespace)
            .into_iter()
            .flatten()
            .filter(|b| b.selector.as_ref().is_some_and(|s| s.matches(labels)))
    }
}

/// `pod`'s traits, with `budgets` (of every namespace, or of its own).
pub fn pod_traits(pod: &Pod, budgets: &Budgets) -> PodTraits {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let no_labels = BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&no_labels);
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let mut immovable = pinned(pod, controller.map(|c| (c.kind.as_str(), c.name.as_str())));
    let mut moving = Vec::new();
    for budget in budgets.covering(namespace, labels) {
        match budget.allowed {
            0 => {
                immovable.get_or_insert_with(|| Immovable::NoDisruption(budget.name.clone()));
            }
            allowed => moving.push((budget.name.clone(), allowed)),
        }
    }
    PodTraits {
        priority: pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0),
        immovable,
        gang: gang(
            namespace,
            labels,
            controller.map(|c| (c.kind.as_str(), c.name.as_str())),
        ),
        budgets: moving,
        owner: controller.map(|c| format!("{}/{}", c.kind, c.name)),
    }
}

/// Why a pod stays on its node whatever the budgets say: a static pod's mirror, or a pinning controller's.
fn pinned(pod: &Pod, controller: Option<(&str, &str)>) -> Option<Immovable> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION));
    match controller {
        _ if mirror => Some(Immovable::Static),
        Some((kind, name)) if PINNING_OWNERS.contains(&kind) => Some(match kind {
            "DaemonSet" => Immovable::DaemonSet(format!("{namespace}/{name}")),
            _ => Immovable::Static,
        }),
        _ => None,
    }
}

/// The gang `pod` moves with, if any (a pod whose other traits are not needed: one the plan does not
/// weigh, whose gang must not be split all the same).
pub fn gang_of(pod: &Pod) -> Option<String> {
    pod_traits(pod, &Budgets::default()).gang
}

/// The gang a pod moves with: the first of [`GANG_LABELS`] it carries, else its controller's when that is
/// one of [`GANG_OWNERS`].
fn gang(
    namespace: &str,
    labels: &BTreeMap<String, String>,
    controller: Option<(&str, &str)>,
) -> Option<String> {
    let labelled = GANG_LABELS.iter().find_map(|g| {
        let name = labels.get(g.label).filter(|v| !v.is_empty())?;
        Some(match g.part.and_then(|p| labels.get(p)) {
            Some(part) => format!("{} {namespace}/{name} group {part}", g.kind),
            None => format!("{} {namespace}/{name}", g.kind),
        })
    });
    labelled.or_else(|| {
        let (kind, name) = controller.filter(|(kind, _)| GANG_OWNERS.contains(kind))?;
        Some(format!("{kind} {namespace}/{name}"))
    })
}
