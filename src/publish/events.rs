//! The events publisher: sends the events a status plan produced, as Kubernetes Events (`events.k8s.io/v1`) on
//! the inventory.
//!
//! Not kube's `Recorder`: it folds every event of one reason on one object into a series of the first one,
//! note included, so "GPU node b became NotReady" after "GPU node a became NotReady" was only a count on a's
//! event and b was never named. Here an event repeats (a series: `count`, `lastObservedTime`) only when its
//! type, reason and note are all the same; any other note is an Event of its own.

use std::collections::HashMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};

use crate::crd::GpuInventory;
use crate::error::describe_kube_error;
use crate::inventory::events::InventoryEvent;
use crate::inventory::model::Severity;
use crate::runtime::health::Health;

/// The API server rejects an Event note longer than 1 KiB.
const MAX_NOTE_CHARS: usize = 1000;

/// How long a sent event is remembered for a repeat to become its series; past it, a repeat is a new Event.
/// The API server keeps Events one hour by default; a series is meant for bursts, not for a day's story.
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// The `action` of every event: they all come from a reconcile.
const ACTION: &str = "Reconcile";

/// What makes two events the same occurrence: the object, the type, the reason and the exact note.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Occurrence {
    regarding_uid: Option<String>,
    regarding_name: Option<String>,
    type_: &'static str,
    reason: String,
    note: String,
}

/// A sent event, kept to extend its series.
#[derive(Clone, Debug)]
struct Sent {
    name: String,
    namespace: String,
    count: i32,
    last: Timestamp,
}

/// Sends events on GpuInventories, folding exact repeats into series.
pub(crate) struct EventSender {
    client: Client,
    /// `reportingController`.
    controller: String,
    /// `reportingInstance`: tells the replicas apart.
    instance: String,
    sent: HashMap<Occurrence, Sent>,
}

/// The Kubernetes event type of a severity: what needs someone's action is a Warning.
fn event_type(severity: Severity) -> &'static str {
    match severity {
        Severity::Degraded => "Warning",
        Severity::Info => "Normal",
    }
}

/// The note as the API server takes it: at most [`MAX_NOTE_CHARS`] characters.
fn capped_note(note: &str) -> String {
    note.chars().take(MAX_NOTE_CHARS).collect()
}

