//! `fit`: can a job of G GPUs start now, and where? The gang rule (`gang`) over the product's nodes, at the
//! level asked for or, without one, at the narrowest level where it fits: one node (the hostname level),
//! then the NVLink partition, then the network levels from the narrowest to the widest. When nothing fits,
//! `why` says what stands in the way.

use std::sync::Arc;

use super::domains::{Domain, domains_at, levels_of};
use super::gang::{self, ProductNodes, Toleration};
use super::label_table::HOSTNAME;
use crate::inventory::model::NodeInventory;

/// The question.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FitRequest {
    /// The job's GPUs (G).
    pub gpus: u64,
    /// The product, as `products[]` names it; `None`: any product, the first that fits.
    pub product: Option<String>,
    /// The pods' size (K); `None`: the product's most common GPUs per node.
    pub gpus_per_pod: Option<u64>,
    /// The level (`nvlink`, a node label key, or `kubernetes.io/hostname`); `None`: the narrowest that fits.
    pub level: Option<String>,
    /// What the job's pods tolerate, beyond their GPU resource's own taint (see `gang`).
    pub tolerations: Vec<Toleration>,
}

/// One domain where the job fits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FitDomain {
    /// The domain (the label's value; the node's name at the hostname level).
    pub name: String,
    /// What its nodes offer to the job's pods.
    pub free_gpus: u64,
    /// Its nodes offering at least one pod, by name.
    pub nodes: Vec<String>,
}

/// The answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FitAnswer {
    /// The job's GPUs.
    pub gpus: u64,
    /// The pods' size assumed.
    pub gpus_per_pod: u64,
    /// The product answered for (`None` when no GPU node names one).
    pub product: Option<String>,
    /// Whether the job can start now.
    pub fits: bool,
    /// The level answered for (`None` when no level was tried).
    pub level: Option<String>,
    /// Every domain at that level where it fits, the most free first.
    pub domains: Vec<FitDomain>,
    /// What stands in the way, when it does not fit.
    pub why: Option<String>,
}

/// A request the inventory cannot answer at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    /// `--gpus` of 0, or pods of 0 GPUs.
    #[error("{0}")]
    Invalid(String),
    /// `--product` names no product of the inventory.
    #[error("no GPU node of product {asked:?}; the products are: {known}")]
    UnknownProduct {
        /// What was asked for.
        asked: String,
        /// The products there are.
        known: String,
    },
}

/// Answers `request` over the inventory's GPU nodes.
pub fn fit(nodes: &[Arc<NodeInventory>], request: &FitRequest) -> Result<FitAnswer, FitError> {
    if request.gpus == 0 {
        return Err(FitError::Invalid("--gpus must be at least 1".to_owned()));
    }
    if request.gpus_per_pod == Some(0) {
        return Err(FitError::Invalid(
            "--gpus-per-pod must be at least 1".to_owned(),
        ));
    }
    let products = gang::by_product(nodes);
    let candidates: Vec<&ProductNodes<'_>> = match &request.product {
        Some(asked) => {
            let found: Vec<_> = products
                .iter()
                .filter(|p| gang::names_product(p, asked))
                .collect();
            if found.is_empty() {
                let known: Vec<&str> = products.iter().map(|p| p.name.as_str()).collect();
                return Err(FitError::UnknownProduct {
                    asked: asked.clone(),
                    known: if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    },
                });
            }
            found
        }
        None => products.iter().collect(),
    };
    if candidates.is_empty() {
        return Ok(FitAnswer {
            gpus: request.gpus,
            gpus_per_pod: request.gpus_per_pod.unwrap_or(0),
            why: Some(
                "no GPU node names its product: there is nothing to place the job on".to_owned(),
            ),
            ..FitAnswer::default()
        });
    }
    let answers: Vec<FitAnswer> = candidates
        .iter()
        .map(|product| fit_product(product, request))
        .collect();
    // The product that fits at the narrowest level (its answers list levels narrowest first); else, when
    // only one product was asked about, its answer; else every product's reason.
    let rank = |a: &FitAnswer| match a.level.as_deref() {
        Some(HOSTNAME) => 0,
        Some(crate::inventory::model::NVLINK) => 1,
        _ => 2,
    };
    if let Some(best) = answers.iter().filter(|a| a.fits).min_by_key(|a| rank(a)) {
        return Ok(best.clone());
    }
    if answers.len() == 1 {
        return Ok(answers.into_iter().next().unwrap_or_default());
    }
    let why: Vec<String> = answers
        .iter()
        .map(|a| {
            format!(
                "{}: {}",
                a.product.as_deref().unwrap_or("?"),
                a.why.as_deref().unwrap_or("")
            )
        })
        .collect();
    Ok(FitAnswer {
        gpus: request.gpus,
        gpus_per_pod: request.gpus_per_pod.unwrap_or(0),
        why: Some(format!("no product fits; {}", why.join("; "))),
        ..FitAnswer::default()
    })
}

