//! The supervisor on real-shaped projects with the real servers: a src-layout Python package
//! with tests and examples, a TypeScript tree with nested package.json files, a C project with
//! compile_commands.json, a Go module. Each test shows one behaviour a user relies on: renames
//! on a tree that changed outside the tools, names that cannot be applied, cold workspace
//! symbols, one server and one check per real project, read-only surfaces that run nothing of
//! the project and leave nothing in it, cross-file breakage reported on write, paging.
//!
//! A server missing on the machine fails the test in CI and skips it loudly elsewhere.
// Tests write their fixtures by path and start programs directly, on purpose.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::print_stderr)]

mod fan_out;
mod on_write;
mod rename;
mod servers;
mod trees;
mod trust;

use std::{
    collections::BTreeMap,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use agent_tools_lsp::{
    Before, LspArgs, LspConfig, LspError, RenameArgs, Supervisor, WrittenFile,
    testing::{process_group_alive, require_program, setup_paths},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    sup: Supervisor,
}

impl Project {
    /// A project of `files` for the server `program`; `None` after a loud skip.
    fn new(program: &str, files: &[(&str, &str)], allow_project_code: bool) -> Option<Project> {
        Project::with_bin(program, files, allow_project_code, None)
    }

    /// Like [`Project::new`], with `bin` (a folder of the temp dir, made by the caller's
    /// closure) searched before the setup's folders.
    fn with_bin(
        program: &str,
        files: &[(&str, &str)],
        allow_project_code: bool,
        bin: Option<&dyn Fn(&Path)>,
    ) -> Option<Project> {
        let mut extra = setup_paths();
        if !require_program(&[program], &extra, "cargo xtask setup installs it") {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        if let Some(make) = bin {
            let folder = dir.path().join("bin");
            std::fs::create_dir_all(&folder).expect("bin folder");
            make(&folder);
            extra.insert(0, folder.display().to_string());
        }
        let root = dir.path().canonicalize().expect("canonical").join("project");
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, text.replace("$ROOT", &root.display().to_string()))
                .expect("write");
        }
        let mut config: LspConfig =
            serde_json::from_value(json!({"extra_paths": extra})).expect("config");
        config.allow_project_code = allow_project_code;
        let sup = Supervisor::new(&root, config);
        Some(Project { _dir: dir, root, sup })
    }

    async fn call(&self, args: Value) -> Result<String, LspError> {
        let parsed: LspArgs = serde_json::from_value(args.clone()).expect("valid lsp args");
        let out =
            self.sup.call(parsed, &agent_tools_lsp::CallScope::default()).await.map(|o| o.text);
        eprintln!("--- lsp {args}\n{out:?}");
        out
    }

    async fn ok(&self, args: Value) -> String {
        self.call(args.clone()).await.unwrap_or_else(|e| panic!("lsp {args} failed: {e}"))
    }

    /// [`ok`](Self::ok), asked again while the server says it is not ready (what a model does
    /// with "try again shortly"): a cold server on a loaded machine may need more than one
    /// deadline for its first answer. Bounded: a server that never becomes ready fails.
    async fn ok_once_ready(&self, args: Value) -> String {
        for _ in 0..8 {
            match self.call(args.clone()).await {
                Err(LspError::NotReady(_)) => continue,
                other => return other.unwrap_or_else(|e| panic!("lsp {args} failed: {e}")),
            }
        }
        panic!("lsp {args}: the server was not ready after 8 tries")
    }

    async fn rename(
        &self,
        file: &str,
        line: u32,
        symbol: &str,
        new_name: &str,
    ) -> Result<String, LspError> {
        let args: RenameArgs = serde_json::from_value(
            json!({"file": file, "line": line, "symbol": symbol, "new_name": new_name}),
        )
        .expect("rename args");
        let out =
            self.sup.rename(args, &agent_tools_lsp::CallScope::default()).await.map(|o| o.text);
        eprintln!("--- lsp_rename {symbol} -> {new_name}\n{out:?}");
        out
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.root.join(file)).expect("read")
    }

    fn write(&self, file: &str, text: &str) {
        std::fs::write(self.root.join(file), text).expect("write");
    }

    /// Every file of the tree with its bytes.
    fn tree(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &mut out);
        out
    }

    async fn finish(self) {
        let pids = self.sup.server_pids();
        self.sup.shutdown().await;
        for pid in pids {
            assert!(!process_group_alive(pid), "server group {pid} survived the shutdown");
        }
    }
}

/// The full path of `program` on `PATH` or the setup's folders.
fn which(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = setup_paths().into_iter().map(PathBuf::from).collect();
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    dirs.into_iter().map(|d| d.join(program)).find(|p| p.is_file())
}
