//! A source whose API the server may not serve: Kueue's kinds (absent until Kueue is installed) and
//! DeviceTaintRules (1.37's, or a beta where enabled). One [`OptionalApi`] names the kind and the versions
//! that serve it, newest first; [`OptionalApi::watch`] waits until one is served (the store empty and synced
//! meanwhile, the absence said once, discovery asked again every [`DISCOVERY_REFRESH`]), then watches it as a
//! [`DynamicObject`] decoded slim ([`SlimDynamic`]: identity, `spec` and `status`) and stripped on arrival, in
//! pages of [`PAGE`]; [`OptionalApi::list`] is the one-shot read (a reader's `list_once`).

use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tracing::info;

use super::changes::ChangeSignal;
use super::discovery::{DISCOVERY_REFRESH, Discovered, wait_until_served};
use super::slim_dynamic::SlimDynamic;
use super::stripped::{StrippedStore, feed, stripped_store};
use crate::error::describe_kube_error;
use crate::runtime::backoff;
use crate::runtime::health::Health;

/// A kind the server may not serve.
#[derive(Clone, Copy, Debug)]
pub struct OptionalApi {
    /// The API group (`kueue.x-k8s.io`).
    pub group: &'static str,
    /// The versions that serve it, newest first.
    pub versions: &'static [&'static str],
    /// `kind`.
    pub kind: &'static str,
    /// The plural: the resource's name, and the watch's in logs, metrics and health.
    pub plural: &'static str,
    /// What it is, for messages: `Kueue ResourceFlavors`.
    pub what: &'static str,
    /// What the operator does without it, for the one info line: `quotas are not checked`.
    pub without: &'static str,
    /// What reading it is for, for the info line when it is found: `their quotas are checked`.
    pub purpose: &'static str,
    /// Its absence is said at debug level only: another kind of the same group says it for both (Kueue's
    /// Topologies speak for its quota objects: one info line when Kueue is not installed).
    pub quiet_absence: bool,
}

/// Objects a list page holds. A page is decoded whole before it is stripped, so its size is the watch's
/// high-water mark at start-up and after an outage (kube's default is 500: ~10 MB for Kueue Workloads decoded
/// whole, benches/RESULTS.md "The readers' start-up"); 100 is the node watch's page too.
pub const PAGE: u32 = 100;

/// A strip function for the objects of an optional API.
pub type StripDynamic<T> = fn(&DynamicObject) -> Option<T>;

impl OptionalApi {
    /// The API resource at `version`.
    pub fn resource(&self, version: &str) -> ApiResource {
        ApiResource {
            group: self.group.into(),
            version: version.into(),
            api_version: format!("{}/{version}", self.group),
            kind: self.kind.into(),
            plural: self.plural.into(),
        }
    }

    /// The newest version serving the kind, if any: `Err` when discovery itself failed.
    pub async fn served_version(&self, client: &Client) -> Result<Option<&'static str>, String> {
        for version in self.versions {
            match client
                .list_api_group_resources(&format!("{}/{version}", self.group))
                .await
            {
                Ok(list) if list.resources.iter().any(|r| r.name == self.plural) => {
                    return Ok(Some(version));
                }
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(describe_kube_error(&error)),
            }
        }
        Ok(None)
    }

    /// Every object, stripped, for a one-shot scan: none where the kind is not served; a note (for stderr)
    /// when it could not be read.
    pub async fn list<T>(
        &self,
        client: &Client,
        strip: StripDynamic<T>,
    ) -> (Vec<T>, Option<String>) {
        let version = match self.served_version(client).await {
            Ok(Some(version)) => version,
            Ok(None) => return (Vec::new(), None),
            Err(error) => {
                let note = format!(
                    "{} not read (discovery failed: {error}); {}",
                    self.what, self.without
                );
                return (Vec::new(), Some(note));
            }
        };
        let api: Api<SlimDynamic> = Api::all_with(client.clone(), &self.resource(version));
        match api.list(&ListParams::default()).await {
            Ok(list) => (
                list.items.iter().filter_map(|o| strip(&o.0)).collect(),
                None,
            ),
            Err(error) => {
                let note = format!(
                    "{} not read ({}); {} (grant list on {}.{})",
                    self.what,
                    describe_kube_error(&error),
                    self.without,
                    self.plural,
                    self.group
                );
                (Vec::new(), Some(note))
            }
        }
    }

    /// Waits until a version serves the kind and returns it: its absence is said once at info (at debug with
    /// `quiet_absence`), discovery is asked again every [`DISCOVERY_REFRESH`], and `absent` is called each
    /// time it is found absent (a store marks itself absent). Its finding is said at info.
    pub async fn wait_served(&self, client: &Client, mut absent: impl FnMut()) -> &'static str {
        let mut said = false;
        let discover = || async {
            match self.served_version(client).await {
                Ok(Some(version)) => Discovered::Served(version),
                Ok(None) => Discovered::Absent(format!(
                    "the API server serves no {}.{}",
                    self.plural, self.group
                )),
                Err(error) => Discovered::Failed(error),
            }
        };
        let version = wait_until_served(self.what, discover, |why| {
            absent();
            if self.quiet_absence {
                tracing::debug!("{} unavailable: {why}; {}", self.what, self.without);
            } else if !said {
                info!(
                    "{} unavailable: {why}; {}, and the API is looked for again every {}s",
                    self.what,
                    self.without,
                    DISCOVERY_REFRESH.as_secs()
                );
                said = true;
            }
        })
        .await;
        info!(
            api = %format!("{}/{version}", self.group),
            "{} served: watching them ({})", self.what, self.purpose
        );
        version
    }

    /// Starts the source: its store, and the task that feeds it (run it until shutdown).
    pub fn watch<T: PartialEq + Send + Sync + 'static>(
        self,
        client: Client,
        health: Health,
        changes: ChangeSignal,
        strip: StripDynamic<T>,
    ) -> (StrippedStore<T>, impl Future<Output = ()> + Send + 'static) {
        let (store, mut writer) = stripped_store(move |object: &SlimDynamic| strip(&object.0));
        let task = async move {
            let version = self.wait_served(&client, || writer.mark_absent()).await;
            let api: Api<SlimDynamic> = Api::all_with(client, &self.resource(version));
            let config = watcher::Config::default().page_size(PAGE);
            let events = watcher(api, config).backoff(backoff::WATCH.backoff());
            feed(self.plural, events, &mut writer, &health, &changes).await;
        };
        (store, task)
    }
}
