//! dcgm-exporter's history as OpenMetrics text, the input of `promtool tsdb create-blocks-from openmetrics`.
//!
//! Typed, so that a test says what happened to which GPU ([`dcgm_labels`], [`Series::constant`]) and the
//! series carry exactly the labels dcgm-exporter gives them: the PromQL under test groups and joins by label
//! name, and a label spelled differently here than in a cluster would make a test pass that a cluster fails.
//!
//! The label set is dcgm-exporter's, read from NVIDIA/dcgm-exporter at tag 4.5.3-4.8.2 (commit 691c927):
//! - `internal/pkg/rendermetrics/render_metrics.go` (`gpuMetricsFormat`): `gpu`, `UUID` (`uuid` with
//!   `--use-old-namespace`), `pci_bus_id`, `device`, `modelName`, then `GPU_I_PROFILE` and `GPU_I_ID` for a MIG
//!   instance, `Hostname`, then the label-type counters (`DCGM_FI_DRIVER_VERSION` in `etc/default-counters.csv`)
//!   and the attributes of the mappers. Its main branch after that tag (commit d5e5f51, #655) spells the node
//!   `hostname`: [`DcgmLabels::lowercase_hostname`].
//! - `internal/pkg/transformation/const.go` and `kubernetes.go` (the pod mapper, `PodMapper`): `pod`,
//!   `namespace`, `container` (`pod_name`, `pod_namespace`, `container_name` with `--use-old-namespace`); for a
//!   DRA-allocated GPU also `dra_claim_name`, `dra_claim_namespace`, `dra_driver_name` (`gpu.nvidia.com`),
//!   `dra_pool_name`, `dra_device_name`; `pod_uid` only with `--kubernetes-enable-pod-uid`.
//! - `etc/default-counters.csv`: the metrics' TYPE and HELP ([`GPU_UTIL`], [`GR_ENGINE_ACTIVE`]).
//!
//! Prometheus adds `job` and `instance` when it scrapes ([`DcgmLabels::scraped`]). A scrape job without
//! `honor_labels` (a ServiceMonitor's default) whose targets carry `pod`, `namespace` and `container` (the
//! exporter pod's own, from Kubernetes service discovery) renames dcgm-exporter's to `exported_pod`,
//! `exported_namespace`, `exported_container` ([`DcgmLabels::exported`], [`DcgmLabels::exporter_pod`]).

use std::collections::HashMap;
use std::io::Write;

use jiff::Timestamp;

/// GPU utilization in percent (0-100), a gauge; dcgm-exporter's default counter.
pub const GPU_UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
/// The ratio (0-1) of time the graphics engine was active, a gauge; a profiling counter, absent where DCGM
/// cannot profile (and the better idle signal where it can: it is per MIG instance).
pub const GR_ENGINE_ACTIVE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";

/// `modelName` of the GPUs [`dcgm_labels`] describes.
pub const MODEL_NAME: &str = "NVIDIA H100 80GB HBM3";
/// `DCGM_FI_DRIVER_VERSION` of the GPUs [`dcgm_labels`] describes (the driver of tests/fixtures' H100s).
pub const DRIVER_VERSION: &str = "580.95.05";
/// `dra_driver_name` of a GPU allocated through NVIDIA's DRA driver (dcgm-exporter's `DRAGPUDriverName`, the
/// only driver it maps).
pub const DRA_DRIVER: &str = "gpu.nvidia.com";

/// `# HELP` and `# TYPE` of a metric family: dcgm-exporter's for the metrics it exports
/// (`etc/default-counters.csv`), none and `unknown` for any other.
fn family_meta(metric: &str) -> (Option<&'static str>, &'static str) {
    match metric {
        GPU_UTIL => (Some("GPU utilization (in %)."), "gauge"),
        GR_ENGINE_ACTIVE => (
            Some("Ratio of time the graphics engine is active."),
            "gauge",
        ),
        "DCGM_FI_DEV_FB_USED" => (Some("Framebuffer memory used (in MiB)."), "gauge"),
        _ => (None, "unknown"),
    }
}

/// One time series: a metric, its labels, and its samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The metric name, e.g. [`GPU_UTIL`].
    pub metric: String,
    /// Its labels, in the order they are written (Prometheus does not mind the order). An empty value is the
    /// same as no label to Prometheus, and is not written.
    pub labels: Vec<(String, String)>,
    /// (unix seconds, value); [`render`] writes them in increasing time whatever their order here.
    pub samples: Vec<(i64, f64)>,
}

impl Series {
    /// A series of `metric` with `labels` and no samples yet.
    pub fn new(metric: &str, labels: &[(&str, &str)]) -> Series {
        Series {
            metric: metric.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            samples: Vec::new(),
        }
    }

