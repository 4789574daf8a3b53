//! A 2 GiB sparse file through the real host: its first lines come back (and lines further on,
//! with a line of gigabytes cut), a file that is all hole is refused as binary by `read`, `edit`
//! and `apply_patch`, and the host's peak memory stays a small fraction of the file. Issue 27
//! found a `read` with `end_line: 3` of such a file took 2.1 GB of memory (and 57 s).

use serde_json::{Value, json};

use crate::support::{RawHost, TempProject};

/// The file's size: 2 GiB, nearly all of it a hole.
const SIZE: u64 = 2 << 30;

/// The host's peak resident memory (`VmHWM`) in MiB.
fn peak_mib(host: &RawHost) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", host.child.id()))
        .expect("the host's /proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"));
    kib >> 10
}

/// The text of a tool result.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn the_first_lines_of_a_2_gib_sparse_file_come_back_in_bounded_memory() {
    let project = TempProject::new(&[("small.txt", "small\n")]);
    let lines: String = (1..=1000).map(|n| format!("line {n}\n")).collect();
    let text_file = project.root.join("text.log");
    std::fs::write(&text_file, &lines).expect("write text.log");
    std::fs::File::options().write(true).open(&text_file).and_then(|f| f.set_len(SIZE)).unwrap();
    std::fs::File::create(project.root.join("hole.img")).and_then(|f| f.set_len(SIZE)).unwrap();

    let mut host = RawHost::start(&project.root, "files-large", &[]);
    host.initialize();
    let warm = host.call(1, "read", json!({"path": "small.txt"}));
    assert_eq!(text(&warm), "1\tsmall\n", "{warm}");
    let before = peak_mib(&host);

    let first = host.call(2, "read", json!({"path": "text.log", "end_line": 3}));
    assert_eq!(
        text(&first),
        "1\tline 1\n2\tline 2\n3\tline 3\n[text.log: showed lines 1-3 of a file of 2147483648 \
         bytes with more lines; call read with start_line=4 to continue]\n",
        "{first}"
    );
    // The last text lines, and then the hole as one line of 2 GiB: cut, not read to its end.
    let last = host.call(3, "read", json!({"path": "text.log", "start_line": 999}));
    assert_eq!(last["isError"], false, "{last}");
    assert!(text(&last).starts_with(" 999\tline 999\n1000\tline 1000\n"), "{}", &text(&last)[..80]);
    assert_eq!(last["structuredContent"].get("total_lines"), None, "{}", last["structuredContent"]);
    assert!(text(&last).contains("of a file of 2147483648 bytes with more lines"));
    for (id, tool, args) in [
        (4, "read", json!({"path": "hole.img", "end_line": 3})),
        (5, "edit", json!({"path": "hole.img", "old_string": "a", "new_string": "b"})),
        (
            6,
            "apply_patch",
            json!({"patch": "--- a/hole.img\n+++ b/hole.img\n@@ -1 +1 @@\n-a\n+b\n"}),
        ),
    ] {
        let refused = host.call(id, tool, args);
        assert_eq!(refused["isError"], true, "{refused}");
        assert!(
            text(&refused).contains("hole.img is a binary file (2147483648 bytes)"),
            "{refused}"
        );
    }

    // A generous bound: the file is 2048 MiB; the host before these calls is some tens.
    let after = peak_mib(&host);
    eprintln!("host peak memory: {before} MiB before the large reads, {after} MiB after");
    assert!(after < 256, "peak memory {after} MiB reading a 2 GiB file (before: {before} MiB)");
    assert!(after - before < 128, "the reads took {} MiB at their peak", after - before);
    assert!(host.finish().success());
}
