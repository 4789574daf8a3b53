//! `read` and `edit` by name path on real-shaped code in every language the outline covers:
//! exactly the declaration is shown or changed, every other byte of the file stays.

use agent_tools::SurfaceKind;
use serde_json::{Value, json};

use crate::Project;

const PYTHON: &str = r#"import functools


class Context:
    """The state of one command."""

    def __init__(self, obj=None):
        self.obj = obj

    @property
    def meta(self):
        return {}

    def ensure_object(self, object_type):
        rv = self.find_object(object_type)
        if rv is None:
            self.obj = rv = object_type()
        return rv

    class Settings:
        color = None


@functools.lru_cache
def echo(message=None):
    print(message)
"#;

const TYPESCRIPT: &str = r#"export function parse(input: string): number;
export function parse(input: number): number;
export function parse(input: string | number): number {
  return Number(input);
}

export const handler = async (req: Request): Promise<void> => {
  await req.text();
};

export class Parser {
  /** Parses one. */
  parse(input: string): number {
    return parse(input);
  }
}

export namespace Geometry {
  export function area(r: number): number {
    return r * r;
  }
}
"#;

const GO: &str = r#"package server

// Server serves.
type Server struct {
	Addr string
}

// Start starts it.
func (s *Server) Start() error {
	return nil
}

func (s *Server) Stop() {}
"#;

const RUST: &str = r#"use std::fmt;

/// A point.
#[derive(Debug)]
pub struct Point<T> {
    x: T,
}

impl<T: Copy> Point<T> {
    pub fn get(&self) -> T {
        self.x
    }
}

impl fmt::Display for Point<f64> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}

pub trait Shape {
    fn area(&self) -> f64;
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}
"#;

const C: &str = r#"#include <stdlib.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct buffer {
    char *data;
};

int buffer_push(struct buffer *b, char c);

/* Pushes one byte. */
int buffer_push(struct buffer *b, char c)
{
    b->data[0] = c;
    return 0;
}
"#;

const CPP: &str = r#"#include <vector>

namespace geo {

template <typename T>
T clamp(T v, T lo, T hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

class Shape {
public:
    virtual double area() const = 0;
    int sides() const { return 3; }
};

}  // namespace geo

double area_of(const geo::Shape &s) { return s.area(); }
"#;

const JAVA: &str = r#"package demo;

public class Repository {
    /** Finds one. */
    @Override
    public String find(int id) {
        return null;
    }

