//! Tidy checks that the docs hold: every relative Markdown link and every file a Markdown file
//! names in backticks resolves inside the repository, and `cargo xtask` lists only real commands.
//!
//! A file reference is an inline code span outside fenced blocks that looks like a path of ours:
//! it contains a `/`, or it is a bare `*.rs`/`*.md` name. It resolves when it exists relative to
//! the Markdown file, to the repository root, or as the tail of a path in the repository
//! (`families/debug.rs` names `crates/facade/src/families/debug.rs`). Paths on the user's machine
//! (absolute, `~`, a project's `.venv/bin`, `node_modules/.bin`, build output) are not ours.

use std::{
    collections::BTreeSet,
    path::{Component, Path, PathBuf},
};

/// Folders never searched for Markdown files or resolved into.
const SKIPPED_DIRS: &[&str] = &["target", ".git", "node_modules", "__pycache__", ".venv", "venv"];

/// Leading path components that name things on the user's machine or in a user's project.
const NOT_OURS: &[&str] = &[".venv", "venv", "node_modules", "target", "lib", "usr", "dev"];

/// Extensions of a bare name (no `/`) that is taken as one of our files.
const BARE_FILE_EXTENSIONS: &[&str] = &["rs", "md"];

struct Repo {
    root: PathBuf,
    /// Every file and folder, relative to the root, `/`-separated.
    paths: BTreeSet<String>,
    markdown: Vec<PathBuf>,
}

impl Repo {
    fn scan() -> Repo {
        let root = crate::project_root();
        let mut repo = Repo { root: root.clone(), paths: BTreeSet::new(), markdown: Vec::new() };
        repo.walk(&root);
        repo
    }

    fn walk(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if SKIPPED_DIRS.contains(&name.as_str()) {
                continue;
            }
            if let Ok(rel) = path.strip_prefix(&self.root) {
                self.paths.insert(rel.to_string_lossy().replace('\\', "/"));
            }
            if path.is_dir() {
                self.walk(&path);
            } else if name.ends_with(".md") && !is_fixture(&path) {
                self.markdown.push(path);
            }
        }
    }

    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).display().to_string()
    }

    /// `target` (a link, `#` stripped) joined to `base`, normalised; `None` if it leaves the root.
    fn join_inside(&self, base: &Path, target: &str) -> Option<PathBuf> {
        let mut out = PathBuf::new();
        let start = base.strip_prefix(&self.root).ok()?;
        for component in start.join(target).components() {
            match component {
                Component::ParentDir => {
                    if !out.pop() {
                        return None;
                    }
                }
                Component::Normal(part) => out.push(part),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return None,
            }
        }
        Some(self.root.join(out))
    }

    fn names_a_file(&self, md_dir: &Path, reference: &str) -> bool {
        let reference = reference.trim_end_matches('/');
        if self.join_inside(md_dir, reference).is_some_and(|p| p.exists())
            || self.root.join(reference).exists()
        {
            return true;
        }
        let tail = format!("/{reference}");
        self.paths.iter().any(|p| p.ends_with(&tail) || p == reference)
    }
}

fn is_fixture(path: &Path) -> bool {
    path.components().any(|c| matches!(c.as_os_str().to_str(), Some("fixtures" | "snapshots")))
}

/// One Markdown file's prose lines (fenced code blocks left out), numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// The targets of `[text](target)` links on a line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        out.push(target.trim_start_matches('<').trim_end_matches('>'));
        rest = &after[end..];
    }
    out
}

/// Inline code spans of a line that look like a path of ours.
fn file_references<'a>(md_dir: &Path, line: &'a str) -> Vec<&'a str> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(|span| span.trim())
        .map(|span| span.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches(':'))
        .filter(|span| looks_like_our_path(md_dir, span))
        .collect()
}

fn looks_like_our_path(md_dir: &Path, span: &str) -> bool {
    let odd = |c: char| c.is_whitespace() || "$~*{}()<>=:@\"',;|&!?[]#%".contains(c);
    if span.is_empty()
        || span.contains(odd)
        || span.starts_with(['/', '-', '.']) && !is_dot_dir(span)
    {
        return false;
    }
    let first = span.split('/').next().unwrap_or("");
    // An address block (`169.254.0.0/16`) is not a path.
    if NOT_OURS.contains(&first) || first.parse::<std::net::IpAddr>().is_ok() {
        return false;
    }
    if span.contains('/') {
        // `elicitation/create` is a protocol method; a path of ours starts at a folder we have
        // or ends in a file name.
        let last = span.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        return span.chars().any(|c| c.is_ascii_alphanumeric())
            && (last.contains('.') || first_component_exists(md_dir, first));
    }
    span.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && BARE_FILE_EXTENSIONS.contains(&ext))
}

fn first_component_exists(md_dir: &Path, first: &str) -> bool {
    md_dir.join(first).exists() || crate::project_root().join(first).exists()
}

