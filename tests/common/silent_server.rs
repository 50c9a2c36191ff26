//! API servers that never answer, for the bounded-wait tests: a listener that accepts connections and
//! never says a byte (hanging: TLS never completes, or plain HTTP never answered), one whose accept queue is
//! full so that a SYN is never answered (blackholed: a connect waits for its timeout), and a port nothing
//! listens on (refused). Each comes with a kubeconfig pointing at it, in the test's own directory under
//! target/test-logs.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A listener that accepts and holds every connection, answering nothing.
pub struct Hanging {
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Hanging {
    /// Starts it (a thread that accepts and keeps the connections open until the test process ends).
    pub fn start() -> Hanging {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                held.push(stream);
            }
        });
        Hanging { addr }
    }
}

/// A listener whose accept queue is full: a new connection's SYN is dropped, as by a blackhole.
pub struct Blackholed {
    /// Where it listens.
    pub addr: SocketAddr,
    _listener: std::net::TcpListener,
    _queued: Vec<TcpStream>,
}

impl Blackholed {
    /// Listens with the smallest backlog and fills it with connections never accepted; asserts that one more
    /// connect now waits (so the test cannot pass against a server that answers).
    pub fn start() -> Blackholed {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let listener = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            socket.listen(0).unwrap().into_std().unwrap()
        });
        let addr = listener.local_addr().unwrap();
        let mut queued = Vec::new();
        for _ in 0..4 {
            if let Ok(stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                queued.push(stream);
            }
        }
        assert!(
            TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_err(),
            "the accept queue of {addr} is not full: a connect to it does not wait"
        );
        Blackholed {
            addr,
            _listener: listener,
            _queued: queued,
        }
    }
}

/// A local port nothing listens on.
pub fn refused_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A directory of the test's own under target/test-logs.
pub fn test_dir(tag: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/test-logs/{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A kubeconfig at `dir/name` with one context `ctx` per `(ctx, server)`, the first current; the user has a
/// token, or runs `exec_script` (a shell script) as its exec credential plugin.
pub fn kubeconfig(
    dir: &Path,
    name: &str,
    servers: &[(&str, &str)],
    exec_script: Option<&str>,
) -> PathBuf {
    let user = match exec_script {
        Some(script) => {
            let path = dir.join(format!("{name}.plugin.sh"));
            std::fs::write(&path, script).unwrap();
            format!(
                "{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: sh, args: ['{}'], \
                 interactiveMode: Never}}}}",
                path.display()
            )
        }
        None => "{token: not-a-real-token}".to_owned(),
    };
    let mut text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: {}\nusers:\n- name: u\n  user: {user}\nclusters:\n",
        servers[0].0
    );
    for (ctx, server) in servers {
        text.push_str(&format!(
            "- name: {ctx}\n  cluster: {{server: '{server}', insecure-skip-tls-verify: true}}\n"
        ));
    }
    text.push_str("contexts:\n");
    for (ctx, _) in servers {
        text.push_str(&format!(
            "- name: {ctx}\n  context: {{cluster: {ctx}, user: u}}\n"
        ));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Whether process `pid` still runs (a zombie does not: it only waits for its parent to read its status).
pub fn running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}
