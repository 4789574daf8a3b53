//! A scan of the project's files for names (word boundaries, ignore files respected): what
//! stands in where a language server cannot say which files use a declaration.

use std::path::{Path, PathBuf};

use crate::config::ServerDef;

/// Files read by one scan for names, and the largest file read.
const SCAN_MAX_FILES: usize = 20_000;
const SCAN_MAX_BYTES: u64 = 4 << 20;

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// How often `name` occurs in `text` as a whole word.
fn word_count(text: &[u8], name: &str) -> usize {
    memchr::memmem::find_iter(text, name.as_bytes())
        .filter(|&at| {
            let before = at.checked_sub(1).map(|i| text[i]);
            let after = text.get(at + name.len()).copied();
            !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte)
        })
        .count()
}

/// The files under `root` of `def`'s languages (ignore files respected, dependency and build
/// folders skipped), at most [`SCAN_MAX_FILES`] and none larger than [`SCAN_MAX_BYTES`], with
/// their content; `skip` is left out.
fn source_files<'a>(
    root: &Path,
    def: &'a ServerDef,
    skip: &'a Path,
) -> impl Iterator<Item = (PathBuf, Vec<u8>)> + 'a {
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .parents(true)
        .filter_entry(|e| {
            !e.file_type().is_some_and(|t| t.is_dir())
                || !crate::discover::SKIP_DIRS.contains(&e.file_name().to_string_lossy().as_ref())
        })
        .build()
        .flatten()
        .take(SCAN_MAX_FILES)
        .filter(move |entry| {
            let path = entry.path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            path != skip
                && entry.file_type().is_some_and(|t| t.is_file())
                && def.language_of(ext).is_some()
                && entry.metadata().is_ok_and(|m| m.len() <= SCAN_MAX_BYTES)
        })
        .filter_map(|entry| {
            let text = std::fs::read(entry.path()).ok()?;
            Some((entry.into_path(), text))
        })
}

/// Whether `name` occurs in `text` as a whole word.
pub(crate) fn has_word(text: &[u8], name: &str) -> bool {
    word_count(text, name) > 0
}

/// Files under `root` of `def`'s languages (ignore files respected) that mention any of
/// `names` as a word, most mentions first; `skip` is left out.
pub(crate) fn mentions(
    root: &Path,
    def: &ServerDef,
    names: &[String],
    skip: &Path,
) -> Vec<(PathBuf, usize)> {
    let mut found: Vec<(PathBuf, usize)> = source_files(root, def, skip)
        .filter_map(|(path, text)| {
            let count: usize = names.iter().map(|n| word_count(&text, n)).sum();
            (count > 0).then_some((path, count))
        })
        .collect();
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    found
}

/// How deep the include graph of a header is followed (a header that includes it, then the
/// files that include that one, …).
const MAX_INCLUDE_DEPTH: usize = 4;

/// The files under `root` of `def`'s languages that import or include `path`, nearest first
/// (depth 1: they name it; a header that includes it brings its own includers at depth 2, …),
/// from the import and include lines alone: `#include "x.h"`, `import`/`from` of a Python
/// module, an `import … from "./x"` or `require("./x")`, a Go import of its package, a Rust
/// `mod`/`use` of it. An upper bound: same-named modules elsewhere count too.
pub(crate) fn importers(root: &Path, def: &ServerDef, path: &Path) -> Vec<(PathBuf, usize)> {
    importers_of_any(root, def, std::slice::from_ref(&path.to_path_buf()))
}

