//! The four adapters and what says which one a program needs: root markers, program shapes
//! (an ELF file, a Python script, a Go package) and each adapter's identity in DAP.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A debug adapter this crate knows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[schemars(inline, transform = crate::schema::bare_enum)]
pub enum AdapterKind {
    /// `dart debug_adapter` (Dart and Flutter).
    Dart,
    /// `python -m debugpy.adapter` (Python).
    Debugpy,
    /// `lldb-dap` (C, C++, Rust, anything with DWARF).
    Lldb,
    /// `dlv dap` (Go).
    Delve,
}

impl AdapterKind {
    pub const ALL: [AdapterKind; 4] =
        [AdapterKind::Dart, AdapterKind::Debugpy, AdapterKind::Lldb, AdapterKind::Delve];

    pub fn id(self) -> &'static str {
        match self {
            AdapterKind::Dart => "dart",
            AdapterKind::Debugpy => "debugpy",
            AdapterKind::Lldb => "lldb",
            AdapterKind::Delve => "delve",
        }
    }

    /// Files whose presence in the root says the project is of this kind.
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            AdapterKind::Dart => &["pubspec.yaml"],
            AdapterKind::Debugpy => &["pyproject.toml", "setup.py", "requirements.txt"],
            AdapterKind::Lldb => &["Cargo.toml", "CMakeLists.txt"],
            AdapterKind::Delve => &["go.mod"],
        }
    }

    /// The command as the spec names it.
    pub fn command_name(self) -> &'static str {
        match self {
            AdapterKind::Dart => "dart debug_adapter",
            AdapterKind::Debugpy => "python3 -m debugpy.adapter",
            AdapterKind::Lldb => "lldb-dap",
            AdapterKind::Delve => "dlv dap",
        }
    }

    /// How to install the adapter on a Debian-like machine.
    pub fn install_hint(self) -> &'static str {
        match self {
            AdapterKind::Dart => {
                "install the Dart SDK (https://dart.dev/get-dart) so `dart` is on PATH, or set \
                 [debug.commands] dart in agent-tools.toml"
            }
            AdapterKind::Debugpy => {
                "install debugpy into the project's environment: `.venv/bin/python -m pip install \
                 debugpy` (or `pip install debugpy` for the python3 on PATH)"
            }
            AdapterKind::Lldb => {
                "install lldb-dap: `apt-get install lldb-19` (gives lldb-dap-19), or LLVM's release \
                 for your system"
            }
            AdapterKind::Delve => {
                "install delve and Go: `apt-get install delve golang-go`, or `go install \
                 github.com/go-delve/delve/cmd/dlv@latest`"
            }
        }
    }

    /// The `adapterID` sent in `initialize`.
    pub fn adapter_id(self) -> &'static str {
        match self {
            AdapterKind::Dart => "dart",
            AdapterKind::Debugpy => "debugpy",
            AdapterKind::Lldb => "lldb-dap",
            AdapterKind::Delve => "go",
        }
    }

    /// The `evaluate` context that gives expression values: lldb's `repl` is for LLDB commands,
    /// debugpy's `repl` also runs statements.
    pub fn evaluate_context(self) -> &'static str {
        match self {
            AdapterKind::Debugpy => "repl",
            _ => "watch",
        }
    }
}

/// The first marker of `kind` in `dir` or its parents up to `root`.
pub fn find_marker(kind: AdapterKind, dir: &Path, root: &Path) -> Option<PathBuf> {
    let mut current = Some(dir);
    while let Some(d) = current {
        for marker in kind.markers() {
            let candidate = d.join(marker);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        if d == root || !d.starts_with(root) {
            break;
        }
        current = d.parent();
    }
    None
}

/// The folder holding `go.mod` for `program` (a folder or a file), searching up to `root`.
pub fn go_module_dir(program: &Path, root: &Path) -> Option<PathBuf> {
    let start = if program.is_dir() { program } else { program.parent()? };
    find_marker(AdapterKind::Delve, start, root).and_then(|m| m.parent().map(Path::to_path_buf))
}

/// Picks the adapter for `program` from its type, then from the root's markers.
pub fn adapter_for_program(program: &Path, root: &Path) -> Option<AdapterKind> {
    let ext = program.extension().and_then(|e| e.to_str()).unwrap_or_default();
    match ext {
        "py" | "pyw" => return Some(AdapterKind::Debugpy),
        "go" => return Some(AdapterKind::Delve),
        "dart" => return Some(AdapterKind::Dart),
        _ => {}
    }
    if program.is_dir() {
        if program.join("go.mod").is_file() || has_extension_inside(program, "go") {
            return Some(AdapterKind::Delve);
        }
        if program.join("pubspec.yaml").is_file() {
            return Some(AdapterKind::Dart);
        }
        if program.join("__main__.py").is_file() {
            return Some(AdapterKind::Debugpy);
        }
        return None;
    }
    if is_elf(program) {
        let go = find_marker(AdapterKind::Delve, program.parent().unwrap_or(root), root).is_some();
        let native =
            find_marker(AdapterKind::Lldb, program.parent().unwrap_or(root), root).is_some();
        return Some(if go && !native { AdapterKind::Delve } else { AdapterKind::Lldb });
    }
    if is_python_script(program) {
        return Some(AdapterKind::Debugpy);
    }
    None
}

fn has_extension_inside(dir: &Path, ext: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == ext))
}

/// Whether `path` starts with the ELF magic.
pub fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && magic == *b"\x7fELF"
}

fn is_python_script(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 64];
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let n = file.read(&mut head).unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.starts_with("#!") && head.lines().next().is_some_and(|l| l.contains("python"))
}

/// Whether `program` in `root` is a Rust program (so lldb should load the Rust formatters).
pub fn looks_like_rust(program: &Path, root: &Path) -> bool {
    program.components().any(|c| c.as_os_str() == "target")
        && find_marker(AdapterKind::Lldb, program.parent().unwrap_or(root), root)
            .is_some_and(|m| m.ends_with("Cargo.toml"))
        || root.join("Cargo.toml").is_file()
}
