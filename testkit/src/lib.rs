//! The test kit: what the integration tests (`tests/common`), the bench driver (`benches/bench_driver`) and the
//! chaos soak (`benches/soak`) share, one copy each, instead of files included by path or copied. A workspace
//! member (`testkit/`), a dev-dependency of the operator's package; nothing here is part of the operator.
//!
//! One module per role:
//!
//! - [`cached`]: objects as the API server lists them and as the operator's caches hold them (in-process benches);
//! - [`cluster`]: the bench fleet: node templates from the fixtures, the steady and KWOK nodes, their writes, the
//!   namespace and inventory around a run, and what the scanner says about the nodes as stored;
//! - [`nodes`]: a node's Ready condition (read and set) and the KWOK annotation;
//! - [`pods`]: pod objects and statuses as a kubelet or the scheduler writes them, and the pod writes;
//! - [`dra_objects`]: DRA objects shaped like NVIDIA's DRA driver and kube-scheduler write them;
//! - [`audit`]: reading kube-apiserver's audit log (across rotations): requests and writes per verb and resource;
//! - [`rss`]: the soak's RSS samples and its leak check, and a process's RSS from /proc;
//! - [`plot`]: the bench's and the soak's PNGs: the system's font, a chart's frame;
//! - [`prometheus`]: a real Prometheus back-filled with dcgm-exporter's series (the idle-GPU tests, the scale
//!   scenario);
//! - [`http`]: the minimal HTTP/1.0 GET of the operator's plain-HTTP endpoint, and its address in the log;
//! - [`settings`]: the bench driver's and the soak's knobs, typed (`clap`: a variable and an option each);
//! - [`waits`]: the tests' deadlines, derived from the periods of the operator and the cluster they wait on;
//! - [`lib_api`]: every path into the operator library that the kit and the benches use.

#![deny(missing_docs)]

pub mod audit;
pub mod cached;
pub mod cluster;
pub mod dra_objects;
pub mod http;
pub mod lib_api;
pub mod nodes;
pub mod plot;
pub mod pods;
pub mod prometheus;
pub mod rss;
pub mod settings;
pub mod waits;

/// The error of the kit's fallible calls: any error, with its message.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A result with a [`BoxError`].
pub type Res<T> = Result<T, BoxError>;