/// [`importers`] of any of `paths`, none of `paths` among them.
fn importers_of_any(root: &Path, def: &ServerDef, paths: &[PathBuf]) -> Vec<(PathBuf, usize)> {
    let Some(first) = paths.first() else { return Vec::new() };
    let files: Vec<(PathBuf, Vec<u8>)> =
        source_files(root, def, first).filter(|(f, _)| !paths.contains(f)).collect();
    let mut found: Vec<(PathBuf, usize)> = Vec::new();
    let mut frontier: Vec<PathBuf> = paths.to_vec();
    for depth in 1..=MAX_INCLUDE_DEPTH {
        let targets: Vec<ModuleName> = frontier.iter().filter_map(|p| ModuleName::of(p)).collect();
        let mut next = Vec::new();
        for (file, text) in &files {
            if found.iter().any(|(f, _)| f == file) {
                continue;
            }
            let text = String::from_utf8_lossy(text);
            if targets.iter().any(|t| t.imported_by(&text)) {
                found.push((file.clone(), depth));
                // Only a header passes its includers on; a module's importers do not import
                // what it imports.
                if ModuleName::of(file).is_some_and(|m| m.kind == ModuleKind::Header) {
                    next.push(file.clone());
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    found
}

/// The files that import `path` (at any depth) and mention any of `names` as a word, with how
/// many mentions each: the users a server's references leave out when it has not loaded them.
/// `None` when `path` is not a file others import by name, or there are no names.
pub(crate) fn importers_naming(
    root: &Path,
    def: &ServerDef,
    path: &Path,
    names: &[String],
) -> Option<Vec<(PathBuf, usize)>> {
    if names.is_empty() || ModuleName::of(path).is_none() {
        return None;
    }
    let found = importers(root, def, path).into_iter().filter_map(|(file, _)| {
        let text = std::fs::read(&file).ok()?;
        let count: usize = names.iter().map(|n| word_count(&text, n)).sum();
        (count > 0).then_some((file, count))
    });
    Some(found.collect())
}

/// How a file that imports a renamed symbol's module mentions the symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mention {
    /// Through the import: `from pkg.scale import factor`, `import { factor } from "./scale"`,
    /// `use crate::scale::factor`, `scale.factor`, `scale::factor`. It means that symbol.
    ThroughImport,
    /// Only as a word, which may be a name of its own.
    Word,
}

/// The files that import one of `edited` (at any depth) and mention `name` as a word, but are
/// not among `edited`, and how they mention it: where a rename's edit may have left the old
/// name behind (a server that had not read them yet).
pub(crate) fn unedited_importers(
    root: &Path,
    def: &ServerDef,
    edited: &[PathBuf],
    name: &str,
) -> Vec<(PathBuf, Mention)> {
    let modules: Vec<ModuleName> = edited.iter().filter_map(|p| ModuleName::of(p)).collect();
    importers_of_any(root, def, edited)
        .into_iter()
        .filter_map(|(path, _)| {
            let text = std::fs::read(&path).ok()?;
            if !has_word(&text, name) {
                return None;
            }
            let text = String::from_utf8_lossy(&text);
            let through = modules.iter().any(|m| m.names_through_import(&text, name));
            Some((path, if through { Mention::ThroughImport } else { Mention::Word }))
        })
        .collect()
}

/// Whether `path` is a C or C++ header (its users are the files that include it).
pub(crate) fn is_header(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("h" | "hh" | "hpp" | "hxx" | "inc" | "inl")
    )
}

/// How a language names a file it imports.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ModuleKind {
    /// `#include "name.h"`.
    Header,
    /// `import a.b.name`, `from a.name import x`, `from . import name`.
    Python,
    /// `from "./dir/name"`, `require("../name")`, `import("./name.js")`.
    Script,
    /// `"example.com/mod/pkg"` in an import block: the package's folder.
    GoPackage,
    /// `mod name;`, `use crate::name::…`.
    Rust,
}

/// The name other files import a file by.
struct ModuleName {
    kind: ModuleKind,
    name: String,
}

impl ModuleName {
    fn of(path: &Path) -> Option<ModuleName> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let stem = path.file_stem()?.to_string_lossy().to_string();
        let folder = || path.parent()?.file_name().map(|n| n.to_string_lossy().to_string());
        let (kind, name) = match ext {
            "h" | "hh" | "hpp" | "hxx" | "inc" | "inl" | "c" | "cc" | "cpp" | "cxx" => {
                (ModuleKind::Header, path.file_name()?.to_string_lossy().to_string())
            }
            "py" | "pyi" if stem == "__init__" => (ModuleKind::Python, folder()?),
            "py" | "pyi" => (ModuleKind::Python, stem),
            "ts" | "tsx" | "js" | "jsx" | "mjs" | "cjs" | "mts" | "cts" if stem == "index" => {
                (ModuleKind::Script, folder()?)
            }
            "ts" | "tsx" | "js" | "jsx" | "mjs" | "cjs" | "mts" | "cts" => {
                (ModuleKind::Script, stem.split('.').next().unwrap_or(&stem).to_string())
            }
            "go" => (ModuleKind::GoPackage, folder()?),
            "rs" if stem == "mod" => (ModuleKind::Rust, folder()?),
            "rs" => (ModuleKind::Rust, stem),
            _ => return None,
        };
        Some(ModuleName { kind, name })
    }

    /// Whether `text` has an import or include line that names this module.
    fn imported_by(&self, text: &str) -> bool {
        let name = self.name.as_str();
        text.lines().map(str::trim).any(|line| match self.kind {
            ModuleKind::Header => {
                line.starts_with('#')
                    && line[1..].trim_start().starts_with("include")
                    && quoted(line).is_some_and(|spec| last_segment(spec) == name)
            }
            ModuleKind::Python => {
                (line.starts_with("import ") || line.starts_with("from "))
                    && line.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == name)
            }
            ModuleKind::Script => {
                (line.contains("from ") || line.contains("require(") || line.contains("import"))
                    && quoted(line).is_some_and(|spec| {
                        spec.starts_with('.')
                            && last_segment(spec).split('.').next().is_some_and(|s| s == name)
                    })
            }
            ModuleKind::GoPackage => {
                quoted(line).is_some_and(|spec| last_segment(spec) == name)
                    && (line.starts_with('"') || line.starts_with("import") || line.contains(" \""))
            }
            ModuleKind::Rust => {
                (line.starts_with("mod ")
                    || line.starts_with("pub mod ")
                    || line.starts_with("use ")
                    || line.starts_with("pub use "))
                    && line.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == name)
            }
        })
    }
}

