//! The `[lsp]` section of `agent-tools.toml` and the table of server definitions.
//!
//! The built-in table covers Python, TypeScript/JavaScript, C/C++, Go, Rust and Dart.
//! `[lsp.servers.<id>]` overrides fields of a built-in definition or adds a new one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The `[lsp]` section.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LspConfig {
    /// How long one request to a server may take, in milliseconds.
    pub request_timeout_ms: u64,
    /// How long `initialize` may take, in milliseconds.
    pub startup_timeout_ms: u64,
    /// How long a navigation action waits for a server that is still indexing, in milliseconds.
    pub ready_timeout_ms: u64,
    /// How long the `diagnostics` action waits for the diagnostics of a version, in milliseconds.
    pub diagnostics_timeout_ms: u64,
    /// How many times a crashed server is restarted within a minute before giving up.
    pub max_restarts_per_minute: u32,
    /// How long the project check of `diagnostics "*"` may run, in milliseconds.
    pub check_timeout_ms: u64,
    /// Directories searched for server binaries before `PATH` (for example Mason's `bin`).
    pub extra_paths: Vec<String>,
    /// Diagnostics on write (wrapping the harness's `write`, `edit`, `apply_patch`).
    pub on_write: OnWriteConfig,
    /// Overrides of built-in servers, or new servers, by id.
    pub servers: BTreeMap<String, ServerOverride>,
    /// Whether code the project controls may run: project-local binaries (`.venv/bin`,
    /// `node_modules/.bin`), build scripts and proc macros, the project's interpreter. Never
    /// read from a file: the host sets it for surfaces that can execute, or a trusted project.
    #[serde(skip)]
    pub allow_project_code: bool,
}

impl Default for LspConfig {
    fn default() -> Self {
        LspConfig {
            request_timeout_ms: 20_000,
            startup_timeout_ms: 30_000,
            ready_timeout_ms: 15_000,
            diagnostics_timeout_ms: 15_000,
            max_restarts_per_minute: 3,
            check_timeout_ms: 180_000,
            extra_paths: Vec::new(),
            on_write: OnWriteConfig::default(),
            servers: BTreeMap::new(),
            allow_project_code: false,
        }
    }
}

/// `[lsp.on_write]`: diagnostics after the harness's file tools write.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OnWriteConfig {
    /// Wrap the file tools at all.
    pub enabled: bool,
    /// How long to wait at least for the diagnostics of the written version once the server
    /// has it (a bound for a server that hangs: the wait ends as soon as they come). A server
    /// that took longer before gets twice its measured time, up to `startup_wait_ms`.
    pub deadline_ms: u64,
    /// How long to wait for a server that is still starting, and for the first analysis of a
    /// server that has not answered a write yet (it loads the project), before saying "not
    /// verified".
    pub startup_wait_ms: u64,
    /// How many new diagnostics are listed; the rest are counted.
    pub max_shown: usize,
    /// How many files besides the written ones a write checks: those that use what the write
    /// changed, nearest (most references) first. Files past the bound are named as not checked.
    pub max_files: usize,
}

impl Default for OnWriteConfig {
    fn default() -> Self {
        OnWriteConfig {
            enabled: true,
            deadline_ms: 8_000,
            startup_wait_ms: 20_000,
            max_shown: 20,
            max_files: 16,
        }
    }
}

