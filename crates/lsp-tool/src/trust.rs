//! Read means read: how a server and a checker are launched when the project's own code may
//! not run (`LspConfig::allow_project_code` false) and nothing may be left in the project.
//!
//! Without the permission no project-local binary is resolved (see [`crate::discover`]), and
//! each server is started so that it neither runs code the repository controls nor writes
//! into the tree: pyright asks a Python interpreter from `PATH` (not the project's) for its
//! search paths, typescript-language-server uses the tsserver installed next to it (not the
//! project's `node_modules/typescript`), clangd keeps its background index outside the tree,
//! rust-analyzer runs no build scripts, proc macros or `cargo check`, and Go never downloads
//! the toolchain a `go.mod` asks for.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{
    config::{ServerDef, merge_settings},
    discover::{self, ResolvedCommand},
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
    command.env.extend(toolchain_pins());
    (def, command)
}

/// Environment that keeps toolchain managers from choosing a binary by what the project
/// names. Applied to servers, checkers, the children they start and `--version` probes, where
/// project code may not run:
/// - Go downloads no toolchain a `go.mod` asks for (`GOTOOLCHAIN=local`);
/// - rustup runs the user's default toolchain, not the one (or the `path` of one) a
///   `rust-toolchain.toml` names;
/// - pyenv and nodenv shims run the user's global version, not a `.python-version` or
///   `.node-version` (whose name can climb out of the versions folder into the project);
/// - asdf runs the versions of the user's own `~/.tool-versions`, not the project's;
/// - mise reads no configuration file of the project (`mise.toml`, `.tool-versions`, whose
///   `path:` versions run any folder);
/// - corepack neither downloads the package manager a `packageManager` field names nor writes
///   one into `package.json`.
///
/// Volta's `package.json` pins have no switch; a Volta shim still follows them.
pub(crate) fn toolchain_pins() -> Vec<(String, String)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let unset = |name: &str| std::env::var_os(name).is_none();
    let mut pins = vec![("GOTOOLCHAIN".to_string(), "local".to_string())];
    if unset("RUSTUP_TOOLCHAIN")
        && let Some(default) = rustup_default()
    {
        pins.push(("RUSTUP_TOOLCHAIN".into(), default));
    }
    for (manager, variable) in [("pyenv", "PYENV_VERSION"), ("nodenv", "NODENV_VERSION")] {
        if unset(variable) {
            let root_variable = format!("{}_ROOT", manager.to_uppercase());
            let root = std::env::var_os(&root_variable)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(format!(".{manager}"))));
            let global = root.and_then(|r| first_word(&r.join("version")));
            pins.push((variable.into(), global.unwrap_or_else(|| "system".into())));
        }
    }
    if let Some(home) = &home
        && let Ok(text) = std::fs::read_to_string(home.join(".tool-versions"))
    {
        for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
            let mut words = line.split_whitespace();
            if let (Some(tool), Some(version)) = (words.next(), words.next()) {
                let variable = format!("ASDF_{}_VERSION", tool.to_uppercase().replace('-', "_"));
                if unset(&variable) {
                    pins.push((variable, version.to_string()));
                }
            }
        }
    }
    // No project can have a file by this name: mise then reads only the user's global config.
    for variable in ["MISE_OVERRIDE_CONFIG_FILENAMES", "MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES"] {
        pins.push((variable.into(), "agent-tools-ignores-project-toolchains".into()));
    }
    for (variable, value) in [
        ("COREPACK_ENABLE_NETWORK", "0"),
        ("COREPACK_ENABLE_AUTO_PIN", "0"),
        ("COREPACK_ENABLE_STRICT", "0"),
    ] {
        pins.push((variable.into(), value.into()));
    }
    pins
}

/// The first word of a version file (`3.12.4`), if it has one.
fn first_word(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.split_whitespace().next().map(str::to_string)
}

/// The user's default rustup toolchain, read from rustup's settings (nothing is run).
fn rustup_default() -> Option<String> {
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))?;
    let settings = std::fs::read_to_string(home.join("settings.toml")).ok()?;
    settings.lines().find_map(|line| {
        let value = line.trim().strip_prefix("default_toolchain")?.trim().strip_prefix('=')?;
        let value = value.trim().trim_matches('"');
        (!value.is_empty()).then(|| value.to_string())
    })
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
        "project code does not run ({specific}; .venv/bin, venv/bin, node_modules/.bin are not searched; toolchains the project names through rustup, pyenv, nodenv, asdf, mise or corepack are not used); to allow it, {HOW_TO_ALLOW}"
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
    // tidy: private folder (the run's own, outside the project)
    std::fs::create_dir_all(&dir).ok()?;
    // tidy: private folder
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
