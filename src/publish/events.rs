//! The events publisher: sends the events a status plan produced, as Kubernetes Events on the inventory.

use kube::Resource;
use kube::ResourceExt;
use kube::runtime::events::{Event, EventType, Recorder};

use crate::crd::GpuInventory;
use crate::error::describe_kube_error;
use crate::inventory::events::InventoryEvent;
use crate::inventory::model::Severity;
use crate::runtime::health::Health;

/// The API server rejects an Event note longer than 1 KiB.
const MAX_NOTE_CHARS: usize = 1000;

/// The Kubernetes event type of a severity: what needs someone's action is a Warning.
fn event_type(severity: Severity) -> EventType {
    match severity {
        Severity::Degraded => EventType::Warning,
        Severity::Info => EventType::Normal,
    }
}

/// Publishes `events` on `inventory`. A failure is logged, not retried: the status already says it all.
pub(crate) async fn publish_events(
    recorder: &Recorder,
    health: &Health,
    inventory: &GpuInventory,
    events: Vec<InventoryEvent>,
) {
    let reference = inventory.object_ref(&());
    for event in events {
        let event = Event {
            type_: event_type(event.severity),
            reason: event.reason,
            note: Some(event.note.chars().take(MAX_NOTE_CHARS).collect()),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        // The note carries other components' words (condition messages): the log escapes them.
        tracing::debug!(inventory = %inventory.name_any(), reason = %event.reason,
            note = event.note.as_deref().unwrap_or_default(), "publishing event");
        if let Err(e) = recorder.publish(&event, &reference).await
            && !crate::runtime::credentials::report("events", &e)
        {
            health.failure(
                "events",
                &format!(
                    "publishing event {} on GpuInventory {}: {}",
                    event.reason,
                    inventory.name_any(),
                    describe_kube_error(&e)
                ),
            );
        }
    }
}
