//! `gpu-inventory-operator fit ... -o json` run live against the test cluster, and its answer. The JSON is the
//! command's contract (issue 37): `{"gpus", "gpusPerPod", "product", "fits", "level", "domains": [{"name",
//! "freeGpus", "nodes"}], "why"}`; exit 0 when the job fits, 1 when it does not, 2 on an error.

use std::process::Command;

use serde::Deserialize;

use super::cluster_access::kubeconfig_path;

/// One domain where the job fits.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FitDomain {
    /// The level label's value.
    pub name: String,
    /// What its nodes offer to pods of the job's size: the sum of `floor(free / K) * K`.
    pub free_gpus: u64,
    /// Its nodes offering at least one pod.
    pub nodes: Vec<String>,
}

/// The answer of `fit -o json`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FitAnswer {
    /// The job's GPUs (G).
    pub gpus: u64,
    /// The pods' size (K).
    pub gpus_per_pod: u64,
    /// The product answered for.
    pub product: Option<String>,
    /// Whether the job can start now.
    pub fits: bool,
    /// The level answered for.
    pub level: Option<String>,
    /// Every domain at that level where it fits, the largest first.
    #[serde(default)]
    pub domains: Vec<FitDomain>,
    /// Why it does not fit.
    pub why: Option<String>,
}

/// A question to `fit`.
#[derive(Clone, Copy, Debug)]
pub struct FitQuestion<'a> {
    /// G.
    pub gpus: u32,
    /// K.
    pub gpus_per_pod: u32,
    /// The level's node label key.
    pub level: &'a str,
    /// The product, as `scan` names it.
    pub product: &'a str,
}

/// Runs `fit` for `question` against the test cluster, over the nodes matching `selector` (`-l`); panics unless
/// it answers with exit 0 or 1 and JSON that agrees with its exit code.
pub fn fit(question: FitQuestion<'_>, selector: &str) -> FitAnswer {
    let args = [
        "fit".to_owned(),
        "--gpus".to_owned(),
        question.gpus.to_string(),
        "--gpus-per-pod".to_owned(),
        question.gpus_per_pod.to_string(),
        "--level".to_owned(),
        question.level.to_owned(),
        "--product".to_owned(),
        question.product.to_owned(),
        "-l".to_owned(),
        selector.to_owned(),
        "-o".to_owned(),
        "json".to_owned(),
    ];
    answered(&args)
}

/// One place a share of a GPU fits, as `fit --gpu-memory|--fraction|--mig-profile -o json` names it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SharePlace {
    /// The node.
    pub node: String,
    /// The GPU or device, where the objects name it.
    pub gpu: Option<String>,
    /// The scheme whose rule places it.
    pub scheme: String,
    /// How many such GPUs or devices.
    pub count: u64,
    /// What is free there, in words.
    pub free: String,
}

/// The answer of `fit` for a share of a GPU.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ShareAnswer {
    /// Whether one pod asking for the share can start now.
    pub fits: bool,
    /// Where.
    #[serde(default)]
    pub places: Vec<SharePlace>,
    /// Why not.
    pub why: Option<String>,
}

/// Runs `fit` with `ask` (`["--gpu-memory", "20Gi"]`) against the test cluster over the nodes matching
/// `selector`; panics unless it answers with exit 0 or 1 and JSON that agrees with its exit code.
pub fn fit_share(ask: &[&str], selector: &str) -> ShareAnswer {
    let mut args: Vec<String> = ["fit"].iter().chain(ask).map(|a| (*a).to_owned()).collect();
    args.extend([
        "-l".to_owned(),
        selector.to_owned(),
        "-o".to_owned(),
        "json".to_owned(),
    ]);
    answered(&args)
}

/// Runs `gpu-inventory-operator ARGS --kubeconfig ...`; its JSON answer, which must agree with its exit code.
fn answered<T: serde::de::DeserializeOwned + HasFits>(args: &[String]) -> T {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run gpu-inventory-operator fit");
    let said = || {
        format!(
            "`gpu-inventory-operator {}` exited {}:\nstdout: {}\nstderr: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let answer: T = match out.status.code() {
        Some(0 | 1) => serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("its JSON does not parse ({e}): {}", said())),
        _ => panic!("fit did not answer: {}", said()),
    };
    assert_eq!(
        answer.fits(),
        out.status.code() == Some(0),
        "exit code and `fits` disagree: {}",
        said()
    );
    answer
}

/// An answer that says whether it fits.
trait HasFits {
    fn fits(&self) -> bool;
}

impl HasFits for FitAnswer {
    fn fits(&self) -> bool {
        self.fits
    }
}

impl HasFits for ShareAnswer {
    fn fits(&self) -> bool {
        self.fits
    }
}
