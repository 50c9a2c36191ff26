//! The utilization flags (`run`, `scan`, `idle` and the plugin): where Prometheus is and what idle means
//! (docs/utilization.md).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::duration_arg::parse_duration;
use crate::error::{Error, Result};
use crate::sources::utilization::UtilizationConfig;
use crate::sources::utilization::prometheus::{Endpoint, Prometheus};
use crate::sources::utilization::promql::IdleQuery;

/// The largest answer read from Prometheus: about 2,000 bytes a series at the default bound.
const MAX_ANSWER_BYTES: usize = 256 << 20;

/// Which held GPUs sit idle, from dcgm-exporter's series in Prometheus.
#[derive(Debug, Args, Clone, Default)]
pub struct UtilizationSourceArgs {
    /// The Prometheus (or Thanos, Mimir: any that serves `/api/v1/query`) holding dcgm-exporter's series, e.g.
    /// `http://prometheus-k8s.monitoring:9090`. Unset: activity is not read and nothing about idle GPUs is
    /// shown.
    #[arg(long, env = "GPUINV_PROMETHEUS_URL", value_name = "URL")]
    pub prometheus_url: Option<String>,
    /// A file holding a bearer token for Prometheus, read at each query (a projected service account token
    /// rotates).
    #[arg(long, env = "GPUINV_PROMETHEUS_BEARER_TOKEN_FILE", value_name = "FILE")]
    pub prometheus_bearer_token_file: Option<PathBuf>,
    /// A PEM file of the CA certificates that sign Prometheus's certificate; default: the system's roots.
    #[arg(long, env = "GPUINV_PROMETHEUS_CA_FILE", value_name = "FILE")]
    pub prometheus_ca_file: Option<PathBuf>,
    /// How long one query may take before the round fails (the idle figures then say Unknown).
    #[arg(long, env = "GPUINV_PROMETHEUS_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub prometheus_timeout: Duration,
    /// At most one round of queries this often; changes to pods never trigger one.
    #[arg(long, env = "GPUINV_UTILIZATION_INTERVAL", default_value = "60s", value_parser = parse_duration)]
    pub utilization_interval: Duration,
    /// A held GPU is idle when its activity stayed below `--idle-below` through this whole window; a pod
    /// younger than the window is not idle.
    #[arg(long, env = "GPUINV_IDLE_WINDOW", default_value = "30m", value_parser = parse_window)]
    pub idle_window: Duration,
    /// The activity, in percent, below which a GPU counts as idle (`DCGM_FI_PROF_GR_ENGINE_ACTIVE` x 100, else
    /// `DCGM_FI_DEV_GPU_UTIL`).
    #[arg(long, env = "GPUINV_IDLE_BELOW", default_value = "1", value_name = "PERCENT", value_parser = parse_percent)]
    pub idle_below: f64,
    /// Label matchers added to every series selector, without braces, e.g. `cluster="prod-a"` where one
    /// Prometheus holds several clusters' series.
    #[arg(
        long,
        env = "GPUINV_UTILIZATION_SELECTOR",
        value_name = "MATCHERS",
        default_value = ""
    )]
    pub utilization_selector: String,
    /// The most idle series one round fetches: a larger answer is refused (state Unknown, with the count).
    #[arg(long, env = "GPUINV_UTILIZATION_MAX_SERIES", default_value_t = 200_000)]
    pub utilization_max_series: u64,
    /// After a failed round, the last answer stands (the message says so, and from when) for this long
    /// before the idle figures say Unknown and are withheld; `0s`: Unknown at the first failure. One slow
    /// answer from a loaded Prometheus then changes no figure and rewrites no GpuNode.
    #[arg(long, env = "GPUINV_UTILIZATION_HOLD", default_value = "5m", value_parser = parse_duration)]
    pub utilization_hold: Duration,
}

impl UtilizationSourceArgs {
    /// The client and the source's settings; `None` without `--prometheus-url`. An error names the flag.
    pub fn source(&self) -> Result<Option<(Prometheus, UtilizationConfig)>> {
        let Some(url) = self
            .prometheus_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
        else {
            return Ok(None);
        };
        let endpoint = Endpoint {
            url: url.trim().to_owned(),
            bearer_token_file: self.prometheus_bearer_token_file.clone(),
            ca_file: self.prometheus_ca_file.clone(),
            timeout: self.prometheus_timeout,
            max_bytes: MAX_ANSWER_BYTES,
        };
        let matchers = self.utilization_selector.trim();
        if matchers.starts_with('{') || matchers.contains('}') {
            return Err(Error::InvalidFlag(format!(
                "--utilization-selector {matchers:?}: give the matchers without braces, e.g. cluster=\"a\""
            )));
        }
        let client =
            Prometheus::new(endpoint.clone()).map_err(|e| Error::InvalidFlag(e.to_string()))?;
        let config = UtilizationConfig {
            endpoint,
            interval: self.utilization_interval.max(Duration::from_secs(1)),
            query: IdleQuery {
                matchers: matchers.to_owned(),
                window: self.idle_window,
                below: self.idle_below,
            },
            max_series: self.utilization_max_series,
            hold: self.utilization_hold,
        };
        Ok(Some((client, config)))
    }
}

/// `--idle-window`: a duration of whole seconds, at least a minute (dcgm-exporter samples every 30 s).
fn parse_window(text: &str) -> std::result::Result<Duration, String> {
    let window = parse_duration(text)?;
    if window < Duration::from_secs(60) || window.subsec_nanos() != 0 {
        return Err(format!(
            "{text:?}: the window is whole seconds, at least 1m"
        ));
    }
    Ok(window)
}

/// `--idle-below`: a percentage (`1`, `0.5`, `5%`) as a fraction, above 0 and at most 100.
fn parse_percent(text: &str) -> std::result::Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p / 100.0),
        _ => Err(format!(
            "{text:?} is not a percentage above 0 and at most 100 (e.g. 1 or 0.5%)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_windows_read_as_documented() {
        assert_eq!(parse_percent("1"), Ok(0.01));
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert!(
            parse_percent("0").is_err()
                && parse_percent("150").is_err()
                && parse_percent("x").is_err()
        );
        assert_eq!(parse_window("30m"), Ok(Duration::from_secs(1800)));
        assert!(parse_window("10s").is_err());
    }

    #[test]
    fn no_url_is_off_and_a_bad_one_names_its_flag() {
        assert!(UtilizationSourceArgs::default().source().unwrap().is_none());
        let bad = UtilizationSourceArgs {
            prometheus_url: Some("prometheus:9090".into()),
            ..UtilizationSourceArgs::default()
        };
        let err = bad.source().err().unwrap().to_string();
        assert!(err.contains("--prometheus-url"), "{err}");
        let braces = UtilizationSourceArgs {
            prometheus_url: Some("http://p:9090".into()),
            utilization_selector: "{cluster=\"a\"}".into(),
            ..UtilizationSourceArgs::default()
        };
        assert!(
            braces
                .source()
                .err()
                .unwrap()
                .to_string()
                .contains("without braces")
        );
    }
}
