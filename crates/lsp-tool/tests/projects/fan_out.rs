//! Diagnostics on write for changes that fan out: a macro and a prototype changed in a C
//! header name every `.c` file they break, though none was opened and the header's outline
//! has no macros; one file's many errors do not hide another file.

use super::{on_write::write_file, *};

/// A C project shaped like Lua's: `lstr.h` defines a macro over a function, `ldbg.h` declares
/// an error function, `lobj.h` includes `lstr.h` (so its includers see the macro too); the
/// `.c` files use them, some through `lobj.h` only, `lmath.c` not at all.
fn lua_shaped() -> Option<Project> {
    let units =
        ["lapi.c", "ldo.c", "llex.c", "lparser.c", "lstr.c", "ltable.c", "lvm.c", "lmath.c"];
    let commands: Vec<String> = units
        .iter()
        .map(|u| format!("{{\"directory\": \"$ROOT\", \"file\": \"{u}\", \"arguments\": [\"cc\", \"-c\", \"{u}\"]}}"))
        .collect();
    let compile_commands = format!("[{}]\n", commands.join(", "));
    let many_errors: String =
        (0..30).map(|i| format!("  if (n == {i}) dbg_runerror(L, \"case %d\", {i});\n")).collect();
    let files: Vec<(String, String)> = vec![
        ("compile_commands.json".into(), compile_commands),
        (
            "lstr.h".into(),
            "#ifndef LSTR_H\n#define LSTR_H\ntypedef struct State State;\nconst char *str_newlstr(State *L, const char *s, unsigned long n);\n#define str_newliteral(L, s) (str_newlstr(L, \"\" s, (sizeof(s) / sizeof(char)) - 1))\n#endif\n".into(),
        ),
        (
            "ldbg.h".into(),
            "#ifndef LDBG_H\n#define LDBG_H\n#include \"lstr.h\"\nvoid dbg_runerror(State *L, const char *fmt, ...);\n#endif\n".into(),
        ),
        ("lobj.h".into(), "#ifndef LOBJ_H\n#define LOBJ_H\n#include \"lstr.h\"\n#endif\n".into()),
        (
            "lstr.c".into(),
            "#include \"lstr.h\"\nconst char *str_newlstr(State *L, const char *s, unsigned long n) { (void)L; (void)n; return s; }\nconst char *str_empty(State *L) { return str_newliteral(L, \"\"); }\n".into(),
        ),
        ("lapi.c".into(), "#include \"lobj.h\"\nconst char *api_name(State *L) { return str_newliteral(L, \"api\"); }\n".into()),
        ("ldo.c".into(), "#include \"ldbg.h\"\nvoid do_call(State *L, int n) {\n  if (n > 200) dbg_runerror(L, \"C stack overflow\");\n  (void)str_newliteral(L, \"call\");\n}\n".into()),
        ("llex.c".into(), "#include \"lobj.h\"\nconst char *lex_env(State *L) { return str_newliteral(L, \"_ENV\"); }\n".into()),
        ("lparser.c".into(), "#include \"lobj.h\"\n#include \"ldbg.h\"\nconst char *parser_self(State *L) { return str_newliteral(L, \"self\"); }\n".into()),
        ("ltable.c".into(), format!("#include \"ldbg.h\"\nvoid table_check(State *L, int n) {{\n{many_errors}}}\n")),
        ("lvm.c".into(), "#include \"ldbg.h\"\nvoid vm_error(State *L) { dbg_runerror(L, \"attempt to compare\"); }\n".into()),
        ("lmath.c".into(), "#include \"lobj.h\"\nint math_abs(int x) { return x < 0 ? -x : x; }\n".into()),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    Project::new("clangd-16", &files, false)
}

/// The files a report names with new diagnostics.
fn broken(report: &agent_tools_lsp::WriteDiagnostics) -> Vec<String> {
    let mut files: Vec<String> = report.files.iter().map(|f| f.path.clone()).collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_macro_changed_in_a_header_names_every_file_whose_expansions_broke() {
    let Some(p) = lua_shaped() else { return };
    let header = p.read("lstr.h");
    let changed = header.replace(
        "(str_newlstr(L, \"\" s, (sizeof(s) / sizeof(char)) - 1))",
        "(str_newlstr(L, \"\" s, (sizeof(s) / sizeof(char)) - 1, 0))",
    );
    assert_ne!(header, changed);
    let report = write_file(&p, "lstr.h", &changed).await;
    let text = report.render();
    assert!(!text.contains("no new errors"), "{text}");
    assert_eq!(
        broken(&report),
        ["lapi.c", "ldo.c", "llex.c", "lparser.c", "lstr.c"],
        "every file that expands the macro, none other: {text}"
    );
    for file in ["lapi.c", "ldo.c", "llex.c", "lparser.c", "lstr.c"] {
        assert!(text.contains(&format!("\n  {file}: 1 new error")), "{file} summarised: {text}");
    }
    assert!(report.complete(), "every includer was checked: {text}");
    assert!(report.changed.iter().any(|n| n == "str_newliteral"), "{text}");
    // The file that includes the header but does not use the macro was checked clean.
    assert!(report.checked.iter().any(|c| c == "lmath.c"), "{text}");
    assert!(text.contains("No new errors in") && text.contains("lmath.c"), "{text}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prototype_changed_in_a_header_names_every_broken_file_however_many_errors_one_has() {
    let Some(p) = lua_shaped() else { return };
    let header = p.read("ldbg.h");
    let changed = header.replace(
        "void dbg_runerror(State *L, const char *fmt, ...);",
        "void dbg_runerror(State *L, int level, const char *fmt, ...);",
    );
    let report = write_file(&p, "ldbg.h", &changed).await;
    let text = report.render();
    assert!(!text.contains("no new errors"), "{text}");
    assert_eq!(broken(&report), ["ldo.c", "ltable.c", "lvm.c"], "{text}");
    // The summary lines come right after the first line, before any detail.
    let summary: Vec<&str> = text.lines().skip(1).take(3).collect();
    assert!(summary.iter().all(|l| l.starts_with("  ") && l.contains(": ")), "{text}");
    // clang stops at 20 errors a file; however many, they are one line here.
    assert!(
        summary.iter().any(|l| l.starts_with("  ltable.c: ") && l.ends_with(" new errors")),
        "{text}"
    );
    // ltable.c's thirty errors leave room for the details of the others.
    for file in ["ldo.c:3:", "lvm.c:2:"] {
        assert!(text.contains(file), "{file} has a detail line: {text}");
    }
    let ltable = report.files.iter().find(|f| f.path == "ltable.c").expect("ltable.c");
    assert!(ltable.shown < ltable.new, "{text}");
    assert!(
        text.contains("[details not shown: ltable.c (")
            && text.contains("{\"action\": \"diagnostics\", \"file\": \"ltable.c\"}"),
        "the cut file and the call that shows it: {text}"
    );
    p.finish().await;
}

/// How many modules use the helper: more than the bound of 16 files per write.
const USERS: usize = 30;

/// Writes `file` from `old` to `new` and returns the write's report and, once it came, the
/// settled report of the files over the bound (as the next result of the run would carry it).
async fn break_many(
    p: &Project,
    file: &str,
    old: &str,
    new: &str,
) -> (agent_tools_lsp::WriteDiagnostics, agent_tools_lsp::SettledReport) {
    let text = p.read(file);
    assert!(text.contains(old), "{old} in {text}");
    let report = write_file(p, file, &text.replace(old, new)).await;
    let mut settled = Vec::new();
    // The background check runs after the result; a bounded wait for it (not a threshold).
    for _ in 0..600 {
        settled = p.sup.take_settled();
        if !settled.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(settled.len(), 1, "one settled report: {}", report.render());
    let settled = settled.remove(0);
    eprintln!("--- settled\n{}", settled.render());
    (report, settled)
}

/// Every module is named broken: within the bound by the write's result, the rest by the
/// settled report; the result never says "no new errors".
fn every_user_named(
    report: &agent_tools_lsp::WriteDiagnostics,
    settled: &agent_tools_lsp::SettledReport,
    module: impl Fn(usize) -> String,
) {
    let text = report.render();
    assert!(!text.contains("no new errors"), "{text}");
    assert_eq!(report.files.len(), 16, "the bound's worth named in the result: {text}");
    assert_eq!(report.settling.len(), USERS - 16, "{text}");
    assert!(text.contains("checked after this result"), "{text}");
    let mut named: Vec<String> = report.files.iter().map(|f| f.path.clone()).collect();
    for d in &settled.new {
        if !named.contains(&d.path) {
            named.push(d.path.clone());
        }
    }
    named.sort();
    let mut all: Vec<String> = (1..=USERS).map(module).collect();
    all.sort();
    assert_eq!(named, all, "result: {text}\nsettled: {}", settled.render());
    assert!(settled.not_verified.is_empty() && settled.interrupted.is_none());
    assert!(settled.render().starts_with("Since your edit of "), "{}", settled.render());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_helper_used_by_thirty_modules_names_each_broken_module() {
    let mut files: Vec<(String, String)> = vec![
        ("pyproject.toml".into(), String::new()),
        (
            "util.py".into(),
            "def is_function(value: object) -> bool:\n    return callable(value)\n".into(),
        ),
    ];
    for i in 1..=USERS {
        files.push((
            format!("m{i:02}.py"),
            format!("from util import is_function\n\nprint(is_function({i}))\n"),
        ));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let Some(p) = Project::new("basedpyright-langserver", &files, false) else { return };
    let (report, settled) =
        break_many(&p, "util.py", "(value: object)", "(value: object, strict: bool)").await;
    every_user_named(&report, &settled, |i| format!("m{i:02}.py"));
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_helper_used_by_thirty_modules_names_each_broken_module() {
    let mut files: Vec<(String, String)> = vec![
        ("package.json".into(), "{\"name\": \"fan\", \"private\": true}\n".into()),
        (
            "tsconfig.json".into(),
            "{\"compilerOptions\": {\"strict\": true, \"target\": \"es2020\", \"module\": \"commonjs\"}, \"include\": [\"src\"]}\n".into(),
        ),
        (
            "src/util/isFunction.ts".into(),
            "export function isFunction(value: unknown): boolean {\n  return typeof value === \"function\";\n}\n".into(),
        ),
    ];
    for i in 1..=USERS {
        files.push((
            format!("src/m{i:02}.ts"),
            format!("import {{ isFunction }} from \"./util/isFunction\";\n\nexport const v{i} = isFunction({i});\n"),
        ));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let Some(p) = Project::new("typescript-language-server", &files, false) else { return };
    let (report, settled) = break_many(
        &p,
        "src/util/isFunction.ts",
        "(value: unknown)",
        "(value: unknown, strict: boolean)",
    )
    .await;
    every_user_named(&report, &settled, |i| format!("src/m{i:02}.ts"));
    p.finish().await;
}

/// A module used by three others, none of them open.
fn three_users() -> Option<Project> {
    let mut files: Vec<(String, String)> = vec![
        ("pyproject.toml".into(), String::new()),
        ("lib.py".into(), "def area(side: int) -> int:\n    return side * side\n".into()),
    ];
    for i in 1..=3 {
        files.push((format!("use{i}.py"), format!("from lib import area\n\nprint(area({i}))\n")));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    Project::new("basedpyright-langserver", &files, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_the_server_was_shown_and_closed_are_still_named_when_one_of_them_is_open() {
    let Some(p) = three_users() else { return };
    // A first write checks every user, each opened for the check and closed after it.
    let body = p.read("lib.py").replace("side * side", "side * side * 1");
    let first = write_file(&p, "lib.py", &body).await;
    assert!(first.files.is_empty(), "{}", first.render());
    // The model looks at one user, which stays open; basedpyright's references then name it
    // alone, the closed ones no longer being loaded.
    let shown = p.ok(json!({"action": "diagnostics", "file": "use1.py"})).await;
    assert!(shown.starts_with("no errors or warnings in use1.py"), "{shown}");
    let broken_signature = p
        .read("lib.py")
        .replace("(side: int)", "(side: int, scale: int)")
        .replace("* 1", "* scale");
    let report = write_file(&p, "lib.py", &broken_signature).await;
    let text = report.render();
    assert_eq!(broken(&report), ["use1.py", "use2.py", "use3.py"], "{text}");
    assert!(report.complete(), "{text}");
    p.finish().await;
}

/// [`three_users`] after a write that checked every user (each opened for the check and closed
/// after it) and a look at `use1.py`, which stays open.
async fn three_users_one_open() -> Option<Project> {
    let p = three_users()?;
    let body = p.read("lib.py").replace("side * side", "side * side * 1");
    write_file(&p, "lib.py", &body).await;
    p.ok(json!({"action": "diagnostics", "file": "use1.py"})).await;
    Some(p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_name_the_users_the_server_was_shown_and_closed() {
    let Some(p) = three_users_one_open().await else { return };
    let refs =
        p.ok(json!({"action": "references", "file": "lib.py", "line": 1, "symbol": "area"})).await;
    for user in ["use1.py:1:", "use1.py:3:", "use2.py:1:", "use2.py:3:", "use3.py:1:", "use3.py:3:"]
    {
        assert!(refs.contains(user), "{user} in {refs}");
    }
    assert!(!refs.contains("incomplete"), "{refs}");
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_edits_the_users_the_server_was_shown_and_closed() {
    let Some(p) = three_users_one_open().await else { return };
    p.rename("lib.py", 1, "area", "surface").await.expect("rename");
    for user in ["use1.py", "use2.py", "use3.py"] {
        let text = p.read(user);
        assert!(
            text.contains("from lib import surface") && !text.contains("area"),
            "{user}: {text}"
        );
    }
    p.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_name_the_users_a_write_just_checked_and_closed() {
    let Some(p) = three_users() else { return };
    let body = p.read("lib.py").replace("side * side", "side * side * 1");
    write_file(&p, "lib.py", &body).await;
    let callers = p
        .ok(json!({"action": "incoming_calls", "file": "lib.py", "line": 1, "symbol": "area"}))
        .await;
    for user in ["use1.py:3:", "use2.py:3:", "use3.py:3:"] {
        assert!(callers.contains(user), "{user} in {callers}");
    }
    p.finish().await;
}
