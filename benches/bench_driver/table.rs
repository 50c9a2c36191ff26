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

/// The churn's write and CPU rows (status and ConfigMap writes per second, CPU), from a churn section.
pub fn churn_write_rows(out: &mut String, ch: &Value) {
    row(
        out,
        "churn: status writes/s (mean / busiest s)",
        pair(&ch["status"]["per_sec"], &ch["status"]["busiest_second"], 2),
        "<= 10",
    );
    row(
        out,
        "churn: ConfigMap writes/s (mean / busiest)",
        pair(
            &ch["configmap"]["per_sec"],
            &ch["configmap"]["busiest_second"],
            2,
        ),
        "<= 10",
    );
    row(
        out,
        "churn: CPU s (% of one core)",
        pair(&ch["cpu_secs"], &ch["cpu_pct_of_core"], 1),
        "",
    );
}
