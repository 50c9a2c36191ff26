//! Events for fragmentation: one Warning `FragmentedCapacity` when pending pods start waiting only because
//! the free GPUs are in pieces, naming the largest of them, and one Normal `FragmentedCapacityResolved` when
//! none waits for that any more. Never one per pod: pods come and go while it holds, and the status names
//! them (`status.fragmentation.blocked`).

use super::event::{InventoryEvent, event};
use crate::inventory::model::{BlockedPod, FRAGMENTED_CAPACITY, Inventory, Severity};

/// The fragmentation events for going from `old` to `new`.
pub(super) fn fragmentation_events(
    events: &mut Vec<InventoryEvent>,
    old: &Inventory,
    new: &Inventory,
) {
    let (was, is) = (
        old.fragmentation.blocked_pods,
        new.fragmentation.blocked_pods,
    );
    if was == 0 && is > 0 {
        events.push(event(
            Severity::Degraded,
            FRAGMENTED_CAPACITY,
            blocked_message(is, new.fragmentation.blocked.first()),
        ));
    } else if was > 0 && is == 0 {
        events.push(event(
            Severity::Info,
            &format!("{FRAGMENTED_CAPACITY}Resolved"),
            format!(
                "no pending GPU pod waits only for its GPUs to be on one node any more (were {was})"
            ),
        ));
    }
}

/// "N pending GPU pods fit the free GPUs in total but on no node: ns/pod asks for G of P's F free,
/// the most on one node is L".
pub(crate) fn blocked_message(count: u32, first: Option<&BlockedPod>) -> String {
    let pods = if count == 1 {
        "1 pending GPU pod fits".to_owned()
    } else {
        format!("{count} pending GPU pods fit")
    };
    match first {
        Some(pod) => format!(
            "{pods} the free GPUs in total but on no node: {}/{} asks for {} of the {} free {}, the most \
             free on one node is {} (kubectl gpu-inventory fit --gpus {} --plan: which pods to move)",
            pod.namespace,
            pod.name,
            pod.gpus,
            pod.free_gpus,
            pod.product,
            pod.largest_piece,
            pod.gpus
        ),
        None => format!("{pods} the free GPUs in total but on no node"),
    }
}
