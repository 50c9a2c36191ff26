//! Reading Prometheus's answers (the shapes of its HTTP API documentation), and the URL's redaction.

use super::*;

#[test]
fn a_vector_reads_with_its_labels_and_values() {
    let body = br#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"Hostname":"n1","gpu":"0","namespace":"ml","pod":"p"},"value":[1790000000.123,"0"]},
        {"metric":{},"value":[1790000000,"3"]}]}}"#;
    let samples = read_answer(200, body).unwrap();
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0].labels.get("pod").map(|p| p.as_ref()), Some("p"));
    assert_eq!(samples[1].value, 3.0);
}

#[test]
fn errors_warnings_and_odd_answers_say_what_they_are() {
    let error = br#"{"status":"error","errorType":"bad_data","error":"1:1: parse error"}"#;
    let refused = read_answer(400, error).unwrap_err().to_string();
    assert_eq!(
        refused,
        "Prometheus answered 400: bad_data: 1:1: parse error"
    );
    let partial = br#"{"status":"success","warnings":["remote read of store b failed"],
        "data":{"resultType":"vector","result":[]}}"#;
    assert!(
        matches!(read_answer(200, partial), Err(QueryError::Partial(w)) if w.contains("store b"))
    );
    let proxy = b"<html>502 Bad Gateway</html>";
    assert_eq!(
        read_answer(502, proxy).unwrap_err().to_string(),
        "Prometheus answered 502: <html>502 Bad Gateway</html>"
    );
    assert!(matches!(
        read_answer(200, b"{"),
        Err(QueryError::Malformed(_))
    ));
    let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
    assert!(
        matches!(read_answer(200, matrix), Err(QueryError::Malformed(m)) if m.contains("matrix"))
    );
    let nan = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#;
    assert!(matches!(
        read_answer(200, nan),
        Err(QueryError::Malformed(_))
    ));
}

#[test]
fn credentials_never_leave_the_url() {
    assert_eq!(
        redacted("https://user:secret@prom.example:9090/p"),
        "https://prom.example:9090/p"
    );
    assert_eq!(redacted("http://prom:9090"), "http://prom:9090");
    assert_eq!(redacted("http://prom:9090/a@b"), "http://prom:9090/a@b");
}

#[test]
fn a_bad_url_or_ca_file_names_its_flag() {
    let endpoint = |url: &str, ca: Option<&str>| Endpoint {
        url: url.into(),
        ca_file: ca.map(PathBuf::from),
        timeout: Duration::from_secs(1),
        max_bytes: 1 << 20,
        ..Endpoint::default()
    };
    let err =
        |e: Result<Prometheus, QueryError>| e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err(Prometheus::new(endpoint("ftp://prom:9090", None))).contains("must start with http://")
    );
    assert!(err(Prometheus::new(endpoint("http://a b", None))).contains("is not a URL"));
    let missing = err(Prometheus::new(endpoint(
        "https://prom",
        Some("/nonexistent/ca.pem"),
    )));
    assert!(
        missing.starts_with("--prometheus-ca-file /nonexistent/ca.pem:"),
        "{missing}"
    );
}
