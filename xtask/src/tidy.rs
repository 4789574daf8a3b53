//! Tidy checks, run as ordinary tests: `//!` doc lines, crate READMEs, no trailing whitespace,
//! the crate graph, and the mechanisms only `agent-tools-support` may hold.

use std::path::{Path, PathBuf};

fn project_root() -> PathBuf {
    crate::project_root()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') || name == "fixtures" {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn all_rust_files() -> Vec<PathBuf> {
    let root = project_root();
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn every_source_file_starts_with_a_module_doc_line() {
    let offenders: Vec<String> = all_rust_files()
        .into_iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap_or_default().starts_with("//!"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "files without a leading `//!` line saying what they hold:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn every_crate_has_a_readme() {
    let root = project_root();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).into_iter().flatten().flatten() {
        if entry.path().join("Cargo.toml").exists() && !entry.path().join("README.md").exists() {
            missing.push(entry.path().display().to_string());
        }
    }
    assert!(missing.is_empty(), "crates without README.md: {missing:?}");
}

#[test]
fn no_trailing_whitespace_in_sources() {
    let mut offenders = Vec::new();
    for file in all_rust_files() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.ends_with(' ') || line.ends_with('\t') {
                offenders.push(format!("{}:{}", file.display(), i + 1));
            }
        }
    }
    assert!(offenders.is_empty(), "trailing whitespace:\n{}", offenders.join("\n"));
}

#[test]
fn family_crates_depend_on_no_other_family_and_not_on_the_facade() {
    let root = project_root();
    let internal = [
        "agent-tools",
        "agent-tools-ask",
        "agent-tools-astgrep",
        "agent-tools-debug",
        "agent-tools-eval",
        "agent-tools-lsp",
        "agent-tools-vibe",
        "agent-tools-python",
        "agent-tools-host",
    ];
    let mut violations = Vec::new();
    for dir in ["ask", "astgrep", "debug", "eval", "lsp-tool", "vibe"] {
        let manifest = std::fs::read_to_string(root.join("crates").join(dir).join("Cargo.toml"))
            .unwrap_or_default();
        for line in manifest.lines() {
            let key = line.split('=').next().unwrap_or("").trim();
            if internal.contains(&key) {
                violations.push(format!("crates/{dir} depends on {key}"));
            }
        }
    }
    assert!(violations.is_empty(), "family crates must stay independent: {violations:?}");
}

/// Where a line of library code (tests, examples and test binaries excluded, and everything
/// after a file's `#[cfg(test)]`) does what only `agent-tools-support` may do.
fn mechanism_violations(patterns: &[&str], allow_marker: &str) -> Vec<String> {
    let root = project_root();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).into_iter().flatten().flatten() {
        if entry.file_name() == "support" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&entry.path().join("src"), &mut files);
        for file in files {
            if file.components().any(|c| c.as_os_str() == "bin") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let mut previous = "";
            for (i, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                let allowed = line.contains(allow_marker) || previous.contains(allow_marker);
                if !allowed
                    && !line.trim_start().starts_with("//")
                    && patterns.iter().any(|p| line.contains(p))
                {
                    found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
                }
                previous = line;
            }
        }
    }
    found
}

#[test]
fn only_the_support_crate_starts_processes() {
    let found = mechanism_violations(&[".spawn()", ".output()"], "tidy: not a spawn");
    assert!(
        found.is_empty(),
        "start processes through agent_tools_support::process (own group, death with the host, \
         teardown of descendants):\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_support_crate_writes_files_by_path() {
    let patterns = [
        "fs::write(",
        "File::create(",
        "fs::rename(",
        "remove_file(",
        "create_dir_all(",
        "OpenOptions",
        ".persist(",
        "remove_dir_all(",
    ];
    let found = mechanism_violations(&patterns, "tidy: private folder");
    assert!(
        found.is_empty(),
        "write project files through agent_tools_support::{{fs, journal}} (confined by handle, \
         crash-atomic); a write to a private folder outside the project says so with a \
         `tidy: private folder` comment:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_support_crate_is_a_leaf() {
    let manifest = std::fs::read_to_string(project_root().join("crates/support/Cargo.toml"))
        .unwrap_or_default();
    let internal: Vec<&str> =
        manifest.lines().filter(|l| l.trim_start().starts_with("agent-tools")).collect();
    assert!(internal.is_empty(), "agent-tools-support depends on workspace crates: {internal:?}");
}
