//! Project trees the tests share: a src-layout Python package, Python callers of a pager,
//! a TypeScript tree with nested package.json files, a C project, a Go module with callers.

use super::*;

pub(crate) const PY_PKG: &str = "def echo(message: str) -> str:\n    return message\n\n\ndef shout(message: str) -> str:\n    return echo(message).upper()\n";
pub(crate) const PY_TEST: &str = "from pkg import echo\n\n\ndef test_echo() -> None:\n    assert echo(\"a\") == \"a\"\n    assert echo(\"b\") == \"b\"\n";

pub(crate) fn python_package(allow: bool) -> Option<Project> {
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

pub(crate) fn typescript_tree() -> Option<Project> {
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

pub(crate) fn c_project(allow: bool) -> Option<Project> {
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

pub(crate) fn python_callers() -> Option<Project> {
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

/// A Go module whose `Scale` is called in its own package and from a command in another.
pub(crate) fn go_calls() -> Option<Project> {
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
