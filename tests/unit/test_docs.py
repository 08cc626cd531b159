"""Every Python code block in docs/ runs, unless the line before it says it is illustrative."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)\n```", re.DOTALL)


def _runnable_blocks(path: Path) -> list[str]:
    return [
        m.group("code")
        for m in _BLOCK.finditer(path.read_text(encoding="utf-8"))
        if "illustrative" not in m.group("before")
    ]


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_python_blocks_in_docs_run(page: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for code in _runnable_blocks(page):
        exec(compile(code, str(page), "exec"), namespace)  # noqa: S102  # our own docs
