//! Both sides of the referee (tests/dra_referee.rs) in KEP-5677's terms: a pool's counts from a
//! ResourcePoolStatusRequest's status and from `scan -o json`'s device list, and a table of the two.

use std::collections::BTreeMap;

use gpu_inventory_operator::crd::{DraDeviceEntry, GpuInventoryStatus, GpuNodeEntry};

use super::dra::DRIVER;
use super::pool_status::{PoolStatusRequests, UpstreamPool};

/// Per-pool counts under KEP-5677's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub total: i64,
    pub allocated: i64,
    pub available: i64,
    pub unavailable: i64,
}

impl Counts {
    /// KEP-5677's formula: a device both allocated and unavailable is subtracted twice.
    pub fn kep(total: i64, allocated: i64, unavailable: i64) -> Counts {
        let available = (total - allocated - unavailable).max(0);
        Counts {
            total,
            allocated,
            available,
            unavailable,
        }
    }

    pub fn upstream(pool: &UpstreamPool) -> Counts {
        let count = |c: Option<i64>, what: &str| {
            c.unwrap_or_else(|| panic!("pool {} has no {what}: {pool:?}", pool.pool))
        };
        Counts {
            total: count(pool.total, "totalDevices"),
            allocated: count(pool.allocated, "allocatedDevices"),
            available: count(pool.available, "availableDevices"),
            unavailable: count(pool.unavailable, "unavailableDevices"),
        }
    }
}

/// Ours for one pool, from `scan -o json`: its devices counted by KEP-5677's rules, and how many are free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ours {
    pub kep: Counts,
    pub free: i64,
}

pub fn ours(entry: &GpuNodeEntry, pool: &str) -> Ours {
    let devices: Vec<_> = entry
        .devices
        .iter()
        .filter(|d| d.driver == DRIVER && d.pool == pool)
        .collect();
    let count =
        |yes: &dyn Fn(&&DraDeviceEntry) -> bool| devices.iter().filter(|d| yes(d)).count() as i64;
    Ours {
        kep: Counts::kep(
            devices.len() as i64,
            count(&|d| !d.allocated_to.is_empty()),
            // Unavailable: a NoSchedule or NoExecute taint (`None` only informs).
            count(&|d| {
                d.taints
                    .iter()
                    .any(|t| t.contains(":NoSchedule") || t.contains(":NoExecute"))
            }),
        ),
        free: count(&|d| d.free),
    }
}

/// The node entry's own sums over the driver's resources (`gpu.nvidia.com/*`): capacity, allocatable,
/// allocated, free.
pub fn entry_sums(entry: &GpuNodeEntry) -> (i64, i64, i64, i64) {
    let ours = |k: &String| k.starts_with(&format!("{DRIVER}/"));
    let text = |m: &BTreeMap<String, String>| -> i64 {
        m.iter()
            .filter(|(k, _)| ours(k))
            .map(|(_, v)| v.parse::<i64>().unwrap())
            .sum()
    };
    let num = |m: &BTreeMap<String, u64>| -> i64 {
        m.iter()
            .filter(|(k, _)| ours(k))
            .map(|(_, v)| *v as i64)
            .sum()
    };
    (
        text(&entry.capacity),
        text(&entry.allocatable),
        num(&entry.allocated),
        num(&entry.free),
    )
}

pub fn node_entry<'a>(scanned: &'a GpuInventoryStatus, node: &str) -> &'a GpuNodeEntry {
    scanned
        .nodes
        .iter()
        .find(|n| n.name == node)
        .unwrap_or_else(|| panic!("scan lists no node {node}"))
}

/// Upstream's pool of request `pool` (one request per pool, named after it).
pub async fn upstream_pool(requests: &PoolStatusRequests, pool: &str) -> UpstreamPool {
    let pools = requests.complete(pool).await;
    assert_eq!(
        pools.len(),
        1,
        "request {pool} is of pool {pool} only: {pools:?}"
    );
    let found = pools.into_iter().next().unwrap();
    assert_eq!(
        (found.pool.as_str(), found.node.as_deref()),
        (pool, Some(pool))
    );
    assert_eq!(found.validation_error, None, "{found:?}");
    found
}

/// One line of the table; `up` is `None` where upstream wrote no pool entry.
pub fn row(case: &str, up: Option<Counts>, ours: Ours) -> String {
    let c = |c: Counts| {
        format!(
            "{:>5} {:>5} {:>5} {:>5}",
            c.total, c.allocated, c.available, c.unavailable
        )
    };
    let up = up.map_or_else(|| format!("{:^23}", "(no entry)"), c);
    format!("{case:<26} {up} | {} | {:>4}", c(ours.kep), ours.free)
}

pub fn table(rows: &[String]) {
    eprintln!(
        "{:<26} {:^23} | {:^23} | ours\n{:<26} {:>5} {:>5} {:>5} {:>5} | {:>5} {:>5} {:>5} {:>5} | free",
        "",
        "upstream (KEP-5677)",
        "ours, KEP's rules",
        "pool",
        "total",
        "alloc",
        "avail",
        "unav",
        "total",
        "alloc",
        "avail",
        "unav"
    );
    for row in rows {
        eprintln!("{row}");
    }
}
