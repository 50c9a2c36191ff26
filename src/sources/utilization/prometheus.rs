//! A small client of Prometheus's HTTP API: one instant query (`POST /api/v1/query`), with a bearer token
//! read from a file at each query (a projected service account token rotates), a CA file or the system's
//! roots, a timeout, and a cap on the answer's size.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;

/// Why a query has no answer, in words a status message can carry.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The flags do not make a client.
    #[error("{0}")]
    Config(String),
    /// No connection, or no answer in time.
    #[error("Prometheus at {url} is unreachable: {reason}")]
    Unreachable {
        /// The URL, without credentials.
        url: String,
        /// What failed.
        reason: String,
    },
    /// Prometheus answered with an error.
    #[error("Prometheus answered {status}: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// Its `errorType: error`, or the start of the body.
        message: String,
    },
    /// The answer is not what the API documents.
    #[error("Prometheus's answer does not read: {0}")]
    Malformed(String),
    /// Prometheus says the answer is partial (`warnings`).
    #[error("Prometheus's answer is partial: {0}")]
    Partial(String),
    /// More series than the bound.
    #[error("{0}")]
    TooLarge(String),
}

/// One series of an instant vector: its labels and value. The labels borrow from the answer's bytes where
/// they need no unescaping (an answer of 100,000 series is read without a copy of each label).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample<'a> {
    /// The labels (no `__name__` after an aggregation).
    pub labels: BTreeMap<Cow<'a, str>, Cow<'a, str>>,
    /// The value.
    pub value: f64,
}

/// What Prometheus answered: the HTTP status and the body, read with [`Answer::samples`].
#[derive(Clone, Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Bytes,
}

impl Answer {
    /// The answer's samples, or why there are none.
    pub fn samples(&self) -> Result<Vec<Sample<'_>>, QueryError> {
        read_answer(self.status, &self.body)
    }
}

/// How to reach Prometheus.
#[derive(Clone, Debug, Default)]
pub struct Endpoint {
    /// The base URL (`http://prometheus-k8s.monitoring:9090`, or one with a path prefix).
    pub url: String,
    /// A file holding a bearer token, read at each query.
    pub bearer_token_file: Option<PathBuf>,
    /// A PEM file of the CA certificates to trust (the system's roots otherwise).
    pub ca_file: Option<PathBuf>,
    /// How long one query may take, end to end.
    pub timeout: Duration,
    /// The largest answer read, in bytes.
    pub max_bytes: usize,
}

/// A client for one Prometheus.
#[derive(Clone)]
pub struct Prometheus {
    endpoint: Endpoint,
    query_uri: http::Uri,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for Prometheus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prometheus")
            .field("url", &self.source())
            .finish()
    }
}

impl Prometheus {
    /// A client; an error names the flag that is wrong.
    pub fn new(endpoint: Endpoint) -> Result<Prometheus, QueryError> {
        let base = endpoint.url.trim_end_matches('/');
        let query_uri: http::Uri = format!("{base}/api/v1/query").parse().map_err(|e| {
            QueryError::Config(format!(
                "--prometheus-url {:?} is not a URL: {e}",
                redacted(&endpoint.url)
            ))
        })?;
        match query_uri.scheme_str() {
            Some("http" | "https") => {}
            _ => {
                return Err(QueryError::Config(format!(
                    "--prometheus-url {:?} must start with http:// or https://",
                    redacted(&endpoint.url)
                )));
            }
        }
        let tls = tls_config(endpoint.ca_file.as_ref())?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Prometheus {
            endpoint,
            query_uri,
            client,
        })
    }

    /// The URL as statuses and logs show it: without user information.
    pub fn source(&self) -> String {
        redacted(&self.endpoint.url)
    }

    /// Runs an instant query at `time` (Unix seconds); its answer.
    pub async fn query(&self, promql: &str, time: i64) -> Result<Answer, QueryError> {
        let unreachable = |reason: String| QueryError::Unreachable {
            url: self.source(),
            reason,
        };
        let timeout = self.endpoint.timeout;
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("query", promql)
            .append_pair("time", &time.to_string())
            .append_pair("timeout", &format!("{}s", timeout.as_secs().max(1)))
            .finish();
        let mut request = http::Request::post(self.query_uri.clone())
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json");
        if let Some(token) = self.token()? {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| QueryError::Config(e.to_string()))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| unreachable(error_chain(&e)))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), self.endpoint.max_bytes)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        QueryError::TooLarge(format!(
                            "Prometheus's answer is larger than {} MiB",
                            self.endpoint.max_bytes >> 20
                        ))
                    } else {
                        unreachable(e.to_string())
                    }
                })?
                .to_bytes();
            Ok::<_, QueryError>((status, body))
        };
        let (status, body) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| unreachable(format!("no answer within {}s", timeout.as_secs_f64())))??;
        Ok(Answer {
            status: status.as_u16(),
            body,
        })
    }

    fn token(&self) -> Result<Option<String>, QueryError> {
        let Some(path) = &self.endpoint.bearer_token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            QueryError::Config(format!(
                "--prometheus-bearer-token-file {}: {e}",
                path.display()
            ))
        })?;
        Ok(Some(text.trim().to_owned()))
    }
}

