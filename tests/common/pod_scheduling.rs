//! A test's pods and what kube-scheduler made of them: bound, or unschedulable.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use testkit::waits::Deadline;

use super::cluster_periods::ClusterPeriods;
use super::test_env::TestEnv;
use super::waiting::wait_for;

impl TestEnv {
    /// Creates a pod in the test's namespace once its `default` ServiceAccount exists; returns its name.
    pub async fn create_pod(&self, pod: Pod) -> String {
        self.wait_service_account().await;
        let name = pod.metadata.name.clone().unwrap_or_default();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        // Admission reads the ServiceAccount from its cache (a live lookup when missing): it passes at once,
        // or after the cache's reaction to the new account.
        wait_for(
            Deadline::reaction("the API server's ServiceAccount cache"),
            &format!("creating pod {name}"),
            || async {
                pods.create(&PostParams::default(), &pod)
                    .await
                    .map(drop)
                    .map_err(|e| format!("refused: {e}"))
            },
        )
        .await;
        name
    }

    /// The PodScheduled condition of pod `name` and the node it is bound to, as a wait shows it.
    async fn scheduling_of(&self, name: &str) -> Result<(Option<String>, String), String> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let pod = pods
            .get(name)
            .await
            .map_err(|e| format!("reading pod {name}: {e}"))?;
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        let conditions = pod.status.and_then(|s| s.conditions).unwrap_or_default();
        let scheduled = conditions
            .iter()
            .find(|c| c.type_ == "PodScheduled")
            .map_or_else(
                || "no PodScheduled condition".to_owned(),
                |c| {
                    format!(
                        "PodScheduled {} {}: {}",
                        c.status,
                        c.reason.as_deref().unwrap_or(""),
                        c.message.as_deref().unwrap_or("")
                    )
                },
            );
        Ok((node, scheduled))
    }

    /// Waits until kube-scheduler has bound pod `name`; returns the node. Its deadline:
    /// [`ClusterPeriods::scheduling`] (a new node's not-ready taint lifted, the scheduler's retry).
    pub async fn wait_bound(&self, name: &str) -> String {
        wait_for(
            ClusterPeriods::get().scheduling(),
            &format!("kube-scheduler binding pod {name}"),
            || async {
                match self.scheduling_of(name).await? {
                    (Some(node), _) => Ok(node),
                    (None, scheduled) => Err(format!("not bound; {scheduled}")),
                }
            },
        )
        .await
    }

    /// Waits until kube-scheduler has found pod `name` Unschedulable (its first attempt: one reaction);
    /// returns the condition's message.
    pub async fn wait_unschedulable(&self, name: &str) -> String {
        wait_for(
            ClusterPeriods::get().controller_reaction("kube-scheduler's first attempt"),
            &format!("kube-scheduler finding pod {name} Unschedulable"),
            || async {
                let (node, scheduled) = self.scheduling_of(name).await?;
                match scheduled.strip_prefix("PodScheduled False Unschedulable: ") {
                    Some(message) if node.is_none() => Ok(message.to_owned()),
                    _ => Err(format!("bound to {node:?}; {scheduled}")),
                }
            },
        )
        .await
    }
}