    /// Adds `value` every `step_secs` seconds from `from` to `to`, both included when `to - from` is a
    /// multiple of the step (none when `from` is after `to`). Sub-second parts of the times are dropped.
    pub fn constant(
        mut self,
        value: f64,
        from: Timestamp,
        to: Timestamp,
        step_secs: i64,
    ) -> Series {
        assert!(step_secs > 0, "a step of {step_secs} s");
        let (from, to) = (from.as_second(), to.as_second());
        self.samples
            .extend((from..=to).step_by(step_secs as usize).map(|t| (t, value)));
        self
    }

    /// Adds one sample, `value` at `time`.
    pub fn at(mut self, time: Timestamp, value: f64) -> Series {
        self.samples.push((time.as_second(), value));
        self
    }

    /// The value of label `name`, if it has one.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The labels dcgm-exporter gives the series of one GPU or MIG instance (see the module's documentation for
/// where each comes from), built up from [`dcgm_labels`]: `.pod(..)`, `.mig(..)`, `.dra_claim(..)`, then the
/// spellings of other releases and of the scrape. [`DcgmLabels::series`] makes a [`Series`] with them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcgmLabels {
    labels: Vec<(String, String)>,
}

/// The labels of whole GPU `gpu` (its index on the node) of node `node`, held by nobody, as dcgm-exporter
/// labels it: `gpu`, `UUID` ([`gpu_uuid`]), `pci_bus_id`, `device` (`nvidia<gpu>`), `modelName`
/// ([`MODEL_NAME`]), `Hostname` (the node's name: dcgm-exporter runs with `NODE_NAME` in a DaemonSet) and
/// `DCGM_FI_DRIVER_VERSION` ([`DRIVER_VERSION`]).
pub fn dcgm_labels(node: &str, gpu: u32) -> DcgmLabels {
    DcgmLabels {
        labels: vec![
            ("gpu".into(), gpu.to_string()),
            ("UUID".into(), gpu_uuid(node, gpu)),
            (
                "pci_bus_id".into(),
                format!("00000000:{:02X}:00.0", 0x18 + gpu),
            ),
            ("device".into(), format!("nvidia{gpu}")),
            ("modelName".into(), MODEL_NAME.into()),
            ("Hostname".into(), node.into()),
            ("DCGM_FI_DRIVER_VERSION".into(), DRIVER_VERSION.into()),
        ],
    }
}

/// A UUID-shaped, stable identifier of GPU `gpu` of node `node` (`GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`,
/// from an FNV-1a hash of both): what [`dcgm_labels`] puts in `UUID`. [`DcgmLabels::with_uuid`] sets another,
/// e.g. the one a test's DRA device or node object carries.
pub fn gpu_uuid(node: &str, gpu: u32) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in node.bytes().chain([0]).chain(gpu.to_le_bytes()) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!(
        "GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hash >> 32,
        (hash >> 16) & 0xffff,
        hash & 0xffff,
        gpu & 0xffff,
        hash.rotate_left(17) & 0xffff_ffff_ffff
    )
}

