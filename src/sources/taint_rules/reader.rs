//! DeviceTaintRules as a reader, beside DRA's: read only where DRA is (a driver named, `resource.k8s.io/v1`
//! served). Its own file, so that the dump reader can name the kind's versions without a circle.

use std::future::Future;
use std::sync::Arc;

use kube::api::{Api, DynamicObject};

use super::{
    TAINT_RULES, TaintRuleStore, strip_rule, taint_rule_resource, taint_rules_served,
    watch_taint_rules,
};
use crate::error::Result;
use crate::inventory::dra::DraTaintRule;
use crate::sources::config::SourcesConfig;
use crate::sources::dra::{dra_api_served, list_error};
use crate::sources::reader::{Listed, OneShot, Reader, Start};
use crate::sources::snapshot::Snapshot;

/// The DeviceTaintRules, read with DRA only (a driver named, `resource.k8s.io/v1` served).
pub(crate) struct TaintRuleReader {
    read: bool,
}

impl TaintRuleReader {
    pub(crate) fn new(config: &SourcesConfig) -> TaintRuleReader {
        TaintRuleReader {
            read: !config.dra_drivers.is_empty(),
        }
    }
}

impl Reader for TaintRuleReader {
    type Objects = Vec<Arc<DraTaintRule>>;
    type Store = TaintRuleStore;

    fn name(&self) -> &'static str {
        TAINT_RULES.plural
    }

    fn watch(
        &self,
        start: &Start<'_>,
    ) -> (TaintRuleStore, impl Future<Output = ()> + Send + 'static) {
        let (store, feed) = watch_taint_rules(
            start.client.clone(),
            start.health.clone(),
            start.signal.clone(),
        );
        let read = self.read;
        let feed = async move {
            if read {
                feed.await;
            }
        };
        (store, feed)
    }

    async fn ready(&self, store: &TaintRuleStore) {
        if self.read {
            store.wait_until_ready().await;
        }
    }

    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<Self::Objects>> {
        let cluster = match from {
            OneShot::Dump(dump) => {
                let rules = dump.taint_rules.iter().filter_map(strip_rule).map(Arc::new);
                return Ok(Listed::all(rules.collect()));
            }
            OneShot::Cluster(cluster) => cluster,
        };
        let client = &cluster.client;
        if !self.read || dra_api_served(client).await == Some(false) {
            return Ok(Listed::all(Vec::new()));
        }
        let Some(version) = taint_rules_served(client).await else {
            return Ok(Listed::all(Vec::new()));
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &taint_rule_resource(version));
        let rules = cluster
            .list(&api, cluster.params(), |r| strip_rule(&r).map(Arc::new))
            .await
            .map_err(list_error(&cluster.url, "devicetaintrules"))?;
        Ok(Listed::all(rules))
    }

    fn fill(&self, rules: Self::Objects, snapshot: &mut Snapshot) {
        snapshot.taint_rules = rules;
    }
}
