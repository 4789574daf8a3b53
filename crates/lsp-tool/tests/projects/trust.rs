//! Read-only supervisors run nothing of the project: no project-local binary, no toolchain or
//! version file the project names, no cargo check with build scripts.

use super::{trees::*, *};

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
