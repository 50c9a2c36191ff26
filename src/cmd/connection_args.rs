//! kubectl's connection flags, with kubectl's meaning, for every command and the kubectl plugin: where to
//! connect (`--server`), as whom (`--token`, `--as`, `--as-group`), how long any request may wait
//! (`--request-timeout`), and which namespace's objects are listed (`-n`, `-A`). A leaf: the command line
//! flattens it into its global flags.

use std::time::Duration;

use clap::Args;

use crate::runtime::client::Overrides;

/// kubectl's default `--request-timeout` is none; ours bounds every wait (docs/flags.md).
pub const DEFAULT_REQUEST_TIMEOUT: &str = "30s";

/// The connection flags kubectl users type without thinking.
#[derive(Debug, Args, Clone, Default)]
pub struct ConnectionArgs {
    /// How long one request may wait for the API server (connecting, TLS, each answer), and how long a
    /// credential exec plugin may run, as kubectl's: `30s`, `1m`, a bare number of seconds; `0` waits
    /// without end. An unreachable or unresponsive server is an error within it, naming the server.
    #[arg(long, global = true, env = "GPUINV_REQUEST_TIMEOUT", value_name = "DURATION",
          default_value = DEFAULT_REQUEST_TIMEOUT, value_parser = parse_request_timeout)]
    pub request_timeout: RequestTimeout,
    /// The API server's address, instead of the kubeconfig cluster's (`https://host:6443`).
    #[arg(long, short = 's', global = true, env = "GPUINV_SERVER", value_name = "URL",
          value_parser = parse_server)]
    pub server: Option<String>,
    /// A bearer token for the API server, instead of the kubeconfig user's credentials.
    #[arg(
        long,
        global = true,
        env = "GPUINV_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// The user to impersonate (kubectl's `--as`): every request is made as this user, which needs the
    /// `impersonate` verb for the real identity.
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// A group to impersonate with `--as` (repeatable).
    #[arg(
        long = "as-group",
        global = true,
        value_name = "GROUP",
        requires = "as_user"
    )]
    pub as_groups: Vec<String>,
}

/// `--request-timeout`: `None` waits without end (`0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestTimeout(pub Option<Duration>);

/// Reads `--request-timeout` as kubectl does: a bare number is seconds, `0` (or `0s`) is none, else a
/// duration (`30s`, `1m`, `1m30s`, `500ms`).
pub fn parse_request_timeout(text: &str) -> Result<RequestTimeout, String> {
    let duration = super::duration_arg::parse_duration(text.trim()).map_err(|_| {
        format!(
            "{text:?} is not a request timeout: a duration like 30s, 1m or 500ms, a number of seconds, or 0 \
             to wait without end"
        )
    })?;
    Ok(RequestTimeout((!duration.is_zero()).then_some(duration)))
}

