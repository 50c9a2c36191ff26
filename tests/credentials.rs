//! Credentials from an exec plugin (issue #16, item 3), against the real local API server, which accepts the
//! plugin's token through --token-auth-file: tokens that expire every few seconds are renewed by running the
//! plugin again with nothing alarming in the log; a plugin that fails, or returns a token the server rejects,
//! gives one clear error naming the kubeconfig user and the plugin, is retried with backoff, and the operator
//! recovers by itself once the plugin works again.

mod common;

use std::time::{Duration, Instant};

use common::exec_plugin::{
    DeployRbac, ExecPlugin, KUBECONFIG_USER, TOKEN_USABLE_SECS, TOKEN_USER, local_token,
};
use common::{
    API_SERVER_STARTUP_BACKOFF, Deadline, OperatorProcess, RECONCILE_BACKOFF, TestEnv,
    WATCH_BACKOFF, eventually, is_homelab, local_cluster_dir,
};

/// Two lifetimes of a plugin's token (kube runs the plugin again once a token is within 60 s of its expiry,
/// [`TOKEN_USABLE_SECS`] after the plugin gave it): a request made that long after another needs a token
/// the other did not use.
const TWO_TOKENS: Duration = Duration::from_secs(2 * TOKEN_USABLE_SECS as u64);

/// The operator scoped to the test, authenticating through `plugin`.
fn start_operator(env: &TestEnv, plugin: &ExecPlugin, extra: &[&str]) -> OperatorProcess {
    let mut args = env.operator_args("2s");
    let at = args.iter().position(|a| a == "--kubeconfig").unwrap();
    args[at + 1] = plugin.kubeconfig(&env.id).display().to_string();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    OperatorProcess::start(&env.id, &args)
}

/// Log lines at warn or error.
fn alarming(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect()
}

#[tokio::test]
async fn exec_credential_tokens_expiring_every_few_seconds_are_renewed_quietly() {
    let token = local_token();
    let env = TestEnv::new("exec-renew").await;
    let rbac = DeployRbac::grant(&env, TOKEN_USER).await;
    env.load_fixture("homelab-nodes.yaml").await;
    let plugin = ExecPlugin::new(&env.id, &token);
    let operator = start_operator(&env, &plugin, &[]);
    let periods = operator.periods();
    let inv = env.inventory_name();
    env.wait_inventory(
        &inv,
        periods.converge(),
        "converged as the token user",
        is_homelab,
    )
    .await;
    let calls = plugin.calls();

    // Changes spread over many token lifetimes: each needs a fresh token for its writes.
    let started = Instant::now();
    for (i, node) in ["nuc1", "nuc2", "omen", "omen2"].iter().enumerate() {
        tokio::time::sleep(TWO_TOKENS).await;
        env.set_ready(&env.node_name(node), "True").await;
        env.wait_inventory(&inv, periods.follow(), "the change in the status", |s| {
            s.ready_gpu_nodes as usize == i + 1
        })
        .await;
    }
    let renewals = plugin.calls() - calls;
    println!(
        "{renewals} plugin runs in {:?} after converging",
        started.elapsed()
    );
    assert!(
        renewals >= 4,
        "the plugin ran {renewals} times in {:?}: kube renews a token within 60 s of its expiry",
        started.elapsed()
    );
    let log = operator.log();
    assert!(
        alarming(&log).is_empty(),
        "nothing alarming across the renewals:\n{log}"
    );
    // The audit log: the operator's requests came as the token's user, with its user agent.
    let audit = std::fs::read_to_string(local_cluster_dir().join("audit.log")).unwrap();
    let agent = format!(
        "\"userAgent\":\"gpu-inventory-operator/{}\"",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        audit
            .lines()
            .any(|l| l.contains(&format!("\"username\":\"{TOKEN_USER}\"")) && l.contains(&agent)),
        "no request of {TOKEN_USER} with {agent} in the audit log"
    );
    rbac.revoke().await;
}

/// Lines of the log that report the credential failure at error.
fn credential_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(" ERROR ") && l.contains(KUBECONFIG_USER))
        .collect()
}

