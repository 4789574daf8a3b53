//! The benchmark behind `cargo xtask bench diagnostics` (ignored in normal test runs): how
//! long diagnostics on write take on a file of about 3,000 lines, per language, with the real
//! servers. Each write alternates between adding a type error at the end and removing it; the
//! time is that of `Supervisor::diagnostics_after_write` (sync, didSave, the wait for that
//! version's diagnostics, the ledger), the first write left out (it takes the baseline).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use agent_tools_lsp::{
    FileBefore, LspConfig, Supervisor, WrittenFile,
    testing::{require_program, setup_paths},
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// (server program, marker file, marker content, file, body of ~3,000 lines, an error line)
fn cases() -> Vec<(&'static str, &'static str, &'static str, &'static str, String, &'static str)> {
    let n = 600;
    let py: String = (0..n)
        .map(|i| format!("def f_{i}(x: int) -> int:\n    y = x + {i}\n    return y\n\n\n"))
        .collect();
    let ts: String = (0..n).map(|i| format!("export function f_{i}(x: number): number {{\n  const y = x + {i};\n  return y;\n}}\n\n")).collect();
    let c: String = (0..n)
        .map(|i| format!("int f_{i}(int x) {{\n  int y = x + {i};\n  return y;\n}}\n\n"))
        .collect();
    let go: String = "package main\n\nfunc main() {}\n\n".to_string()
        + &(0..n)
            .map(|i| format!("func f{i}(x int) int {{\n\ty := x + {i}\n\treturn y\n}}\n\n"))
            .collect::<String>();
    vec![
        ("basedpyright-langserver", "pyproject.toml", "", "big.py", py, "bad: str = f_1(2)\n"),
        (
            "typescript-language-server",
            "tsconfig.json",
            "{\"compilerOptions\": {\"strict\": true}}",
            "big.ts",
            ts,
            "export const bad: string = f_1(2);\n",
        ),
        (
            "clangd-16",
            "compile_flags.txt",
            "-std=c11\n",
            "big.c",
            c,
            "int bad(void) { return missing; }\n",
        ),
        (
            "gopls",
            "go.mod",
            "module example.com/big\n\ngo 1.19\n",
            "big.go",
            go,
            "var bad string = f1(2)\n",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run through `cargo xtask bench diagnostics`"]
async fn bench_diagnostics_on_write_on_a_3000_line_file() {
    let writes: usize =
        std::env::var("AGENT_TOOLS_BENCH_WRITES").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let extra = setup_paths();
    for (program, marker, marker_text, file, body, error) in cases() {
        if !require_program(&[program], &extra, "cargo xtask setup") {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join(marker), marker_text).expect("marker");
        let path = root.join(file);
        std::fs::write(&path, &body).expect("file");
        let config: LspConfig = serde_json::from_value(
            json!({"extra_paths": extra, "on_write": {"deadline_ms": 2000, "startup_wait_ms": 30000}}),
        )
        .expect("config");
        let sup = Supervisor::new(&root, config);
        let cancel = CancellationToken::new();
        let mut times = Vec::new();
        let mut unverified = 0;
        let mut previous = body.clone();
        for i in 0..=writes {
            let text = if i % 2 == 1 { format!("{body}{error}") } else { body.clone() };
            std::fs::write(&path, &text).expect("write");
            let t = Instant::now();
            let report = sup
                .diagnostics_after_write(
                    &[WrittenFile {
                        path: path.clone(),
                        before: FileBefore::Contents(previous.clone().into_bytes().into()),
                    }],
                    &cancel,
                )
                .await
                .expect("covered");
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            if !report.not_verified.is_empty() {
                unverified += 1;
                eprintln!("write {i}: {}", report.render());
            }
            if i > 0 {
                times.push(ms);
            }
            previous = text;
        }
        sup.shutdown().await;
        println!(
            "bench diagnostics-on-write server={program} lines={} writes={} p50_ms={:.0} p90_ms={:.0} not_verified={unverified}",
            body.lines().count(),
            times.len(),
            percentile(&times, 0.5),
            percentile(&times, 0.9),
        );
    }
}
