//! Which kubeconfig files are read, as kubectl reads them: the files `KUBECONFIG` lists, merged in order (the
//! first to set a value wins) with the ones that do not exist skipped, else `~/.kube/config` when it exists.
//! kube's own reader fails the whole list on one missing file (`KUBECONFIG=/missing:good.yaml`), which
//! kubectl reads as `good.yaml`.

use std::path::{Path, PathBuf};

use kube::config::{Kubeconfig, KubeconfigError};

use crate::error::{Error, Result};

/// The merged kubeconfig of the files that exist (`None`: none does); a file that exists and does not read
/// is an error naming it.
pub(crate) fn read_default() -> Result<Option<Kubeconfig>> {
    read_files(&default_files())
}

/// The files `KUBECONFIG` lists (empty entries left out), else `~/.kube/config`.
fn default_files() -> Vec<PathBuf> {
    let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|value| {
            std::env::split_paths(&value)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if !listed.is_empty() {
        return listed;
    }
    std::env::var_os("HOME")
        .map(|home| vec![Path::new(&home).join(".kube").join("config")])
        .unwrap_or_default()
}

/// `files` merged in order, those that do not exist skipped.
fn read_files(files: &[PathBuf]) -> Result<Option<Kubeconfig>> {
    let mut merged: Option<Kubeconfig> = None;
    for path in files.iter().filter(|p| p.exists()) {
        let shown = path.display().to_string();
        let read = Kubeconfig::read_from(path).map_err(|e| read_error(&shown, &e))?;
        merged = Some(match merged {
            None => read,
            Some(earlier) => earlier.merge(read).map_err(|e| read_error(&shown, &e))?,
        });
    }
    Ok(merged)
}

/// A kubeconfig file that cannot be read or parsed; a YAML error keeps its own lines (a snippet with a caret
/// under the column) rather than one flattened line.
pub(crate) fn read_error(path: &str, error: &KubeconfigError) -> Error {
    Error::Kubeconfig(format!(
        "cannot read kubeconfig {path}: {error}\nfix the file, or point --kubeconfig or KUBECONFIG at another"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(context: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: {context}\nclusters:\n- name: c-{context}\n  \
             cluster: {{server: 'https://{context}.example:6443'}}\ncontexts:\n- name: {context}\n  \
             context: {{cluster: c-{context}, user: u}}\nusers:\n- name: u\n  user: {{token: t}}\n"
        )
    }

    #[test]
    fn missing_files_are_skipped_and_the_rest_merged_in_order() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "target/test-logs/kubeconfig-files-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.yaml"), dir.join("b.yaml"));
        std::fs::write(&a, kubeconfig("alpha")).unwrap();
        std::fs::write(&b, kubeconfig("beta")).unwrap();
        let missing = dir.join("missing.yaml");
        let read = read_files(&[missing.clone(), a.clone(), b.clone()])
            .unwrap()
            .unwrap();
        let names: Vec<&str> = read.contexts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta"]);
        // The first file to set the current context wins, as kubectl merges.
        assert_eq!(read.current_context.as_deref(), Some("alpha"));
        assert!(read_files(&[missing]).unwrap().is_none());
        // A file that is there and broken is an error naming it, with the parser's lines kept.
        let broken = dir.join("broken.yaml");
        std::fs::write(&broken, "apiVersion: v1\nclusters: [\n  - {name: x\n").unwrap();
        let message = read_files(&[a, broken]).unwrap_err().to_string();
        assert!(message.contains("broken.yaml"), "{message}");
        assert!(
            message.contains('\n') && !message.contains("\\n"),
            "{message}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
