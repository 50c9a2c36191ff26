//! KEP-5677's `ResourcePoolStatusRequest` (`resource.k8s.io/v1alpha3`, cluster-scoped) and DeviceTaintRules,
//! through dynamic APIs: k8s-openapi's `v1_34` has neither type in these versions. Every object made here
//! carries the test's label and is deleted when the [`PoolStatusRequests`] guard goes.

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use super::cluster_periods::ClusterPeriods;
use super::test_env::{TEST_LABEL, TestEnv};
use super::waiting::eventually;

const GROUP_VERSION: &str = "resource.k8s.io/v1alpha3";

fn requests_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("resource.k8s.io", "v1alpha3", "ResourcePoolStatusRequest");
    ApiResource::from_gvk_with_plural(&gvk, "resourcepoolstatusrequests")
}

fn taint_rules_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("resource.k8s.io", "v1", "DeviceTaintRule");
    ApiResource::from_gvk_with_plural(&gvk, "devicetaintrules")
}

/// Whether the server serves ResourcePoolStatusRequests. From Kubernetes 1.36 (where the API and the
/// `DRAResourcePoolStatus` gate appeared) a server that does not is a failure: hack/local-cluster.sh turns it
/// on there. An older one is said loudly, and the caller returns.
pub async fn require(client: &Client, test: &str) {
    let missing = format!(
        "does not serve resourcepoolstatusrequests in {GROUP_VERSION}: start kube-apiserver with \
         --runtime-config=resource.k8s.io/v1alpha3=true and --feature-gates=DRAResourcePoolStatus=true, and \
         kube-controller-manager with the gate too (hack/local-cluster.sh does on 1.36-1.37)"
    );
    let api = super::cluster_access::RequiredApi {
        group_version: GROUP_VERSION,
        resource: "resourcepoolstatusrequests",
        since_minor: 36,
        missing: &missing,
        too_old: "ResourcePoolStatusRequest (KEP-5677) only exists from 1.36",
    };
    super::cluster_access::require_api(client, &api, test).await
}

/// One pool of a request's status, the four counts KEP-5677 defines (`None`: the field is absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamPool {
    pub pool: String,
    pub node: Option<String>,
    pub generation: i64,
    pub slice_count: Option<i64>,
    pub total: Option<i64>,
    pub allocated: Option<i64>,
    pub available: Option<i64>,
    pub unavailable: Option<i64>,
    pub validation_error: Option<String>,
    /// `partitionSummary`: only where the pool's partition type attribute is known (a slice's
    /// `partitionTypeAttribute` or the request's `defaultPartitionTypeAttribute`, gate
    /// `DRAPartitionableDevicesType`) and every device of a type costs the same counters.
    pub partitions: Vec<UpstreamPartition>,
}

/// One entry of a pool's `partitionSummary`: the devices whose partition type attribute has value `kind`,
/// and how many more of them the pool's shared counters still fit (each type measured on its own).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct UpstreamPartition {
    pub kind: String,
    pub total: i64,
    pub allocatable: i64,
}

impl UpstreamPool {
    fn from_status(pool: &Value) -> UpstreamPool {
        let int = |field: &str| pool[field].as_i64();
        let text = |field: &str| pool[field].as_str().map(str::to_owned);
        UpstreamPool {
            pool: text("poolName").unwrap_or_default(),
            node: text("nodeName"),
            generation: int("generation").unwrap_or(-1),
            slice_count: int("resourceSliceCount"),
            total: int("totalDevices"),
            allocated: int("allocatedDevices"),
            available: int("availableDevices"),
            unavailable: int("unavailableDevices"),
            validation_error: text("validationError"),
            partitions: pool["partitionSummary"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| UpstreamPartition {
                    kind: p["type"].as_str().unwrap_or_default().to_owned(),
                    total: p["total"].as_i64().unwrap_or(-1),
                    allocatable: p["allocatable"].as_i64().unwrap_or(-1),
                })
                .collect(),
        }
    }
}

/// The test's ResourcePoolStatusRequests and DeviceTaintRules; deletes them (by the test's label) on drop, so
/// a failed test leaves none behind either (completed requests would otherwise stay for an hour).
pub struct PoolStatusRequests {
    client: Client,
    id: String,
    requests: Api<DynamicObject>,
}

impl PoolStatusRequests {
    pub fn new(env: &TestEnv) -> PoolStatusRequests {
        PoolStatusRequests {
            client: env.client.clone(),
            id: env.id.clone(),
            requests: Api::all_with(env.client.clone(), &requests_resource()),
        }
    }

    /// Creates request `name` for `driver`, of one pool when `pool` is given (else of all the driver's pools).
    pub async fn create(&self, name: &str, driver: &str, pool: Option<&str>) {
        let mut spec = json!({ "driver": driver });
        if let Some(pool) = pool {
            spec["poolName"] = json!(pool);
        }
        self.create_spec(name, spec).await;
    }