/// Hidden folders of ours (`.ci/run`), as opposed to a bare extension (`.py`) or a user's `.venv`.
fn is_dot_dir(span: &str) -> bool {
    span.starts_with('.') && !span.starts_with("..") && span.contains('/')
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation other than `-`/`_` gone.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|(_, line)| line.trim_start().strip_prefix('#'))
        .map(|h| heading_anchor(h.trim_start_matches('#')))
        .collect()
}

fn link_problem(repo: &Repo, md: &Path, target: &str) -> Option<String> {
    if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let dir = md.parent().unwrap_or(&repo.root);
    let file = if path.is_empty() {
        md.to_path_buf()
    } else if path.starts_with('/') {
        return Some(format!("`{target}` is absolute; link relative to this file"));
    } else {
        match repo.join_inside(dir, path) {
            Some(p) if p.exists() => p,
            Some(_) => return Some(format!("`{target}` does not exist")),
            None => return Some(format!("`{target}` leaves the repository")),
        }
    };
    let fragment = fragment.filter(|f| !f.is_empty())?;
    if file.extension().is_some_and(|e| e == "md") {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if !anchors(&text).contains(fragment) {
            return Some(format!("`{target}`: no heading with anchor `#{fragment}`"));
        }
    }
    None
}

#[test]
fn every_relative_link_and_file_reference_in_markdown_resolves() {
    let repo = Repo::scan();
    assert!(!repo.markdown.is_empty(), "no Markdown files found under {}", repo.root.display());
    let mut problems = Vec::new();
    for md in &repo.markdown {
        let text = std::fs::read_to_string(md).unwrap_or_default();
        let dir = md.parent().unwrap_or(&repo.root);
        for (number, line) in prose_lines(&text) {
            let at = format!("{}:{number}", repo.rel(md));
            for target in link_targets(line) {
                if let Some(problem) = link_problem(&repo, md, target) {
                    problems.push(format!("{at}: link {problem}"));
                }
            }
            for reference in file_references(dir, line) {
                if !repo.names_a_file(dir, reference) {
                    problems.push(format!(
                        "{at}: `{reference}` names no file in the repository (relative to the \
                         file, to the root, or as the tail of a path)"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "Markdown points at what is not in the repository; fix the path, or say it in words if it \
         is not ours:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reference_finder_tells_our_paths_from_others() {
    let line = "see `crates/facade/src/tool.rs:59`, `lib.rs`, `.ci/run`, `docs/x.md`, and not \
                `.venv/bin`, `~/.cache/x`, `/usr/bin/time`, `$/progress`, `.py`, `a b/c`, `go.mod`, \
                `elicitation/create`, `textDocument/didOpen`, `169.254.0.0/16`, `fe80::/10`";
    assert_eq!(
        file_references(&crate::project_root(), line),
        ["crates/facade/src/tool.rs", "lib.rs", ".ci/run", "docs/x.md"]
    );
    assert_eq!(
        link_targets("[a](docs/decisions.md#d1-package-names) and [b](<x y.md> \"t\")"),
        ["docs/decisions.md#d1-package-names", "x"]
    );
    assert_eq!(
        heading_anchor(" D8. Results for `clients`, structured"),
        "d8-results-for-clients-structured"
    );
    let text = "a\n```sh\n`x/y`\n```\nb";
    assert_eq!(prose_lines(text), [(1, "a"), (5, "b")]);
}

#[test]
fn references_resolve_inside_the_repository_only() {
    let repo = Repo::scan();
    let root = repo.root.clone();
    let readme = root.join("README.md");
    assert!(repo.names_a_file(&root, "families/debug.rs"));
    assert!(repo.names_a_file(&root.join("crates/eval"), "src/python/runner.py"));
    assert!(!repo.names_a_file(&root, "DECISIONS.md"));
    assert!(!repo.names_a_file(&root, "shared/research/debug.md"));
    assert_eq!(link_problem(&repo, &readme, "docs/decisions.md#d1-package-names"), None);
    assert_eq!(link_problem(&repo, &readme, "https://example.org/x.md"), None);
    for bad in ["../shared/spec/SPEC.md", "docs/nothing.md", "docs/decisions.md#d99", "/etc/passwd"]
    {
        assert!(link_problem(&repo, &readme, bad).is_some(), "{bad} should be reported");
    }
}

#[test]
fn xtask_help_lists_exactly_the_commands_it_dispatches() {
    let source = std::fs::read_to_string(crate::project_root().join("xtask/src/main.rs"))
        .unwrap_or_default();
    let dispatched: BTreeSet<&str> = source
        .split("Some(\"")
        .skip(1)
        .filter_map(|rest| rest.split_once("\") =>").map(|(name, _)| name))
        .collect();
    let usage =
        source.split("const USAGE").nth(1).and_then(|s| s.split("\";").next()).unwrap_or("");
    let listed: BTreeSet<&str> = usage
        .lines()
        .filter(|l| l.starts_with("  ") && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(!dispatched.is_empty(), "found no `Some(\"cmd\") =>` arms in xtask/src/main.rs");
    assert_eq!(
        listed, dispatched,
        "`cargo xtask` help (USAGE) and the commands main() runs differ"
    );
}