/// The rustls configuration: the CA file's certificates, else the system's roots.
fn tls_config(ca_file: Option<&PathBuf>) -> Result<rustls::ClientConfig, QueryError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let flag = |e: String| {
                QueryError::Config(format!("--prometheus-ca-file {}: {e}", path.display()))
            };
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| flag(e.to_string()))? {
                roots
                    .add(cert.map_err(|e| flag(e.to_string()))?)
                    .map_err(|e| flag(e.to_string()))?;
            }
            if roots.is_empty() {
                return Err(flag("holds no PEM certificate".into()));
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                // A system root rustls cannot read is skipped, as every TLS client does.
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| QueryError::Config(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// An error and its causes, `a: b: c`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `url` without `user:password@`.
pub fn redacted(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host_start = rest
                .find('/')
                .map_or(rest, |slash| &rest[..slash])
                .rfind('@')
                .map_or(0, |at| at + 1);
            format!("{scheme}://{}", &rest[host_start..])
        }
        None => url.to_owned(),
    }
}

/// The API's envelope (`/api/v1/query`).
#[derive(Deserialize)]
struct Envelope<'a> {
    status: String,
    #[serde(default, borrow)]
    data: Option<Data<'a>>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(rename = "resultType")]
    result_type: String,
    #[serde(borrow)]
    result: Vec<VectorSample<'a>>,
}

#[derive(Deserialize)]
struct VectorSample<'a> {
    #[serde(borrow)]
    metric: BTreeMap<Cow<'a, str>, Cow<'a, str>>,
    #[serde(borrow)]
    value: (f64, Cow<'a, str>),
}

/// Reads an answer (`status`, the body): its samples, or why there are none.
pub fn read_answer(status: u16, body: &[u8]) -> Result<Vec<Sample<'_>>, QueryError> {
    let envelope: Envelope = match serde_json::from_slice(body) {
        Ok(envelope) => envelope,
        Err(e) if (200..300).contains(&status) => return Err(QueryError::Malformed(e.to_string())),
        Err(_) => {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
            return Err(QueryError::Refused {
                status,
                message: text.trim().to_owned(),
            });
        }
    };
    if envelope.status != "success" {
        return Err(QueryError::Refused {
            status,
            message: format!(
                "{}: {}",
                envelope.error_type.unwrap_or_default(),
                envelope.error.unwrap_or_default()
            ),
        });
    }
    if !envelope.warnings.is_empty() {
        return Err(QueryError::Partial(envelope.warnings.join("; ")));
    }
    let data = envelope
        .data
        .ok_or_else(|| QueryError::Malformed("no `data`".into()))?;
    if data.result_type != "vector" {
        return Err(QueryError::Malformed(format!(
            "a {} where an instant vector was asked for",
            data.result_type
        )));
    }
    data.result
        .into_iter()
        .map(|s| {
            let value =
                s.value.1.parse::<f64>().map_err(|e| {
                    QueryError::Malformed(format!("the value {:?}: {e}", s.value.1))
                })?;
            Ok(Sample {
                labels: s.metric,
                value,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
