//! One reader shape (issue 55): a reader is its module and one registration. A toy reader defined only here,
//! ConfigMaps with the test's label counted by name, is registered beside the operator's own readers with one
//! line, and both paths deliver its objects from the real API server: the watch that `run` and the plugin's
//! `--watch` start ([`Sources::start`]), and the one-shot read of `scan`, `fit`, `quotas`, `utilization` and the
//! fleet commands ([`Sources::list_once`]).

mod common;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use common::{TEST_LABEL, TestEnv, eventually};
use gpu_inventory_operator::error::{Error, Result};
use gpu_inventory_operator::runtime::health::Health;
use gpu_inventory_operator::sources::stripped::{StrippedStore, feed, stripped_store};
use gpu_inventory_operator::sources::{
    Cluster, Listed, OneShot, Reader, Readers, Snapshot, Sources, SourcesConfig, Start,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

// ---------------------------------------------------------------------------------------------------------
// The toy reader's module: all a new reader is, but for its core rule and its outputs.

/// The names of the ConfigMaps in `namespace` labelled with the test's id.
struct ToyConfigMaps {
    namespace: String,
    selector: String,
}

/// Its slot in the snapshot: the names, sorted.
#[derive(Debug, Default, PartialEq)]
struct ToyNames(Vec<String>);

impl ToyConfigMaps {
    fn api(&self, client: kube::Client) -> Api<ConfigMap> {
        Api::namespaced(client, &self.namespace)
    }
}

impl Reader for ToyConfigMaps {
    type Objects = Vec<Arc<String>>;
    type Store = StrippedStore<String>;

    fn name(&self) -> &'static str {
        "toy-configmaps"
    }

    fn watch(&self, start: &Start<'_>) -> (Self::Store, impl Future<Output = ()> + Send + 'static) {
        let (store, mut writer) = stripped_store(|map: &ConfigMap| Some(map.name_any()));
        let api = self.api(start.client.clone());
        let config = watcher::Config::default().labels(&self.selector);
        let (health, signal) = (start.health.clone(), start.signal.clone());
        let task = async move {
            let events = watcher(api, config).default_backoff();
            feed("toy-configmaps", events, &mut writer, &health, &signal).await;
        };
        (store, task)
    }

    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<Self::Objects>> {
        let OneShot::Cluster(cluster) = from else {
            return Ok(Listed::all(Vec::new()));
        };
        let api = self.api(cluster.client.clone());
        let params = cluster.params().labels(&self.selector);
        let names = cluster
            .list(&api, params, |map| Some(Arc::new(map.name_any())))
            .await
            .map_err(|source| Error::Kube {
                action: format!("listing the toy ConfigMaps on {}", cluster.url),
                source,
            })?;
        Ok(Listed::all(names))
    }

    fn fill(&self, names: Self::Objects, snapshot: &mut Snapshot) {
        let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        names.sort();
        snapshot.slots.put(ToyNames(names));
    }
}

// ---------------------------------------------------------------------------------------------------------

fn names(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .slots
        .get::<ToyNames>()
        .expect("the toy reader filled its slot")
        .0
        .clone()
}

async fn create_config_map(env: &TestEnv, name: &str) {
    let map: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { TEST_LABEL: env.id } },
        "data": { "toy": "reader" }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(env.client.clone(), &env.namespace)
        .create(&PostParams::default(), &map)
        .await
        .unwrap_or_else(|e| panic!("creating ConfigMap {name}: {e}"));
}

#[tokio::test]
async fn a_reader_registered_once_is_watched_and_listed_alike() {
    let env = TestEnv::new("toy-reader").await;
    let config = SourcesConfig {
        // The operator's readers run beside the toy one, on this test's (absent) nodes.
        node_label_selector: Some(format!("{TEST_LABEL}={}", env.id)),
        ..SourcesConfig::default()
    };
    let mut readers = Readers::of(&config);
    // The one registration.
    readers.register(ToyConfigMaps {
        namespace: env.namespace.clone(),
        selector: format!("{TEST_LABEL}={}", env.id),
    });
    create_config_map(&env, "first").await;

    let (sources, feed) = Sources::start(env.client.clone(), readers.clone(), Health::default());
    let feed = tokio::spawn(feed);
    tokio::time::timeout(Duration::from_secs(60), sources.wait_until_ready())
        .await
        .expect("every reader ready, the toy one included");
    assert_eq!(
        names(&sources.snapshot()),
        ["first"],
        "the watch's first list"
    );
    let before = sources.version();
    create_config_map(&env, "second").await;
    eventually(
        Duration::from_secs(30),
        "the watch sees the second ConfigMap",
        || {
            let sources = sources.clone();
            async move { (names(&sources.snapshot()) == ["first", "second"]).then_some(()) }
        },
    )
    .await;
    assert!(sources.version() > before, "the change was signalled");
    feed.abort();

    // The one-shot read, a page of one ConfigMap at a time: the same objects through the same reader.
    let cluster = Cluster {
        client: env.client.clone(),
        url: "the test cluster".to_owned(),
        page: 1,
    };
    let listed = Sources::list_once(&readers, &OneShot::Cluster(cluster))
        .await
        .expect("the one-shot read");
    assert_eq!(names(&listed.objects), ["first", "second"]);
    assert!(listed.objects.nodes.is_empty(), "the test has no nodes");
    env.cleanup().await;
}
