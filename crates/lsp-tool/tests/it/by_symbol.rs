//! `lsp` by name path and call hierarchy against real servers (basedpyright,
//! typescript-language-server, gopls, clangd) on the fixture projects: a name path addresses the
//! same symbol as its line and text, and callers and callees come with their name paths.

use serde_json::json;

use crate::real::{Real, check};

/// The locations of an answer: every line after its heading.
fn locations(text: &str) -> Vec<&str> {
    text.lines().skip(1).collect()
}

/// `action` by name path and by line + text agree.
async fn agree(real: &Real, action: &str, file: &str, name_path: &str, line: u32, text: &str) {
    let by_path = real.ok(json!({"action": action, "file": file, "symbol": name_path})).await;
    let by_line =
        real.ok(json!({"action": action, "file": file, "line": line, "symbol": text})).await;
    assert!(!locations(&by_line).is_empty(), "{by_line}");
    assert_eq!(locations(&by_path), locations(&by_line), "{action} of {name_path}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_by_name_path_and_calls() {
    let Some(real) = check("python") else { return };
    agree(&real, "references", "shapes.py", "make_square", 19, "make_square").await;
    agree(&real, "references", "shapes.py", "Square/area", 15, "area").await;
    agree(&real, "definition", "main.py", "total_area", 4, "total_area").await;
    let callers = real
        .ok(json!({"action": "incoming_calls", "file": "shapes.py", "symbol": "make_square"}))
        .await;
    assert!(callers.starts_with("1 caller(s) of `make_square` at shapes.py:19:5"), "{callers}");
    assert!(callers.contains("main.py:5:14  total_area  square = make_square(2.0)"), "{callers}");
    let callees = real
        .ok(json!({"action": "outgoing_calls", "file": "main.py", "symbol": "total_area"}))
        .await;
    assert!(callees.contains("shapes.py:19:5  make_square"), "{callees}");
    let err = real
        .call(json!({"action": "references", "file": "shapes.py", "symbol": "area"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "`area` matches 2 declarations: Shape/area (method 7-8), Square/area (method 15-16)"
        ),
        "{err}"
    );
    let err = real
        .call(json!({"action": "references", "file": "shapes.py", "symbol": "Square/aera"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no declaration is named `Square/aera`; nearest names: Square/area"),
        "{err}"
    );
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_by_name_path_and_calls() {
    let Some(real) = check("typescript") else { return };
    agree(&real, "references", "src/shapes.ts", "makeSquare", 13, "makeSquare").await;
    agree(&real, "references", "src/shapes.ts", "Square/area", 8, "area").await;
    let callers = real
        .ok(json!({"action": "incoming_calls", "file": "src/shapes.ts", "symbol": "makeSquare"}))
        .await;
    assert!(callers.contains("src/main.ts:4:25  totalArea"), "{callers}");
    let callees = real
        .ok(json!({"action": "outgoing_calls", "file": "src/main.ts", "symbol": "totalArea"}))
        .await;
    assert!(callees.contains("src/shapes.ts:13:17  makeSquare"), "{callees}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_by_name_path_names_methods_by_receiver_and_calls() {
    let Some(real) = check("go") else { return };
    agree(&real, "references", "shapes.go", "MakeSquare", 19, "MakeSquare").await;
    agree(&real, "references", "shapes.go", "Square/Area", 14, "Area").await;
    let callers = real
        .ok(json!({"action": "incoming_calls", "file": "shapes.go", "symbol": "MakeSquare"}))
        .await;
    assert!(callers.contains("main.go:6:8  main"), "{callers}");
    let callees =
        real.ok(json!({"action": "outgoing_calls", "file": "main.go", "symbol": "main"})).await;
    assert!(callees.contains("shapes.go:19:6  MakeSquare"), "{callees}");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_by_name_path_and_calls() {
    let Some(real) = check("c") else { return };
    agree(&real, "references", "main.c", "main", 4, "main").await;
    // clangd indexes open files only here (no background index): the caller's file is opened
    // by asking about it first.
    let callers = real
        .ok(json!({"action": "incoming_calls", "file": "shapes.c", "symbol": "square_area"}))
        .await;
    assert!(callers.contains("main.c:6:20  main"), "{callers}");
    // clangd 16 has incoming calls only, and says so for outgoing ones.
    match real.call(json!({"action": "outgoing_calls", "file": "main.c", "symbol": "main"})).await {
        Ok(callees) => assert!(callees.contains("shapes.c:3:8  square_area"), "{callees}"),
        Err(e) => assert_eq!(
            e.to_string(),
            "outgoing calls: clangd does not offer this (it does not know the request)"
        ),
    }
    real.finish().await;
}
