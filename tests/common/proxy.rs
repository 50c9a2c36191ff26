//! A TCP proxy in front of the test cluster's API server that a test can cut: every open connection is
//! dropped and new ones are closed at once until it is restored. The operator's watches break the way they do
//! when a network path fails, while the API server keeps running and the test keeps changing the cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kube::config::Kubeconfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::cluster_access::{kubeconfig_path, write_kubeconfig};

/// The proxy; it stops when dropped.
pub struct ApiProxy {
    addr: SocketAddr,
    open: Arc<AtomicBool>,
    /// Bumped by every cut: each connection ends when it changes.
    cuts: watch::Sender<u64>,
    accept_task: tokio::task::JoinHandle<()>,
}

impl ApiProxy {
    /// Listens on a free loopback port and forwards to the API server of the test kubeconfig.
    pub async fn start() -> ApiProxy {
        let upstream = upstream_addr();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(AtomicBool::new(true));
        let (cuts, _) = watch::channel(0u64);
        let accept_task = {
            let (open, cuts) = (open.clone(), cuts.clone());
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let mut cut = cuts.subscribe();
                    let upstream = upstream.clone();
                    tokio::spawn(async move {
                        let Ok(mut server) = TcpStream::connect(&upstream).await else {
                            return;
                        };
                        let mut client = client;
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                            _ = cut.changed() => {}
                        }
                    });
                }
            })
        };
        ApiProxy {
            addr,
            open,
            cuts,
            accept_task,
        }
    }

    /// Drops every connection and refuses new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        self.cuts.send_modify(|n| *n += 1);
    }

    /// Forwards again.
    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }

    /// The test kubeconfig with its server pointed at the proxy (the certificate names 127.0.0.1, so TLS
    /// verification still holds).
    pub fn kubeconfig(&self, name: &str) -> PathBuf {
        let mut config =
            Kubeconfig::read_from(kubeconfig_path()).expect("read the test kubeconfig");
        for cluster in &mut config.clusters {
            if let Some(c) = cluster.cluster.as_mut() {
                c.server = Some(format!("https://{}", self.addr));
            }
        }
        write_kubeconfig(&config, &format!("{name}-proxied"))
    }
}

impl Drop for ApiProxy {
    fn drop(&mut self) {
        self.cut();
        self.accept_task.abort();
    }
}

/// host:port of the test kubeconfig's API server.
fn upstream_addr() -> String {
    let config = Kubeconfig::read_from(kubeconfig_path()).expect("read the test kubeconfig");
    let server = config
        .clusters
        .iter()
        .find_map(|c| c.cluster.as_ref()?.server.clone())
        .expect("a server in the test kubeconfig");
    let authority = server
        .strip_prefix("https://")
        .unwrap_or(&server)
        .trim_end_matches('/');
    authority.to_owned()
}
