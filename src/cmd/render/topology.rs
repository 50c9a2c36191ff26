//! Topology in the tables: `--group-by nvlink|<label>` (one row per domain and product), and the node
//! table's `-o wide` columns NVLINK (the node's NVLink partition) and NETWORK (its domain at the narrowest
//! network level that groups nodes).
//!
//! A clique (`nvidia.com/gpu.clique`, `<ClusterUUID>.<CliqueID>`) is 40-odd characters, most of them the
//! rack's UUID; the node table would be twice as wide for it. There it is shortened as git shortens hashes:
//! the UUID's shortest prefix of at least 8 characters that no other rack in the table shares, `…`, then
//! the clique ID (`7c7f4a1e….32766`). The domain table and `-o json` keep the whole value, the one a
//! `-l nvidia.com/gpu.clique=...` selector needs.

use std::collections::{BTreeMap, BTreeSet};

use super::columns::{aligned, columns};
use crate::crd::{GpuInventoryStatus, GpuNodeEntry};
use crate::inventory::model::NVLINK;
use crate::inventory::text::capped_list;
use crate::inventory::topology::by_domain::LevelDomains;
use crate::runtime::terminal_text::visible;

/// The shortest prefix of a rack's UUID the node table shows.
const SHORT_UUID: usize = 8;

/// What marks a shortened clique.
const ELLIPSIS: char = '…';

/// The domain table: one row per domain and product, the domains' problems and the nodes in no domain below;
/// only the rows unless `headers`.
pub(super) fn domain_table(domains: &LevelDomains, headers: bool) -> String {
    let level = visible(&domains.level);
    if domains.rows.is_empty() && headers {
        return if domains.level == NVLINK {
            "no GPU node has a place at level nvlink: none carries an NVLink partition label \
             (nvidia.com/gpu.clique where Fabric Manager runs)\n"
                .to_owned()
        } else {
            format!(
                "no GPU node has a place at level {level}: none carries the label {level} (--group-by \
                 takes node, product, namespace, vendor, nvlink or a node label key)\n"
            )
        };
    }
    let rows = domain_rows(domains);
    let header = ["DOMAIN", "PRODUCT", "NODES", "GPUS", "FREE", "PROBLEMS"];
    if !headers {
        return aligned(&header, &rows, false);
    }
    let mut out = format!("level {level}\n");
    out += &columns(&header, &rows);
    let mut sizes: BTreeMap<&str, u64> = BTreeMap::new();
    for row in &domains.rows {
        sizes.insert(&row.product, row.gpus_per_pod);
    }
    let sizes: Vec<String> = sizes
        .iter()
        .map(|(product, k)| format!("{k} for {}", visible(product)))
        .collect();
    out += &format!(
        "FREE: GPUs the domain's Ready, schedulable nodes offer to pods of the product's GPUs per node K ({}):\n\
         \x20     floor(free / K) * K per node, as status.topology counts them\n\
         PROBLEMS: the domain's own, then its nodes' issues\n",
        sizes.join(", ")
    );
    for unplaced in &domains.unplaced {
        out += &format!(
            "in no domain at this level ({}): {}\n",
            visible(&unplaced.product),
            visible(&capped_list(unplaced.nodes.iter().map(String::as_str)))
        );
    }
    let problems: Vec<String> = domains
        .rows
        .iter()
        .flat_map(|row| &row.problems)
        .map(|p| {
            format!(
                "  {}: {}: {}\n",
                visible(&p.domain),
                p.reason.as_str(),
                visible(&p.message)
            )
        })
        .collect();
    if !problems.is_empty() {
        out += "\nproblems:\n";
        out += &problems.concat();
    }
    out
}

/// One row per domain and product: its nodes, GPUs, what it offers and its problems.
fn domain_rows(domains: &LevelDomains) -> Vec<Vec<String>> {
    domains
        .rows
        .iter()
        .map(|row| {
            let mut problems: Vec<&str> = row.problems.iter().map(|p| p.reason.as_str()).collect();
            problems.extend(row.node_issues.iter().map(|r| r.as_str()));
            problems.dedup();
            vec![
                row.name.clone(),
                row.product.clone(),
                row.nodes.to_string(),
                row.gpus.to_string(),
                row.free_gpus.to_string(),
                if problems.is_empty() {
                    "-".to_owned()
                } else {
                    problems.join(",")
                },
            ]
        })
        .collect()
}

/// The node table's topology columns, when some GPU node has a place.
pub(super) struct PlaceColumns {
    /// The network level NETWORK shows, when some level groups nodes.
    network: Option<String>,
    /// Each clique shown, shortened.
    cliques: BTreeMap<String, String>,
}