/// Fields of `[lsp.servers.<id>]`; each replaces the built-in value when given.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerOverride {
    /// Language id → file extensions, for example `{ python = ["py", "pyi"] }`.
    pub languages: Option<BTreeMap<String, Vec<String>>>,
    /// Files or folders whose presence marks a project root.
    pub root_markers: Option<Vec<String>>,
    /// Take the topmost ancestor with a marker instead of the nearest (Cargo workspaces).
    pub topmost_root: Option<bool>,
    /// Markers whose folder covers every project nested below it (a `tsconfig.json` covers
    /// sub-folders that hold only a `package.json`): a nested marker there is no new root.
    pub covering_markers: Option<Vec<String>>,
    /// Candidate commands, tried in order: the first whose program resolves is used.
    pub commands: Option<Vec<Vec<String>>>,
    /// Arguments that make the program print its version (for `status`).
    pub version_args: Option<Vec<String>>,
    /// `initializationOptions` sent with `initialize`.
    pub initialization_options: Option<Value>,
    /// Answers to `workspace/configuration`, looked up by section (`python.analysis`); merged
    /// key by key into the built-in settings.
    pub settings: Option<Value>,
    /// What to tell a user whose machine lacks the binary.
    pub install_hint: Option<String>,
    /// After the first file is opened, how long to wait for the server to announce indexing
    /// before trusting its answers (servers that load a project lazily, such as tsserver).
    pub warmup_ms: Option<u64>,
    /// A text in the server's log messages that says its project is loaded (ends the warm-up).
    pub ready_message: Option<String>,
    /// Titles (case-insensitive prefixes) of the server's background-index progress: while it
    /// runs, answers about one file (definition, hover) are served and only project-wide ones
    /// (references, workspace symbols) wait or are marked partial. A server with such titles
    /// needs no warm-up for file-local answers.
    pub index_progress: Option<Vec<String>>,
    /// Candidate commands of the project check (`diagnostics "*"`), tried in order.
    pub check_commands: Option<Vec<Vec<String>>>,
    /// How to read the check's output: `pyright-json`, `tsc`, `go`, `cargo-json`, `dart-machine`.
    pub check_format: Option<String>,
    /// Turn the server off.
    pub disabled: Option<bool>,
}

/// One language server as the supervisor knows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerDef {
    /// Short id, for example `python`.
    pub id: String,
    pub languages: BTreeMap<String, Vec<String>>,
    pub root_markers: Vec<String>,
    pub topmost_root: bool,
    pub covering_markers: Vec<String>,
    pub commands: Vec<Vec<String>>,
    pub version_args: Option<Vec<String>>,
    pub initialization_options: Option<Value>,
    pub settings: Value,
    pub install_hint: String,
    pub warmup_ms: u64,
    pub ready_message: Option<String>,
    pub index_progress: Vec<String>,
    /// Flags added from a major version on, for a command whose name carries no version
    /// (`clangd`, as opposed to `clangd-16`): the version is probed before the start.
    pub flags_since_major: Vec<(u32, String)>,
    pub check_commands: Vec<Vec<String>>,
    pub check_format: Option<String>,
}

impl ServerDef {
    /// The language id of a file extension, if this server covers it.
    pub fn language_of(&self, extension: &str) -> Option<&str> {
        self.languages
            .iter()
            .find(|(_, exts)| exts.iter().any(|e| e.eq_ignore_ascii_case(extension)))
            .map(|(id, _)| id.as_str())
    }

    /// A readable name for messages: the language ids, for example `typescript/javascript`.
    pub fn display_languages(&self) -> String {
        let mut names: Vec<&str> = self.languages.keys().map(String::as_str).collect();
        names.dedup();
        names.join("/")
    }

    /// The program names of all candidate commands, for messages.
    pub fn program_names(&self) -> Vec<String> {
        self.commands.iter().filter_map(|c| c.first().cloned()).collect()
    }

    fn apply(&mut self, o: &ServerOverride) {
        if let Some(v) = &o.languages {
            self.languages = v.clone();
        }
        if let Some(v) = &o.root_markers {
            self.root_markers = v.clone();
        }
        if let Some(v) = o.topmost_root {
            self.topmost_root = v;
        }
        if let Some(v) = &o.covering_markers {
            self.covering_markers = v.clone();
        }
        if let Some(v) = &o.commands {
            self.commands = v.clone();
            // A new command would not understand the old program's version flag.
            if o.version_args.is_none() {
                self.version_args = None;
            }
        }
        if let Some(v) = &o.version_args {
            self.version_args = Some(v.clone());
        }
        if let Some(v) = &o.initialization_options {
            self.initialization_options = Some(v.clone());
        }
        if let Some(v) = &o.settings {
            merge_settings(&mut self.settings, v);
        }
        if let Some(v) = &o.install_hint {
            self.install_hint = v.clone();
        }
        if let Some(v) = o.warmup_ms {
            self.warmup_ms = v;
        }
        if let Some(v) = &o.ready_message {
            self.ready_message = Some(v.clone());
        }
        if let Some(v) = &o.index_progress {
            self.index_progress = v.clone();
        }
        if let Some(v) = &o.check_commands {
            self.check_commands = v.clone();
        }
        if let Some(v) = &o.check_format {
            self.check_format = Some(v.clone());
        }
    }
}

