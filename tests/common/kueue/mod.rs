//! The real Kueue (v0.17, built once from its Go module by `hack/build-control-plane.sh kueue`) as the referee of
//! `fit` (tests/topology_referee.rs; docs/kueue-referee.md says what runs and why): its CRDs installed in the test
//! cluster, its controller manager run out of cluster as a child process ([`KueueProcess`]), a test's Topology,
//! ResourceFlavor, ClusterQueue and LocalQueue ([`TasQueue`]), and Workloads whose admission is read back as a
//! [`Decision`].

pub mod assignment;
pub mod fleet;
pub mod objects;
pub mod process;
pub mod quota_objects;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::common::built_tools::cached_tool;

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use {assignment::Decision, objects::TasQueue, process::KueueProcess};

use super::cluster_access::kubeconfig_path;

/// The API group of Kueue's objects, and the version the tests write and read (v0.17's storage version).
pub const GROUP: &str = "kueue.x-k8s.io";
/// See [`GROUP`].
pub const VERSION: &str = "v1beta2";

/// The kueue binary: `$KUEUE` when set, else the one `hack/build-control-plane.sh kueue` builds (once, cached
/// outside the repository with its CRDs beside it). Panics with the script's error when it cannot be had.
pub fn kueue_binary() -> PathBuf {
    cached_tool(
        "kueue",
        "KUEUE",
        "a kueue binary with its CRDs in crds/ beside it",
        "the referee tests",
    )
}

/// Kueue's CRDs, copied beside the binary from the module's `config/components/crd/bases`.
pub fn crd_dir() -> PathBuf {
    kueue_binary()
        .parent()
        .expect("the kueue binary is in a directory")
        .join("crds")
}

/// `kubectl <args>` against the test cluster, which must succeed; its stdout.
pub fn kubectl(args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(args)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl {} failed ({}):\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Installs Kueue's CRDs (once per test binary) and waits until the API server serves them. Server-side apply:
/// the Workload CRD is larger than the annotation a client-side apply keeps. Kueue resolves its kinds through
/// discovery when it starts and exits when one is missing, so the wait is for discovery to list them.
pub fn install_crds() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = crd_dir();
        let dir = dir.to_str().expect("the CRD directory's path is UTF-8");
        kubectl(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=gpuinv-test-kueue",
            "-f",
            dir,
        ]);
        let limit = testkit::waits::LOAD_ALLOWANCE.as_secs();
        kubectl(&[
            "wait",
            "--for=condition=Established",
            &format!("--timeout={limit}s"),
            "-f",
            dir,
        ]);
        let started = std::time::Instant::now();
        loop {
            let listed = kubectl(&["api-resources", "--api-group", GROUP, "-o", "name"]);
            let served = [
                "workloads",
                "clusterqueues",
                "localqueues",
                "resourceflavors",
                "topologies",
            ]
            .iter()
            .all(|kind| listed.lines().any(|l| l == format!("{kind}.{GROUP}")));
            if served {
                break;
            }
            assert!(
                started.elapsed() < testkit::waits::LOAD_ALLOWANCE,
                "Kueue's CRDs are Established but discovery does not list them after {:?} \
                 (one reaction of the API server's discovery): {listed}",
                started.elapsed()
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    });
}
