//! The operator's HTTP endpoint (`/healthz`, `/readyz`, `/metrics`: plain HTTP, on loopback in the tests and the
//! soak): its address as the operator logs it, and a minimal HTTP/1.0 GET.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The address of the operator's HTTP endpoint in its log (the line "serving /healthz ... on http://ADDR"),
/// once it is there.
pub fn addr_in_log(log: &str) -> Option<String> {
    let line = log.lines().find(|l| l.contains("serving /healthz"))?;
    let at = line.find("http://")? + "http://".len();
    Some(line[at..].split_whitespace().next()?.to_owned())
}

/// A minimal HTTP/1.0 GET of `path` at `addr`: (status code, body). The code is 0 and the body empty when the
/// answer is no HTTP response (no status line, no blank line after the head).
pub async fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(status_and_body(&response))
}

/// [`get`] of `path` at `addr`, answered within `timeout`: the body of a 200, else an error saying what came.
pub async fn get_ok(addr: &str, path: &str, timeout: std::time::Duration) -> crate::Res<String> {
    let (code, body) = tokio::time::timeout(timeout, get(addr, path))
        .await
        .map_err(|_| format!("GET http://{addr}{path}: no answer in {timeout:?}"))??;
    match code {
        200 => Ok(body),
        0 => Err(format!("GET http://{addr}{path}: no HTTP response").into()),
        code => Err(format!("GET http://{addr}{path}: status {code}").into()),
    }
}

/// The operator's relists per source watch in its /metrics text: every `gpu_inventory_watch_relists_total`
/// series (a watch has one from its first complete list on, 0 until it relists), by its `watch` label.
pub fn watch_relists(metrics: &str) -> std::collections::BTreeMap<String, f64> {
    const SERIES: &str = "gpu_inventory_watch_relists_total{watch=\"";
    metrics
        .lines()
        .filter_map(|l| {
            let (watch, value) = l.strip_prefix(SERIES)?.split_once("\"}")?;
            Some((watch.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// The status code (0: none) and the body (empty: none) of an HTTP response.
fn status_and_body(response: &str) -> (u16, String) {
    let Some((head, body)) = response.split_once("\r\n\r\n") else {
        return (0, String::new());
    };
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_read_from_the_serving_line() {
        let log = "starting\nINFO serving /healthz, /readyz and /metrics on http://127.0.0.1:40123 (plain HTTP)\n";
        assert_eq!(addr_in_log(log).as_deref(), Some("127.0.0.1:40123"));
        assert_eq!(addr_in_log("starting\n"), None);
    }

    #[test]
    fn a_response_splits_into_code_and_body() {
        assert_eq!(
            status_and_body("HTTP/1.0 503 Service Unavailable\r\ncontent-length: 2\r\n\r\nno"),
            (503, "no".to_owned())
        );
        assert_eq!(status_and_body("garbage"), (0, String::new()));
    }

    #[test]
    fn relists_are_read_per_watch() {
        let text = "# TYPE gpu_inventory_watch_relists counter\n\
            gpu_inventory_watch_relists_total{watch=\"nodes\"} 1\n\
            gpu_inventory_watch_relists_total{watch=\"pods\"} 0\n\
            gpu_inventory_watch_restarts_total{watch=\"pods\"} 3\n";
        let r = watch_relists(text);
        assert_eq!(r.len(), 2);
        assert_eq!((r["nodes"], r["pods"]), (1.0, 0.0));
    }

    #[tokio::test]
    async fn get_reads_a_loopback_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut request = vec![0; 1024];
            let n = conn.read(&mut request).await.unwrap();
            conn.write_all(b"HTTP/1.0 200 OK\r\n\r\nok").await.unwrap();
            String::from_utf8_lossy(&request[..n]).into_owned()
        });
        assert_eq!(
            get(&addr, "/healthz").await.unwrap(),
            (200, "ok".to_owned())
        );
        assert!(
            server
                .await
                .unwrap()
                .starts_with("GET /healthz HTTP/1.0\r\n")
        );
    }
}
