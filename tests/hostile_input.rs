//! Hostile and broken `-f` dumps against the real binary (issue #56): each class generated here, each run
//! asserting the exit code, what stderr says, no panic, and where memory is at stake, the child's peak RSS
//! (from `wait4`). No cluster needed; the whole file runs in a few seconds.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of the binary left: its exit code, output, peak RSS and time.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    peak_mib: u64,
    took: Duration,
}

/// The binary with `args`, offline, fed `stdin`; reaped with `wait4` for its own peak RSS.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which std's wait cannot do: it gives the child's rusage"
)]
fn run(args: &[&str], stdin: &[u8]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut input = child.stdin.take().expect("stdin");
    let bytes = stdin.to_vec();
    // The child may stop reading early (a refused dump): a broken pipe here is expected.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("stdout")));
    let stderr = read(Box::new(child.stderr.take().expect("stderr")));
    let pid = i32::try_from(child.id()).expect("a pid");
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills; the pid is this test's own child, not yet reaped.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4 reaps the child");
    let _ = writer.join();
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    let run = Run {
        code,
        stdout: stdout.join().expect("stdout read"),
        stderr: stderr.join().expect("stderr read"),
        // ru_maxrss is in KiB on Linux.
        peak_mib: u64::try_from(usage.ru_maxrss).unwrap_or(0) / 1024,
        took: started.elapsed(),
    };
    assert!(
        !run.stderr.contains("panicked") && run.code != 101,
        "{args:?}: no panic: {}",
        run.stderr
    );
    run
}

/// `scan -f -` of `dump`, with `extra` flags.
fn scan(dump: &[u8], extra: &[&str]) -> Run {
    let mut args = vec!["scan", "-f", "-"];
    args.extend_from_slice(extra);
    run(&args, dump)
}

/// Asserts the exit code and that stderr says `expected`.
fn expect(run: &Run, code: i32, expected: &str) {
    assert_eq!(run.code, code, "exit code; stderr: {}", run.stderr);
    assert!(
        run.stderr.contains(expected),
        "expected {expected:?} in stderr: {}",
        run.stderr
    );
}

#[test]
fn an_alias_bomb_is_charged_by_bytes_and_refused_in_bounded_memory() {
    // One anchored 1 MiB string aliased 2,000 times: a 1 MB file that expands to 2 GB.
    let dump = format!(
        "kind: List\ns: &s \"{}\"\nitems:\n- metadata:\n    name: n\n    annotations: {{a: [{}]}}\n",
        "x".repeat(1 << 20),
        vec!["*s"; 2000].join(", ")
    );
    let out = scan(dump.as_bytes(), &[]);
    expect(&out, 2, "expands to more than 536870912 bytes once read");
    assert!(out.stderr.contains("line 6"), "{}", out.stderr);
    // The cap (512 MiB) and a little: the copies made before the refusal, the text, the binary.
    assert!(out.peak_mib < 800, "peak RSS {} MiB", out.peak_mib);
    // A lower cap refuses sooner, in less memory.
    let out = scan(dump.as_bytes(), &["--max-input-bytes", "16Mi"]);
    expect(&out, 2, "expands to more than 16777216 bytes");
    assert!(out.peak_mib < 120, "peak RSS {} MiB", out.peak_mib);
}

#[test]
fn an_endless_or_oversized_input_is_refused_after_the_cap() {
    let started = Instant::now();
    let zero = run(&["scan", "-f", "/dev/zero"], b"");
    expect(&zero, 2, "binary data (a NUL byte at line 1, column 1)");
    assert!(zero.peak_mib < 100, "peak RSS {} MiB", zero.peak_mib);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        zero.took
    );
    // 3 MiB of text under a 1 MiB cap: refused after reading 1 MiB and one byte.
    let big = format!("kind: List\nitems: []\n{}", "# padding\n".repeat(300_000));
    let out = scan(big.as_bytes(), &["--max-input-bytes", "1Mi"]);
    expect(
        &out,
        2,
        "<stdin>: more than 1048576 bytes (--max-input-bytes)",
    );
    let out = scan(big.as_bytes(), &["--max-input-bytes", "256"]);
    expect(&out, 2, "did you mean 256Mi?");
}

