//! Both sides of the referee (tests/dra_referee.rs) in KEP-5677's terms: a pool's counts from a
//! ResourcePoolStatusRequest's status and from `scan -o json`'s device list, and a table of the two.

use std::collections::{BTreeMap, BTreeSet};

use gpu_inventory_operator::crd::{DraDeviceEntry, GpuInventoryStatus, GpuNodeEntry};

use super::dra::DRIVER;
use super::pool_status::{PoolStatusRequests, UpstreamPartition, UpstreamPool};

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
    upstream_pool_of(requests, pool, pool).await
}

/// Upstream's pool of `request`, a request of that one pool.
pub async fn upstream_pool_of(
    requests: &PoolStatusRequests,
    request: &str,
    pool: &str,
) -> UpstreamPool {
    let pools = requests.complete(request).await;
    assert_eq!(
        pools.len(),
        1,
        "request {request} is of pool {pool} only: {pools:?}"
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

/// Ours for a partitionable pool in `partitionSummary`'s terms: the pool's devices grouped by the partition
/// type each was published with (`types`: device name to type), how many there are of each, and how many
/// more the operator says still fit (the node entry's `stillFit` of the type's resource; absent is none).
/// The node publishes this one pool, so its `stillFit` is the pool's.
pub fn ours_partitions(
    entry: &GpuNodeEntry,
    driver: &str,
    pool: &str,
    types: &BTreeMap<String, String>,
) -> Vec<UpstreamPartition> {
    let mut by_type: BTreeMap<&str, (BTreeSet<&str>, i64)> = BTreeMap::new();
    for device in entry
        .devices
        .iter()
        .filter(|d| d.driver == driver && d.pool == pool)
    {
        let kind = types
            .get(&device.name)
            .unwrap_or_else(|| panic!("scan lists device {} that was not published", device.name));
        let (resources, total) = by_type.entry(kind).or_default();
        resources.insert(&device.resource);
        *total += 1;
    }
    by_type
        .into_iter()
        .map(|(kind, (resources, total))| {
            assert_eq!(
                resources.len(),
                1,
                "type {kind} is one resource: {resources:?}"
            );
            let resource = resources.first().unwrap();
            UpstreamPartition {
                kind: kind.to_owned(),
                total,
                allocatable: entry.still_fit.get(*resource).map_or(0, |n| *n as i64),
            }
        })
        .collect()
}

/// The partition summaries side by side, one line per type.
pub fn partition_table(case: &str, upstream: &[UpstreamPartition], ours: &[UpstreamPartition]) {
    eprintln!("{case}: partition type, upstream total/allocatable | ours total/stillFit");
    for (up, ours) in upstream.iter().zip(ours) {
        eprintln!(
            "  {:<12} {:>5} {:>5} | {:<12} {:>5} {:>5}",
            up.kind, up.total, up.allocatable, ours.kind, ours.total, ours.allocatable
        );
    }
}