impl EventSender {
    /// A sender reporting as `controller` (instance `instance`, else the controller's name).
    pub(crate) fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        EventSender {
            client,
            controller: controller.to_owned(),
            instance: instance.unwrap_or_else(|| controller.to_owned()),
            sent: HashMap::new(),
        }
    }

    /// Publishes `events` on `inventory`. A failure is logged, not retried: the status already says it all.
    pub(crate) async fn publish(
        &mut self,
        health: &Health,
        inventory: &GpuInventory,
        events: Vec<InventoryEvent>,
    ) {
        let reference = inventory.object_ref(&());
        for event in events {
            // The note carries other components' words (condition messages): the log escapes them.
            tracing::debug!(inventory = %inventory.name_any(), reason = %event.reason,
                note = %event.note, "publishing event");
            if let Err(e) = self.send(&reference, &event).await
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

    /// One event: a new Event, or the next count of the series of the same occurrence.
    async fn send(
        &mut self,
        regarding: &ObjectReference,
        event: &InventoryEvent,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        self.sent.retain(|_, s| s.last + SERIES_WINDOW > now);
        let key = Occurrence {
            regarding_uid: regarding.uid.clone(),
            regarding_name: regarding.name.clone(),
            type_: event_type(event.severity),
            reason: event.reason.clone(),
            note: capped_note(&event.note),
        };
        let sent = match self.sent.get(&key) {
            Some(earlier) => self.repeat(earlier, now).await?,
            None => self.create(regarding, &key, now).await?,
        };
        self.sent.insert(key, sent);
        Ok(())
    }

    /// Extends the series of an event already sent.
    async fn repeat(&self, earlier: &Sent, now: Timestamp) -> Result<Sent, kube::Error> {
        let count = earlier.count + 1;
        let series = serde_json::json!({
            "series": EventSeries { count, last_observed_time: MicroTime(now) },
        });
        Api::<Event>::namespaced(self.client.clone(), &earlier.namespace)
            .patch(
                &earlier.name,
                &PatchParams::default(),
                &Patch::Merge(&series),
            )
            .await?;
        Ok(Sent {
            count,
            last: now,
            ..earlier.clone()
        })
    }

    /// Creates a new Event for `key` on `regarding`.
    async fn create(
        &self,
        regarding: &ObjectReference,
        key: &Occurrence,
        now: Timestamp,
    ) -> Result<Sent, kube::Error> {
        // A cluster-scoped object's events go to "default", as kubectl describe looks for them.
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or(&self.controller),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            action: Some(ACTION.to_owned()),
            reason: Some(key.reason.clone()),
            note: Some(key.note.clone()),
            type_: Some(key.type_.to_owned()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        Api::<Event>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &event)
            .await?;
        Ok(Sent {
            name,
            namespace,
            count: 1,
            last: now,
        })
    }
}

#[cfg(test)]
mod tests {
    use http::{Method, StatusCode};
    use serde_json::{Value, json};

    use super::*;
    use crate::fixtures::ApiServer;

    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

    fn inventory() -> GpuInventory {
        let mut inventory = GpuInventory::new("cluster", Default::default());
        inventory.metadata.uid = Some("uid-1".to_owned());
        inventory
    }

    fn not_ready(node: &str) -> InventoryEvent {
        InventoryEvent {
            severity: Severity::Degraded,
            reason: "GpuNodeNotReady".to_owned(),
            note: format!("GPU node {node} became NotReady"),
        }
    }

    fn mock() -> (EventSender, ApiServer) {
        let (service, handle) = tower_test::mock::pair::<
            http::Request<kube::client::Body>,
            http::Response<kube::client::Body>,
        >();
        let sender = EventSender::new(
            Client::new(service, "default"),
            "gpu-inventory-operator",
            Some("replica-0".to_owned()),
        );
        (sender, ApiServer::from(handle))
    }

    /// Answers a create with the object it was given, as the API server does.
    fn created(body: &Value) -> Value {
        body.clone()
    }

    #[tokio::test]
    async fn the_same_reason_with_another_note_is_an_event_of_its_own_and_a_repeat_a_series() {
        let (mut sender, mut server) = mock();
        let health = Health::default();
        let events = vec![not_ready("a"), not_ready("b"), not_ready("a")];
        let publish = tokio::spawn(async move {
            sender.publish(&health, &inventory(), events).await;
            health
        });
        let first = server.expect(Method::POST, EVENTS).await;
        assert_eq!(first.body["note"], "GPU node a became NotReady");
        assert_eq!(first.body["type"], "Warning");
        assert_eq!(first.body["reportingController"], "gpu-inventory-operator");
        assert_eq!(first.body["reportingInstance"], "replica-0");
        assert_eq!(first.body["regarding"]["uid"], "uid-1");
        let first_name = first.body["metadata"]["name"].as_str().unwrap().to_owned();
        let reply = created(&first.body);
        first.reply(StatusCode::CREATED, reply);

        let second = server.expect(Method::POST, EVENTS).await;
        assert_eq!(
            second.body["note"], "GPU node b became NotReady",
            "node b is named, not folded into a's event"
        );
        let reply = created(&second.body);
        second.reply(StatusCode::CREATED, reply);

        let repeat = server
            .expect(Method::PATCH, &format!("{EVENTS}/{first_name}"))
            .await;
        assert_eq!(repeat.body["series"]["count"], 2);
        assert!(repeat.body["series"]["lastObservedTime"].is_string());
        assert!(
            repeat.body.get("note").is_none(),
            "a series patch leaves the note alone: {}",
            repeat.body
        );
        repeat.reply(StatusCode::OK, json!({}));
        publish.await.unwrap();
        server.assert_idle();
    }

    #[tokio::test]
    async fn a_refused_event_is_not_remembered_and_the_next_one_is_still_sent() {
        let (mut sender, mut server) = mock();
        let health = Health::default();
        let events = vec![not_ready("a"), not_ready("b")];
        let publish = tokio::spawn(async move {
            sender.publish(&health, &inventory(), events).await;
            sender
        });
        server.expect(Method::POST, EVENTS).await.reply_error(
            500,
            "InternalError",
            "etcd is paused",
        );
        let second = server.expect(Method::POST, EVENTS).await;
        assert_eq!(second.body["note"], "GPU node b became NotReady");
        let reply = created(&second.body);
        second.reply(StatusCode::CREATED, reply);
        let sender = publish.await.unwrap();
        // Only what was sent is remembered: a repeat of the refused one is a new Event, not a series.
        let refused = Occurrence {
            regarding_uid: Some("uid-1".to_owned()),
            regarding_name: Some("cluster".to_owned()),
            type_: "Warning",
            reason: "GpuNodeNotReady".to_owned(),
            note: "GPU node a became NotReady".to_owned(),
        };
        assert!(!sender.sent.contains_key(&refused));
        assert_eq!(sender.sent.len(), 1);
        server.assert_idle();
    }

    #[test]
    fn a_note_is_capped_at_what_the_api_server_takes() {
        let long = "é".repeat(MAX_NOTE_CHARS + 50);
        assert_eq!(capped_note(&long).chars().count(), MAX_NOTE_CHARS);
        assert_eq!(capped_note("short"), "short");
    }

    #[test]
    fn degraded_is_a_warning_and_info_normal() {
        assert_eq!(event_type(Severity::Degraded), "Warning");
        assert_eq!(event_type(Severity::Info), "Normal");
    }
}
