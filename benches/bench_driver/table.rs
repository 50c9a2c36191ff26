//! Cells and rows of the printed table (BENCH_TABLE), shared by the scenarios' blocks.

use serde_json::Value;

/// A number with `decimals` decimals, or "-" when absent.
pub fn num(v: &Value, decimals: usize) -> String {
    match v.as_f64() {
        Some(x) => format!("{x:.decimals$}"),
        None => "-".into(),
    }
}

/// "a / b", each as [`num`].
pub fn pair(a: &Value, b: &Value, decimals: usize) -> String {
    format!("{} / {}", num(a, decimals), num(b, decimals))
}

/// One row: label, measured value, target.
pub fn row(out: &mut String, label: &str, value: String, target: &str) {
    out.push_str(&format!("{label:<44} {value:>16} {target:>14}\n"));
}

/// An object as "k=v, k=v", or "none".
pub fn compact(v: &Value) -> String {
    match v.as_object() {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".into(),
    }
}

/// The programs of a scenario section (`programs`, each one's results under its name) side by side: a
/// column each, and `operator / previous` when both ran.
pub struct Side<'a> {
    names: Vec<String>,
    runs: Vec<&'a Value>,
    /// Indices of the operator and the previous program, when both are columns.
    ratio: Option<(usize, usize)>,
}

/// "n/a" for a program that writes no GpuNodes, else `cell`.
pub fn gpunode_cell(run: &Value, cell: impl Fn(&Value) -> String) -> String {
    match run["writes_gpunodes"] == false {
        true => "n/a".into(),
        false => cell(run),
    }
}

