//! What a scan of a dump could not read, and how every command that reads one (`scan`, `fit`, `quotas`)
//! fails closed on it: the exit code is [`EXIT_INCOMPLETE`], stderr says how many objects and why, and
//! `scan -o json|yaml` names them in `skippedObjects`. A script that gates on the exit code is never told
//! "healthy" by a scan that did not see every node.

use std::process::ExitCode;

use serde::Serialize;

use super::cli::OutputFormat;
use crate::crd::GpuInventoryStatus;
use crate::sources::dump::{Dump, SkippedObject};

/// Exit code: a dump was scanned, but some of its objects were not read (or it holds no Node): what was
/// printed is incomplete (`skippedObjects` says what is missing). Takes precedence over the command's own
/// 0 and 1 (`scan`: healthy / issues, `fit`: fits / does not, `quotas`: promises hold / not).
pub(crate) const EXIT_INCOMPLETE: u8 = 3;

/// What of a dump could not be read; nothing for a scan of a cluster.
#[derive(Debug, Default)]
pub(crate) struct DumpGaps {
    /// The dump's name (a path or `<stdin>`); `None` for a cluster.
    source: Option<String>,
    /// The objects not read, or read without a field the scan reads.
    skipped: Vec<SkippedObject>,
    /// The dump holds no Node: nothing was scanned.
    no_nodes: bool,
}

/// `scan -o json|yaml` of a dump: the status, and what of the dump was not read.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DumpScan<'a> {
    #[serde(flatten)]
    status: &'a GpuInventoryStatus,
    skipped_objects: &'a [SkippedObject],
}

impl DumpGaps {
    /// What `dump` (read from `source`) lacks.
    pub(crate) fn of(dump: &Dump, source: String) -> DumpGaps {
        DumpGaps {
            source: Some(source),
            skipped: dump.skipped.clone(),
            no_nodes: dump.nodes.is_empty(),
        }
    }

    /// Whether some object was not read, or read without a field: then `-o json|yaml` carries
    /// `skippedObjects` (else it is exactly the status, as documented).
    pub(crate) fn skipped_any(&self) -> bool {
        !self.skipped.is_empty()
    }

    /// Whether the scan saw less than the dump holds, or the dump holds no Node.
    pub(crate) fn incomplete(&self) -> bool {
        !self.skipped.is_empty() || self.no_nodes
    }

    /// Says on stderr what was not read, once, after the warnings naming each object.
    pub(crate) fn say(&self) {
        let Some(source) = &self.source else {
            return;
        };
        let source = crate::runtime::terminal_text::visible(source);
        if self.no_nodes {
            super::output::stdout::say(&format!(
                "warning: {source}: holds no Node, so no GPU node was scanned; export the nodes too: \
                 kubectl get nodes,pods -A -o yaml (exit code {EXIT_INCOMPLETE})"
            ));
        }
        let (objects, fields) = self.counts();
        let mut what = Vec::new();
        if objects > 0 {
            what.push(format!("{objects} object(s) not read"));
        }
        if fields > 0 {
            what.push(format!("{fields} read without a field the scan reads"));
        }
        if !what.is_empty() {
            super::output::stdout::say(&format!(
                "warning: {source}: {} (each named above; `skippedObjects` in -o json|yaml): the result is \
                 incomplete (exit code {EXIT_INCOMPLETE})",
                what.join(" and ")
            ));
        }
    }

    /// Objects skipped whole, and objects read without a field.
    fn counts(&self) -> (usize, usize) {
        let objects = self
            .skipped
            .iter()
            .filter(|s| s.skipped == crate::sources::dump::Skipped::Object)
            .count();
        (objects, self.skipped.len() - objects)
    }

    /// `code` (the command's own answer), unless the scan is incomplete: then it is said on stderr and the
    /// code is [`EXIT_INCOMPLETE`], as an answer over part of the dump may be wrong either way.
    pub(crate) fn exit_code(&self, code: u8) -> ExitCode {
        if self.incomplete() {
            self.say();
            ExitCode::from(EXIT_INCOMPLETE)
        } else {
            ExitCode::from(code)
        }
    }

    /// `status` as `-o json|yaml` prints it, with `skippedObjects`.
    /// `code`, unless the dump was incomplete: then [`EXIT_INCOMPLETE`], said on stderr.
    pub(crate) fn or(&self, code: ExitCode) -> ExitCode {
        if self.incomplete() {
            self.say();
            ExitCode::from(EXIT_INCOMPLETE)
        } else {
            code
        }
    }

    pub(crate) fn format_with(&self, status: &GpuInventoryStatus, format: &OutputFormat) -> String {
        let scan = DumpScan {
            status,
            skipped_objects: &self.skipped,
        };
        let text = if matches!(format, OutputFormat::Yaml) {
            serde_saphyr::to_string(&scan).map_err(|e| e.to_string())
        } else {
            serde_json::to_string_pretty(&scan)
                .map(|json| json + "\n")
                .map_err(|e| e.to_string())
        };
        // Serializing plain data does not fail; should it, the output still says what is missing.
        text.unwrap_or_else(|e| format!("{{\"error\": {:?}}}\n", e))
    }
}
