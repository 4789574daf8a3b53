//! Renames and code actions on real projects: exact after the tree changed outside the tools,
//! refused onto a declared name or a keyword, references complete at once after a rename.

use super::{trees::*, *};

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
    let out = p
        .sup
        .apply_code_action(args, &agent_tools_lsp::CallScope::default())
        .await
        .expect("applied")
        .text;
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
    let err = p
        .sup
        .apply_code_action(bad, &agent_tools_lsp::CallScope::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("argument `index`: 99 is not an action here"), "{err}");
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
