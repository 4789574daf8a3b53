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

/// `cargo metadata` of the workspace's own packages.
fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(project_root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// The workspace's crates and, for each, the workspace crates it depends on (normal and build
/// dependencies; dev-dependencies are the tests' business).
fn crate_graph() -> Vec<(String, Vec<String>)> {
    let metadata = metadata();
    let packages = metadata["packages"].as_array().expect("packages");
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|package| {
            let internal = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter_map(|d| d["name"].as_str())
                .filter(|name| members.contains(name))
                .map(str::to_string)
                .collect();
            (package["name"].as_str().unwrap_or_default().to_string(), internal)
        })
        .collect()
}

/// One family crate: the facade's cargo feature that builds it in (the family's name), its
/// package name and its folder.
struct FamilyCrate {
    feature: String,
    package: String,
    dir: PathBuf,
}

/// The family crates, read from the facade's manifest: each cargo feature of the facade that
/// turns on one optional workspace dependency builds in the family of its name. The facade's
/// table of families (`families::FAMILIES`) is keyed by the same features.
fn family_crates() -> Vec<FamilyCrate> {
    let metadata = metadata();
    let packages = metadata["packages"].as_array().expect("packages");
    let facade = packages
        .iter()
        .find(|p| p["name"] == "builtin-agent-tools")
        .expect("the facade is in the workspace");
    let features = facade["features"].as_object().expect("the facade's features");
    let mut crates: Vec<FamilyCrate> = features
        .iter()
        .filter_map(|(feature, enables)| {
            let [serde_json::Value::String(enabled)] = enables.as_array()?.as_slice() else {
                return None;
            };
            let name = enabled.strip_prefix("dep:")?;
            let package = packages.iter().find(|p| p["name"] == name)?;
            let manifest = PathBuf::from(package["manifest_path"].as_str()?);
            Some(FamilyCrate {
                feature: feature.clone(),
                package: name.to_string(),
                dir: manifest.parent()?.to_path_buf(),
            })
        })
        .collect();
    crates.sort_by(|a, b| a.feature.cmp(&b.feature));
    crates
}

#[test]
fn family_crates_depend_on_no_other_family_and_not_on_the_facade() {
    let families: Vec<String> = family_crates().into_iter().map(|f| f.package).collect();
    assert!(families.len() >= 6, "the facade's manifest names too few families: {families:?}");
    let violations: Vec<String> = crate_graph()
        .iter()
        .filter(|(name, _)| families.contains(name))
        .flat_map(|(name, deps)| {
            deps.iter()
                .filter(|d| *d != "agent-tools-support")
                .map(move |d| format!("{name} depends on {d}"))
        })
        .collect();
    assert!(violations.is_empty(), "family crates must stay independent: {violations:?}");
}

/// Each family crate declares its name and tools once, in `family::FAMILY`, under the name of
/// the facade's feature that builds it in, and the facade's table lists it under that feature.
#[test]
fn every_family_declares_its_descriptor_and_is_in_the_facades_table() {
    let table = std::fs::read_to_string(project_root().join("crates/facade/src/families/mod.rs"))
        .expect("the facade's table of families");
    let mut problems = Vec::new();
    for family in family_crates() {
        let descriptor =
            std::fs::read_to_string(family.dir.join("src/family.rs")).unwrap_or_default();
        let lib = std::fs::read_to_string(family.dir.join("src/lib.rs")).unwrap_or_default();
        if !lib.contains("pub mod family;") {
            problems.push(format!("{}: src/lib.rs has no `pub mod family;`", family.package));
        }
        if !descriptor.contains("pub const FAMILY: FamilyDescriptor") {
            problems.push(format!("{}: src/family.rs declares no `FAMILY`", family.package));
        }
        if !descriptor.contains(&format!("name: \"{}\"", family.feature)) {
            problems.push(format!(
                "{}: its FAMILY is not named `{}`, the facade's feature for it",
                family.package, family.feature
            ));
        }
        if !table.contains(&format!("entry!(\"{}\",", family.feature)) {
            problems.push(format!("the facade's FAMILIES has no entry for `{}`", family.feature));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_support_crate_is_a_leaf() {
    let graph = crate_graph();
    let (_, deps) = graph
        .iter()
        .find(|(name, _)| name == "agent-tools-support")
        .expect("agent-tools-support is in the workspace");
    assert!(deps.is_empty(), "agent-tools-support depends on workspace crates: {deps:?}");
}

// Starting and signalling processes, and writing, renaming or removing files by path, outside
// the support crate is a compile-time rule: `disallowed-methods` in clippy.toml, which CI's
// clippy run enforces.

/// The test paths the benchmark commands select (a `module::…::name` after `--`): each must
/// name a module or function that exists, or the benchmark silently runs nothing.
#[test]
fn every_benchmark_filter_names_an_existing_test() {
    let root = project_root();
    let mut filters = Vec::new();
    for entry in std::fs::read_dir(root.join("xtask/src")).expect("xtask/src") {
        let path = entry.expect("entry").path();
        let is_bench = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("bench"));
        if !is_bench {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        for literal in text.split('"').skip(1).step_by(2) {
            // A test path: identifiers joined by `::` (a pattern such as `Box::new($A)` is not).
            let path_like =
                literal.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
            if literal.contains("::") && path_like {
                filters.push((path.clone(), literal.to_string()));
            }
        }
    }
    assert!(!filters.is_empty(), "the benchmarks select their tests by path");
    // Where a test path's modules start: each crate's `src` and each of its test targets.
    let mut bases = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("crates").flatten() {
        bases.push(krate.path().join("src"));
        for target in std::fs::read_dir(krate.path().join("tests")).into_iter().flatten().flatten()
        {
            bases.push(target.path());
        }
    }
    for (file, filter) in filters {
        let segments: Vec<&str> = filter.split("::").filter(|s| !s.is_empty()).collect();
        // The longest prefix of modules that is a file, then the rest inside that file.
        let resolved = (1..=segments.len()).rev().find_map(|n| {
            let rel = segments[..n].join("/");
            bases.iter().find_map(|base| {
                [base.join(format!("{rel}.rs")), base.join(&rel).join("mod.rs")]
                    .into_iter()
                    .find(|p| p.is_file())
                    .map(|p| (p, &segments[n..]))
            })
        });
        let Some((source, rest)) = resolved else {
            panic!("{}: the filter `{filter}` names no module file", file.display());
        };
        let text = std::fs::read_to_string(&source).expect("read");
        for name in rest {
            assert!(
                text.contains(&format!("mod {name}")) || text.contains(&format!("fn {name}(")),
                "{}: the filter `{filter}` names `{name}`, which {} does not have",
                file.display(),
                source.display()
            );
        }
    }
}