    /// Creates request `name` of one pool that groups its partitionable devices by `attribute` (fully
    /// qualified) where no slice names one. The API server keeps the field only with the
    /// `DRAPartitionableDevicesType` gate (alpha in 1.37; hack/local-cluster.sh turns it on there): dropped,
    /// the test fails saying so.
    pub async fn create_partitioned(&self, name: &str, driver: &str, pool: &str, attribute: &str) {
        let spec = json!({ "driver": driver, "poolName": pool, "defaultPartitionTypeAttribute": attribute });
        let created = self.create_spec(name, spec).await;
        assert_eq!(
            created.data["spec"]["defaultPartitionTypeAttribute"].as_str(),
            Some(attribute),
            "kube-apiserver dropped ResourcePoolStatusRequest {name}'s spec.defaultPartitionTypeAttribute: \
             start it with --feature-gates=DRAPartitionableDevicesType=true (Kubernetes 1.37+; \
             hack/local-cluster.sh does on 1.37)"
        );
    }

    async fn create_spec(&self, name: &str, spec: Value) -> DynamicObject {
        let request: DynamicObject = serde_json::from_value(json!({
            "apiVersion": GROUP_VERSION, "kind": "ResourcePoolStatusRequest",
            "metadata": { "name": name, "labels": { TEST_LABEL: self.id } },
            "spec": spec
        }))
        .unwrap();
        self.requests
            .create(&PostParams::default(), &request)
            .await
            .unwrap_or_else(|e| panic!("creating ResourcePoolStatusRequest {name}: {e}"))
    }

    /// The request's status, if the controller wrote one.
    pub async fn status(&self, name: &str) -> Option<Value> {
        let request = self
            .requests
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("reading ResourcePoolStatusRequest {name}: {e}"));
        request.data.get("status").filter(|s| !s.is_null()).cloned()
    }

    /// Waits for the request's `Complete` condition and returns its pools; a `Failed` one fails the test.
    pub async fn complete(&self, name: &str) -> Vec<UpstreamPool> {
        let what = format!(
            "ResourcePoolStatusRequest {name} Complete (written by kube-controller-manager's \
             resourcepoolstatusrequest-controller, which runs only with --feature-gates=DRAResourcePoolStatus=true)"
        );
        // The controller computes a request within milliseconds of its creation: one reaction, after a
        // controller-manager started again (a fault test's API-server restart) has taken its lease over.
        let deadline = ClusterPeriods::get().controller_manager_reaction(
            "kube-controller-manager's resourcepoolstatusrequest-controller",
        );
        let status = eventually(deadline, &what, || async {
            let status = self.status(name).await?;
            let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
            let is = |kind: &str| {
                conditions
                    .iter()
                    .any(|c| c["type"] == kind && c["status"] == "True")
            };
            assert!(!is("Failed"), "request {name} failed: {status}");
            is("Complete").then_some(status)
        })
        .await;
        let pools = status["pools"].as_array().cloned().unwrap_or_default();
        pools.iter().map(UpstreamPool::from_status).collect()
    }

    /// Touches the request (an annotation): the controller, which dropped it after its retries, looks again.
    pub async fn poke(&self, name: &str) {
        let body = json!({ "metadata": { "annotations": { "gpuinv.test/poked": jiff::Timestamp::now().to_string() } } });
        self.requests
            .patch(name, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap_or_else(|e| panic!("annotating ResourcePoolStatusRequest {name}: {e}"));
    }

    /// A DeviceTaintRule (`resource.k8s.io/v1`) tainting one device of one pool.
    pub async fn taint_rule(
        &self,
        name: &str,
        driver: &str,
        pool: &str,
        device: &str,
        effect: &str,
    ) {
        let rule: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
            "metadata": { "name": name, "labels": { TEST_LABEL: self.id } },
            "spec": {
                "deviceSelector": { "driver": driver, "pool": pool, "device": device },
                "taint": { "key": "example.com/maintenance", "value": "planned", "effect": effect }
            }
        }))
        .unwrap();
        Api::<DynamicObject>::all_with(self.client.clone(), &taint_rules_resource())
            .create(&PostParams::default(), &rule)
            .await
            .unwrap_or_else(|e| panic!("creating DeviceTaintRule {name}: {e}"));
    }

    /// Deletes the test's requests and rules; says which ones it found.
    pub async fn delete_all(&self) -> Vec<String> {
        let selector = ListParams::default().labels(&format!("{TEST_LABEL}={}", self.id));
        let mut deleted = Vec::new();
        for resource in [requests_resource(), taint_rules_resource()] {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            if let Ok(list) = api.list(&selector).await {
                deleted.extend(
                    list.items
                        .iter()
                        .map(|o| format!("{}/{}", resource.kind, o.name_any())),
                );
            }
            let _ = api
                .delete_collection(&DeleteParams::default(), &selector)
                .await;
        }
        deleted
    }
}

impl Drop for PoolStatusRequests {
    fn drop(&mut self) {
        let id = self.id.clone();
        // As TestEnv's Drop: the test's runtime is blocked here, so a runtime of its own with a fresh client.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let client = super::cluster_access::client().await;
                let guard = PoolStatusRequests {
                    requests: Api::all_with(client.clone(), &requests_resource()),
                    client,
                    id,
                };
                guard.delete_all().await;
                std::mem::forget(guard);
            });
        })
        .join();
    }
}
