"""Every Python example of the package's README runs as written, in a project with a README."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


def test_the_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 5, EXAMPLES


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example-{i + 1}" for i in range(len(EXAMPLES))])
def test_a_readme_example_runs(code: str, project: Path, no_survivors: str) -> None:
    (project / "README.md").write_text("# demo\n\nA small project.\nIt has notes.\n")
    code = code.replace("/path/to/project", ".")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert done.stdout.strip(), f"the example printed nothing:\n{code}"
