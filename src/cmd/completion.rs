//! `completion bash|zsh|fish` (clap_complete's scripts, for the operator's command line and the kubectl
//! plugin's) and `crd` in every `-o` format.

use std::process::ExitCode;

use serde::Serialize;

use super::crd_args::{CompletionArgs, CrdArgs, Shell};
use super::output::stdout::emit;
use super::output::{OutputFormat, formatted, object_name};
use super::render::aligned;
use super::scan::failed;
use crate::publish::crd::{crd_yaml, crds};

/// Prints the completion script of `command` (the operator's command line, or the kubectl plugin's) for the
/// executable `name`. The command is handed in: the command lines name this module, not the other way round.
pub fn completion(args: &CompletionArgs, mut command: clap::Command, name: &str) -> ExitCode {
    emit(&script(args.shell, &mut command, name), ExitCode::SUCCESS)
}

/// The script for `shell`.
pub(crate) fn script(shell: Shell, command: &mut clap::Command, name: &str) -> String {
    let mut out = Vec::new();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, command, name, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `-o json` of `crd`: a v1 List, as `kubectl get crd -o json` prints several.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CrdList {
    api_version: &'static str,
    kind: &'static str,
    items: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
}

/// Prints the CRDs.
pub fn crd(args: &CrdArgs) -> ExitCode {
    if args.output == OutputFormat::Yaml {
        // The documents exactly as `kubectl apply -f -` and deploy/ take them.
        return emit(&crd_yaml(), ExitCode::SUCCESS);
    }
    let list = CrdList {
        api_version: "v1",
        kind: "List",
        items: crds(),
    };
    let name = |crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition| {
        crd.metadata.name.clone().unwrap_or_default()
    };
    let names = || {
        list.items
            .iter()
            .map(|c| object_name("customresourcedefinition", "apiextensions.k8s.io", &name(c)))
            .collect()
    };
    let table = |_wide: bool| {
        let rows: Vec<Vec<String>> = list
            .items
            .iter()
            .map(|c| {
                let versions: Vec<&str> = c.spec.versions.iter().map(|v| v.name.as_str()).collect();
                vec![
                    name(c),
                    c.spec.names.kind.clone(),
                    c.spec.scope.clone(),
                    versions.join(","),
                ]
            })
            .collect();
        aligned(
            &["NAME", "KIND", "SCOPE", "VERSIONS"],
            &rows,
            !args.no_headers,
        )
    };
    match formatted(&args.output, &list, names, table) {
        Ok(text) => emit(&text, ExitCode::SUCCESS),
        Err(e) => failed(&e),
    }
}