#[test]
fn millions_of_empty_objects_are_refused_before_they_take_gigabytes() {
    // 6 MB of `{}` items: 1.2 million objects of 5 bytes each.
    let dump = format!("kind: List\nitems:\n{}", "- {}\n".repeat(1_200_000));
    let out = scan(dump.as_bytes(), &["--max-input-bytes", "32Mi"]);
    expect(&out, 2, "each object at least 2048");
    assert!(out.peak_mib < 200, "peak RSS {} MiB", out.peak_mib);
    // The same in JSON: charged as it is read, not after a whole `serde_json::Value` was built.
    let json = format!(
        "{{\"kind\": \"List\", \"items\": [{}{{}}]}}",
        "{},".repeat(2_000_000)
    );
    let out = scan(json.as_bytes(), &["--max-input-bytes", "32Mi"]);
    expect(&out, 2, "expands to more than 33554432 bytes once read");
    assert!(out.peak_mib < 200, "peak RSS {} MiB", out.peak_mib);
    // A few hundred read, each a Node: no GPU node, and the dump's nodes were read.
    let dump = format!("kind: List\nitems:\n{}", "- {}\n".repeat(300));
    let out = scan(dump.as_bytes(), &["-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn text_that_is_not_a_dump_says_where_and_what_is_expected() {
    let cases: [(&[u8], &str); 9] = [
        (
            b"kind: List\nitems:\n- metadata: {name: caf\xe9}\n",
            "not UTF-8 text (an invalid byte at line 3, column 23)",
        ),
        (
            &[0xff, 0xfe, b'k', 0, b'i', 0],
            "not UTF-8 text (an invalid byte at line 1, column 1)",
        ),
        (
            b"\x7fELF\x02\x01\x01\x00\x00",
            "binary data (a NUL byte at line 1, column 8)",
        ),
        (b"", "found an empty document"),
        (b"  \n# only a comment\n", "found an empty document"),
        (b"42\n", "found a scalar, not an object"),
        (
            b"kind: Node\nmetadata: {name: a}\n---\nkind: Node\n",
            "line 3: a second YAML document",
        ),
        (
            b"{\"kind\": \"List\", \"items\": [{\"status\": {\"capacity\": {\"x\": 1e400}}}]}",
            "number out of range at line 1 column",
        ),
        (
            b"kind: Service\nmetadata: {name: s}\n",
            "found kind \"Service\"",
        ),
    ];
    for (input, expected) in cases {
        expect(&scan(input, &[]), 2, expected);
    }
}

#[test]
fn deep_nesting_is_refused_whether_written_or_built_by_aliases() {
    let flow = format!(
        "kind: List\nitems: {}{}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let out = scan(flow.as_bytes(), &[]);
    expect(&out, 2, "line 2");
    let json = format!(
        "{{\"kind\": \"List\", \"items\": {}{}}}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    expect(&scan(json.as_bytes(), &[]), 2, "recursion limit exceeded");
    // Each within the parser's nesting limit; together, through the alias, deeper than any object.
    let aliased = format!(
        "a: &a {}{}\nkind: List\nitems: [{}*a{}]\n",
        "[".repeat(200),
        "]".repeat(200),
        "[".repeat(150),
        "]".repeat(150)
    );
    expect(
        &scan(aliased.as_bytes(), &[]),
        2,
        "nested more than 300 levels",
    );
}

#[test]
fn a_directory_or_a_missing_file_is_named() {
    let dir = env!("CARGO_MANIFEST_DIR");
    expect(
        &run(&["scan", "-f", dir], b""),
        2,
        "is a directory; -f takes one file",
    );
    let missing = format!("{dir}/no-such-dump.yaml");
    expect(
        &run(&["scan", "-f", &missing], b""),
        2,
        "no-such-dump.yaml: cannot open",
    );
}

#[test]
fn huge_numbers_and_repeated_keys_in_yaml_are_read_as_kubectl_reads_them() {
    let dump =
        b"kind: List\nitems:\n- kind: Node\n  metadata:\n    name: first\n    name: gpu-1\n    \
                 labels: {nvidia.com/gpu.count: 99999999999999999999999}\n  status:\n    capacity: \
                 {nvidia.com/gpu: \"8\"}\n    conditions: [{type: Ready, status: \"True\"}]\n";
    let out = scan(dump, &["-o", "json"]);
    // The number is a label's text, too large for a GPU count: an issue of the node (1), not an error.
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.contains("InvalidLabel"), "{}", out.stdout);
    let status: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    // A repeated key: the last one, as kubectl's decoder keeps it.
    assert_eq!(status["nodes"][0]["name"], "gpu-1", "{status}");
    assert!(
        status.get("skippedObjects").is_none(),
        "nothing skipped: the status exactly"
    );
}

/// Two GPU nodes: one NotReady with a timestamp the scan never reads, one with a null GPU capacity.
const NOT_READY_AND_NULL: &[u8] = b"kind: List\nitems:\n- kind: Node\n  metadata:\n    name: gpu-1\n    \
    creationTimestamp: yesterday\n    labels: {nvidia.com/gpu.product: H100}\n  status:\n    capacity: \
    {nvidia.com/gpu: \"8\"}\n    conditions: [{type: Ready, status: \"False\"}]\n- kind: Node\n  metadata: \
    {name: gpu-2}\n  status:\n    capacity: {nvidia.com/gpu: ~}\n";

#[test]
fn a_field_the_scan_never_reads_does_not_hide_a_not_ready_node() {
    let one =
        b"kind: List\nitems:\n- kind: Node\n  metadata:\n    name: gpu-1\n    creationTimestamp: \
                yesterday\n    labels: {nvidia.com/gpu.product: H100}\n  status:\n    capacity: \
                {nvidia.com/gpu: \"8\"}\n    conditions: [{type: Ready, status: \"False\"}]\n";
    let out = scan(one, &["-o", "json"]);
    // The node is read, NotReady: exit 1, not 0. The field is said, and not counted as skipped.
    expect(&out, 1, "metadata.creationTimestamp: ");
    assert!(
        out.stderr.contains("the scan does not read it"),
        "{}",
        out.stderr
    );
    let status: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(status["problemNodeCount"], 1, "{status}");
    assert!(status.get("skippedObjects").is_none(), "{status}");
}

#[test]
fn what_the_scan_could_not_read_makes_the_exit_code_3_and_is_named() {
    let out = scan(NOT_READY_AND_NULL, &["-o", "json"]);
    expect(&out, 3, "1 read without a field the scan reads");
    let status: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        status["skippedObjects"],
        serde_json::json!([{"kind": "Node", "name": "gpu-2", "item": 1,
            "field": "status.capacity[\"nvidia.com/gpu\"]",
            "reason": "invalid type: null, expected Quantity (line 14, column 32)",
            "skipped": "field"}])
    );
    assert_eq!(
        status["totalGpuNodes"], 1,
        "gpu-2 is read, without its GPU count"
    );
    // YAML names them too; the table says how many on stderr.
    let yaml = scan(NOT_READY_AND_NULL, &["-o", "yaml"]);
    assert_eq!(yaml.code, 3);
    assert!(yaml.stdout.contains("skippedObjects:"), "{}", yaml.stdout);
    let table = scan(NOT_READY_AND_NULL, &[]);
    expect(&table, 3, "the result is incomplete (exit code 3)");
    // An object not read at all (a Pod without a readable container list), in a List beside good ones.
    let pod = b"kind: List\nitems:\n- kind: Node\n  metadata: {name: n}\n- kind: Pod\n  metadata: {name: p}\n  \
                spec: {containers: 3}\n";
    let out = scan(pod, &["-o", "json"]);
    expect(&out, 3, "1 object(s) not read");
    let status: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(status["skippedObjects"][0]["skipped"], "object", "{status}");
    assert_eq!(
        status["skippedObjects"][0]["field"], "spec.containers",
        "{status}"
    );
}

#[test]
fn a_dump_without_a_node_says_so_and_exits_3() {
    let out = scan(
        b"kind: List\nitems:\n- kind: Service\n  metadata: {name: s}\n",
        &[],
    );
    expect(
        &out,
        3,
        "<stdin>: holds no Node, so no GPU node was scanned",
    );
}

#[test]
fn fit_and_quotas_fail_closed_on_the_same_dump() {
    for args in [
        &["fit", "--gpus", "1", "-f", "-"][..],
        &["quotas", "-f", "-"][..],
    ] {
        let out = run(args, NOT_READY_AND_NULL);
        expect(&out, 3, "the result is incomplete (exit code 3)");
    }
    let big = format!("kind: List\nitems: []\n{}", "#\n".repeat(1 << 20));
    let out = run(
        &["fit", "--gpus", "1", "-f", "-", "--max-input-bytes", "1Mi"],
        big.as_bytes(),
    );
    expect(&out, 2, "more than 1048576 bytes");
}

#[test]
fn the_plugins_table_fails_closed_on_a_dump_as_scan_does() {
    // The plugin is the same binary under kubectl's name.
    let dir = std::env::temp_dir().join(format!("gpuinv-hostile-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let plugin = dir.join("kubectl-gpu_inventory");
    let _ = std::fs::remove_file(&plugin);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpu-inventory-operator"), &plugin)
        .expect("the plugin's link");
    let dump = b"kind: List\nitems:\n- kind: Node\n  metadata: {name: n}\n- kind: Pod\n  metadata: {name: p}\n  \
                 spec: {containers: 3}\n";
    let mut child = Command::new(&plugin)
        .args(["-f", "-"])
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the plugin starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(dump)
        .expect("the dump written");
    let out = child.wait_with_output().expect("the plugin ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("1 object(s) not read"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
