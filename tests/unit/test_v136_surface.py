"""Every public module, name and parameter of MAIL v1.3.6 is importable here (issue 22, item 1).

The table is ``data/v136_python_surface.md``, a verbatim copy of the shared surface file: one
section per module, one line per public name, methods with their parameters.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

SURFACE = Path(__file__).parent / "data" / "v136_python_surface.md"

# Modules another piece of issue 22 ships, skipped here until it lands.
SKIPPED_MODULES = {
    # optional in issue 22
    "mail.examples.mafia",
}
# Names not served yet, expected to fail (strict: one that starts working must leave the
# set). Empty: every name of v1.3.6's surface is served.
NOT_YET: set[str] = set()
# Names another piece of issue 22 ships.
SKIPPED_NAMES: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class Entry:
    module: str
    name: str
    params: tuple[str, ...] | None = None  # a function's parameters, as listed
    methods: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _params(text: str) -> tuple[str, ...]:
    names = []
    for raw in text.split(","):
        part = raw.strip()
        if not part or part == "*":
            continue
        names.append(part.split("=")[0].lstrip("*"))
    return tuple(names)


def _methods(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    found = re.findall(r"(?:async )?(\w+)\(([^)]*)\)", text)
    return tuple((name, _params(args)) for name, args in found)


def _parse() -> list[Entry]:
    entries: list[Entry] = []
    module = ""
    for line in SURFACE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## `"):
            module = line[4:].rstrip("`")
            continue
        if not line.startswith("- ") or not module:
            continue
        item = line[2:]
        if item.startswith("re-exports from"):
            _, _, names = item.partition(": ")
            entries.extend(Entry(module, n.strip("` ")) for n in names.split(", "))
            continue
        cls = re.match(r"class `(\w+)(?:\([^`]*\))?`(?::\s*(.*))?", item)
        if cls:
            entries.append(Entry(module, cls.group(1), methods=_methods(cls.group(2) or "")))
            continue
        func = re.match(r"(?:async )?`(\w+)(?:\((.*)\))?`", item)
        assert func, line
        params = _params(func.group(2)) if func.group(2) is not None else None
        entries.append(Entry(module, func.group(1), params=params))
    return entries


ENTRIES = [
    e
    for e in _parse()
    if not any(e.module == m or e.module.startswith(m + ".") for m in SKIPPED_MODULES)
]
MODULES = sorted({e.module for e in ENTRIES})


def _has_params(obj: object, expected: tuple[str, ...]) -> list[str]:
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    accepted = set(sig.parameters) - {"self", "cls"}
    return [p for p in expected if p not in accepted]


def test_the_table_is_read() -> None:
    assert len(ENTRIES) > 300
    assert Entry("mail.core", "AgentCore") in ENTRIES


def _cases(ids: list[str]) -> list[object]:
    return [
        pytest.param(i, marks=pytest.mark.xfail(strict=True, reason="not yet"))
        if i in NOT_YET
        else i
        for i in ids
    ]


@pytest.mark.parametrize("module", _cases(MODULES))
def test_module_imports(module: str) -> None:
    importlib.import_module(module)


BY_ID = {f"{e.module}:{e.name}": e for e in ENTRIES}


@pytest.mark.parametrize("entry_id", _cases(list(BY_ID)))
def test_name_and_parameters(entry_id: str) -> None:
    entry = BY_ID[entry_id]
    module = importlib.import_module(entry.module)
    assert hasattr(module, entry.name), f"{entry.module}.{entry.name} is missing"
    obj = getattr(module, entry.name)
    if entry.params is not None:
        assert callable(obj)
        assert _has_params(obj, entry.params) == []
    problems: list[str] = []
    for method, params in entry.methods:
        if (entry.module, entry.name, method) in SKIPPED_NAMES:
            continue
        if not hasattr(obj, method):
            problems.append(f"{entry.name}.{method} is missing")
            continue
        missing = _has_params(getattr(obj, method), params)
        if missing:
            problems.append(f"{entry.name}.{method} lacks {missing}")
    assert problems == []