impl<'a> Side<'a> {
    /// The columns of `section` (a section without `programs`: the operator alone).
    pub fn of(section: &'a Value) -> Self {
        let names: Vec<String> = match section["programs"].as_array() {
            Some(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            None => vec!["operator".into()],
        };
        let runs: Vec<&Value> = names.iter().map(|n| &section[n.as_str()]).collect();
        let at = |n: &str| names.iter().position(|m| m == n);
        let ratio = at("operator").zip(at("previous"));
        Side { names, runs, ratio }
    }

    /// Whether any program has results.
    pub fn any(&self) -> bool {
        self.runs.iter().any(|r| r.is_object())
    }

    pub fn runs(&self) -> impl Iterator<Item = (&str, &'a Value)> + '_ {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.runs.iter().copied())
    }

    /// The column heads under `title`.
    pub fn header(&self, out: &mut String, title: &str) {
        let mut line = format!("{title:<44}");
        for n in &self.names {
            line.push_str(&format!(" {n:>16}"));
        }
        if self.ratio.is_some() {
            line.push_str(&format!(" {:>9}", "op/prev"));
        }
        out.push_str(&format!("{line} {:>14}\n", "target"));
    }

    /// A row of `cell` per program, without a ratio.
    pub fn row(
        &self,
        out: &mut String,
        label: &str,
        cell: impl Fn(&Value) -> String,
        target: &str,
    ) {
        self.row_ratio(out, label, cell, |_| None, target);
    }

    /// A row of `cell` per program, and `value` operator / previous when both have one.
    pub fn row_ratio(
        &self,
        out: &mut String,
        label: &str,
        cell: impl Fn(&Value) -> String,
        value: impl Fn(&Value) -> Option<f64>,
        target: &str,
    ) {
        let mut line = format!("{label:<44}");
        for r in &self.runs {
            let c = if r.is_object() { cell(r) } else { "-".into() };
            line.push_str(&format!(" {c:>16}"));
        }
        if let Some((op, prev)) = self.ratio {
            let ratio = match (value(self.runs[op]), value(self.runs[prev])) {
                (Some(a), Some(b)) if b > 0.0 && a.is_finite() => format!("{:.3}", a / b),
                _ => "-".into(),
            };
            line.push_str(&format!(" {ratio:>9}"));
        }
        out.push_str(&format!("{line} {target:>14}\n"));
    }

    /// A number at `path` (keys, from the run) per program, with its ratio.
    pub fn num_row(
        &self,
        out: &mut String,
        label: &str,
        path: &[&str],
        decimals: usize,
        target: &str,
    ) {
        let at = |r: &Value| path.iter().fold(r.clone(), |v, k| v[*k].clone());
        self.row_ratio(
            out,
            label,
            |r| num(&at(r), decimals),
            |r| at(r).as_f64(),
            target,
        );
    }

    /// Peak RSS, the quiet window's writes and the churn's write and CPU rows, from each run.
    pub fn common_rows(&self, out: &mut String, rss_target: &str) {
        self.num_row(
            out,
            "peak RSS after convergence (MiB)",
            &["rss_converged_mib"],
            1,
            rss_target,
        );
        self.num_row(
            out,
            "peak RSS at the end (MiB)",
            &["rss_peak_mib"],
            1,
            rss_target,
        );
        self.num_row(
            out,
            "quiet: writes in the window (all resources)",
            &["quiet", "writes", "writes"],
            0,
            "0",
        );
        for res in self.resources(&["quiet", "writes", "by_resource"]) {
            let at = |r: &Value| {
                r["quiet"]["writes"]["by_resource"][res.as_str()]["writes"]
                    .as_u64()
                    .unwrap_or(0)
            };
            self.row(out, &format!("  quiet: {res}"), |r| at(r).to_string(), "0");
        }
    }

    /// The resources any program has under `path` (an object keyed by resource), sorted.
    fn resources(&self, path: &[&str]) -> Vec<String> {
        let mut all = std::collections::BTreeSet::new();
        for r in &self.runs {
            let v = path.iter().fold((*r).clone(), |v, k| v[*k].clone());
            all.extend(v.as_object().into_iter().flat_map(|m| m.keys().cloned()));
        }
        all.into_iter().collect()
    }

    /// The churn's write and CPU rows: status and ConfigMap writes per second (whole churn), then every
    /// write while the changes came, by resource and per object, with the API server's time per write.
    pub fn churn_rows(&self, out: &mut String) {
        let rate = |k: &'static str| {
            move |r: &Value| {
                pair(
                    &r["churn"][k]["per_sec"],
                    &r["churn"][k]["busiest_second"],
                    2,
                )
            }
        };
        let per_sec = |k: &'static str| move |r: &Value| r["churn"][k]["per_sec"].as_f64();
        self.row_ratio(
            out,
            "churn: status writes/s (mean / busiest s)",
            rate("status"),
            per_sec("status"),
            "<= 10",
        );
        self.row_ratio(
            out,
            "churn: ConfigMap writes/s (mean / busiest)",
            rate("configmap"),
            per_sec("configmap"),
            "<= 10",
        );
        self.num_row(
            out,
            "churn: all writes/s while sending",
            &["churn", "writes", "per_sec"],
            2,
            "",
        );
        self.num_row(
            out,
            "  most writes one object got in one s",
            &["churn", "writes", "busiest_object_second"],
            0,
            "<= 2",
        );
        self.num_row(
            out,
            "  writes per object per s (mean)",
            &["churn", "writes", "per_object_per_sec"],
            3,
            "",
        );
        for res in self.resources(&["churn", "writes", "by_resource"]) {
            let path = ["churn", "writes", "by_resource", res.as_str()];
            let at =
                |r: &Value, k: &str| path.iter().fold(r.clone(), |v, p| v[*p].clone())[k].clone();
            // A program whose churn was measured and that did not write the resource: 0.
            let rate = |r: &Value| match r["churn"]["writes"].is_object() {
                true => Some(at(r, "per_sec").as_f64().unwrap_or(0.0)),
                false => None,
            };
            self.row_ratio(
                out,
                &format!("  {res}: writes/s"),
                |r| num(&Value::from(rate(r)), 2),
                rate,
                "",
            );
            self.row(
                out,
                "    most per object-second / per object/s",
                |r| {
                    format!(
                        "{} / {}",
                        num(&at(r, "busiest_object_second"), 0),
                        num(&at(r, "per_object_per_sec"), 3)
                    )
                },
                "<= 2",
            );
            self.row(
                out,
                "    API server ms per write p50 / p99",
                |r| pair(&at(r, "server_ms")["p50"], &at(r, "server_ms")["p99"], 1),
                "",
            );
        }
        self.row_ratio(
            out,
            "churn: CPU s (% of one core)",
            |r| pair(&r["churn"]["cpu_secs"], &r["churn"]["cpu_pct_of_core"], 1),
            |r| r["churn"]["cpu_secs"].as_f64(),
            "",
        );
        self.row(
            out,
            "churn: converged after (s)",
            |r| match r["churn"]["converged"] == true {
                true => num(&r["churn"]["settle_secs"], 2),
                false => "never".into(),
            },
            "",
        );
    }
}