impl ModuleName {
    /// Whether `text` names `name` through this module: on a line that imports the module, or
    /// qualified by the module's name (`scale.factor`, `scale::factor`).
    fn names_through_import(&self, text: &str, name: &str) -> bool {
        if self.kind == ModuleKind::Header {
            return false;
        }
        let qualified = [format!("{}.{name}", self.name), format!("{}::{name}", self.name)];
        text.lines().any(|line| {
            let words = || line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'));
            (self.imported_by(line) && words().any(|w| w == name))
                || qualified.iter().any(|q| has_word(line.as_bytes(), q))
        })
    }
}

/// The first quoted string of `line` (`"…"`, `'…'` or `<…>`).
fn quoted(line: &str) -> Option<&str> {
    let start = line.find(['"', '\'', '<'])?;
    let close = match line.as_bytes()[start] {
        b'<' => '>',
        b'\'' => '\'',
        _ => '"',
    };
    let rest = &line[start + 1..];
    rest.find(close).map(|end| &rest[..end])
}

/// `c` of `a/b/c`.
fn last_segment(spec: &str) -> &str {
    spec.rsplit('/').next().unwrap_or(spec)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;

    #[test]
    fn includers_are_found_through_headers_nearest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for (name, text) in [
            ("lstring.h", "#define luaS_new(L, s) f(L, s)\n"),
            ("lgc.h", "#include \"lstring.h\"\n"),
            ("lgc.c", "#include \"lgc.h\"\n"),
            ("lapi.c", "#include <stdio.h>\n#include \"lstring.h\"\n"),
            ("lzio.c", "#include \"lzio.h\"\n/* lstring.h is not included */\n"),
        ] {
            std::fs::write(root.join(name), text).expect("write");
        }
        let def = crate::config::builtin_servers()
            .into_iter()
            .find(|d| d.id == "c")
            .expect("clangd is built in");
        let mut found = importers(root, &def, &root.join("lstring.h"));
        found.sort();
        let names: Vec<(String, usize)> = found
            .into_iter()
            .map(|(p, d)| (p.file_name().unwrap().to_string_lossy().to_string(), d))
            .collect();
        assert_eq!(names, [("lapi.c".into(), 1), ("lgc.c".into(), 2), ("lgc.h".into(), 1)]);
    }

    #[test]
    fn modules_are_named_as_their_importers_write_them() {
        let py = ModuleName::of(Path::new("/p/src/pkg/termui.py")).unwrap();
        assert!(py.imported_by("from pkg.termui import echo"));
        assert!(py.imported_by("from .termui import echo"));
        assert!(py.imported_by("from . import termui"));
        assert!(!py.imported_by("termui = 1"));
        let init = ModuleName::of(Path::new("/p/src/pkg/__init__.py")).unwrap();
        assert!(init.imported_by("from pkg import echo"));
        let ts = ModuleName::of(Path::new("/p/src/util/isFunction.ts")).unwrap();
        assert!(ts.imported_by("import { isFunction } from './util/isFunction';"));
        assert!(ts.imported_by("const { isFunction } = require(\"../isFunction.js\");"));
        assert!(
            !ts.imported_by("import { isFunction } from 'isFunction';"),
            "a package, not the file"
        );
        let go = ModuleName::of(Path::new("/p/internal/shapes/area.go")).unwrap();
        assert!(go.imported_by("\t\"example.com/demo/internal/shapes\""));
        assert!(go.imported_by("import \"example.com/demo/internal/shapes\""));
    }

    #[test]
    fn names_are_counted_as_whole_words() {
        assert_eq!(word_count(b"echo(x); echo_all(); re_echo; echo", "echo"), 2);
        assert_eq!(word_count(b"$echo echo$", "echo"), 0);
    }

    #[test]
    fn a_symbol_named_through_its_module_is_told_from_a_name_of_its_own() {
        let scale = ModuleName::of(Path::new("/p/pkg/scale.py")).expect("module");
        for through in [
            "from pkg.scale import factor\n",
            "from .scale import (other, factor)\n",
            "import pkg.scale\nprint(pkg.scale.factor)\n",
            "from pkg import scale\nx = scale.factor\n",
        ] {
            assert!(scale.names_through_import(through, "factor"), "{through}");
        }
        for own in ["from pkg import scale\nfactor = 3\n", "import scale\nmy_factor = scale.x\n"] {
            assert!(!scale.names_through_import(own, "factor"), "{own}");
        }
        let ts = ModuleName::of(Path::new("/p/src/scale.ts")).expect("module");
        assert!(ts.names_through_import("import { factor } from \"./scale\";\n", "factor"));
        let rs = ModuleName::of(Path::new("/p/src/scale.rs")).expect("module");
        assert!(rs.names_through_import("use crate::scale::factor;\n", "factor"));
        assert!(rs.names_through_import("let x = scale::factor(2);\n", "factor"));
        let go = ModuleName::of(Path::new("/p/scale/scale.go")).expect("module");
        assert!(go.names_through_import("x := scale.Factor(2)\n", "Factor"));
    }
}
