//! The HTTP endpoint: `/healthz` (alive), `/readyz` (CRD established, nodes synced, API server reachable),
//! `/metrics` (OpenMetrics text).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tracing::info;

use super::health::Health;
use super::metrics::Metrics;
use super::shutdown::Shutdown;
use crate::error::{Error, Result};

#[derive(Clone)]
struct AppState {
    health: Health,
    metrics: Arc<Metrics>,
    readiness_grace: Duration,
}

/// Binds `addr` and serves until shutdown. Returns the bound address (useful with port 0).
pub(crate) async fn serve(
    addr: &str,
    health: Health,
    metrics: Arc<Metrics>,
    readiness_grace: Duration,
    shutdown: Shutdown,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await.map_err(|e| {
        Error::InvalidFlag(format!(
            "--metrics-addr {addr}: cannot listen ({e}); pick a free address, e.g. --metrics-addr 127.0.0.1:0"
        ))
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::InvalidFlag(format!("--metrics-addr {addr}: {e}")))?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(AppState {
            health,
            metrics,
            readiness_grace,
        });
    info!(address = %bound, "serving /healthz, /readyz and /metrics on http://{bound}");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.wait())
            .await;
    });
    Ok((bound, task))
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    match state.health.readiness(state.readiness_grace) {
        Ok(()) => (StatusCode::OK, "ok\n".to_owned()),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        ),
    }
}

async fn metrics_text(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
}
