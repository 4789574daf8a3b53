//! The benchmark behind `cargo xtask bench diagnostics` (ignored in normal test runs): how
//! long diagnostics on write take on a file of about 3,000 lines, per language, with the real
//! servers. Each write alternates between adding a type error at the end and removing it; the
//! time is that of `Supervisor::diagnostics_after_write` (sync, didSave, the wait for that
//! version's diagnostics, the ledger), the first write left out (it takes the baseline).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use agent_tools_lsp::{
    Before, LspConfig, Supervisor, WrittenFile,
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
                        before: Before::Contents(previous.clone().into_bytes().into()),
                    }],
                    &agent_tools_lsp::CallScope::new(cancel.clone()),
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

/// A project of about click's size for one language: `lib` declares `shared`, `users` files
/// call it, `others` do not; every file carries filler functions (about 12,000 lines in all).
struct ImpactCase {
    program: &'static str,
    marker: (&'static str, &'static str),
    lib: (&'static str, &'static str),
    /// (old, new) of the signature line in `lib`.
    signature: (&'static str, &'static str),
    /// (old, new) of a body line of a function nothing else uses.
    body: (&'static str, &'static str),
    user: fn(usize) -> (String, String),
    filler: fn(usize, usize) -> String,
}

fn impact_cases() -> Vec<ImpactCase> {
    vec![
        ImpactCase {
            program: "basedpyright-langserver",
            marker: ("pyproject.toml", "[project]\nname = \"p\"\n"),
            lib: (
                "lib.py",
                "def shared(x: int) -> int:\n    return x\n\n\ndef lonely(x: int) -> int:\n    return x\n\n\n",
            ),
            signature: ("def shared(x: int)", "def shared(x: int, y: int)"),
            body: (
                "def lonely(x: int) -> int:\n    return x",
                "def lonely(x: int) -> int:\n    return x + 1",
            ),
            user: |i| {
                (
                    format!("user_{i}.py"),
                    format!("from lib import shared\n\nv_{i}: int = shared({i})\n\n\n"),
                )
            },
            filler: |f, i| {
                format!("def fill_{f}_{i}(x: int) -> int:\n    y = x + {i}\n    return y\n\n\n")
            },
        },
        ImpactCase {
            program: "typescript-language-server",
            marker: ("tsconfig.json", "{\"compilerOptions\": {\"strict\": true}}"),
            lib: (
                "lib.ts",
                "export function shared(x: number): number {\n  return x;\n}\n\nexport function lonely(x: number): number {\n  return x;\n}\n\n",
            ),
            signature: ("shared(x: number)", "shared(x: number, y: number)"),
            body: (
                "lonely(x: number): number {\n  return x;",
                "lonely(x: number): number {\n  return x + 1;",
            ),
            user: |i| {
                (
                    format!("user_{i}.ts"),
                    format!(
                        "import {{ shared }} from \"./lib\";\n\nexport const v{i}: number = shared({i});\n\n"
                    ),
                )
            },
            filler: |f, i| {
                format!(
                    "export function fill_{f}_{i}(x: number): number {{\n  const y = x + {i};\n  return y;\n}}\n\n"
                )
            },
        },
        ImpactCase {
            program: "clangd-16",
            marker: ("compile_flags.txt", "-std=c11\n"),
            lib: (
                "lib.h",
                "int shared(int x);\nstatic inline int lonely(int x) {\n  return x;\n}\n",
            ),
            signature: ("int shared(int x)", "int shared(int x, int y)"),
            body: ("lonely(int x) {\n  return x;", "lonely(int x) {\n  return x + 1;"),
            user: |i| {
                (
                    format!("user_{i}.c"),
                    format!("#include \"lib.h\"\n\nint v{i}(void) {{ return shared({i}); }}\n\n"),
                )
            },
            filler: |f, i| {
                format!("int fill_{f}_{i}(int x) {{\n  int y = x + {i};\n  return y;\n}}\n\n")
            },
        },
        ImpactCase {
            program: "gopls",
            marker: ("go.mod", "module example.com/p\n\ngo 1.19\n"),
            lib: (
                "lib.go",
                "package p\n\nfunc Shared(x int) int {\n\treturn x\n}\n\nfunc lonely(x int) int {\n\treturn x\n}\n\n",
            ),
            signature: ("func Shared(x int)", "func Shared(x int, y int)"),
            body: (
                "func lonely(x int) int {\n\treturn x",
                "func lonely(x int) int {\n\treturn x + 1",
            ),
            user: |i| {
                (
                    format!("user_{i}.go"),
                    format!("package p\n\nfunc v{i}() int {{ return Shared({i}) }}\n\n"),
                )
            },
            filler: |f, i| {
                format!("func fill{f}x{i}(x int) int {{\n\ty := x + {i}\n\treturn y\n}}\n\n")
            },
        },
    ]
}