/// Merges `over` into `base` key by key: objects merge recursively, anything else replaces.
/// Settings a user gives refine the built-in ones instead of clobbering a whole section.
pub(crate) fn merge_settings(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                merge_settings(base.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (base, over) => *base = over.clone(),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn langs(items: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    items.iter().map(|(id, exts)| (id.to_string(), strings(exts))).collect()
}

/// pyright's own defaults for `python.analysis`, with the type-checking mode per-file
/// diagnostics and the project check share.
fn pyright_analysis() -> Value {
    json!({
        "typeCheckingMode": PYRIGHT_MODE,
        "diagnosticMode": "openFilesOnly",
        "autoSearchPaths": true,
        "useLibraryCodeForTypes": true,
        "autoImportCompletions": true,
    })
}

/// The type-checking mode of the built-in Python settings (also used by the project check).
pub(crate) const PYRIGHT_MODE: &str = "standard";

/// The built-in server table.
pub fn builtin_servers() -> Vec<ServerDef> {
    let mut clangd = vec![strings(&["clangd", "--log=error"])];
    for v in (14..=19).rev() {
        let mut command = vec![format!("clangd-{v}"), "--log=error".into()];
        // From 16 on: an open header's text, not the disk's, is what including files see
        // (the diagnostics check of a write compares against the header as it was).
        if v >= 16 {
            command.push("--use-dirty-headers".into());
        }
        clangd.push(command);
    }
    vec![
        ServerDef {
            id: "python".into(),
            languages: langs(&[("python", &["py", "pyi"])]),
            root_markers: strings(&[
                "pyproject.toml",
                "setup.py",
                "setup.cfg",
                "requirements.txt",
                "Pipfile",
                "pyrightconfig.json",
            ]),
            topmost_root: false,
            covering_markers: strings(&["pyproject.toml", "setup.py", "setup.cfg", "pyrightconfig.json"]),
            commands: vec![
                strings(&["basedpyright-langserver", "--stdio"]),
                strings(&["pyright-langserver", "--stdio"]),
                strings(&["pylsp"]),
            ],
            version_args: None,
            initialization_options: None,
            // Project config files (pyproject, pyrightconfig) take precedence over these. A
            // section pyright receives replaces its defaults, so the defaults that matter are
            // spelled out (without `autoSearchPaths` a src-layout project resolves its own
            // package to site-packages).
            settings: json!({
                "python": {"analysis": pyright_analysis()},
                "basedpyright": {"analysis": pyright_analysis()},
            }),
            install_hint: "install with `pip install basedpyright` (into the project's .venv or on PATH)".into(),
            // pyright enumerates the workspace after its configuration arrives and logs
            // "Found N source files"; a rename before that finds "nothing renameable".
            warmup_ms: 5_000,
            ready_message: Some("source file".into()),
            index_progress: Vec::new(),
            flags_since_major: Vec::new(),
            check_commands: vec![
                strings(&["basedpyright", "--outputjson"]),
                strings(&["pyright", "--outputjson"]),
            ],
            check_format: Some("pyright-json".into()),
        },
        ServerDef {
            id: "typescript".into(),
            languages: langs(&[
                ("typescript", &["ts", "mts", "cts"]),
                ("typescriptreact", &["tsx"]),
                ("javascript", &["js", "mjs", "cjs"]),
                ("javascriptreact", &["jsx"]),
            ]),
            root_markers: strings(&["tsconfig.json", "jsconfig.json", "package.json"]),
            topmost_root: false,
            covering_markers: strings(&["tsconfig.json", "jsconfig.json", "package.json"]),
            commands: vec![strings(&["typescript-language-server", "--stdio"])],
            version_args: Some(strings(&["--version"])),
            // A rename at an imported name renames the declaration everywhere, not just an alias.
            initialization_options: Some(json!({"preferences": {"providePrefixAndSuffixTextForRename": false}})),
            settings: Value::Null,
            install_hint: "install with `npm install -g typescript-language-server@5 typescript@5` (or into the project's node_modules)".into(),
            // tsserver loads the project after the first open and says so with $/progress ~0.7 s
            // later (much later on a loaded machine); it always does, so the bound is generous.
            warmup_ms: 10_000,
            ready_message: None,
            index_progress: Vec::new(),
            flags_since_major: Vec::new(),
            check_commands: vec![strings(&["tsc", "--noEmit", "--pretty", "false", "-p", "."])],
            check_format: Some("tsc".into()),
        },
        ServerDef {
            id: "c".into(),
            languages: langs(&[
                ("c", &["c", "h"]),
                ("cpp", &["cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "ipp"]),
            ]),
            root_markers: strings(&[
                "compile_commands.json",
                "compile_flags.txt",
                ".clangd",
                "CMakeLists.txt",
                "meson.build",
                "Makefile",
            ]),
            topmost_root: false,
            covering_markers: strings(&["compile_commands.json", ".clangd"]),
            commands: clangd,
            version_args: Some(strings(&["--version"])),
            initialization_options: None,
            settings: Value::Null,
            install_hint: "install with `apt-get install clangd` (Debian: `clangd-16` or newer)".into(),
            // The background index announces itself after the compilation database is read.
            warmup_ms: 2_000,
            ready_message: None,
            // clangd answers from the open file's AST at once (1.4 s cold, the index at 10%);
            // its background index adds only other files' references and symbols.
            index_progress: strings(&["indexing"]),
            flags_since_major: vec![(16, "--use-dirty-headers".into())],
            check_commands: Vec::new(),
            check_format: None,
        },
        ServerDef {
            id: "go".into(),
            languages: langs(&[("go", &["go"])]),
            root_markers: strings(&["go.work", "go.mod"]),
            topmost_root: false,
            covering_markers: strings(&["go.work"]),
            commands: vec![strings(&["gopls"])],
            version_args: Some(strings(&["version"])),
            initialization_options: None,
            settings: Value::Null,
            install_hint: "install with `apt-get install gopls golang-go` or `go install golang.org/x/tools/gopls@latest`".into(),
            warmup_ms: 0,
            ready_message: None,
            index_progress: Vec::new(),
            flags_since_major: Vec::new(),
            check_commands: vec![strings(&["go", "vet", "./..."])],
            check_format: Some("go".into()),
        },
        ServerDef {
            id: "rust".into(),
            languages: langs(&[("rust", &["rs"])]),
            root_markers: strings(&["Cargo.toml"]),
            topmost_root: true,
            covering_markers: Vec::new(),
            commands: vec![strings(&["rust-analyzer"])],
            version_args: Some(strings(&["--version"])),
            initialization_options: None,
            settings: Value::Null,
            install_hint: "install with `rustup component add rust-analyzer`".into(),
            warmup_ms: 0,
            ready_message: None,
            index_progress: Vec::new(),
            flags_since_major: Vec::new(),
            check_commands: vec![strings(&["cargo", "check", "--quiet", "--message-format=json"])],
            check_format: Some("cargo-json".into()),
        },
        ServerDef {
            id: "dart".into(),
            languages: langs(&[("dart", &["dart"])]),
            root_markers: strings(&["pubspec.yaml"]),
            topmost_root: false,
            covering_markers: Vec::new(),
            commands: vec![strings(&["dart", "language-server", "--protocol=lsp"])],
            version_args: Some(strings(&["--version"])),
            initialization_options: None,
            settings: Value::Null,
            install_hint: "install the Dart SDK (it brings `dart language-server`)".into(),
            warmup_ms: 0,
            ready_message: None,
            index_progress: Vec::new(),
            flags_since_major: Vec::new(),
            check_commands: vec![strings(&["dart", "analyze", "--format=machine"])],
            check_format: Some("dart-machine".into()),
        },
    ]
}

impl LspConfig {
    /// The effective server table: built-ins with overrides applied, then new servers.
    pub fn servers(&self) -> Result<Vec<ServerDef>, String> {
        let mut defs = builtin_servers();
        for (id, o) in &self.servers {
            match defs.iter_mut().find(|d| &d.id == id) {
                Some(def) => def.apply(o),
                None => {
                    let missing: Vec<&str> = [
                        ("languages", o.languages.is_none()),
                        ("root_markers", o.root_markers.is_none()),
                        ("commands", o.commands.is_none()),
                    ]
                    .iter()
                    .filter(|(_, m)| *m)
                    .map(|(n, _)| *n)
                    .collect();
                    if !missing.is_empty() && o.disabled != Some(true) {
                        return Err(format!(
                            "[lsp.servers.{id}] is not a built-in server, so it needs {}",
                            missing.join(", ")
                        ));
                    }
                    let mut def = ServerDef {
                        id: id.clone(),
                        languages: BTreeMap::new(),
                        root_markers: Vec::new(),
                        topmost_root: false,
                        covering_markers: Vec::new(),
                        commands: Vec::new(),
                        version_args: None,
                        initialization_options: None,
                        settings: Value::Null,
                        install_hint: format!("install the program named in [lsp.servers.{id}]"),
                        warmup_ms: 0,
                        ready_message: None,
                        index_progress: Vec::new(),
                        flags_since_major: Vec::new(),
                        check_commands: Vec::new(),
                        check_format: None,
                    };
                    def.apply(o);
                    defs.push(def);
                }
            }
        }
        defs.retain(|d| self.servers.get(&d.id).and_then(|o| o.disabled) != Some(true));
        for def in &defs {
            if def.commands.iter().any(|c| c.is_empty()) {
                return Err(format!("[lsp.servers.{}] has an empty command", def.id));
            }
            if let Some(f) = &def.check_format
                && !crate::check::FORMATS.contains(&f.as_str())
            {
                return Err(format!(
                    "[lsp.servers.{}] check_format = {f:?} is unknown; use one of {}",
                    def.id,
                    crate::check::FORMATS.join(", ")
                ));
            }
        }
        Ok(defs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_replaces_fields_of_a_builtin_and_keeps_the_rest() {
        let config: LspConfig = serde_json::from_value(json!({
            "servers": {"python": {"commands": [["pylsp"]]}, "rust": {"disabled": true}}
        }))
        .unwrap();
        let defs = config.servers().unwrap();
        let python = defs.iter().find(|d| d.id == "python").unwrap();
        assert_eq!(python.commands, vec![vec!["pylsp".to_string()]]);
        assert!(python.root_markers.contains(&"pyproject.toml".to_string()));
        assert!(!defs.iter().any(|d| d.id == "rust"));
    }

    #[test]
    fn a_new_server_needs_languages_markers_and_commands() {
        let config: LspConfig =
            serde_json::from_value(json!({"servers": {"zig": {"commands": [["zls"]]}}})).unwrap();
        let err = config.servers().unwrap_err();
        assert!(err.contains("needs languages, root_markers"), "{err}");
    }

    #[test]
    fn every_builtin_covers_its_extensions() {
        let defs = builtin_servers();
        let find = |ext: &str| defs.iter().find_map(|d| d.language_of(ext).map(|l| (&d.id, l)));
        assert_eq!(find("py").map(|(_, l)| l), Some("python"));
        assert_eq!(find("tsx").map(|(_, l)| l), Some("typescriptreact"));
        assert_eq!(find("h").map(|(i, _)| i.as_str()), Some("c"));
        assert_eq!(find("go").map(|(_, l)| l), Some("go"));
        assert_eq!(find("dart").map(|(_, l)| l), Some("dart"));
        assert!(
            defs.iter()
                .find(|d| d.id == "c")
                .unwrap()
                .program_names()
                .contains(&"clangd-16".into())
        );
    }
}