/// `--server`: an absolute http(s) URL, checked before anything connects.
fn parse_server(text: &str) -> Result<String, String> {
    let text = text.trim();
    let uri: http::Uri = text
        .parse()
        .map_err(|e| format!("{text:?} is not a URL like https://host:6443: {e}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("https" | "http"), Some(_)) => Ok(text.to_owned()),
        _ => Err(format!(
            "{text:?} is not a URL like https://host:6443 (a scheme, http or https, and a host)"
        )),
    }
}

impl ConnectionArgs {
    /// What the flags change of the kubeconfig's connection.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            server: self.server.clone(),
            token: self.token.clone(),
            as_user: self.as_user.clone(),
            as_groups: self.as_groups.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_timeouts_read_as_kubectls() {
        let secs = |s| Ok(RequestTimeout(Some(Duration::from_secs(s))));
        assert_eq!(parse_request_timeout("30s"), secs(30));
        assert_eq!(parse_request_timeout("1m"), secs(60));
        assert_eq!(parse_request_timeout("1m30s"), secs(90));
        assert_eq!(parse_request_timeout("5"), secs(5));
        assert_eq!(
            parse_request_timeout("500ms"),
            Ok(RequestTimeout(Some(Duration::from_millis(500))))
        );
        assert_eq!(parse_request_timeout("0"), Ok(RequestTimeout(None)));
        assert_eq!(parse_request_timeout("0s"), Ok(RequestTimeout(None)));
        let bad = parse_request_timeout("soon").unwrap_err();
        assert!(bad.contains("30s") && bad.contains("0 to wait"), "{bad}");
        assert!(parse_request_timeout("-1s").is_err());
    }

    #[test]
    fn the_cli_and_the_plugin_take_kubectls_connection_flags() {
        use crate::cmd::cli::{Cli, Command};
        use crate::cmd::plugin::PluginArgs;
        use clap::{CommandFactory, Parser};
        PluginArgs::command().debug_assert();
        let flags = [
            "-n",
            "team-a",
            "--request-timeout",
            "5",
            "-s",
            "https://10.0.0.1:6443",
            "--token",
            "t",
            "--as",
            "jane",
            "--as-group",
            "devs",
            "--context",
            "lab",
            "--kubeconfig",
            "/k",
        ];
        let plugin =
            PluginArgs::try_parse_from(["kubectl gpu-inventory"].iter().chain(&flags)).unwrap();
        let cli =
            Cli::try_parse_from(["gpu-inventory-operator", "scan"].iter().chain(&flags)).unwrap();
        assert!(matches!(cli.command, Some(Command::Scan(_))));
        for global in [&plugin.global, &cli.global] {
            assert_eq!(global.listed_namespace(), Some("team-a"));
            let config = global.client_config();
            assert_eq!(config.request_timeout, Some(Duration::from_secs(5)));
            assert_eq!(config.context.as_deref(), Some("lab"));
            assert_eq!(
                config.overrides,
                Overrides {
                    server: Some("https://10.0.0.1:6443".into()),
                    token: Some("t".into()),
                    as_user: Some("jane".into()),
                    as_groups: vec!["devs".into()],
                }
            );
        }
        // The plugin takes them after its subcommand as well; -A is the default and refuses -n.
        let fit = PluginArgs::try_parse_from(["kubectl gpu-inventory", "fit", "--gpus", "1", "-A"])
            .unwrap();
        assert_eq!(fit.global.listed_namespace(), None);
        assert_eq!(
            fit.global.client_config().request_timeout,
            Some(Duration::from_secs(30))
        );
        assert!(PluginArgs::try_parse_from(["kubectl gpu-inventory", "-n", "a", "-A"]).is_err());
        assert!(PluginArgs::try_parse_from(["kubectl gpu-inventory", "--as-group", "g"]).is_err());
        // `run`'s -n is the ConfigMap's namespace, as before.
        let run = Cli::try_parse_from(["gpu-inventory-operator", "-n", "ops"]).unwrap();
        assert_eq!(run.global.namespace.as_deref(), Some("ops"));
        let bad = Cli::try_parse_from([
            "gpu-inventory-operator",
            "run",
            "--metrics-addr",
            "not-an-addr",
        ]);
        assert!(bad.unwrap_err().to_string().contains("HOST:PORT"));
        for good in ["", "0.0.0.0:8080", "[::]:8080", "localhost:9090"] {
            assert!(
                Cli::try_parse_from(["gpu-inventory-operator", "run", "--metrics-addr", good])
                    .is_ok()
            );
        }
    }

    #[test]
    fn servers_are_urls() {
        assert_eq!(
            parse_server("https://10.0.0.1:6443").as_deref(),
            Ok("https://10.0.0.1:6443")
        );
        assert!(parse_server("http://localhost:8080").is_ok());
        assert!(
            parse_server("10.0.0.1:6443")
                .unwrap_err()
                .contains("scheme")
        );
        assert!(parse_server("not a url").is_err());
        assert!(parse_server("ftp://host").is_err());
    }
}