/// `cargo xtask bench diagnostics` also runs this: per language, on a project of about
/// click's size (60 files, 20 of which call `shared`), write latency p50/p90 of a signature
/// change of `shared` and its revert (the impact set: the 20 callers checked per write) beside
/// a body change of a function nothing else uses (the single-file time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run through `cargo xtask bench diagnostics`"]
async fn bench_diagnostics_on_write_with_the_impact_set() {
    let writes: usize =
        std::env::var("AGENT_TOOLS_BENCH_WRITES").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let writes = writes.clamp(2, 20);
    let extra = setup_paths();
    for case in impact_cases() {
        if !require_program(&[case.program], &extra, "cargo xtask setup") {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join(case.marker.0), case.marker.1).expect("marker");
        let filler = |f: usize| (0..40).map(|i| (case.filler)(f, i)).collect::<String>();
        let mut lines = 0;
        for i in 0..60 {
            let (name, text) = if i < 20 {
                (case.user)(i)
            } else {
                let (name, _) = (case.user)(i);
                (name.replace("user_", "other_"), String::new())
            };
            let mut text = text + &filler(i);
            if case.lib.0.ends_with(".go") && text.is_empty() {
                text = "package p\n\n".into();
            }
            if case.lib.0.ends_with(".go") && !text.starts_with("package") {
                text = format!("package p\n\n{text}");
            }
            lines += text.lines().count();
            std::fs::write(root.join(name), text).expect("file");
        }
        let lib = root.join(case.lib.0);
        let base = format!("{}{}", case.lib.1, filler(99));
        std::fs::write(&lib, &base).expect("lib");
        let config: LspConfig =
            serde_json::from_value(json!({"extra_paths": extra, "on_write": {"max_files": 32}}))
                .expect("config");
        let sup = Supervisor::new(&root, config);
        let cancel = CancellationToken::new();
        let mut previous = base.clone();
        let mut run = |text: String| {
            let before = std::mem::replace(&mut previous, text.clone());
            let lib = lib.clone();
            let sup = sup.clone();
            let cancel = cancel.clone();
            async move {
                std::fs::write(&lib, &text).expect("write");
                let t = Instant::now();
                let report = sup
                    .diagnostics_after_write(
                        &[WrittenFile {
                            path: lib,
                            before: Before::Contents(before.into_bytes().into()),
                        }],
                        &agent_tools_lsp::CallScope::new(cancel.clone()),
                    )
                    .await
                    .expect("covered");
                (t.elapsed().as_secs_f64() * 1000.0, report)
            }
        };
        // The first write of the run (cold server) is timed on its own.
        let (cold, report) = run(base.replace(case.body.0, case.body.1)).await;
        let cold_ok = report.not_verified.is_empty();
        let mut single = Vec::new();
        let mut impact = Vec::new();
        let mut checked = Vec::new();
        let mut unverified = 0;
        for i in 0..writes {
            let (ms, report) =
                run(if i % 2 == 0 { base.clone() } else { base.replace(case.body.0, case.body.1) })
                    .await;
            unverified += usize::from(!report.complete());
            single.push(ms);
        }
        for i in 0..writes {
            let text = if i % 2 == 0 {
                base.replace(case.signature.0, case.signature.1)
            } else {
                base.clone()
            };
            let (ms, report) = run(text).await;
            if !report.complete() {
                unverified += 1;
                eprintln!("{}", report.render());
            }
            checked.push(report.checked.len() as f64);
            impact.push(ms);
        }
        sup.shutdown().await;
        println!(
            "bench diagnostics-impact server={} files=61 lines={lines} first_write_ms={cold:.0} first_verified={cold_ok} \
             single_p50_ms={:.0} single_p90_ms={:.0} impact_p50_ms={:.0} impact_p90_ms={:.0} files_checked_p50={:.0} incomplete={unverified} of {}",
            case.program,
            percentile(&single, 0.5),
            percentile(&single, 0.9),
            percentile(&impact, 0.5),
            percentile(&impact, 0.9),
            percentile(&checked, 0.5),
            2 * writes,
        );
    }
}

