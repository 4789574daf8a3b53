//! Two `agent-tools call edit` processes on one file: the reference file tools' cross-process
//! guarantee, seen through the binary.
// Tests, examples and test programs start and signal programs directly, on purpose.
#![allow(clippy::disallowed_methods)]

use serde_json::{Value, json};

fn insert_edit(marker: &str) -> Value {
    json!({"path": "log.txt", "old_string": "end\n", "new_string": format!("{marker}\nend\n")})
}

#[test]
fn two_hosts_editing_one_file_lose_nothing_and_a_refusal_says_why() {
    let project = tempfile::tempdir().expect("temp dir");
    std::fs::write(project.path().join("log.txt"), "start\nend\n").expect("write");
    let host = |n: usize| {
        let root = project.path().to_path_buf();
        std::thread::spawn(move || {
            (0..10)
                .map(|k| {
                    let marker = format!("host {n} edit {k}");
                    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools"))
                        .arg("call")
                        .arg("edit")
                        .arg(insert_edit(&marker).to_string())
                        .arg("--root")
                        .arg(&root)
                        .output()
                        .expect("run the host");
                    (marker, output)
                })
                .collect::<Vec<_>>()
        })
    };
    let (a, b) = (host(0), host(1));
    let outcomes: Vec<_> = a.join().unwrap().into_iter().chain(b.join().unwrap()).collect();
    let log = std::fs::read_to_string(project.path().join("log.txt")).expect("read back");
    for (marker, output) in outcomes {
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        if output.status.success() {
            assert!(
                log.contains(&format!("{marker}\n")),
                "{marker} reported done but lost:\n{log}"
            );
        } else {
            assert!(text.contains("changed since it was read"), "{marker}: {text}");
            assert!(!log.contains(&format!("{marker}\n")), "{marker} refused but written");
        }
    }
}