impl PlaceColumns {
    /// The columns for `status`'s nodes; `None` when no node has a place (the table stays as it was).
    pub(super) fn of(status: &GpuInventoryStatus) -> Option<PlaceColumns> {
        if status.nodes.iter().all(|n| n.topology.is_empty()) {
            return None;
        }
        let cliques: BTreeSet<&str> = status
            .nodes
            .iter()
            .filter_map(|n| n.topology.get(NVLINK).map(String::as_str))
            .collect();
        Some(PlaceColumns {
            network: narrowest_grouping_level(&status.nodes),
            cliques: shortened_cliques(&cliques),
        })
    }

    /// The header names.
    pub(super) fn header(&self) -> [&'static str; 2] {
        ["NVLINK", "NETWORK"]
    }

    /// A node's cells: its partition (shortened) and its domain at the network level, `-` for none.
    pub(super) fn cells(&self, node: &GpuNodeEntry) -> [String; 2] {
        let nvlink = node
            .topology
            .get(NVLINK)
            .map(|c| self.cliques.get(c).cloned().unwrap_or_else(|| c.clone()));
        let network = self
            .network
            .as_ref()
            .and_then(|level| node.topology.get(level).cloned());
        [nvlink, network].map(|cell| cell.unwrap_or_else(|| "-".to_owned()))
    }

    /// The lines under the table that say what the columns hold.
    pub(super) fn legend(&self) -> String {
        let mut out = String::from("NVLINK: the node's NVLink partition");
        if self.cliques.iter().any(|(whole, shown)| whole != shown) {
            out += &format!(
                " (cliques <ClusterUUID>.<CliqueID> shortened to <UUID prefix>{ELLIPSIS}.<CliqueID>; -o json and \
                 --group-by nvlink show them whole)"
            );
        }
        out += "\n";
        match &self.network {
            Some(level) => {
                out += &format!(
                    "NETWORK: the node's domain at {}, the narrowest network level that groups nodes \
                     (--group-by <level> lists the domains of any level)\n",
                    visible(level)
                )
            }
            None => out += "NETWORK: no network level groups two GPU nodes\n",
        }
        out
    }
}

/// The network level with the most domains among those where some domain holds two or more nodes: a level of
/// one node per domain (GKE's `gce-topology-host`) says no more than the node's name. On a tie, the first by
/// name.
fn narrowest_grouping_level(nodes: &[GpuNodeEntry]) -> Option<String> {
    let mut levels: BTreeMap<&str, BTreeMap<&str, u32>> = BTreeMap::new();
    for node in nodes {
        for (level, domain) in node.topology.iter().filter(|(l, _)| *l != NVLINK) {
            *levels.entry(level).or_default().entry(domain).or_default() += 1;
        }
    }
    levels
        .into_iter()
        .filter(|(_, domains)| domains.values().any(|n| *n >= 2))
        .max_by(|(a, da), (b, db)| da.len().cmp(&db.len()).then(b.cmp(a)))
        .map(|(level, _)| level.to_owned())
}

/// Each clique `<uuid>.<id>` as the node table shows it (see the module's docs); other values whole.
fn shortened_cliques(cliques: &BTreeSet<&str>) -> BTreeMap<String, String> {
    let split = |c: &'_ str| -> Option<(String, String)> {
        let (uuid, id) = c.rsplit_once('.')?;
        (uuid.chars().count() > SHORT_UUID + 1).then(|| (uuid.to_owned(), id.to_owned()))
    };
    let uuids: BTreeSet<String> = cliques
        .iter()
        .filter_map(|c| split(c))
        .map(|(u, _)| u)
        .collect();
    cliques
        .iter()
        .map(|clique| {
            let shown = match split(clique) {
                Some((uuid, id)) => {
                    let prefix = unique_prefix(&uuid, &uuids);
                    if prefix.len() < uuid.len() {
                        format!("{prefix}{ELLIPSIS}.{id}")
                    } else {
                        (*clique).to_owned()
                    }
                }
                None => (*clique).to_owned(),
            };
            ((*clique).to_owned(), shown)
        })
        .collect()
}

