//! The release's pieces agree with each other: the krew manifest template (.krew.yaml) rendered the way
//! .github/workflows/release.yml renders it names the tarballs the workflow (and `make release-local`) build,
//! with the binary krew links as `kubectl-gpu_inventory`; the versions the workflow checks agree.

use std::path::Path;

use serde_json::Value;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// .krew.yaml with the variables the release job fills in.
fn rendered_krew(tag: &str) -> Value {
    let text = read(".krew.yaml")
        .replace("${TAG}", tag)
        .replace("${REPOSITORY}", "example/gpu-inventory-operator")
        .replace("${SHA256_LINUX_AMD64}", &"a".repeat(64))
        .replace("${SHA256_LINUX_ARM64}", &"b".repeat(64));
    assert!(
        !text.contains("${"),
        "a variable the workflow does not fill in:\n{text}"
    );
    serde_saphyr::from_str(&text).expect(".krew.yaml renders to YAML")
}

#[test]
fn the_krew_manifest_names_the_release_tarballs() {
    let tag = format!("v{}", env!("CARGO_PKG_VERSION"));
    let plugin = rendered_krew(&tag);
    assert_eq!(
        plugin["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(plugin["kind"], "Plugin");
    // kubectl gpu-inventory: krew links the binary as kubectl-gpu_inventory, which makes it the plugin.
    assert_eq!(plugin["metadata"]["name"], "gpu-inventory");
    assert_eq!(plugin["spec"]["version"], tag.as_str());
    assert!(
        plugin["spec"]["shortDescription"]
            .as_str()
            .is_some_and(|s| s.len() <= 80)
    );
    let workflow = read(".github/workflows/release.yml");
    let local = read("hack/release-local.sh");
    assert!(workflow.contains(r#"name="$BIN-$GITHUB_REF_NAME-${{ matrix.target }}""#));
    assert!(local.contains(r#"name="gpu-inventory-operator-v${version}-${TARGET}""#));
    let platforms = plugin["spec"]["platforms"].as_array().expect("platforms");
    let mut arches = Vec::new();
    for (platform, (arch, target)) in platforms.iter().zip([
        ("amd64", "x86_64-unknown-linux-musl"),
        ("arm64", "aarch64-unknown-linux-musl"),
    ]) {
        let labels = &platform["selector"]["matchLabels"];
        assert_eq!(
            (labels["os"].as_str(), labels["arch"].as_str()),
            (Some("linux"), Some(arch))
        );
        assert!(
            workflow.contains(&format!("- target: {target}")),
            "the workflow builds {target}"
        );
        let dir = format!("gpu-inventory-operator-{tag}-{target}");
        let uri = platform["uri"].as_str().unwrap();
        assert!(
            uri.ends_with(&format!("/releases/download/{tag}/{dir}.tar.gz")),
            "{uri}"
        );
        assert_eq!(platform["sha256"].as_str().map(str::len), Some(64));
        let files: Vec<&str> = platform["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["from"].as_str().unwrap())
            .collect();
        assert!(
            files.contains(&format!("{dir}/gpu-inventory-operator").as_str()),
            "{files:?}"
        );
        assert_eq!(platform["bin"], "gpu-inventory-operator");
        arches.push(arch);
    }
    assert_eq!(arches, ["amd64", "arm64"]);
}

#[test]
fn the_chart_and_the_crate_have_one_version() {
    let chart: Value =
        serde_saphyr::from_str(&read("charts/gpu-inventory-operator/Chart.yaml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(chart["version"], version, "Chart.yaml version");
    assert_eq!(chart["appVersion"], version, "Chart.yaml appVersion");
    assert!(read("deploy/kustomization.yaml").contains(&format!("newTag: {version}")));
}
