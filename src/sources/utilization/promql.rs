//! The PromQL the source asks: which GPU series stayed below the threshold through the whole window.
//!
//! Per metric `M`, with `L` the labels the join reads ([`LABELS`]) and `W` the window:
//! - `max by (L) (max_over_time(M[W]))`: the highest activity in the window (`M_max`);
//! - `max by (L) (M offset W)`: the series existed a window ago (`M_old`), so a pod younger than the window
//!   is never idle;
//! - `max by (L) (M)`: the series is there now (`M_now`), so a pod that ended, or a GPU whose labels changed
//!   (a new exporter pod behind a job without `honor_labels`), is not idle under its old labels for a window.
//!
//! `DCGM_FI_PROF_GR_ENGINE_ACTIVE` (0-1) where the series exists, which is always for a MIG instance (whose
//! `DCGM_FI_DEV_GPU_UTIL` reads 0 busy or not), else `DCGM_FI_DEV_GPU_UTIL` (0-100):
//! `(E_max < T and E_old and E_now) or ((U_max < 100 T and U_old and U_now) unless E_max)`.
//! `max by (L)` keeps only what the join reads, which drops the exporter's other labels from the answer
//! (`modelName`, `pci_bus_id`, the driver version, the scrape's `job` and `instance`), and merges the same GPU
//! scraped twice.
//!
//! Where nodes share their GPUs ([`IdleQuery::with_busy`]), the same query also returns those nodes' busy
//! series, the same expressions with `>=` and a `Hostname=~"node-a|node-b"` matcher (and `hostname`, the later
//! spelling), marked with [`BUSY_LABEL`] by `label_replace`: `(idle) or label_replace(busy, ...)`. A busy shared
//! GPU is then known as busy, not as unmeasured, for the cost of the shared nodes' GPUs alone; a fleet without
//! sharing asks the same as before.

use std::time::Duration;

use crate::inventory::utilization::series::{BUSY_LABEL, LABELS};

/// dcgm-exporter's graphics engine activity, a ratio (a profiling field, default on since 2.x).
pub const GR_ENGINE_ACTIVE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
/// dcgm-exporter's GPU utilization, in percent (reads 0 on a MIG instance).
pub const GPU_UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";

/// What the queries are built from.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleQuery {
    /// Extra label matchers for every series, without braces (`cluster="a",job="dcgm-exporter"`).
    pub matchers: String,
    /// The window.
    pub window: Duration,
    /// Idle below this fraction of full activity (0.01 is 1 %).
    pub below: f64,
}

impl IdleQuery {
    /// The idle series.
    pub fn idle(&self) -> String {
        let matchers = self.matchers.as_str();
        let offset = self.offset();
        let e = |at: &str| self.at(GR_ENGINE_ACTIVE, matchers, at);
        let u = |at: &str| self.at(GPU_UTIL, matchers, at);
        let (e_max, e_old, e_now) = (self.max(GR_ENGINE_ACTIVE, matchers), e(&offset), e(""));
        let (u_max, u_old, u_now) = (self.max(GPU_UTIL, matchers), u(&offset), u(""));
        let below = self.below;
        let percent = self.below * 100.0;
        format!(
            "({e_max} < {below} and {e_old} and {e_now}) or \
             (({u_max} < {percent} and {u_old} and {u_now}) unless {e_max})"
        )
    }

    /// The idle series, and the busy series of the nodes named in `shared` (sorted names of the nodes that
    /// share their GPUs) marked with [`BUSY_LABEL`]; the idle series alone where `shared` is empty.
    pub fn with_busy(&self, shared: &[String]) -> String {
        if shared.is_empty() {
            return self.idle();
        }
        let nodes = shared
            .iter()
            .map(|n| regex_literal(n))
            .collect::<Vec<_>>()
            .join("|");
        let busy: Vec<String> = ["Hostname", "hostname"]
            .iter()
            .map(|host| {
                let matchers = match self.matchers.is_empty() {
                    true => format!("{host}=~\"{nodes}\""),
                    false => format!("{},{host}=~\"{nodes}\"", self.matchers),
                };
                format!("({})", self.busy(&matchers))
            })
            .collect();
        format!(
            "({}) or label_replace({}, \"{}\", \"{}\", \"\", \"\")",
            self.idle(),
            busy.join(" or "),
            BUSY_LABEL.0,
            BUSY_LABEL.1
        )
    }

    /// How many series [`IdleQuery::with_busy`] returns: asked first, so that an answer past the bound is
    /// never fetched.
    pub fn count(&self, shared: &[String]) -> String {
        format!("count({})", self.with_busy(shared))
    }