/// The answer for one product: at the level asked for, or the first level where it fits.
fn fit_product(product: &ProductNodes<'_>, request: &FitRequest) -> FitAnswer {
    let k = request
        .gpus_per_pod
        .or_else(|| gang::gpus_per_node(product.nodes.iter().copied()))
        .unwrap_or(1);
    let mut answer = FitAnswer {
        gpus: request.gpus,
        gpus_per_pod: k,
        product: Some(product.name.clone()),
        ..FitAnswer::default()
    };
    let levels: Vec<String> = match &request.level {
        Some(level) => vec![level.clone()],
        None => std::iter::once(HOSTNAME)
            .chain(levels_of(&product.nodes))
            .map(str::to_owned)
            .collect(),
    };
    for level in &levels {
        let domains = domains_at(&product.nodes, level, k, &request.tolerations);
        let mut fitting: Vec<FitDomain> = domains
            .iter()
            .filter(|(_, d)| d.offered >= request.gpus)
            .map(|(name, d)| FitDomain {
                name: (*name).to_owned(),
                free_gpus: d.offered,
                nodes: d
                    .nodes
                    .iter()
                    .filter(|n| gang::offer(n, k, &request.tolerations) > 0)
                    .map(|n| n.name.clone())
                    .collect(),
            })
            .collect();
        if !fitting.is_empty() {
            fitting.sort_by(|a, b| b.free_gpus.cmp(&a.free_gpus).then(a.name.cmp(&b.name)));
            answer.fits = true;
            answer.level = Some(level.clone());
            answer.domains = fitting;
            return answer;
        }
    }
    // Nothing fits: the reason is told at the level asked for, or else at the widest level tried.
    let level = levels
        .last()
        .cloned()
        .unwrap_or_else(|| HOSTNAME.to_owned());
    let domains = domains_at(&product.nodes, &level, k, &request.tolerations);
    answer.why = Some(why_not(product, &level, &domains, k, request));
    answer.level = Some(level);
    answer
}

/// What stands in the way of `gpus` at `level`, in words.
fn why_not(
    product: &ProductNodes<'_>,
    level: &str,
    domains: &std::collections::BTreeMap<&str, Domain<'_>>,
    k: u64,
    request: &FitRequest,
) -> String {
    let gpus = request.gpus;
    let mut reasons = Vec::new();
    if !gpus.is_multiple_of(k) {
        reasons.push(format!(
            "{gpus} GPUs are no whole number of pods of {k} (the job needs {} pods)",
            gpus.div_ceil(k)
        ));
    }
    reasons.extend(short_of_gpus(product, level, domains, k, request));
    left_out_nodes(product, request, &mut reasons);
    let placeless = product
        .nodes
        .iter()
        .filter(|n| super::domains::domain_of(n, level).is_none())
        .count();
    if placeless > 0 && !domains.is_empty() {
        reasons.push(format!(
            "{placeless} {} node(s) carry no {level} label",
            product.name
        ));
    }
    reasons.join("; ")
}

/// Why the domains at `level` fall short: no domain, the largest too small, the free GPUs scattered over
/// several, or too few free at all.
fn short_of_gpus(
    product: &ProductNodes<'_>,
    level: &str,
    domains: &std::collections::BTreeMap<&str, Domain<'_>>,
    k: u64,
    request: &FitRequest,
) -> Option<String> {
    let gpus = request.gpus;
    let offered: u64 = product
        .nodes
        .iter()
        .map(|n| gang::offer(n, k, &request.tolerations))
        .sum();
    let largest_size = domains.values().map(|d| d.size).max().unwrap_or(0);
    let best = domains.iter().max_by_key(|(_, d)| d.offered);
    if domains.is_empty() {
        Some(format!("no {} node has a {level} label", product.name))
    } else if largest_size < gpus {
        Some(format!(
            "the largest {level} domain has {largest_size} GPUs in pods of {k}, fewer than {gpus}"
        ))
    } else if offered >= gpus {
        best.map(|(name, d)| {
            format!(
                "free GPUs are scattered: {offered} free in pods of {k} over {} {level} domains, the most in one \
                 ({name}) {}",
                domains.len(),
                d.offered
            )
        })
    } else {
        Some(format!(
            "only {offered} {} GPUs are free in pods of {k}, {gpus} asked",
            product.name
        ))
    }
}

/// The nodes the fit leaves out: NotReady or cordoned, then tainted without a toleration the request gives.
fn left_out_nodes(product: &ProductNodes<'_>, request: &FitRequest, reasons: &mut Vec<String>) {
    let unusable: Vec<&str> = product
        .nodes
        .iter()
        .filter(|n| !n.ready || n.unschedulable)
        .map(|n| n.name.as_str())
        .collect();
    let tainted: Vec<String> = product
        .nodes
        .iter()
        .filter(|n| n.ready && !n.unschedulable)
        .filter_map(|n| {
            gang::untolerated_taint(n, &request.tolerations)
                .map(|(key, value, effect)| format!("{} ({key}={value}:{effect})", n.name))
        })
        .collect();
    if !unusable.is_empty() {
        reasons.push(format!(
            "{} node(s) NotReady or cordoned: {}",
            unusable.len(),
            crate::inventory::text::capped_list(unusable.iter().copied())
        ));
    }
    if !tainted.is_empty() {
        reasons.push(format!(
            "{} node(s) tainted without a toleration (add --toleration KEY[=VALUE][:EFFECT]): {}",
            tainted.len(),
            crate::inventory::text::capped_list(tainted.iter().map(String::as_str))
        ));
    }
}