impl DcgmLabels {
    /// Sets label `name` to `value`, in place of its value if it has one, else last.
    pub fn set(mut self, name: &str, value: &str) -> DcgmLabels {
        match self.labels.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v = value.to_owned(),
            None => self.labels.push((name.to_owned(), value.to_owned())),
        }
        self
    }

    /// Without label `name`.
    pub fn without(mut self, name: &str) -> DcgmLabels {
        self.labels.retain(|(k, _)| k != name);
        self
    }

    /// Label `from` renamed `to`, in its place (nothing when it has no label `from`).
    fn rename(mut self, from: &str, to: &str) -> DcgmLabels {
        if let Some((k, _)) = self.labels.iter_mut().find(|(k, _)| k == from) {
            *k = to.to_owned();
        }
        self
    }

    /// Another `UUID` (or `uuid`, after [`DcgmLabels::old_names`]).
    pub fn with_uuid(self, uuid: &str) -> DcgmLabels {
        let name = if self.get("uuid").is_some() {
            "uuid"
        } else {
            "UUID"
        };
        self.set(name, uuid)
    }

    /// A MIG instance of this GPU: `GPU_I_PROFILE` (e.g. `1g.10gb`) and `GPU_I_ID` (its GPU instance id), where
    /// dcgm-exporter writes them, before `Hostname`. `gpu`, `UUID` and `device` stay the parent GPU's.
    pub fn mig(mut self, profile: &str, instance_id: u32) -> DcgmLabels {
        let at = self
            .labels
            .iter()
            .position(|(k, _)| k == "modelName")
            .map_or(self.labels.len(), |i| i + 1);
        self.labels
            .insert(at, ("GPU_I_ID".to_owned(), instance_id.to_string()));
        self.labels
            .insert(at, ("GPU_I_PROFILE".to_owned(), profile.to_owned()));
        self
    }

    /// Held by container `container` of pod `namespace`/`pod`: the pod mapper's `container`, `namespace`,
    /// `pod`.
    pub fn pod(self, namespace: &str, pod: &str, container: &str) -> DcgmLabels {
        self.set("container", container)
            .set("namespace", namespace)
            .set("pod", pod)
    }

    /// Allocated through NVIDIA's DRA driver to ResourceClaim `claim_namespace`/`claim_name`, as device `device`
    /// (e.g. `gpu-0`) of pool `pool` (NVIDIA's driver names a node's pool after the node): `dra_claim_name`,
    /// `dra_claim_namespace`, `dra_driver_name` ([`DRA_DRIVER`]), `dra_pool_name`, `dra_device_name`. The pod
    /// mapper also labels the pod that uses the claim: add [`DcgmLabels::pod`].
    pub fn dra_claim(
        self,
        claim_namespace: &str,
        claim_name: &str,
        pool: &str,
        device: &str,
    ) -> DcgmLabels {
        self.set("dra_claim_name", claim_name)
            .set("dra_claim_namespace", claim_namespace)
            .set("dra_driver_name", DRA_DRIVER)
            .set("dra_pool_name", pool)
            .set("dra_device_name", device)
    }

    /// As a scrape without `honor_labels` stores them when the target has labels of the same names:
    /// `pod`, `namespace`, `container` renamed `exported_pod`, `exported_namespace`, `exported_container`.
    /// [`DcgmLabels::exporter_pod`] adds the target's own.
    pub fn exported(self) -> DcgmLabels {
        self.rename("pod", "exported_pod")
            .rename("namespace", "exported_namespace")
            .rename("container", "exported_container")
    }

    /// The target labels of a ServiceMonitor's scrape of exporter pod `namespace`/`pod`: `namespace`, `pod`
    /// and `container` (`nvidia-dcgm-exporter`, the GPU operator's container name), in place of any the series
    /// had (call [`DcgmLabels::exported`] first to keep the holder's as `exported_*`).
    pub fn exporter_pod(self, namespace: &str, pod: &str) -> DcgmLabels {
        self.set("namespace", namespace)
            .set("pod", pod)
            .set("container", "nvidia-dcgm-exporter")
    }

    /// `job` and `instance`, as Prometheus adds them to what it scrapes (e.g. `gpu-metrics`, `10.0.0.7:9400`).
    pub fn scraped(self, job: &str, instance: &str) -> DcgmLabels {
        self.set("job", job).set("instance", instance)
    }

    /// The node as `hostname`: dcgm-exporter's main branch after 4.5.3-4.8.2 (commit d5e5f51).
    pub fn lowercase_hostname(self) -> DcgmLabels {
        self.rename("Hostname", "hostname")
    }

    /// dcgm-exporter's `--use-old-namespace` spellings: `uuid`, `pod_name`, `pod_namespace`, `container_name`.
    pub fn old_names(self) -> DcgmLabels {
        self.rename("UUID", "uuid")
            .rename("pod", "pod_name")
            .rename("namespace", "pod_namespace")
            .rename("container", "container_name")
    }

    /// The value of label `name`, if it has one.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The labels, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.labels
    }

    /// A series of `metric` with these labels and no samples yet.
    pub fn series(&self, metric: &str) -> Series {
        Series {
            metric: metric.to_owned(),
            labels: self.labels.clone(),
            samples: Vec::new(),
        }
    }

    /// A [`GPU_UTIL`] series with these labels and no samples yet.
    pub fn gpu_util(&self) -> Series {
        self.series(GPU_UTIL)
    }

    /// A [`GR_ENGINE_ACTIVE`] series with these labels and no samples yet.
    pub fn gr_engine_active(&self) -> Series {
        self.series(GR_ENGINE_ACTIVE)
    }
}

/// `series` as OpenMetrics text that `promtool tsdb create-blocks-from openmetrics` takes: per metric family
/// (in the order of their first series) `# HELP` (dcgm-exporter's text, for its metrics) and `# TYPE`, then all
/// of its series, each one's samples in increasing time with timestamps in seconds; label values escaped; the
/// text ends with `# EOF`. Series of the same metric and labels (in any order) are merged into one, since
/// promtool wants one series' samples in time order. Panics on a name Prometheus would reject, a label given
/// twice, or two samples of one series at the same second, naming the series.
pub fn render(series: &[Series]) -> String {
    let mut out = Vec::new();
    write_openmetrics(series, &mut out).expect("writing to memory");
    String::from_utf8(out).expect("the text is UTF-8")
}