    /// The series at or above the threshold through the window and there now (a busy GPU need not have been
    /// there a window ago).
    fn busy(&self, matchers: &str) -> String {
        let (e_max, e_now) = (
            self.max(GR_ENGINE_ACTIVE, matchers),
            self.at(GR_ENGINE_ACTIVE, matchers, ""),
        );
        let (u_max, u_now) = (
            self.max(GPU_UTIL, matchers),
            self.at(GPU_UTIL, matchers, ""),
        );
        let below = self.below;
        let percent = self.below * 100.0;
        format!(
            "({e_max} >= {below} and {e_now}) or \
             (({u_max} >= {percent} and {u_now}) unless {e_max})"
        )
    }

    fn max(&self, metric: &str, matchers: &str) -> String {
        format!(
            "max by ({}) (max_over_time({metric}{{{matchers}}}[{}]))",
            LABELS.join(", "),
            duration(self.window)
        )
    }

    /// The metric's series at an instant: now, or ` offset W`.
    fn at(&self, metric: &str, matchers: &str, offset: &str) -> String {
        format!(
            "max by ({}) ({metric}{{{matchers}}}{offset})",
            LABELS.join(", ")
        )
    }

    fn offset(&self) -> String {
        format!(" offset {}", duration(self.window))
    }
}

/// `text` as a regular expression that matches it alone, written inside a PromQL string (whose own escapes
/// double the backslash).
fn regex_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' | '\\' => {
                out.push_str("\\\\");
                out.push(c);
            }
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// A duration as PromQL and the status write it: `30m`, `1h`, `90s`.
pub fn duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs > 0 && secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs > 0 && secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_query_prefers_the_engine_activity_and_asks_for_a_whole_window() {
        let q = IdleQuery {
            matchers: r#"cluster="a""#.into(),
            window: Duration::from_secs(1800),
            below: 0.01,
        };
        let text = q.idle();
        assert!(
            text.starts_with("(max by (Hostname, hostname, gpu,"),
            "{text}"
        );
        assert!(text.contains(
            r#"(max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{cluster="a"}[30m])) < 0.01 and "#
        ));
        assert!(
            text.contains(
                r#"(DCGM_FI_PROF_GR_ENGINE_ACTIVE{cluster="a"} offset 30m) and max by ("#
            )
        );
        assert!(
            text.contains(r#"(DCGM_FI_DEV_GPU_UTIL{cluster="a"})) unless"#),
            "{text}"
        );
        assert!(
            text.contains(r#"(max_over_time(DCGM_FI_DEV_GPU_UTIL{cluster="a"}[30m])) < 1 and "#)
        );
        assert!(text.contains(") unless max by ("), "{text}");
        assert_eq!(q.count(&[]), format!("count({text})"));
    }

    /// Busy series only where nodes share their GPUs, only of those nodes, under either node label, marked.
    #[test]
    fn the_busy_series_asked_are_the_shared_nodes_alone() {
        let q = IdleQuery {
            matchers: r#"cluster="a""#.into(),
            window: Duration::from_secs(1800),
            below: 0.01,
        };
        assert_eq!(
            q.with_busy(&[]),
            q.idle(),
            "no sharing: the query of before"
        );
        let text = q.with_busy(&["sliced-1".into(), "hami.gpu".into()]);
        assert!(
            text.starts_with(&format!("({}) or label_replace(", q.idle())),
            "{text}"
        );
        assert!(
            text.ends_with(r#", "gpu_inventory_activity", "busy", "", "")"#),
            "{text}"
        );
        for host in ["Hostname", "hostname"] {
            let selector = format!(
                r#"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{cluster="a",{host}=~"sliced-1|hami\\.gpu"}}[30m])) >= 0.01"#
            );
            assert!(text.contains(&selector), "{selector} not in {text}");
        }
        assert!(text.contains(r#"[30m])) >= 1 and max by ("#), "{text}");
        let bare = IdleQuery {
            matchers: String::new(),
            ..q
        };
        assert!(
            bare.with_busy(&["n".into()])
                .contains(r#"DCGM_FI_DEV_GPU_UTIL{Hostname=~"n"}"#)
        );
    }

    #[test]
    fn durations_read_as_prometheus_writes_them() {
        assert_eq!(duration(Duration::from_secs(1800)), "30m");
        assert_eq!(duration(Duration::from_secs(7200)), "2h");
        assert_eq!(duration(Duration::from_secs(90)), "90s");
    }
}
