//! Read means read: how a server and a checker are launched when the project's own code may
//! not run (`LspConfig::allow_project_code` false) and nothing may be left in the project.
//!
//! Without the permission no project-local binary is resolved (see [`crate::discover`]), and
//! each server is started so that it neither runs code the repository controls nor writes
//! into the tree: pyright asks a Python interpreter from `PATH` (not the project's) for its
//! search paths, typescript-language-server uses the tsserver installed next to it (not the
//! project's `node_modules/typescript`), clangd keeps its background index outside the tree,
//! rust-analyzer runs no build scripts, proc macros or `cargo check`, Go never downloads
//! the toolchain a `go.mod` asks for, and no toolchain manager (rustup, pyenv, nodenv, asdf,
//! mise, corepack, Volta) picks a binary by what the project names
//! ([`crate::toolchain::toolchain_pins`]).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{
    config::{ServerDef, merge_settings},
    discover::{self, ResolvedCommand},
    toolchain::{behind_volta_shim, toolchain_pins, volta_home},
};

/// How to allow what is withheld, for messages.
pub(crate) const HOW_TO_ALLOW: &str = "use a surface that can execute commands, or mark the project \
trusted in the user's agent-tools config";

/// The server definition and command to start for one (server, root), with the trust rule
/// applied.
pub(crate) fn prepare(
    def: &ServerDef,
    root: &Path,
    command: &ResolvedCommand,
    allow_project_code: bool,
    private_dir: Option<&Path>,
) -> (ServerDef, ResolvedCommand) {
    let mut def = def.clone();
    let mut command = command.clone();
    if allow_project_code {
        return (def, command);
    }
    match def.id.as_str() {
        "python" => {
            if let Some(python) = outside_python(root) {
                let path = json!({"pythonPath": python.display().to_string()});
                merge_settings(&mut def.settings, &json!({"python": path}));
            }
        }
        "typescript" => {
            if let Some(tsserver) = bundled_tsserver(&command.program) {
                let options = json!({"tsserver": {"path": tsserver.display().to_string()}});
                let base = def.initialization_options.get_or_insert_with(|| json!({}));
                merge_settings(base, &options);
            }
        }
        "c" => {
            let copied = private_dir.and_then(|dir| private_compile_commands(root, dir));
            match copied {
                Some(dir) => command.args.push(format!("--compile-commands-dir={}", dir.display())),
                None => command.args.push("--background-index=false".into()),
            }
        }
        "rust" => {
            let off = json!({
                "cargo": {"buildScripts": {"enable": false}},
                "procMacro": {"enable": false},
                "checkOnSave": false,
            });
            merge_settings(def.initialization_options.get_or_insert_with(|| json!({})), &off);
            merge_settings(&mut def.settings, &json!({"rust-analyzer": off}));
        }
        _ => {}
    }
    // A server installed through Volta is started as itself: its shim would pick by the project.
    if let Some(real) = volta_home().and_then(|home| behind_volta_shim(&command.program, &home)) {
        command.program = real;
    }
    command.env.extend(toolchain_pins());
    (def, command)
}

/// What the trust rule means for `def` in words, for `status`.
pub(crate) fn rule(def: &ServerDef, allow_project_code: bool) -> String {
    if allow_project_code {
        return "project code may run (project-local binaries, build scripts, the project's interpreter)".into();
    }
    let specific = match def.id.as_str() {
        "python" => {
            "pyright asks the Python on PATH for search paths, not the project's interpreter"
        }
        "typescript" => {
            "the tsserver installed with the server is used, not node_modules/typescript; tsc's build info goes outside the tree"
        }
        "c" => "clangd's background index is kept outside the tree",
        "rust" => {
            "rust-analyzer runs no build scripts, proc macros or cargo check; `diagnostics \"*\"` skips cargo check when the project has build scripts or proc macros; rustup runs the user's default toolchain, not one rust-toolchain.toml names"
        }
        "go" => "GOTOOLCHAIN=local: no toolchain download",
        _ => "project-local binaries are not used",
    };
    format!(
        "project code does not run ({specific}; .venv/bin, venv/bin, node_modules/.bin are not searched; toolchains the project names through rustup, pyenv, nodenv, asdf, mise, corepack or Volta are not used); to allow it, {HOW_TO_ALLOW}"
    )
}

/// `python3` (or `python`) from `PATH`, outside the run's root.
fn outside_python(root: &Path) -> Option<PathBuf> {
    let dirs = discover::search_dirs(&[], root, root, false);
    ["python3", "python"]
        .iter()
        .find_map(|name| discover::resolve_program(name, &dirs, root, false))
}

/// The `tsserver.js` of the `typescript` package installed next to typescript-language-server.
fn bundled_tsserver(program: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(program).ok()?;
    real.ancestors()
        .filter(|dir| dir.file_name().is_some_and(|n| n == "node_modules"))
        .map(|dir| dir.join("typescript/lib/tsserver.js"))
        .find(|p| p.is_file())
}

/// A copy of the project's `compile_commands.json` in a private folder, with every
/// `directory` made absolute, so that clangd's background index lives next to the copy.
fn private_compile_commands(root: &Path, private_dir: &Path) -> Option<PathBuf> {
    let original = root.join("compile_commands.json");
    let text = std::fs::read_to_string(&original).ok()?;
    let mut entries: Vec<Value> = serde_json::from_str(&text).ok()?;
    for entry in &mut entries {
        let dir = entry.get("directory").and_then(Value::as_str).unwrap_or(".");
        let absolute =
            if Path::new(dir).is_absolute() { PathBuf::from(dir) } else { root.join(dir) };
        entry["directory"] = Value::String(absolute.display().to_string());
    }
    let name: String = root
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect();
    let dir = private_dir.join("clangd").join(name);
    // The run's own folder, outside the project.
    #[allow(clippy::disallowed_methods, reason = "a private folder outside the project")]
    std::fs::create_dir_all(&dir).ok()?;
    #[allow(clippy::disallowed_methods, reason = "a private folder outside the project")]
    std::fs::write(dir.join("compile_commands.json"), serde_json::to_vec(&entries).ok()?).ok()?;
    Some(dir)
}

/// Why `cargo check` may not run in `root` without the permission: the names of the build
/// scripts or proc-macro crates it would execute, or `None` when it runs none.
pub(crate) fn cargo_runs_project_code(root: &Path) -> Option<String> {
    let mut found = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if depth < 4 && !name.starts_with('.') && name != "target" {
                    stack.push((path, depth + 1));
                }
            } else if name == "build.rs" {
                found.push(crate::paths::display_relative(root, &path));
            } else if name == "Cargo.toml"
                && std::fs::read_to_string(&path)
                    .is_ok_and(|t| t.replace(' ', "").contains("proc-macro=true"))
            {
                found.push(format!(
                    "{} (a proc-macro crate)",
                    crate::paths::display_relative(root, &path)
                ));
            }
        }
    }
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    if lock.contains("name = \"proc-macro2\"") {
        found.push("proc-macro dependencies (Cargo.lock)".into());
    } else if lock.is_empty() {
        found.push("unknown dependencies (no Cargo.lock)".into());
    }
    found.sort();
    (!found.is_empty()).then(|| found.join(", "))
}
