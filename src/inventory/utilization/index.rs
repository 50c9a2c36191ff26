//! One round's series by what they name, built once per round: a node's join then looks up only its own
//! holders and its own series, so a scan after one node changed joins that node alone ([`super::memo`]).

use std::collections::HashMap;

use super::series::{IdleSeries, SeriesHolder};
use crate::inventory::model::{ClaimRef, Holder};

/// The idle series by holder (pods by namespace then name, claims), the idle series without holder labels by
/// node, and the busy series (of nodes that share their GPUs) by node.
#[derive(Debug, Default)]
pub struct SeriesIndex {
    pods: HashMap<String, HashMap<String, Vec<u32>>>,
    claims: HashMap<ClaimRef, Vec<u32>>,
    unnamed: HashMap<String, Vec<u32>>,
    busy: HashMap<String, Vec<u32>>,
}

impl SeriesIndex {
    /// The index of `series`.
    pub fn of(series: &[IdleSeries]) -> SeriesIndex {
        let mut index = SeriesIndex::default();
        for (at, series) in series.iter().enumerate() {
            let at = u32::try_from(at).unwrap_or(u32::MAX);
            let by_node = |map: &mut HashMap<String, Vec<u32>>| {
                if let Some(node) = &series.node {
                    map.entry(node.clone()).or_default().push(at);
                }
            };
            match &series.holder {
                _ if series.busy => by_node(&mut index.busy),
                SeriesHolder::Pod { namespace, name } => index
                    .pods
                    .entry(namespace.clone())
                    .or_default()
                    .entry(name.clone())
                    .or_default()
                    .push(at),
                SeriesHolder::Claim(claim) => {
                    index.claims.entry(claim.clone()).or_default().push(at)
                }
                SeriesHolder::Unnamed => by_node(&mut index.unnamed),
            }
        }
        index
    }

    /// The idle series naming `holder`.
    pub(super) fn naming(&self, holder: &Holder) -> &[u32] {
        let found = match holder {
            Holder::Pod { namespace, name } => self.pods.get(namespace).and_then(|p| p.get(name)),
            Holder::Claim(claim) => self.claims.get(claim),
        };
        found.map_or(&[], Vec::as_slice)
    }

    /// The idle series without holder labels on `node`.
    pub(super) fn unnamed_on(&self, node: &str) -> &[u32] {
        self.unnamed.get(node).map_or(&[], Vec::as_slice)
    }

    /// The busy series on `node`.
    pub(super) fn busy_on(&self, node: &str) -> &[u32] {
        self.busy.get(node).map_or(&[], Vec::as_slice)
    }
}
