//! `kubectl gpu-inventory map` run live against the test cluster, and the cells of its `-o json`.

/// `kubectl gpu-inventory <args>` against the local cluster: the binary under the plugin's name (a symlink
/// in a directory of this test process's own), without colour.
pub fn plugin(args: &[&str]) -> std::process::Output {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/test-logs/map-{}-bin", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("kubectl-gpu_inventory");
    if !link.exists() {
        let _ = std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpu-inventory-operator"), &link);
    }
    std::process::Command::new(&link)
        .args(args)
        .env("KUBECONFIG", super::cluster_access::kubeconfig_path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run the plugin")
}

/// Each node's cells in `map -o json`, as the glyphs the picture draws them with.
pub fn drawn_cells(map: &serde_json::Value) -> Vec<(String, String)> {
    let glyph = |state: &serde_json::Value| match state.as_str().unwrap_or_default() {
        "held" => '#',
        "idle" => 'i',
        "leaving" => '-',
        "shared" => '~',
        "arriving" => '+',
        "free" => '.',
        "unhealthy" => '!',
        "unusable" => 'x',
        other => panic!("a state the map does not draw: {other}"),
    };
    let nodes = map["groups"].as_array().into_iter().flatten();
    nodes
        .flat_map(|g| g["nodes"].as_array().cloned().unwrap_or_default())
        .map(|n| {
            let cells = n["cells"].as_array().unwrap().iter().map(glyph).collect();
            (n["name"].as_str().unwrap().to_owned(), cells)
        })
        .collect()
}

/// The lines a page shows under `$ <command>` in its code block (up to the block's end): a picture the docs
/// paste, to compare with what the command prints.
pub fn documented(page: &str, command: &str) -> Vec<String> {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(page))
        .unwrap_or_else(|e| panic!("reading {page}: {e}"));
    let prompt = format!("$ {command}");
    let mut lines = text.lines().skip_while(|l| *l != prompt);
    assert!(lines.next().is_some(), "{page} shows no `{prompt}`");
    lines
        .take_while(|l| !l.starts_with("```"))
        .map(str::to_owned)
        .collect()
}
