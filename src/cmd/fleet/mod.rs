//! Several clusters at once (docs/fleet.md): the kubectl plugin's table and `fit` for each kubeconfig context,
//! read side by side ([`across`], [`fit_across`]), and the hub's view from ClusterProfiles ([`hub`]).
//!
//! Each cluster is read with the same code as one (`scan_status`, `fit::read_inventory`), with its own credentials
//! (the context's user, exec plugins included) and its own deadline: one unreachable, slow or forbidden
//! cluster is named with its error and never hides the others; the exit code is then 2.

pub(crate) mod across;
pub(crate) mod fit_across;
pub mod hub;

use std::future::Future;
use std::time::Duration;

use super::cli::GlobalArgs;
pub use super::fleet_args::{FleetArgs, FleetHubArgs};
use crate::error::{Error, Result};
use crate::runtime::client::kubeconfig_contexts;

/// The contexts to read side by side: every one with `--all-contexts`, those given with `--context` when
/// more than one; `None` for one cluster (today's commands).
pub(crate) fn fleet_contexts(
    global: &GlobalArgs,
    fleet: &FleetArgs,
) -> Result<Option<Vec<String>>> {
    if fleet.all_contexts {
        if !global.context.is_empty() {
            return Err(Error::InvalidFlag(
                "--all-contexts and --context: give one (every context, or those named)".to_owned(),
            ));
        }
        let contexts = kubeconfig_contexts(global.kubeconfig.as_deref())?;
        if contexts.is_empty() {
            return Err(Error::Kubeconfig(
                "--all-contexts: the kubeconfig has no contexts".to_owned(),
            ));
        }
        return Ok(Some(contexts));
    }
    let mut contexts: Vec<String> = Vec::new();
    for context in &global.context {
        if !contexts.contains(context) {
            contexts.push(context.clone());
        }
    }
    Ok((contexts.len() > 1).then_some(contexts))
}

/// What was read of one cluster, or why nothing was.
pub(crate) struct ClusterRead<T> {
    /// The context.
    pub(crate) context: String,
    /// The reading, or the error in words.
    pub(crate) result: std::result::Result<T, String>,
}

/// Reads every context at once, each within `timeout`; the answers in the contexts' order.
pub(crate) async fn read_each<T, F, Fut>(
    contexts: &[String],
    timeout: Duration,
    read: F,
) -> Vec<ClusterRead<T>>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let reads = contexts.iter().map(|context| {
        let reading = read(context.clone());
        async move {
            let result = match tokio::time::timeout(timeout, reading).await {
                Ok(Ok(found)) => Ok(found),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!(
                    "no answer within {} (--cluster-timeout)",
                    jiff::SignedDuration::try_from(timeout)
                        .map(|d| format!("{d:#}"))
                        .unwrap_or_else(|_| format!("{timeout:?}"))
                )),
            };
            ClusterRead {
                context: context.clone(),
                result,
            }
        }
    });
    futures::future::join_all(reads).await
}

/// Says each cluster that could not be read on stderr (escaped), so a script sees them beside the table.
pub(crate) fn report_errors<T>(reads: &[ClusterRead<T>]) {
    for read in reads {
        if let Err(error) = &read.result {
            crate::cmd::output::stdout::say(&format!(
                "error: context {}: {}",
                crate::runtime::terminal_text::visible(&read.context),
                crate::runtime::terminal_text::visible(error)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_slow_cluster_is_named_with_the_timeout_and_the_others_are_read() {
        let contexts = ["fast".to_owned(), "slow".to_owned(), "broken".to_owned()];
        let reads = read_each(&contexts, Duration::from_secs(10), |context| async move {
            match context.as_str() {
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(0)
                }
                "broken" => Err(Error::Kubeconfig("forbidden".to_owned())),
                _ => Ok(7),
            }
        })
        .await;
        let got: Vec<(&str, std::result::Result<i32, String>)> = reads
            .iter()
            .map(|r| (r.context.as_str(), r.result.clone()))
            .collect();
        assert_eq!(got[0], ("fast", Ok(7)));
        assert_eq!(
            got[1],
            (
                "slow",
                Err("no answer within 10s (--cluster-timeout)".to_owned())
            )
        );
        assert!(
            got[2].1.as_ref().unwrap_err().contains("forbidden"),
            "{got:?}"
        );
    }
}

#[cfg(test)]
mod context_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        global: GlobalArgs,
        #[command(flatten)]
        fleet: FleetArgs,
    }

    fn contexts(args: &[&str]) -> Result<Option<Vec<String>>> {
        let flags = Flags::try_parse_from([&["test"], args].concat()).unwrap();
        fleet_contexts(&flags.global, &flags.fleet)
    }

    #[test]
    fn all_contexts_reads_the_kubeconfig_in_its_order_and_named_ones_are_kept_once() {
        let path =
            std::env::temp_dir().join(format!("gpuinv-contexts-{}.yaml", std::process::id()));
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts:\n\
             - {name: prod-b, context: {cluster: x}}\n- {name: lab-a, context: {cluster: y}}\n",
        )
        .unwrap();
        let file = path.to_str().unwrap();
        assert_eq!(
            contexts(&["--kubeconfig", file, "--all-contexts"]).unwrap(),
            Some(vec!["prod-b".to_owned(), "lab-a".to_owned()])
        );
        assert_eq!(contexts(&["--context", "a"]).unwrap(), None, "one cluster");
        assert_eq!(
            contexts(&["--context", "a", "--context", "b", "--context", "a"]).unwrap(),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        let both = contexts(&["--kubeconfig", file, "--all-contexts", "--context", "a"]);
        assert!(both.unwrap_err().to_string().contains("give one"));
        let missing = contexts(&["--kubeconfig", "/nonexistent/kubeconfig", "--all-contexts"]);
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("/nonexistent/kubeconfig")
        );
        std::fs::remove_file(path).unwrap();
    }
}
