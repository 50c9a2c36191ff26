//! What `fit --plan` weighs, for a plan of one pod and of a gang alike: the product's nodes, and the traits
//! of the pods holding their GPUs (read only once a plan is needed; fail closed).

use std::collections::HashSet;
use std::sync::Arc;

use super::fit_plan_json::Planned;
use super::output::stdout::say;
use crate::inventory::Inventory;
use crate::inventory::fragmentation::plan::{Immovable, PodTraits};
use crate::inventory::model::{Holder, NodeInventory};
use crate::inventory::topology::FitAnswer;
use crate::inventory::totals::same_product_key;
use crate::runtime::terminal_text::visible;
use crate::sources::pod_traits::{PodKey, ReadFrom};

/// The traits of the pods holding GPUs on `nodes`, read from `from` (with `-n`, pods of other namespaces
/// stay); or, when they cannot be read whole, the refusal (fail closed).
pub(super) async fn traits_of(
    nodes: &[Arc<NodeInventory>],
    from: &ReadFrom,
    namespace: Option<&str>,
) -> Result<impl Fn(&str, &str) -> PodTraits + use<>, Planned> {
    let read = match from.traits(namespace, &holders(nodes)).await {
        Ok(read) => read,
        Err(why) => {
            return Err(Planned {
                refused: true,
                ..Planned::why(why)
            });
        }
    };
    for note in &read.notes {
        say(&format!("warning: {}", visible(note)));
    }
    let namespace = namespace.map(str::to_owned);
    Ok(
        move |ns: &str, pod: &str| match namespace.as_deref().filter(|n| *n != ns) {
            Some(listed) => PodTraits {
                immovable: Some(Immovable::OutsideNamespace(listed.to_owned())),
                ..Default::default()
            },
            None => {
                let key = (ns.to_owned(), pod.to_owned());
                read.traits.get(&key).cloned().unwrap_or_default()
            }
        },
    )
}

/// The nodes of the answer's product (every node when it names none).
pub(super) fn product_nodes(inventory: &Inventory, answer: &FitAnswer) -> Vec<Arc<NodeInventory>> {
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