/// [`render`] into `out` (a file, for a history too large to hold twice: the scale fleet's).
pub fn write_openmetrics(series: &[Series], out: &mut impl Write) -> std::io::Result<()> {
    // One family per metric, in the order of first appearance; one member per label set (found by its labels
    // sorted), holding them as written and all their samples.
    struct Member<'a> {
        labels: Vec<(&'a str, &'a str)>,
        samples: Vec<(i64, f64)>,
    }
    let mut families: Vec<(&str, Vec<Member>)> = Vec::new();
    // (metric, sorted labels) -> index in its family: a history of 150,000 series is not searched per series.
    type SeriesKey<'a> = (&'a str, Vec<(&'a str, &'a str)>);
    let mut index: HashMap<SeriesKey, usize> = HashMap::new();
    for s in series {
        assert!(
            is_name(&s.metric, true),
            "metric name {:?} is not a Prometheus metric name",
            s.metric
        );
        let labels: Vec<(&str, &str)> = s
            .labels
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for (k, _) in &labels {
            assert!(
                is_name(k, false) && !k.starts_with("__"),
                "label name {k:?} of a {} series is not a Prometheus label name",
                s.metric
            );
        }
        let mut key = labels.clone();
        key.sort_unstable();
        if let Some(w) = key.windows(2).find(|w| w[0].0 == w[1].0) {
            panic!("label {:?} given twice in {} {labels:?}", w[0].0, s.metric);
        }
        let family = match families.iter().position(|(m, _)| *m == s.metric) {
            Some(i) => &mut families[i].1,
            None => {
                families.push((s.metric.as_str(), Vec::new()));
                &mut families.last_mut().expect("just pushed").1
            }
        };
        match index.entry((s.metric.as_str(), key)) {
            std::collections::hash_map::Entry::Occupied(i) => {
                family[*i.get()].samples.extend_from_slice(&s.samples)
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(family.len());
                family.push(Member {
                    labels,
                    samples: s.samples.clone(),
                });
            }
        }
    }
    let mut out = std::io::BufWriter::new(out);
    for (metric, members) in families {
        let (help, kind) = family_meta(metric);
        if let Some(help) = help {
            writeln!(out, "# HELP {metric} {}", escape(help))?;
        }
        writeln!(out, "# TYPE {metric} {kind}")?;
        for Member {
            labels,
            mut samples,
            ..
        } in members
        {
            let labels = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect::<Vec<_>>()
                .join(",");
            let name = if labels.is_empty() {
                metric.to_owned()
            } else {
                format!("{metric}{{{labels}}}")
            };
            samples.sort_by_key(|(t, _)| *t);
            if let Some(w) = samples.windows(2).find(|w| w[0].0 == w[1].0) {
                panic!("two samples at {} s in {name}", w[0].0);
            }
            for (t, v) in samples {
                writeln!(out, "{name} {} {t}", number(v))?;
            }
        }
    }
    out.write_all(b"# EOF\n")?;
    out.flush()
}

/// A label value or HELP text escaped for OpenMetrics: backslash, double quote, line feed.
fn escape(text: &str) -> String {
    text.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A sample value as OpenMetrics writes it: `NaN`, `+Inf`, `-Inf`, else the shortest decimal that reads back
/// as the same f64 (Rust's `Display`: `85`, `0.8`, never an exponent).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v.is_infinite() {
        format!("{}Inf", if v > 0.0 { '+' } else { '-' })
    } else {
        v.to_string()
    }
}

/// A metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`) or a label name (the same without `:`).
fn is_name(name: &str, colon: bool) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':');
    name.chars()
        .next()
        .is_some_and(|c| ok(c) && !c.is_ascii_digit())
        && name.chars().all(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_of_the_same_labels_in_any_order_are_merged_and_written_in_time_order() {
        let a = Series::new(GPU_UTIL, &[("gpu", "0"), ("Hostname", "n1")])
            .at(Timestamp::from_second(120).unwrap(), 5.0);
        let b = Series::new(GPU_UTIL, &[("Hostname", "n1"), ("gpu", "0")])
            .at(Timestamp::from_second(60).unwrap(), 0.5);
        let c = Series::new(GPU_UTIL, &[("gpu", "1"), ("Hostname", "n1")])
            .at(Timestamp::from_second(60).unwrap(), 7.0);
        let text = render(&[a, c, b]);
        assert_eq!(
            text,
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n\
             # TYPE DCGM_FI_DEV_GPU_UTIL gauge\n\
             DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n1\"} 0.5 60\n\
             DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n1\"} 5 120\n\
             DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"n1\"} 7 60\n\
             # EOF\n"
        );
    }

    #[test]
    fn a_file_gets_the_same_text() {
        let s = dcgm_labels("node-a", 3)
            .pod("team \"x\"", "job-0", "train")
            .gpu_util()
            .at(Timestamp::from_second(0).unwrap(), 1.0);
        let mut out = Vec::new();
        write_openmetrics(std::slice::from_ref(&s), &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), render(&[s]));
        assert!(render(&[]).ends_with("# EOF\n"));
    }
}