/// `cargo xtask bench diagnostics` also runs this: a helper used by 30 modules gets a
/// parameter; the write's result (16 files checked within it) and the settled report of the
/// other 14, timed from the write, per language.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run through `cargo xtask bench diagnostics`"]
async fn bench_settle_of_a_thirty_file_fan_out() {
    let extra = setup_paths();
    // `AGENT_TOOLS_BENCH_SERVERS=gopls,clangd-16` runs only those.
    let only = std::env::var("AGENT_TOOLS_BENCH_SERVERS").unwrap_or_default();
    for case in impact_cases() {
        if !only.is_empty() && !only.split(',').any(|s| s == case.program) {
            continue;
        }
        if !require_program(&[case.program], &extra, "cargo xtask setup") {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join(case.marker.0), case.marker.1).expect("marker");
        for i in 0..30 {
            let (name, text) = (case.user)(i);
            std::fs::write(root.join(name), text).expect("user");
        }
        let lib = root.join(case.lib.0);
        std::fs::write(&lib, case.lib.1).expect("lib");
        let config: LspConfig =
            serde_json::from_value(json!({"extra_paths": extra})).expect("config");
        let sup = Supervisor::new(&root, config);
        let cancel = CancellationToken::new();
        // A first write warms the server (its first analysis loads the project).
        let warm = case.lib.1.replace(case.body.0, case.body.1);
        std::fs::write(&lib, &warm).expect("write");
        let before = Before::Contents(case.lib.1.as_bytes().to_vec().into());
        let written = [WrittenFile { path: lib.clone(), before }];
        let _ = sup
            .diagnostics_after_write(&written, &agent_tools_lsp::CallScope::new(cancel.clone()))
            .await;
        let broken = warm.replace(case.signature.0, case.signature.1);
        std::fs::write(&lib, &broken).expect("write");
        let t = Instant::now();
        let before = Before::Contents(warm.into_bytes().into());
        let written = [WrittenFile { path: lib.clone(), before }];
        let report = sup
            .diagnostics_after_write(&written, &agent_tools_lsp::CallScope::new(cancel.clone()))
            .await
            .expect("covered");
        let result_ms = t.elapsed().as_secs_f64() * 1000.0;
        // The warm-up write may have left a settle of its own, stopped by this write: the one
        // that ran to its end is this write's.
        let mut settled = Vec::new();
        while t.elapsed().as_secs() < 300 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            settled.extend(sup.take_settled());
            if settled.iter().any(|s| s.interrupted.is_none()) {
                break;
            }
        }
        settled.retain(|s| s.interrupted.is_none());
        let settle_ms = t.elapsed().as_secs_f64() * 1000.0;
        let named = report.files.len()
            + settled.first().map_or(0, |s| {
                let mut files: Vec<&str> = s.new.iter().map(|d| d.path.as_str()).collect();
                files.dedup();
                files.len()
            });
        if named < 30 {
            eprintln!(
                "{}\n{}",
                report.render(),
                settled.iter().map(|s| s.render()).collect::<Vec<_>>().join("\n")
            );
        }
        sup.shutdown().await;
        println!(
            "bench diagnostics-settle server={} users=30 result_ms={result_ms:.0} in_result={} settled_ms={settle_ms:.0} named={named} of 30",
            case.program,
            report.files.len(),
        );
    }
}
