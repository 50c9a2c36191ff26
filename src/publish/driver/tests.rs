//! The driver's passes over a publisher that records what it was asked (no API server).

use std::time::Duration;

use super::*;
use crate::fixtures::context;

/// A publisher whose reconciles answer from a script, one result per key.
struct Scripted {
    keys: Vec<String>,
    answers: std::collections::HashMap<String, Result<Outcome>>,
    reconciled: Vec<String>,
}

impl Publisher for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    async fn cache_ready(&self) {}

    fn keys(&mut self) -> Vec<String> {
        self.keys.clone()
    }

    async fn reconcile(&mut self, key: &str, _scans: &ScanService) -> Result<Outcome> {
        self.reconciled.push(key.to_owned());
        match self.answers.remove(key) {
            Some(answer) => answer,
            None => Ok(Outcome::done()),
        }
    }
}

fn refused() -> Error {
    Error::kube("writing")(kube::Error::Api(Box::new(
        kube::core::Status::failure("forbidden", "Forbidden").with_code(403),
    )))
}

#[tokio::test]
async fn each_object_has_its_own_retries_and_the_next_pass_comes_at_the_earliest_wish() {
    let (fx, _server) = context(vec![], vec![]);
    let mut publisher = Scripted {
        keys: vec!["refused".into(), "gapped".into(), "fine".into()],
        answers: [
            ("refused".to_owned(), Err(refused())),
            (
                "gapped".to_owned(),
                Ok(Outcome::again_in(Duration::from_millis(300))),
            ),
        ]
        .into(),
        reconciled: Vec::new(),
    };
    let mut retries = Retries::default();
    let next = pass(&mut publisher, &fx.scans, &fx.metrics, &mut retries).await;
    assert_eq!(
        next,
        Duration::from_millis(300),
        "the write gap comes first"
    );
    assert_eq!(publisher.reconciled, ["refused", "gapped", "fine"]);
    // The next pass (a change woke it): the refused object waits out its backoff, the others run.
    let next = pass(&mut publisher, &fx.scans, &fx.metrics, &mut retries).await;
    assert_eq!(publisher.reconciled[3..], ["gapped", "fine"]);
    assert!(
        next <= Duration::from_secs(1),
        "{next:?}: the refusal's backoff"
    );
    let text = fx.metrics.encode();
    assert!(
        text.contains(
            "gpu_inventory_reconcile_errors_total{controller=\"scripted\",reason=\"forbidden\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("gpu_inventory_reconciles_total{controller=\"scripted\"} 5"),
        "{text}"
    );
    // An object gone from the keys is forgotten: back again, it is tried at once.
    publisher.keys = vec!["fine".into()];
    pass(&mut publisher, &fx.scans, &fx.metrics, &mut retries).await;
    publisher.keys = vec!["refused".into()];
    pass(&mut publisher, &fx.scans, &fx.metrics, &mut retries).await;
    assert_eq!(
        publisher.reconciled.last().map(String::as_str),
        Some("refused")
    );
}
