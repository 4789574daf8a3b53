//! The supervisor on real-shaped projects with the real servers: a src-layout Python package
//! with tests and examples, a TypeScript tree with nested package.json files, a C project with
//! compile_commands.json, a Go module. Each test shows one behaviour a user relies on: renames
//! on a tree that changed outside the tools, names that cannot be applied, cold workspace
//! symbols, one server and one check per real project, read-only surfaces that run nothing of
//! the project and leave nothing in it, cross-file breakage reported on write, paging.
//!
//! A server missing on the machine fails the test in CI and skips it loudly elsewhere.

#![allow(clippy::print_stderr)]

use std::{
    collections::BTreeMap,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use agent_tools_lsp::{
    FileBefore, LspArgs, LspConfig, LspError, RenameArgs, Supervisor, WrittenFile,
    process_group_alive,
    testing::{require_program, setup_paths},
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
        let out = self.sup.call(parsed, &CancellationToken::new()).await.map(|o| o.text);
        eprintln!("--- lsp {args}\n{out:?}");
        out
    }

    async fn ok(&self, args: Value) -> String {
        self.call(args.clone()).await.unwrap_or_else(|e| panic!("lsp {args} failed: {e}"))
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
        let out = self.sup.rename(args, &CancellationToken::new()).await.map(|o| o.text);
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

// ------------------------------------------------------------------------------ python

const PY_PKG: &str = "def echo(message: str) -> str:\n    return message\n\n\ndef shout(message: str) -> str:\n    return echo(message).upper()\n";
const PY_TEST: &str = "from pkg import echo\n\n\ndef test_echo() -> None:\n    assert echo(\"a\") == \"a\"\n    assert echo(\"b\") == \"b\"\n";

fn python_package(allow: bool) -> Option<Project> {
    Project::new(
        "basedpyright-langserver",
        &[
            ("pyproject.toml", "[project]\nname = \"pkg\"\nversion = \"1\"\n"),
            ("src/pkg/__init__.py", PY_PKG),
            ("tests/test_echo.py", PY_TEST),
            ("examples/demo/pyproject.toml", "[project]\nname = \"demo\"\n"),
            ("examples/demo/run.py", "from pkg import echo\n\necho(1)\n"),
            ("examples/other/pyproject.toml", "[project]\nname = \"other\"\n"),
            ("examples/other/run.py", "from pkg import shout\n\nshout(\"x\")\n"),
        ],
        allow,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_src_layout_package_resolves_to_itself_so_references_reach_the_tests() {
    let Some(p) = python_package(false) else { return };
    let refs = p
        .ok(json!({"action": "references", "file": "src/pkg/__init__.py", "line": 1, "symbol": "echo"}))
        .await;
    for loc in [
        "src/pkg/__init__.py:1:5",
        "src/pkg/__init__.py:6:12",
        "tests/test_echo.py:1:17",
        "tests/test_echo.py:5:12",
        "tests/test_echo.py:6:12",
        "examples/demo/run.py:3:1",
    ] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    // Paging: two at a time, the rest on request.
    let page = p
        .ok(json!({"action": "references", "file": "src/pkg/__init__.py", "line": 1, "symbol": "echo", "offset": 6}))
        .await;
    assert!(page.contains("[showing 7–") || page.contains("[offset 6 is past the end"), "{page}");
    // One server for the package and its examples: their markers are covered by the top one.
    let ws = p.ok(json!({"action": "symbols", "query": "shout"})).await;
    assert!(ws.contains("src/pkg/__init__.py:5:5 function shout"), "{ws}");
    assert_eq!(p.sup.server_pids().len(), 1, "nested pyproject.toml files start no servers");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_after_the_tree_changed_outside_the_tools_is_exact() {
    let Some(p) = python_package(false) else { return };
    // The server reads the test file from disk for this answer...
    p.ok(
        json!({"action": "references", "file": "src/pkg/__init__.py", "line": 1, "symbol": "echo"}),
    )
    .await;
    // ...then a formatter (or git checkout) inserts three lines at its top.
    p.write("tests/test_echo.py", &format!("import os\nimport sys\n# moved\n{PY_TEST}"));
    let out = p.rename("src/pkg/__init__.py", 1, "echo", "say").await.expect("rename");
    assert!(out.contains("renamed `echo`"), "{out}");
    assert_eq!(
        p.read("tests/test_echo.py"),
        format!(
            "import os\nimport sys\n# moved\n{}",
            PY_TEST.replace("echo(\"", "say(\"").replace("import echo", "import say")
        )
    );
    assert!(p.read("src/pkg/__init__.py").contains("def say(message: str)"));
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_onto_a_name_the_scope_declares_or_onto_a_keyword_is_refused() {
    let Some(p) = python_package(false) else { return };
    let before = p.tree();
    let err = p.rename("src/pkg/__init__.py", 1, "echo", "shout").await.unwrap_err().to_string();
    assert!(
        err.contains("src/pkg/__init__.py:5 already declares `shout`")
            && err.contains("nothing was changed"),
        "{err}"
    );
    let err = p.rename("src/pkg/__init__.py", 1, "echo", "lambda").await.unwrap_err().to_string();
    assert!(err.contains("reserved word in Python"), "{err}");
    assert_eq!(p.tree(), before, "nothing was written");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_project_check_runs_once_per_project_in_the_servers_mode() {
    let Some(p) = python_package(false) else { return };
    let before = p.tree();
    let out = p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert_eq!(out.matches("\nok: `basedpyright").count(), 1, "{out}");
    // demo passes an int to echo: reported once, with the standard mode's rule.
    assert_eq!(
        out.matches("examples/demo/run.py:3:6 error [reportArgumentType]").count(),
        1,
        "{out}"
    );
    assert!(!out.contains("reportUnusedCallResult"), "standard mode, as the server: {out}");
    assert_eq!(p.tree(), before, "the check leaves nothing in the tree");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_supervisor_runs_no_binary_of_the_project() {
    let Some(p) = python_package(false) else { return };
    let marker = p.root.parent().expect("parent").join("ran");
    for name in ["basedpyright-langserver", "basedpyright", "pyright-langserver", "pyright"] {
        let path = p.root.join(".venv/bin").join(name);
        std::fs::create_dir_all(path.parent().expect("bin")).expect("mkdir");
        std::fs::write(&path, format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()))
            .expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let before = p.tree();
    let status = p.ok(json!({"action": "status"})).await;
    assert!(!status.contains("project/.venv/bin"), "{status}");
    assert!(
        status.contains("project code does not run (pyright asks the Python on PATH"),
        "{status}"
    );
    let diags = p.ok(json!({"action": "diagnostics", "file": "examples/demo/run.py"})).await;
    assert!(diags.contains("reportArgumentType"), "{diags}");
    p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert!(!marker.exists(), "a project-local binary was executed");
    assert_eq!(p.tree(), before);
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolchain_the_project_names_does_not_run_on_a_read_only_supervisor() {
    let trap = "#!/bin/sh\ntouch \"$ROOT/pwned\"\nexit 1\n";
    let Some(p) = Project::new(
        "cargo",
        &[
            ("Cargo.toml", "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
            ("src/lib.rs", "pub fn f() -> u32 { 1 }\n"),
            // rustup runs whatever a `path` toolchain's bin holds, for every proxy.
            ("rust-toolchain.toml", "[toolchain]\npath = \"$ROOT/tc\"\n"),
            ("tc/bin/cargo", trap),
            ("tc/bin/rustc", trap),
            ("tc/bin/rust-analyzer", trap),
        ],
        false,
    ) else {
        return;
    };
    for bin in ["cargo", "rustc", "rust-analyzer"] {
        let path = p.root.join("tc/bin").join(bin);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    // The host may well run inside the project: its probes must not read the file either.
    let status = p.ok(json!({"action": "status"})).await;
    assert!(status.contains("rustup runs the user's default toolchain"), "{status}");
    let _ =
        p.call(json!({"action": "hover", "file": "src/lib.rs", "line": 1, "symbol": "f"})).await;
    let _ = p.call(json!({"action": "diagnostics", "file": "*"})).await;
    assert!(!p.root.join("pwned").exists(), "a binary of the project ran");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_files_of_a_project_steer_no_shim_of_a_read_only_supervisor() {
    // Each selector names a "version" that climbs out of the manager's folder into the
    // project; the shims read them from the working folder, the project's root.
    let Some(p) = Project::new(
        "basedpyright-langserver",
        &[
            ("pyproject.toml", "[project]\nname = \"x\"\nversion = \"1\"\n"),
            ("x.py", "def f() -> int:\n    return 1\n"),
            (".python-version", "../../../../$ROOT/evil\n"),
            (".node-version", "../../../../$ROOT/evil\n"),
            (".tool-versions", "python path:$ROOT/evil\nnodejs path:$ROOT/evil\n"),
            ("mise.toml", "[tools]\npython = \"path:$ROOT/evil\"\n"),
            // Volta pins a version (or `extends` another file's), and runs a direct
            // dependency's binary from the project's own node_modules.
            (
                "package.json",
                "{\"packageManager\": \"yarn@https://example.invalid/yarn.tgz\", \"volta\": \
                 {\"node\": \"../../../../$ROOT/evil\", \"extends\": \"$ROOT/volta.json\"}, \
                 \"devDependencies\": {\"basedpyright\": \"*\"}}\n",
            ),
            ("volta.json", "{\"volta\": {\"node\": \"../../../../$ROOT/evil\"}}\n"),
        ],
        false,
    ) else {
        return;
    };
    let status = p.ok(json!({"action": "status"})).await;
    assert!(
        status.contains("pyenv, nodenv, asdf, mise, corepack or Volta are not used"),
        "{status}"
    );
    p.ok(json!({"action": "diagnostics", "file": "x.py"})).await;
    let pids = p.sup.server_pids();
    assert_eq!(pids.len(), 1, "one server");
    let environ = std::fs::read(format!("/proc/{}/environ", pids[0])).expect("environ");
    let vars: Vec<String> =
        environ.split(|b| *b == 0).map(|v| String::from_utf8_lossy(v).to_string()).collect();
    let value = |name: &str| {
        vars.iter().find_map(|v| v.strip_prefix(&format!("{name}="))).map(str::to_string)
    };
    // The user's own choice (their global version, else the system's), never the project's.
    for name in ["PYENV_VERSION", "NODENV_VERSION"] {
        let pinned = value(name).unwrap_or_else(|| panic!("{name} pinned: {vars:?}"));
        assert!(!pinned.contains("evil"), "{name}={pinned}");
    }
    assert!(value("MISE_OVERRIDE_CONFIG_FILENAMES").is_some_and(|v| v != "mise.toml"));
    assert!(value("MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES").is_some());
    assert_eq!(value("COREPACK_ENABLE_NETWORK").as_deref(), Some("0"));
    assert_eq!(value("COREPACK_ENABLE_AUTO_PIN").as_deref(), Some("0"));
    // A Volta shim the server reaches runs what PATH holds past Volta, not the project's pick.
    assert_eq!(value("VOLTA_BYPASS").as_deref(), Some("1"));
    assert!(vars.iter().all(|v| !(v.starts_with("ASDF_") && v.contains("evil"))), "{vars:?}");
    assert!(!p.root.join("evil").exists());
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_check_with_a_build_script_does_not_run_on_a_read_only_supervisor() {
    let Some(p) = Project::new(
        "cargo",
        &[
            ("Cargo.toml", "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
            ("build.rs", "fn main() { std::fs::write(\"$ROOT/pwned\", \"\").unwrap(); }\n"),
            ("src/lib.rs", "pub fn f() -> u32 { \"no\" }\n"),
        ],
        false,
    ) else {
        return;
    };
    let out = p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert!(
        out.contains("not run: `cargo check")
            && out.contains("cargo check would execute code of the project (build.rs")
            && out.contains("to allow it"),
        "{out}"
    );
    assert!(!out.contains("no errors or warnings"), "{out}");
    assert!(!p.root.join("pwned").exists());
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_another_python_file() {
    let Some(p) = python_package(false) else { return };
    // The test file is open (the model looked at it) and known to the ledger (written once).
    let test = p.root.join("tests/test_echo.py");
    let first = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path: test.clone(), before: FileBefore::Absent }],
            &CancellationToken::new(),
        )
        .await
        .expect("covered");
    assert!(first.new.is_empty() && first.not_verified.is_empty(), "{}", first.render());
    let pkg = p.root.join("src/pkg/__init__.py");
    let old = std::fs::read(&pkg).expect("read");
    p.write(
        "src/pkg/__init__.py",
        &PY_PKG.replace("def echo(message: str)", "def echo(message: str, loud: bool)"),
    );
    let report = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path: pkg, before: FileBefore::Contents(old.into()) }],
            &CancellationToken::new(),
        )
        .await
        .expect("covered");
    let text = report.render();
    assert!(text.contains("tests/test_echo.py:5:12 error [reportCallIssue]"), "{text}");
    assert!(text.contains("src/pkg/__init__.py:6:12 error [reportCallIssue]"), "{text}");
    p.finish().await;
}

// -------------------------------------------------------------------------- typescript

fn typescript_tree() -> Option<Project> {
    Project::new(
        "typescript-language-server",
        &[
            ("package.json", "{\"name\": \"mono\", \"private\": true}\n"),
            (
                "tsconfig.json",
                "{\"compilerOptions\": {\"strict\": true, \"incremental\": true, \"target\": \"es2020\", \"module\": \"commonjs\"}, \"include\": [\"src\", \"ajax\"]}\n",
            ),
            (
                "src/util.ts",
                "export function formatPrice(cents: number): string {\n  return (cents / 100).toFixed(2);\n}\n",
            ),
            (
                "src/main.ts",
                "import { formatPrice } from \"./util\";\n\nexport const total: string = formatPrice(250);\n",
            ),
            ("ajax/package.json", "{\"name\": \"mono-ajax\", \"main\": \"index.ts\"}\n"),
            (
                "ajax/index.ts",
                "import { formatPrice } from \"../src/util\";\n\nexport const shown = formatPrice(1);\n",
            ),
        ],
        false,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_cold_workspace_symbols_find_what_exists_with_one_server() {
    let Some(p) = typescript_tree() else { return };
    let ws = p.ok(json!({"action": "symbols", "query": "formatPrice"})).await;
    assert!(ws.contains("src/util.ts:1:") && ws.contains(" function formatPrice"), "{ws}");
    assert_eq!(p.sup.server_pids().len(), 1, "ajax/package.json is covered by the root's config");
    let err =
        p.rename("src/util.ts", 1, "formatPrice", "1 bad-name").await.unwrap_err().to_string();
    assert!(err.contains("is not a TypeScript/JavaScript identifier"), "{err}");
    let err = p.rename("src/util.ts", 1, "formatPrice", "class").await.unwrap_err().to_string();
    assert!(err.contains("reserved word"), "{err}");
    let before = p.tree();
    let out = p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert!(out.starts_with("project check: no errors or warnings"), "{out}");
    assert_eq!(p.tree(), before, "tsc's build info stays outside the tree");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_typescript_checker_is_reported_as_a_failure() {
    let Some(p) = Project::new(
        "typescript-language-server",
        &[("package.json", "{}\n"), ("a.ts", "export const a: number = 1;\n")],
        false,
    ) else {
        return;
    };
    let out = p.ok(json!({"action": "diagnostics", "file": "*"})).await;
    assert!(
        out.starts_with("project check: nothing could run")
            || out.starts_with("project check FAILED"),
        "{out}"
    );
    assert!(out.contains("no tsconfig.json"), "{out}");
    p.finish().await;
}

// ----------------------------------------------------------------------------------- c

fn c_project(allow: bool) -> Option<Project> {
    Project::new(
        "clangd-16",
        &[
            (
                "compile_commands.json",
                "[{\"directory\": \"$ROOT\", \"file\": \"main.c\", \"arguments\": [\"cc\", \"-c\", \"main.c\"]}, {\"directory\": \"$ROOT\", \"file\": \"area.c\", \"arguments\": [\"cc\", \"-c\", \"area.c\"]}]\n",
            ),
            ("area.h", "int square_area(int side);\n"),
            (
                "area.c",
                "#include \"area.h\"\n\nint square_area(int side) { return side * side; }\n",
            ),
            (
                "main.c",
                "#include \"area.h\"\n\nint main(void) { return square_area(2) + square_area(3); }\n",
            ),
        ],
        allow,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clangd_answers_from_the_renamed_code_and_leaves_no_index_in_the_tree() {
    let Some(p) = c_project(false) else { return };
    let ws = p.ok(json!({"action": "symbols", "query": "square_area"})).await;
    assert!(ws.contains("area.c:3:5") || ws.contains("area.h:1:5"), "{ws}");
    let out = p.rename("main.c", 3, "square_area", "area_of_square").await.expect("rename");
    assert!(out.contains("in 3 file(s)"), "{out}");
    let refs = p
        .ok(json!({"action": "references", "file": "area.h", "line": 1, "symbol": "area_of_square"}))
        .await;
    for loc in ["area.h:1:5", "area.c:3:5", "main.c:3:25", "main.c:3:45"] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    assert!(!p.root.join(".cache").exists(), "clangd's index stays outside the tree");
    p.finish().await;
}

// ---------------------------------------------------------------------------------- go

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_rename_after_an_outside_edit_is_exact_and_the_broken_caller_is_reported() {
    let Some(p) = Project::new(
        "gopls",
        &[
            ("go.mod", "module example.com/tmpl\n\ngo 1.19\n"),
            (
                "tree.go",
                "package tmpl\n\n// Tree is a parse tree.\ntype Tree struct {\n\tName string\n}\n\n// New makes a tree.\nfunc New(name string) *Tree {\n\treturn &Tree{Name: name}\n}\n",
            ),
            ("use.go", "package tmpl\n\nfunc use() *Tree {\n\treturn New(\"x\")\n}\n"),
        ],
        false,
    ) else {
        return;
    };
    p.ok(json!({"action": "references", "file": "tree.go", "line": 4, "symbol": "Tree"})).await;
    let shifted = format!("// Copyright.\n\n\n{}", p.read("tree.go"));
    p.write("tree.go", &shifted);
    p.rename("use.go", 3, "Tree", "Node").await.expect("rename");
    let tree = p.read("tree.go");
    for line in [
        "// Copyright.\n\n\n",
        "\ntype Node struct {\n",
        "\nfunc New(name string) *Node {\n",
        "\treturn &Node{Name: name}\n",
    ] {
        assert!(tree.contains(line), "{line:?} in {tree}");
    }
    assert!(p.read("use.go").contains("func use() *Node {"));
    p.finish().await;
}

// ------------------------------------------------------------ cross-file breakage on write

/// Writes `caller` once (so it is open and the ledger knows it), then changes `callee` from
/// `old` to `new` and returns the section the second write reports.
async fn break_a_caller(p: &Project, caller: &str, callee: &str, old: &str, new: &str) -> String {
    // The model looked at the caller first (a cold server's first answer can take longer
    // than a write's deadline).
    p.ok(json!({"action": "diagnostics", "file": caller})).await;
    let cancel = CancellationToken::new();
    let caller = p.root.join(caller);
    let before = std::fs::read(&caller).expect("read caller");
    let first = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path: caller, before: FileBefore::Contents(before.into()) }],
            &cancel,
        )
        .await
        .expect("covered");
    assert!(first.new.is_empty() && first.not_verified.is_empty(), "{}", first.render());
    let path = p.root.join(callee);
    let text = std::fs::read_to_string(&path).expect("read callee");
    assert!(text.contains(old), "{old} in {text}");
    std::fs::write(&path, text.replace(old, new)).expect("write callee");
    let report = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path, before: FileBefore::Contents(text.into_bytes().into()) }],
            &cancel,
        )
        .await
        .expect("covered");
    let out = report.render();
    eprintln!("--- after changing {callee}\n{out}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_typescript() {
    let Some(p) = typescript_tree() else { return };
    let out = break_a_caller(
        &p,
        "src/main.ts",
        "src/util.ts",
        "cents: number)",
        "cents: number, currency: string)",
    )
    .await;
    assert!(
        out.contains("src/main.ts:3:30 error [2554]")
            || out.contains("src/main.ts:3:30 error [TS2554]"),
        "{out}"
    );
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_c() {
    let Some(p) = c_project(true) else { return };
    let out = break_a_caller(&p, "main.c", "area.h", "int side)", "int side, int scale)").await;
    assert!(out.contains("main.c:3:") && out.contains("Too few arguments"), "{out}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_change_reports_the_broken_caller_in_go() {
    let Some(p) = Project::new(
        "gopls",
        &[
            ("go.mod", "module example.com/calls\n\ngo 1.19\n"),
            (
                "lib.go",
                "package calls\n\n// Scale multiplies.\nfunc Scale(x int) int {\n\treturn x * 2\n}\n",
            ),
            ("use.go", "package calls\n\nfunc use() int {\n\treturn Scale(3)\n}\n"),
        ],
        false,
    ) else {
        return;
    };
    let out = break_a_caller(&p, "use.go", "lib.go", "Scale(x int)", "Scale(x int, y int)").await;
    assert!(out.contains("use.go:4:") && out.contains("not enough arguments"), "{out}");
    p.finish().await;
}

// -------------------------------------------------------------------------- code actions

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_code_action_shows_its_edit_and_applies_all_or_nothing() {
    let Some(p) = typescript_tree() else { return };
    p.write("src/main.ts", "export const total: string = formatPrice(250);\n");
    let listed = p
        .ok(json!({"action": "code_actions", "file": "src/main.ts", "line": 1, "symbol": "formatPrice"}))
        .await;
    let line = listed
        .lines()
        .find(|l| l.contains("import") && l.contains("./util"))
        .unwrap_or_else(|| panic!("an import fix in {listed}"));
    assert!(
        listed.contains("src/main.ts:1:1 insert `import { formatPrice } from \"./util\";"),
        "{listed}"
    );
    let index: u32 = line.trim().split('.').next().unwrap().parse().expect("numbered");
    assert!(!listed.contains("[disabled"), "disabled actions are counted, not listed: {listed}");
    let args: agent_tools_lsp::CodeActionArgs = serde_json::from_value(
        json!({"file": "src/main.ts", "line": 1, "symbol": "formatPrice", "index": index}),
    )
    .expect("args");
    let out = p.sup.apply_code_action(args, &CancellationToken::new()).await.expect("applied").text;
    eprintln!("{out}");
    assert!(out.starts_with("applied `") && out.contains("src/main.ts: 1 edit(s)"), "{out}");
    assert!(
        p.read("src/main.ts").starts_with("import { formatPrice } from \"./util\";"),
        "{}",
        p.read("src/main.ts")
    );
    assert!(out.contains("no new errors or warnings"), "{out}");
    let bad: agent_tools_lsp::CodeActionArgs = serde_json::from_value(
        json!({"file": "src/main.ts", "line": 3, "symbol": "formatPrice", "index": 99}),
    )
    .expect("args");
    let err =
        p.sup.apply_code_action(bad, &CancellationToken::new()).await.unwrap_err().to_string();
    assert!(err.contains("argument `index`: 99 is not an action here"), "{err}");
    p.finish().await;
}

// ------------------------------------------- breakage in files the session never opened

/// Writes `text` to `file` as a file tool would (what it held before is known) and returns
/// the write's diagnostics; nothing was opened before.
async fn write_file(p: &Project, file: &str, text: &str) -> agent_tools_lsp::WriteDiagnostics {
    change_file(p, file, Some(text)).await
}

/// Writes `text` to `file` (deletes it for `None`) as a file tool would, what it held before
/// known, and returns the diagnostics of the change.
async fn change_file(
    p: &Project,
    file: &str,
    text: Option<&str>,
) -> agent_tools_lsp::WriteDiagnostics {
    let path = p.root.join(file);
    let before = std::fs::read(&path).expect("read before");
    match text {
        Some(text) => std::fs::write(&path, text).expect("write"),
        None => std::fs::remove_file(&path).expect("delete"),
    }
    let report = p
        .sup
        .diagnostics_after_write(
            &[WrittenFile { path, before: FileBefore::Contents(before.into()) }],
            &CancellationToken::new(),
        )
        .await
        .expect("covered");
    eprintln!("--- change of {file}\n{}\n{report:?}", report.render());
    report
}

/// The user's sequence on a cold server: a signature change that breaks `callers` (never
/// opened), the revert, then what `lsp diagnostics` says of each caller.
async fn break_and_fix_unopened_callers(
    p: &Project,
    callee: &str,
    old: &str,
    new: &str,
    callers: &[&str],
    message: &str,
) {
    let original = p.read(callee);
    assert!(original.contains(old), "{old} in {original}");
    let broken = write_file(p, callee, &original.replace(old, new)).await;
    let text = broken.render();
    assert!(broken.not_verified.is_empty(), "the first write of a run is verified: {text}");
    assert!(!text.contains("no new errors"), "{text}");
    for caller in callers {
        assert!(
            broken.new.iter().any(|d| d.path == *caller && d.message.contains(message)),
            "{caller} is named with {message:?}: {text}"
        );
        assert!(broken.checked.iter().any(|c| c == caller), "{caller} checked: {text}");
    }
    let fixed = write_file(p, callee, &original).await;
    let text = fixed.render();
    assert!(fixed.new.is_empty() && fixed.complete(), "{text}");
    assert!(
        text.contains("Diagnostics (") && text.contains(": no new errors or warnings"),
        "{text}"
    );
    for caller in callers {
        assert!(fixed.fixed_in.iter().any(|c| c == caller), "{caller} reported fixed: {text}");
        let now = p.ok(json!({"action": "diagnostics", "file": caller})).await;
        assert!(!now.contains(message), "no stale diagnostics in {caller}: {now}");
    }
}

fn python_callers() -> Option<Project> {
    Project::new(
        "basedpyright-langserver",
        &[
            ("pyproject.toml", "[project]\nname = \"pkg\"\nversion = \"1\"\n"),
            (
                "src/pkg/__init__.py",
                "from .termui import echo_via_pager\n\n__all__ = [\"echo_via_pager\"]\n",
            ),
            (
                "src/pkg/termui.py",
                "def echo_via_pager(text: str, color: bool | None = None) -> None:\n    print(text, color)\n\n\ndef term_len(x: str) -> int:\n    return len(x)\n",
            ),
            (
                "tests/test_utils.py",
                "from pkg import echo_via_pager\nfrom pkg.termui import term_len\n\n\ndef test_pager() -> None:\n    echo_via_pager(\"x\")\n    assert term_len(\"ab\") == 2\n",
            ),
            (
                "examples/termui.py",
                "import pkg\nfrom pkg.termui import term_len\n\npkg.echo_via_pager(\"y\", color=True)\nprint(term_len(\"abc\"))\n",
            ),
        ],
        false,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = python_callers() else { return };
    break_and_fix_unopened_callers(
        &p,
        "src/pkg/termui.py",
        "text: str, color",
        "text: str, strict: bool, color",
        &["tests/test_utils.py", "examples/termui.py"],
        "strict",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_rename_leaves_references_complete_at_once() {
    let Some(p) = python_callers() else { return };
    let out = p.rename("src/pkg/termui.py", 5, "term_len", "visible_len").await.expect("rename");
    assert!(out.contains("Diagnostics (basedpyright): no new errors or warnings"), "{out}");
    let refs = p
        .ok(json!({"action": "references", "file": "src/pkg/termui.py", "line": 5, "symbol": "visible_len"}))
        .await;
    for loc in [
        "src/pkg/termui.py:5:5",
        "tests/test_utils.py:2:",
        "tests/test_utils.py:7:",
        "examples/termui.py:2:",
        "examples/termui.py:5:",
    ] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = typescript_tree() else { return };
    break_and_fix_unopened_callers(
        &p,
        "src/util.ts",
        "cents: number)",
        "cents: number, currency: string)",
        &["src/main.ts", "ajax/index.ts"],
        "Expected 2 arguments",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = Project::new(
        "clangd-16",
        &[
            (
                "compile_commands.json",
                "[{\"directory\": \"$ROOT\", \"file\": \"main.c\", \"arguments\": [\"cc\", \"-c\", \"main.c\"]}, {\"directory\": \"$ROOT\", \"file\": \"area.c\", \"arguments\": [\"cc\", \"-c\", \"area.c\"]}, {\"directory\": \"$ROOT\", \"file\": \"report.c\", \"arguments\": [\"cc\", \"-c\", \"report.c\"]}]\n",
            ),
            ("area.h", "int square_area(int side);\n"),
            (
                "area.c",
                "#include \"area.h\"\n\nint square_area(int side) { return side * side; }\n",
            ),
            ("main.c", "#include \"area.h\"\n\nint main(void) { return square_area(2); }\n"),
            (
                "report.c",
                "#include \"area.h\"\n\nint report(void) { return square_area(5) > 3; }\n",
            ),
        ],
        false,
    ) else {
        return;
    };
    break_and_fix_unopened_callers(
        &p,
        "area.h",
        "int side)",
        "int side, int scale)",
        &["main.c", "report.c"],
        "Too few arguments",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_clangd_named_without_a_version_answers_a_definition_and_sees_open_headers() {
    // Debian's `clangd` is an alternative for some clangd-N: its version is probed, so an
    // open header's text (not the disk's) is what including files see from 16 on.
    let Some(clangd) = which("clangd-16") else {
        assert!(!agent_tools_lsp::testing::in_ci(), "clangd-16 is missing in CI");
        eprintln!("\n!!! SKIPPED: clangd-16 is not installed !!!\n");
        return;
    };
    let link = move |bin: &Path| {
        std::os::unix::fs::symlink(&clangd, bin.join("clangd")).expect("symlink clangd");
    };
    let files = [
        (
            "compile_commands.json",
            "[{\"directory\": \"$ROOT\", \"file\": \"main.c\", \"arguments\": [\"cc\", \"-c\", \"main.c\"]}]\n",
        ),
        ("area.h", "int square_area(int side);\n"),
        ("main.c", "#include \"area.h\"\n\nint main(void) { return square_area(2); }\n"),
    ];
    let Some(p) = Project::with_bin("clangd-16", &files, false, Some(&link)) else { return };
    // The first call of the run, on a cold server: answered, not "not ready".
    let out = p
        .ok(json!({"action": "definition", "file": "main.c", "line": 3, "symbol": "square_area"}))
        .await;
    assert!(out.contains("area.h:1:5"), "{out}");
    let pids = p.sup.server_pids();
    assert_eq!(pids.len(), 1, "one clangd");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pids[0])).expect("cmdline");
    let args: Vec<String> =
        cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).to_string()).collect();
    assert!(args[0].ends_with("/clangd"), "the bare name runs: {args:?}");
    assert!(args.iter().any(|a| a == "--use-dirty-headers"), "{args:?}");
    p.finish().await;
}

/// The full path of `program` on `PATH` or the setup's folders.
fn which(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = setup_paths().into_iter().map(PathBuf::from).collect();
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    dirs.into_iter().map(|d| d.join(program)).find(|p| p.is_file())
}

/// A Go module whose `Scale` is called in its own package and from a command in another.
fn go_calls() -> Option<Project> {
    Project::new(
        "gopls",
        &[
            ("go.mod", "module example.com/calls\n\ngo 1.19\n"),
            (
                "lib.go",
                "package calls\n\n// Scale multiplies.\nfunc Scale(x int) int {\n\treturn x * 2\n}\n",
            ),
            ("use.go", "package calls\n\nfunc use() int {\n\treturn Scale(3)\n}\n"),
            (
                "cmd/run/main.go",
                "package main\n\nimport \"example.com/calls\"\n\nfunc main() {\n\tprintln(calls.Scale(4))\n}\n",
            ),
        ],
        false,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_callers_never_opened_are_named_broken_then_fixed() {
    let Some(p) = go_calls() else { return };
    break_and_fix_unopened_callers(
        &p,
        "lib.go",
        "Scale(x int)",
        "Scale(x int, y int)",
        &["use.go", "cmd/run/main.go"],
        "not enough arguments",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_made_outside_the_tools_leaves_no_stale_diagnostics() {
    let Some(p) = python_callers() else { return };
    let original = p.read("src/pkg/termui.py");
    let broken = original.replace("text: str, color", "text: str, strict: bool, color");
    let report = write_file(&p, "src/pkg/termui.py", &broken).await;
    assert!(report.new.iter().any(|d| d.path == "tests/test_utils.py"), "{}", report.render());
    // `git checkout` of the file, say: the disk is back, no tool said so.
    p.write("src/pkg/termui.py", &original);
    for caller in ["tests/test_utils.py", "examples/termui.py"] {
        let now = p.ok(json!({"action": "diagnostics", "file": caller})).await;
        assert!(now.starts_with("no errors or warnings"), "{caller}: {now}");
    }
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_module_names_the_files_that_import_it() {
    let Some(p) = python_callers() else { return };
    // The server runs (a search earlier in the session); no importer was opened.
    p.ok(json!({"action": "symbols", "query": "term_len"})).await;
    let report = change_file(&p, "src/pkg/termui.py", None).await;
    let text = report.render();
    assert!(!text.contains("no new errors"), "{text}");
    // `examples/termui.py` imports `pkg.termui` by name; the package re-exports from it.
    for importer in ["tests/test_utils.py", "examples/termui.py", "src/pkg/__init__.py"] {
        assert!(report.new.iter().any(|d| d.path == importer), "{importer} named: {text}");
    }
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_that_starts_the_server_does_not_claim_what_it_cannot_know() {
    let Some(p) = python_callers() else { return };
    let report = change_file(&p, "src/pkg/termui.py", None).await;
    let text = report.render();
    assert!(!report.complete() && !text.contains("no new errors or warnings\n"), "{text}");
    assert!(text.contains("started after it was deleted"), "{text}");
    p.finish().await;
}

/// A file the session never opened changes on disk outside the tools (a `git checkout`, a
/// formatter): the caller's diagnostics follow it both ways, with no reload.
async fn an_outside_change_reaches_the_server(
    p: &Project,
    caller: &str,
    changed: &str,
    from: &str,
    to: &str,
    error: &str,
) {
    let clean = p.ok(json!({"action": "diagnostics", "file": caller})).await;
    assert!(clean.starts_with("no errors or warnings"), "{caller} before: {clean}");
    let original = p.read(changed);
    p.write(changed, &original.replace(from, to));
    let broken = p.ok(json!({"action": "diagnostics", "file": caller})).await;
    assert!(broken.contains(error), "{caller} after {changed} changed on disk: {broken}");
    p.write(changed, &original);
    let fixed = p.ok(json!({"action": "diagnostics", "file": caller})).await;
    assert!(fixed.starts_with("no errors or warnings"), "{caller} after the revert: {fixed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_signature_changed_outside_the_tools_in_a_file_never_opened_is_seen() {
    let Some(p) = python_callers() else { return };
    let from = "text: str, color";
    let to = "text: str, strict: bool, color";
    an_outside_change_reaches_the_server(
        &p,
        "tests/test_utils.py",
        "src/pkg/termui.py",
        from,
        to,
        "strict",
    )
    .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_signature_changed_outside_the_tools_in_a_file_never_opened_is_seen() {
    let Some(p) = go_calls() else { return };
    let (from, to) = ("Scale(x int)", "Scale(x int, y int)");
    an_outside_change_reaches_the_server(&p, "use.go", "lib.go", from, to, "not enough arguments")
        .await;
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_rename_leaves_references_complete_at_once() {
    let Some(p) = typescript_tree() else { return };
    let out = p.rename("src/util.ts", 1, "formatPrice", "formatCents").await.expect("rename");
    assert!(out.contains("in 3 file(s)") && out.contains("no new errors or warnings"), "{out}");
    let refs = p
        .ok(json!({"action": "references", "file": "src/util.ts", "line": 1, "symbol": "formatCents"}))
        .await;
    for loc in [
        "src/util.ts:1:",
        "src/main.ts:1:",
        "src/main.ts:3:",
        "ajax/index.ts:1:",
        "ajax/index.ts:3:",
    ] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_rename_across_packages_reports_no_errors_the_tree_does_not_have() {
    let Some(p) = go_calls() else { return };
    let out = p.rename("lib.go", 4, "Scale", "Multiply").await.expect("rename");
    assert!(out.contains("in 3 file(s)"), "{out}");
    assert!(out.contains("Diagnostics (gopls): no new errors or warnings"), "{out}");
    let refs = p
        .ok(json!({"action": "references", "file": "lib.go", "line": 4, "symbol": "Multiply"}))
        .await;
    for loc in ["lib.go:4:", "use.go:4:", "cmd/run/main.go:6:"] {
        assert!(refs.contains(loc), "{loc} in {refs}");
    }
    p.finish().await;
}