/// The shortest prefix of `uuid` of at least [`SHORT_UUID`] characters that starts no other of `all`.
fn unique_prefix<'u>(uuid: &'u str, all: &BTreeSet<String>) -> &'u str {
    let ends = uuid
        .char_indices()
        .map(|(i, _)| i)
        .skip(SHORT_UUID)
        .chain(std::iter::once(uuid.len()));
    for end in ends {
        let prefix = &uuid[..end];
        if !all
            .iter()
            .any(|other| other != uuid && other.starts_with(prefix))
        {
            return prefix;
        }
    }
    uuid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::render::{Table, render};
    use crate::inventory::topology::by_domain::level_domains;
    use crate::inventory::topology::tests::fleet;
    use crate::publish::content::status::{NodeList, desired_status};
    use crate::publish::content::wire::Detail;

    /// The GB200 fleet fixture's inventory and status (tests/fixtures/topology/gb200-fleet.yaml).
    fn fleet_status() -> (crate::inventory::Inventory, GpuInventoryStatus) {
        let inventory = fleet();
        let status = desired_status(&inventory, None, NodeList::All(Detail::Devices));
        (inventory, status)
    }

    fn line<'t>(text: &'t str, start: &str) -> &'t str {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in:\n{text}"))
    }

    fn cells(line: &str) -> Vec<&str> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }

    #[test]
    fn the_nvlink_view_has_a_row_per_partition_its_problems_and_the_nodes_in_none() {
        let (inventory, status) = fleet_status();
        let domains = level_domains(&inventory.nodes, NVLINK);
        let text = render(&status, Table::Domains(&domains), true);
        assert_eq!(
            cells(line(&text, "DOMAIN ")),
            ["DOMAIN", "PRODUCT", "NODES", "GPUS", "FREE", "PROBLEMS"]
        );
        assert_eq!(
            cells(line(&text, "a2221497-dbce-4964-8826-684c3694fd45.2478 ")),
            [
                "a2221497-dbce-4964-8826-684c3694fd45.2478",
                "NVIDIA-GB200",
                "17",
                "68",
                "52",
                "NvlinkDomainDegraded,NotReady,Unschedulable"
            ]
        );
        assert_eq!(
            cells(line(&text, "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.1 ")),
            [
                "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.1",
                "NVIDIA-GB200",
                "9",
                "36",
                "20",
                "-"
            ]
        );
        assert!(text.contains("(4 for NVIDIA-GB200)"), "{text}");
        assert!(
            text.contains("in no domain at this level (NVIDIA-GB200): gb200-r3-n03\n"),
            "{text}"
        );
        assert!(
            text.contains("\nproblems:\n  a2221497-dbce-4964-8826-684c3694fd45.2478: NvlinkDomainDegraded: NVLink partition"),
            "{text}"
        );
        let none = level_domains(&inventory.nodes, "example.com/rack");
        assert!(
            render(&status, Table::Domains(&none), true)
                .contains("none carries the label example.com/rack"),
        );
    }

    #[test]
    fn wide_shows_each_nodes_partition_shortened_and_its_subblock() {
        let (_, status) = fleet_status();
        let text = render(&status, Table::Nodes { wide: true }, true);
        let header = cells(line(&text, "NAME "));
        let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
        assert_eq!(at("NETWORK"), at("NVLINK") + 1);
        let row = cells(line(&text, "gb200-r2-n10 "));
        assert_eq!(row[at("NVLINK")], "0b9e3d2c….2");
        assert_eq!(
            row[at("NETWORK")],
            "subblock-2",
            "not the host level: one node each"
        );
        let clique_less = cells(line(&text, "gb200-r3-n03 "));
        assert_eq!(clique_less[at("NVLINK")], "-");
        assert!(
            text.contains("NETWORK: the node's domain at cloud.google.com/gce-topology-subblock"),
            "{text}"
        );
        let narrow = render(&status, Table::Nodes { wide: false }, true);
        assert!(!narrow.contains("NVLINK"), "only -o wide:\n{narrow}");
    }

    #[test]
    fn cliques_are_shortened_to_a_unique_prefix_and_other_values_kept() {
        let cliques: BTreeSet<&str> = [
            "7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766",
            "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.1",
            "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.2",
            "0b9e3d2c-ffff-4e8f-8c1d-2e3f4a5b6c03.1",
            "rack-7",
            "short.1",
        ]
        .into();
        let shown = shortened_cliques(&cliques);
        assert_eq!(
            shown["7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766"],
            "7c7f4a1e….32766"
        );
        // Two partitions of one rack share its prefix; another rack with the same first 8 characters is
        // told apart by the next ones.
        assert_eq!(
            shown["0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.2"],
            "0b9e3d2c-6….2"
        );
        assert_eq!(
            shown["0b9e3d2c-ffff-4e8f-8c1d-2e3f4a5b6c03.1"],
            "0b9e3d2c-f….1"
        );
        assert_eq!(shown["rack-7"], "rack-7");
        assert_eq!(shown["short.1"], "short.1");
    }
}
