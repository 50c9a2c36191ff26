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

use std::time::Duration;

use crate::inventory::utilization::series::LABELS;

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
        let e = |at: &str| self.at(GR_ENGINE_ACTIVE, at);
        let u = |at: &str| self.at(GPU_UTIL, at);
        let (e_max, e_old, e_now) = (self.max(GR_ENGINE_ACTIVE), e(&self.offset()), e(""));
        let (u_max, u_old, u_now) = (self.max(GPU_UTIL), u(&self.offset()), u(""));
        let below = self.below;
        let percent = self.below * 100.0;
        format!(
            "({e_max} < {below} and {e_old} and {e_now}) or \
             (({u_max} < {percent} and {u_old} and {u_now}) unless {e_max})"
        )
    }

    /// How many idle series there are: asked first, so that an answer past the bound is never fetched.
    pub fn count(&self) -> String {
        format!("count({})", self.idle())
    }

    fn max(&self, metric: &str) -> String {
        format!(
            "max by ({}) (max_over_time({metric}{{{}}}[{}]))",
            LABELS.join(", "),
            self.matchers,
            duration(self.window)
        )
    }

    /// The metric's series at an instant: now, or ` offset W`.
    fn at(&self, metric: &str, offset: &str) -> String {
        format!(
            "max by ({}) ({metric}{{{}}}{offset})",
            LABELS.join(", "),
            self.matchers,
        )
    }

    fn offset(&self) -> String {
        format!(" offset {}", duration(self.window))
    }
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
        assert_eq!(q.count(), format!("count({text})"));
    }

    #[test]
    fn durations_read_as_prometheus_writes_them() {
        assert_eq!(duration(Duration::from_secs(1800)), "30m");
        assert_eq!(duration(Duration::from_secs(7200)), "2h");
        assert_eq!(duration(Duration::from_secs(90)), "90s");
    }
}
