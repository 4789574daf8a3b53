"""A run through the bindings, as a Python harness uses it: tools, calls, surfaces, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_tools
from agent_tools import AgentToolsError, RunClosedError, ToolNotFoundError
from conftest import require_env


def test_a_build_run_lists_every_family_with_schemas(project: Path) -> None:
    with agent_tools.Run(project) as run:
        specs = {spec.name: spec for spec in run.tools()}
        assert run.surface == "build"
        assert run.root == str(project.resolve())
    for name in ["read", "write", "edit", "apply_patch", "ast_grep", "ast_edit", "eval", "debug", "lsp"]:
        assert name in specs, f"{name} missing from {sorted(specs)}"
    assert list(specs) == sorted(specs)
    assert {spec.tier for spec in specs.values()} == {"read", "write", "exec"}
    read = specs["read"]
    assert read.tier == "read" and read.description
    assert read.input_schema["type"] == "object"
    assert "path" in read.input_schema["properties"]


def test_read_returns_the_lines_asked_for(project: Path) -> None:
    with agent_tools.Run(project) as run:
        result = run.call("read", {"path": "notes.txt", "start_line": 2, "end_line": 2})
    assert not result.is_error, result.text
    assert "second line" in result.text
    assert "first line" not in result.text and "third line" not in result.text
    assert str(result) == result.text


def test_ast_grep_finds_code_by_shape(project: Path) -> None:
    with agent_tools.Run(project) as run:
        result = run.call("ast_grep", {"pattern": "print($X)", "path": ".", "language": "python"})
    assert not result.is_error, result.text
    assert "app.py" in result.text
    assert "os.getcwd()" in result.text and "'done'" in result.text


def test_eval_keeps_state_between_cells(project: Path, no_survivors: str) -> None:
    with agent_tools.Run(project) as run:
        first = run.call("eval", {"code": "x = 20\nx + 1", "description": "set x and add one"})
        second = run.call("eval", {"code": "x * 2", "description": "double x"})
        js = run.call(
            "eval", {"code": "[1, 2, 3].map(n => n * 2).join(',')", "language": "javascript",
                     "description": "double a list in JavaScript"}
        )
    assert not first.is_error and "21" in first.text, first.text
    assert not second.is_error and "40" in second.text, second.text
    assert not js.is_error and "2,4,6" in js.text, js.text


def test_plan_hides_write_and_exec_tools(project: Path) -> None:
    with agent_tools.Run(project, surface="plan") as run:
        specs = run.tools()
        assert run.surface == "plan"
        names = [s.name for s in specs]
        assert {s.tier for s in specs} == {"read"}
        for hidden in ["write", "edit", "apply_patch", "eval", "debug", "ast_edit"]:
            assert hidden not in names
        assert "read" in names and "ast_grep" in names
        with pytest.raises(ToolNotFoundError, match="write-tier tool") as refused:
            run.call("write", {"path": "x.txt", "content": "no"})
        assert "read" in str(refused.value)
    assert not (project / "x.txt").exists()


def test_a_tool_error_is_a_result_and_bad_arguments_name_the_argument(project: Path) -> None:
    with agent_tools.Run(project) as run:
        missing = run.call("read", {"path": "no-such-file.txt"})
        wrong = run.call("read", {"path": 12})
        unknown = run.call("read", {"path": "notes.txt", "colour": "red"})
    assert missing.is_error and "no-such-file.txt" in missing.text
    assert wrong.is_error and "path" in wrong.text
    assert unknown.is_error and "colour" in unknown.text


def test_writes_land_in_the_root_and_stay_confined(project: Path) -> None:
    with agent_tools.Run(project) as run:
        wrote = run.call("write", {"path": "out/new.txt", "content": "hello\n"})
        escaped = run.call("write", {"path": "../outside.txt", "content": "no\n"})
    assert not wrote.is_error, wrote.text
    assert (project / "out" / "new.txt").read_text() == "hello\n"
    assert escaped.is_error
    assert not (project.parent / "outside.txt").exists()


def test_bad_inputs_raise_with_what_would_work(project: Path, tmp_path: Path) -> None:
    with pytest.raises(AgentToolsError, match="give an existing directory"):
        agent_tools.Run(tmp_path / "missing")
    with pytest.raises(AgentToolsError, match="surface: unknown surface `nope`; use `build` or `plan`"):
        agent_tools.Run(project, surface="nope")  # type: ignore[arg-type]
    with agent_tools.Run(project) as run:
        with pytest.raises(ToolNotFoundError, match="unknown tool `reed`.*read"):
            run.call("reed", {"path": "notes.txt"})
        with pytest.raises(TypeError, match="args must be a dict"):
            run.call("read", ["notes.txt"])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="JSON values"):
            run.call("read", {"path": object()})
    with pytest.raises(RunClosedError, match="is closed; open a new Run"):
        run.call("read", {"path": "notes.txt"})
    with pytest.raises(RunClosedError):
        run.tools()
    assert run.closed
    run.close()  # closing twice is harmless


def test_a_config_file_given_by_path_replaces_the_root_one(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text('[mcp]\nsurface = "plan"\n\n[output]\nmax_chars = 1000\n')
    (project / "big.txt").write_text("y\n" * 2000)
    with agent_tools.Run(project, config=config) as run:
        assert run.surface == "plan"
        long = run.call("read", {"path": "big.txt"})
    # Cut at a whole line, said the same way in the text and in the data.
    assert "the rest is over the 1000-character output cap" in long.text, long.text
    end = long.structured["end_line"]
    assert f"showed lines 1-{end} of 2000" in long.text and end < 2000, long.text
    assert long.structured["content"] == "y\n" * end
    bad = tmp_path / "bad.toml"
    bad.write_text("[output]\nmax_charz = 1\n")
    with pytest.raises(AgentToolsError, match="max_charz"):
        agent_tools.Run(project, config=bad)
    with pytest.raises(AgentToolsError, match="give the path of an agent-tools.toml"):
        agent_tools.Run(project, config=tmp_path / "none.toml")


def test_structured_content_comes_back_as_data(project: Path) -> None:
    with agent_tools.Run(project) as run:
        with_schema = [s for s in run.tools() if s.output_schema is not None]
        result = run.call("ast_grep", {"pattern": "print($X)", "path": ".", "language": "python"})
    if result.structured is not None:
        assert isinstance(result.structured, (dict, list))
        json.dumps(result.structured)
    for spec in with_schema:
        assert isinstance(spec.output_schema, dict)


def test_the_module_is_typed_and_versioned() -> None:
    package = Path(agent_tools.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_native.pyi").exists()
    assert agent_tools.__version__.count(".") == 2
    assert agent_tools.Run.call.__doc__


def test_a_matplotlib_figure_comes_back_as_an_image(project: Path, tmp_path: Path) -> None:
    python = require_env("AGENT_TOOLS_TEST_PYTHON", "the test venv's Python, which has matplotlib")
    config = tmp_path / "agent-tools.toml"
    config.write_text(f"[eval]\npython = {json.dumps(python)}\n")
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()"
    with agent_tools.Run(project, config=config) as run:
        result = run.call("eval", {"code": code, "description": "plot three points"})
    assert not result.is_error, result.text
    assert result.images, result.text
    assert all(i.mime_type == "image/png" and i.data.startswith(b"\x89PNG") for i in result.images)


def test_specs_carry_the_title_and_hints_an_mcp_client_gets(project: Path) -> None:
    with agent_tools.Run(project) as run:
        specs = {s.name: s for s in run.tools()}
    read, write = specs["read"], specs["write"]
    assert read.title and write.title
    assert read.read_only and read.idempotent and not read.destructive
    assert not write.read_only
    assert not specs["eval"].read_only and specs["eval"].tier == "exec"


def test_a_long_call_reports_progress_to_the_callback(project: Path, no_survivors: str) -> None:
    seen: list[tuple[float, object, str]] = []
    cell = {"code": "import time\ntime.sleep(2.5)\n'slept'", "description": "a slow cell"}
    with agent_tools.Run(project) as run:
        result = run.call("eval", cell, progress=lambda done, total, message: seen.append((done, total, message)))
        assert "slept" in result.text, result.text
        with pytest.raises(TypeError, match="progress must be callable"):
            run.call("read", {"path": "notes.txt"}, progress="yes")  # type: ignore[arg-type]
    assert seen, "no progress was reported during a 2.5 s cell"
    done, _total, message = seen[-1]
    assert done > 0 and message, seen