#[tokio::test]
async fn exec_credential_plugin_failures_are_reported_once_and_recovered_from() {
    let token = local_token();
    let env = TestEnv::new("exec-fail").await;
    let rbac = DeployRbac::grant(&env, TOKEN_USER).await;
    env.load_fixture("homelab-nodes.yaml").await;
    let plugin = ExecPlugin::new(&env.id, &token);
    let command = plugin.command().display().to_string();

    // 1. Failing from the start: the client cannot even get its first token.
    plugin.fails_with("error: the SSO session has expired; run `fake-cloud login`");
    let operator = start_operator(&env, &plugin, &["--startup-timeout", "300s"]);
    let periods = operator.periods();
    let failing_since = Instant::now();
    // Said at the first attempt to connect: the process's start (one reaction).
    let first = eventually(
        Deadline::reaction("the operator's first connection attempt"),
        "the credential error",
        || async {
            credential_errors(&operator.log())
                .first()
                .map(|l| (*l).to_owned())
        },
    )
    .await;
    for part in [
        KUBECONFIG_USER,
        &command,
        "fake-cloud login",
        "run the plugin by hand",
    ] {
        assert!(first.contains(part), "{part:?} missing from: {first}");
    }
    // Retried with backoff (API_SERVER_STARTUP: 1 s, 2 s, 4 s, ...): two more runs of the plugin come within
    // its first four delays of the first failure, which the error above followed within one reaction.
    let calls = plugin.calls();
    let retries = Deadline::new(
        API_SERVER_STARTUP_BACKOFF.delays().take(4).sum(),
        "the API_SERVER_STARTUP backoff's first four delays",
    )
    .then(Deadline::reaction("the plugin's runs"));
    eventually(retries, "two more runs of the failing plugin", || async {
        (plugin.calls() >= calls + 2).then_some(())
    })
    .await;
    let log = operator.log();
    assert_eq!(credential_errors(&log).len(), 1, "said once:\n{log}");
    plugin.returns(&token);
    // Its next attempt (the backoff's delay in effect by now), then its start-up and first pass.
    let recovered = API_SERVER_STARTUP_BACKOFF
        .next_attempt("the connection", failing_since.elapsed())
        .then(periods.converge());
    let inv = env.inventory_name();
    env.wait_inventory(
        &inv,
        recovered,
        "recovered once the plugin works",
        is_homelab,
    )
    .await;

    // 2. Running, the plugin starts returning a token the server rejects: every write is refused (401). Once
    // the good token in use has run out, the next request gets the rejected one.
    plugin.returns("not-a-token-the-cluster-knows");
    tokio::time::sleep(TWO_TOKENS).await;
    let rejected_since = Instant::now();
    let nuc1 = env.node_name("nuc1");
    env.set_ready(&nuc1, "True").await;
    let rejected = eventually(periods.follow(), "the rejected token reported", || async {
        let log = operator.log();
        let errors = credential_errors(&log);
        (errors.len() >= 2).then(|| errors[1].to_owned())
    })
    .await;
    for part in [KUBECONFIG_USER, &command, "401", "rejected"] {
        assert!(rejected.contains(part), "{part:?} missing from: {rejected}");
    }
    // The quiet period covers two retries of every loop that keeps failing, the watches' at their backoff cap
    // being the slowest: none of them may say it again.
    tokio::time::sleep(2 * WATCH_BACKOFF.cap).await;
    let log = operator.log();
    assert_eq!(
        credential_errors(&log).len(),
        2,
        "one error per failure, not one per retry:\n{log}"
    );
    plugin.returns(&token);
    // The refused write's next attempt (its backoff's delay by now), or a watch's, then the pass.
    let good_again = RECONCILE_BACKOFF
        .next_attempt("the refused write", rejected_since.elapsed())
        .or_longer(WATCH_BACKOFF.next_attempt("a failed watch", rejected_since.elapsed()))
        .then(periods.follow());
    env.wait_inventory(&inv, good_again, "the change once the token is good", |s| {
        s.ready_gpu_nodes == 1
    })
    .await;
    eventually(
        Deadline::reaction("the operator's log"),
        "the recovery in the log",
        || async {
            operator
                .log()
                .contains("credentials accepted again")
                .then_some(())
        },
    )
    .await;
    rbac.revoke().await;
}
