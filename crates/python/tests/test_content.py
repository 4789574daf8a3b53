"""Results as ordered content blocks (text and images in the order a cell showed them) and specs
with the output schema the structured content follows."""

from __future__ import annotations

import json
from pathlib import Path

import agent_tools
from agent_tools import Image, Text
from conftest import require_env


def test_text_and_figures_come_back_in_the_order_the_cell_showed_them(project: Path, tmp_path: Path) -> None:
    python = require_env("AGENT_TOOLS_TEST_PYTHON", "the test venv's Python, which has matplotlib")
    config = tmp_path / "agent-tools.toml"
    config.write_text(f"[eval]\npython = {json.dumps(python)}\n")
    code = (
        "import matplotlib.pyplot as plt\n"
        "print('before the figures')\n"
        "plt.plot([1, 2, 3]); plt.show()\n"
        "print('between them')\n"
        "plt.bar([1, 2], [3, 4]); plt.show()\n"
        "print('after them')\n"
    )
    with agent_tools.Run(project, config=config) as run:
        result = run.call("eval", {"code": code, "description": "two figures between prints"})
    assert not result.is_error, result.text
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "image", "text", "image", "text"], (kinds, result.text)
    first, figure1, middle, figure2, last = result.content
    assert isinstance(first, Text) and "before the figures" in first.text and "[image 1:" in first.text
    assert isinstance(middle, Text) and "between them" in middle.text and "[image 2:" in middle.text
    assert isinstance(last, Text) and "after them" in last.text
    assert isinstance(figure1, Image) and figure1 is result.images[0] and figure2 is result.images[1]
    assert figure1.data.startswith(b"\x89PNG") and figure1.data != figure2.data
    assert "".join(b.text for b in result.content if isinstance(b, Text)) == result.text


def test_a_text_result_is_one_text_block(project: Path) -> None:
    with agent_tools.Run(project) as run:
        result = run.call("read", {"path": "notes.txt"})
    assert result.content == [Text(result.text)]


def test_specs_carry_the_output_schema_the_structured_content_follows(project: Path) -> None:
    with agent_tools.Run(project) as run:
        specs = {s.name: s for s in run.tools()}
        found = run.call("ast_grep", {"pattern": "print($A)", "path": "app.py"})
    schema = specs["ast_grep"].output_schema
    assert schema is not None and schema.get("type") == "object", schema
    assert set(found.structured) <= set(schema["properties"]), (found.structured, schema)
    # `read` declares none: its numbered text is what every client shows.
    assert specs["read"].output_schema is None
    for name in schema.get("required", []):
        assert name in found.structured, name
    assert all(s.output_schema is None or s.output_schema.get("type") == "object" for s in specs.values())