    public String find(String name) {
        return name;
    }
}
"#;

fn call(project: &Project, tool: &str, args: Value) -> (bool, String) {
    let result = project.call(SurfaceKind::Build, tool, args);
    (result.is_error, result.text)
}

/// `read` by name path: the numbered lines of exactly `expected`, which starts at `line`.
fn check_read(file: &str, source: &str, symbol: &str, expected: &str) {
    let project = Project::new(&[(file, source)]);
    let (err, text) = call(&project, "read", json!({"path": file, "symbol": symbol}));
    assert!(!err, "{text}");
    let start = source.find(expected).expect("the expected text is in the source");
    let line = source[..start].matches('\n').count() + 1;
    let lines: Vec<&str> = expected.lines().collect();
    let width = (line + lines.len() - 1).to_string().len();
    let numbered: String =
        lines.iter().enumerate().map(|(i, l)| format!("{:>width$}\t{l}\n", line + i)).collect();
    assert!(text.starts_with(&numbered), "{symbol} in {file}:\n{text}\nexpected:\n{numbered}");
    let note = text.lines().last().unwrap();
    assert!(note.ends_with(&format!("lines {line}-{}]", line + lines.len() - 1)), "{note}");
}

#[test]
fn read_by_name_path_returns_exactly_the_declaration_in_every_language() {
    check_read(
        "a.py",
        PYTHON,
        "Context/meta",
        "    @property\n    def meta(self):\n        return {}",
    );
    check_read("a.py", PYTHON, "Context/Settings", "    class Settings:\n        color = None");
    check_read(
        "a.py",
        PYTHON,
        "echo",
        "@functools.lru_cache\ndef echo(message=None):\n    print(message)",
    );
    check_read("a.ts", TYPESCRIPT, "/parse[2]", "export function parse(input: number): number;");
    check_read(
        "a.ts",
        TYPESCRIPT,
        "handler",
        "export const handler = async (req: Request): Promise<void> => {\n  await req.text();\n};",
    );
    check_read(
        "a.ts",
        TYPESCRIPT,
        "Parser/parse",
        "  /** Parses one. */\n  parse(input: string): number {\n    return parse(input);\n  }",
    );
    check_read(
        "a.ts",
        TYPESCRIPT,
        "Geometry/area",
        "  export function area(r: number): number {\n    return r * r;\n  }",
    );
    check_read(
        "a.go",
        GO,
        "Server/Start",
        "// Start starts it.\nfunc (s *Server) Start() error {\n\treturn nil\n}",
    );
    check_read(
        "a.rs",
        RUST,
        "Point[1]",
        "/// A point.\n#[derive(Debug)]\npub struct Point<T> {\n    x: T,\n}",
    );
    check_read(
        "a.rs",
        RUST,
        "Point/fmt",
        "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n        write!(f, \"{}\", self.x)\n    }",
    );
    check_read("a.rs", RUST, "Shape/area", "    fn area(&self) -> f64;");
    check_read(
        "a.rs",
        RUST,
        "square",
        "macro_rules! square {\n    ($x:expr) => {\n        $x * $x\n    };\n}",
    );
    check_read("a.c", C, "MAX", "#define MAX(a, b) ((a) > (b) ? (a) : (b))");
    check_read("a.c", C, "buffer_push[1]", "int buffer_push(struct buffer *b, char c);");
    check_read(
        "a.c",
        C,
        "buffer_push[2]",
        "/* Pushes one byte. */\nint buffer_push(struct buffer *b, char c)\n{\n    b->data[0] = c;\n    return 0;\n}",
    );
    check_read(
        "a.cpp",
        CPP,
        "geo/clamp",
        "template <typename T>\nT clamp(T v, T lo, T hi) {\n    return v < lo ? lo : v > hi ? hi : v;\n}",
    );
    check_read("a.cpp", CPP, "Shape/area", "    virtual double area() const = 0;");
    check_read(
        "Repository.java",
        JAVA,
        "find[1]",
        "    /** Finds one. */\n    @Override\n    public String find(int id) {\n        return null;\n    }",
    );
}

/// `edit` by name path: the file afterwards is the file before with `old` (found once) turned
/// into `new`, and nothing else changed.
fn check_edit(file: &str, source: &str, args: Value, old: &str, new: &str) -> String {
    let project = Project::new(&[(file, source)]);
    let mut args = args;
    args["path"] = json!(file);
    let (err, text) = call(&project, "edit", args);
    assert!(!err, "{text}");
    assert_eq!(source.matches(old).count(), 1, "`{old}` occurs once in the source");
    assert_eq!(project.read(file), source.replacen(old, new, 1));
    text
}

#[test]
fn edit_by_name_path_replaces_the_declaration_and_keeps_every_other_byte() {
    let old = "    def ensure_object(self, object_type):\n        rv = self.find_object(object_type)\n        if rv is None:\n            self.obj = rv = object_type()\n        return rv";
    // new_string at any indentation: it is moved to the declaration's own.
    let new = "def ensure_object(self, object_type):\n    return self.obj";
    let text = check_edit(
        "a.py",
        PYTHON,
        json!({"symbol": "Context/ensure_object", "new_string": new}),
        old,
        "    def ensure_object(self, object_type):\n        return self.obj",
    );
    assert_eq!(
        text,
        "edited a.py: replaced method Context/ensure_object (was lines 14-18, now 14-15)"
    );
    // Copied from a read without the first line's indentation: the other lines keep theirs.
    check_edit(
        "a.py",
        PYTHON,
        json!({"symbol": "Context/ensure_object",
               "new_string": "def ensure_object(self, object_type):\n        return self.obj\n"}),
        old,
        "    def ensure_object(self, object_type):\n        return self.obj",
    );
    check_edit(
        "a.go",
        GO,
        json!({"symbol": "Server/Stop", "new_string": "func (s *Server) Stop() {\n\ts.Addr = \"\"\n}\n"}),
        "func (s *Server) Stop() {}",
        "func (s *Server) Stop() {\n\ts.Addr = \"\"\n}",
    );
    check_edit(
        "a.rs",
        RUST,
        json!({"symbol": "Point/get", "new_string": "    pub fn get(&self) -> T {\n        self.x.clone()\n    }"}),
        "        self.x\n",
        "        self.x.clone()\n",
    );
    check_edit(
        "a.ts",
        TYPESCRIPT,
        json!({"symbol": "/parse[3]", "new_string": "export function parse(input: string | number): number {\n  return +input;\n}"}),
        "  return Number(input);",
        "  return +input;",
    );
    check_edit(
        "a.cpp",
        CPP,
        json!({"symbol": "geo/Shape/sides", "new_string": "int sides() const { return 4; }"}),
        "{ return 3; }",
        "{ return 4; }",
    );
    check_edit(
        "Repository.java",
        JAVA,
        json!({"symbol": "find[2]", "new_string": "public String find(String name) {\n    return name.trim();\n}"}),
        "        return name;",
        "        return name.trim();",
    );
}

#[test]
fn edit_by_name_path_inserts_a_sibling_indented_as_the_target() {
    let text = check_edit(
        "a.py",
        PYTHON,
        json!({"symbol": "Context/ensure_object", "insert": "after",
               "new_string": "def lookup(self, key):\n    return self.obj[key]\n"}),
        "        return rv\n",
        "        return rv\n\n    def lookup(self, key):\n        return self.obj[key]\n",
    );
    assert_eq!(text, "edited a.py: inserted after method Context/ensure_object: lines 20-21");
    check_edit(
        "a.py",
        PYTHON,
        json!({"symbol": "echo", "insert": "before", "new_string": "def first():\n    pass"}),
        "\n@functools.lru_cache\n",
        "\ndef first():\n    pass\n\n\n@functools.lru_cache\n",
    );
    check_edit(
        "a.c",
        C,
        json!({"symbol": "MAX", "insert": "after", "new_string": "#define MIN(a, b) ((a) < (b) ? (a) : (b))"}),
        "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
        "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#define MIN(a, b) ((a) < (b) ? (a) : (b))\n",
    );
    check_edit(
        "a.rs",
        RUST,
        json!({"symbol": "Shape/area", "insert": "before", "new_string": "fn sides(&self) -> usize;"}),
        "    fn area(&self) -> f64;",
        "    fn sides(&self) -> usize;\n    fn area(&self) -> f64;",
    );
}

#[test]
fn ambiguous_missing_and_unoutlinable_name_paths_are_refused_with_what_would_work() {
    let project = Project::new(&[("a.rs", RUST), ("Repository.java", JAVA), ("notes.txt", "x\n")]);
    let (err, text) = call(&project, "read", json!({"path": "Repository.java", "symbol": "find"}));
    assert!(err);
    insta::assert_snapshot!(text, @"read: argument `symbol`: in Repository.java, `find` matches 2 declarations: Repository/find[1] (method 4-8), Repository/find[2] (method 10-12); give one of these name paths");
    let (err, text) =
        call(&project, "edit", json!({"path": "a.rs", "symbol": "Point/fmtt", "new_string": "x"}));
    assert!(err);
    insta::assert_snapshot!(text, @"edit: argument `symbol`: in a.rs, no declaration is named `Point/fmtt`; nearest names: Point/fmt (method 16-18), Point/get (method 10-12)");
    let (err, text) = call(&project, "read", json!({"path": "notes.txt", "symbol": "x"}));
    assert!(err);
    insta::assert_snapshot!(text, @"read: notes.txt is in no language with an outline (outlines cover bash, c, cpp, dart, go, java, javascript, python, rust, tsx, typescript); read it by lines");
    let (err, text) = call(
        &project,
        "edit",
        json!({"path": "a.rs", "symbol": "Point", "old_string": "x", "new_string": "y"}),
    );
    assert!(err);
    insta::assert_snapshot!(text, @"edit: give `old_string` (exact text) or `symbol` (a name path), not both: with `symbol`, new_string is the whole new declaration");
    let (err, text) =
        call(&project, "edit", json!({"path": "a.rs", "insert": "after", "new_string": "y"}));
    assert!(err);
    insta::assert_snapshot!(text, @"edit: argument `insert` needs `symbol`: the name path of the declaration to insert before or after");
    let (err, text) =
        call(&project, "edit", json!({"path": "a.rs", "symbol": "square", "new_string": ""}));
    assert!(err);
    assert!(
        text.starts_with("edit: argument `new_string` is empty; give the whole new declaration"),
        "{text}"
    );
    assert_eq!(project.read("a.rs"), RUST, "nothing was written");
}

#[test]
fn read_outline_lists_declarations_nested_with_their_lines() {
    let project = Project::new(&[("a.py", PYTHON)]);
    let (err, text) = call(&project, "read", json!({"path": "a.py", "outline": true}));
    assert!(!err);
    insta::assert_snapshot!(text, @"class Context 4-21
  method Context/__init__ 7-8
  property Context/meta 10-12
  method Context/ensure_object 14-18
  class Context/Settings 20-21
    field Context/Settings/color 21
function echo 24-26");
}

#[test]
fn a_read_of_a_file_longer_than_one_page_starts_with_its_outline() {
    let methods: String =
        (0..1200).map(|i| format!("    def m{i}(self):\n        return {i}\n\n")).collect();
    let source = format!("class Big:\n{methods}");
    let project = Project::new(&[("big.py", &source), ("small.py", PYTHON)]);
    let (err, text) = call(&project, "read", json!({"path": "big.py"}));
    assert!(!err);
    let head: Vec<&str> = text.lines().take(4).collect();
    assert_eq!(
        head,
        [
            "[big.py of 3601 lines is longer than one read; its 1201 declarations (read one whole with symbol=\"<name path>\"):]",
            "class Big 1-3600",
            "  method Big/m0 2-3",
            "  method Big/m1 5-6"
        ]
    );
    assert!(text.contains("[1051 more declarations not shown; ask for one by name path]\n[big.py from line 1:]\n   1\tclass Big:\n"), "{}", &text[..200]);
    let (_, text) =
        call(&project, "read", json!({"path": "big.py", "start_line": 2, "end_line": 3}));
    assert!(text.starts_with("2\t    def m0"), "a range has no outline: {text}");
    let (_, text) = call(&project, "read", json!({"path": "small.py"}));
    assert!(text.starts_with(" 1\timport functools"), "a file read whole has none: {text}");
}

#[test]
fn read_has_no_output_schema_so_every_client_shows_the_model_numbered_lines() {
    // Claude Code and Codex show a model only the structured content of a result that has one:
    // without an output schema, no MCP result of `read` carries any, so the model reads the
    // numbered text. Programs (an `eval` cell's `tool()`) still get the exact lines as data.
    let registry = agent_tools::RegistryBuilder::new().with_reference_file_tools().build();
    let surface = registry.surface(SurfaceKind::Plan);
    assert_eq!(surface.get("read").map(|t| t.spec().output_schema.is_none()), Some(true));
    let project = Project::new(&[("a.py", PYTHON)]);
    let result =
        project.call(SurfaceKind::Plan, "read", json!({"path": "a.py", "symbol": "Context/meta"}));
    assert_eq!(
        result.text,
        "10\t    @property\n11\t    def meta(self):\n12\t        return {}\n[a.py: property Context/meta, lines 10-12]\n"
    );
    let data = result.structured.expect("data for programs");
    assert_eq!(data["content"], "    @property\n    def meta(self):\n        return {}\n");
    assert_eq!((data["start_line"].as_u64(), data["end_line"].as_u64()), (Some(10), Some(12)));
    assert_eq!(data["symbol"], "Context/meta");
}
