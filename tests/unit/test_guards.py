"""Architecture guards: cheap imports, dependency direction, no import cycles, public surface
(STYLE 2-4)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections import deque
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "mail"
CORE = PACKAGE / "core"

HEAVY_MODULES = (
    "litellm",
    "asyncpg",
    "aiohttp",
    "fastapi",
    "httpx",
    "httpx2",
    "mcp",
    "openai",
    "anthropic",
    "redis",
    "a2a",
    "google.protobuf",
    "prometheus_client",
)
# Layers above core, and third-party I/O libraries core must not import.
CORE_FORBIDDEN_OURS = (
    "mail.server",
    "mail.net",
    "mail.db",
    "mail.factories",
    "mail.api",
    "mail.client",
)
# ... but the store interface, which the runtime writes to (no backend, no SQL)
CORE_ALLOWED_STORE = "mail.db.store"
CORE_FORBIDDEN_THIRD_PARTY = (
    "litellm",
    "asyncpg",
    "aiohttp",
    "sse_starlette",
    "rich",
    "httpx",
    "fastapi",
    "redis",
    "prometheus_client",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_public(path: Path) -> bool:
    return not any(part.startswith("_") for part in _module_name(path).split("."))


PY_FILES = sorted(PACKAGE.rglob("*.py"))
PUBLIC_FILES = [p for p in PY_FILES if _is_public(p)]
CORE_FILES = sorted(CORE.rglob("*.py"))


def _import_nodes(path: Path, source: str | None) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``path``, at any depth (functions, ``if TYPE_CHECKING:``)."""
    if source is None:
        source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _from_module(path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` statement of ``path`` names."""
    if not node.level:
        return node.module or ""
    module_name = _module_name(path)
    package = module_name if path.name == "__init__.py" else module_name.rpartition(".")[0]
    base = package.split(".")
    if node.level > 1:
        base = base[: -(node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imported_modules(path: Path, source: str | None = None) -> list[str]:
    """Absolute names of every module imported by ``path`` (relative imports resolved)."""
    names: list[str] = []
    for node in _import_nodes(path, source):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        else:
            module = _from_module(path, node)
            names.append(module)
            # ``from mail import server`` imports the submodule mail.server.
            names.extend(f"{module}.{alias.name}" for alias in node.names)
    return names


def _is_or_under(name: str, root: str) -> bool:
    return name == root or name.startswith(f"{root}.")


def test_import_mail_loads_no_heavy_library() -> None:
    code = (
        "import sys, mail, mail.core.message, mail.errors; "
        f"print(','.join(m for m in {HEAVY_MODULES!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert result.stdout.strip() == ""


def test_core_files_are_scanned() -> None:
    assert CORE / "message.py" in CORE_FILES


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: p.name)
def test_core_imports_point_down(path: Path) -> None:
    imported = _imported_modules(path)
    bad = sorted(
        name
        for name in imported
        for root in (*CORE_FORBIDDEN_OURS, *CORE_FORBIDDEN_THIRD_PARTY)
        if _is_or_under(name, root) and not _is_or_under(name, CORE_ALLOWED_STORE)
    )
    assert bad == [], f"{path.relative_to(SRC)} imports {bad}"


def test_import_scanner_sees_relative_and_from_imports() -> None:
    # Guard the guard: upward imports in any spelling must be seen (nothing is written).
    source = (
        "from ..server import app\n"
        "from mail import net\n"
        "from . import runtime\n"
        "import litellm.utils\n"
        "def f():\n    import asyncpg\n"
    )
    names = _imported_modules(CORE / "probe.py", source)
    for expected in ("mail.server", "mail.net", "mail.core.runtime", "litellm.utils", "asyncpg"):
        assert expected in names


# --- import cycles -------------------------------------------------------------------------

MODULES = {_module_name(p): p for p in PY_FILES}


def _local_imports(path: Path, known: Collection[str], source: str | None = None) -> set[str]:
    """The modules of ``known`` that ``path`` imports, wherever the statement is.

    ``from pkg import name`` imports the module ``pkg.name`` if there is one, else ``pkg``;
    the parent packages Python runs first (``mail.api`` for ``mail.api._swarm``) are not
    counted, or every package re-exporting its submodules would be a cycle.
    """
    this = _module_name(path)
    found: set[str] = set()
    for node in _import_nodes(path, source):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        module = _from_module(path, node)
        submodules = [f"{module}.{alias.name}" for alias in node.names]
        found.update(m for m in submodules if m in known)
        if not all(m in known for m in submodules):
            found.add(module)
    return {m for m in found if m in known and m != this}


def _import_cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """One shortest cycle ``[a, b, ..., a]`` per group of modules that import each other."""

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reach = {m: reachable(m) for m in graph}
    cycles: list[list[str]] = []
    done: set[str] = set()
    for start in sorted(graph):
        group = {m for m in reach[start] if start in reach[m]}
        if start in done or not group:
            continue
        done |= group
        # breadth first from ``start`` back to itself, inside the group
        back: dict[str, str] = {}
        queue = deque([start])
        while start not in back:
            current = queue.popleft()
            for nxt in sorted(graph[current]):
                if nxt in group and nxt not in back:
                    back[nxt] = current
                    queue.append(nxt)
        path = [start]
        while len(path) == 1 or path[-1] != start:
            path.append(back[path[-1]])
        cycles.append(path[::-1])
    return cycles


# The one upward call allowed: v1.3.6's ``MAILSwarmTemplate.start_server`` serves the
# template, so ``mail.api._swarm`` imports the server inside that method.
LAUNCHER = ("mail.api._swarm", "mail.server")


def test_no_import_cycles() -> None:
    graph = {m: _local_imports(MODULES[m], MODULES) for m in sorted(MODULES)}
    upward = {m for m in graph[LAUNCHER[0]] if m.startswith("mail.server")}
    assert upward == {LAUNCHER[1]}, "the launcher imports the server app only"
    graph[LAUNCHER[0]] -= upward
    cycles = [" -> ".join(cycle) for cycle in _import_cycles(graph)]
    # Fix a cycle by moving the shared piece to the module that owns it (or a small third
    # module), not by importing inside a function: those imports count too.
    assert cycles == [], "modules that import each other:\n" + "\n".join(cycles)


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: p.name)
def test_core_collaborators_do_not_import_the_runtime(path: Path) -> None:
    # The runtime hands its collaborators what they use; they never reach back into it.
    # (``mail.core`` itself is no collaborator: it re-exports ``MAILRuntime``, as v1.3.6 did.)
    if _module_name(path) not in ("mail.core.runtime", "mail.core"):
        assert "mail.core.runtime" not in _local_imports(path, MODULES)


def test_cycle_finder_sees_every_kind_of_import() -> None:
    # Guard the guard: relative, function-level and TYPE_CHECKING imports close a cycle,
    # ``from pkg import submodule`` is an import of the submodule, a package importing its
    # own submodules is not a cycle (nothing is written).
    sources = {
        "x/__init__.py": "from mail.x.a import A\n",
        "x/a.py": "from . import b\n",
        "x/b.py": "def f():\n    from mail.x.c import thing\n",
        "x/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
        "y.py": "import mail.x\nfrom mail.x import a, not_a_module\n",
    }
    known = {_module_name(PACKAGE / f) for f in sources}
    graph = {
        _module_name(PACKAGE / f): _local_imports(PACKAGE / f, known, text)
        for f, text in sources.items()
    }
    assert graph["mail.y"] == {"mail.x", "mail.x.a"}
    assert _import_cycles(graph) == [["mail.x.a", "mail.x.b", "mail.x.c", "mail.x.a"]]


def _static_all(path: Path) -> list[str] | None:
    """The literal ``__all__`` of a module, read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "__all__"
            and node.value is not None
        ):
            return list(ast.literal_eval(node.value))
    return None


@pytest.mark.parametrize("path", PUBLIC_FILES, ids=_module_name)
def test_public_module_defines_all(path: Path) -> None:
    names = _static_all(path)
    assert names is not None, f"{_module_name(path)} has no literal __all__"
    assert len(names) == len(set(names)), f"{_module_name(path)} lists a name twice"


CHEAP_MODULES = sorted(
    _module_name(p)
    for p in PUBLIC_FILES
    if _module_name(p) in ("mail.errors", "mail.version")
    or _is_or_under(_module_name(p), "mail.core")
)


@pytest.mark.parametrize("module_name", CHEAP_MODULES)
def test_all_names_exist(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


SEED_MESSAGE_NAMES = (
    "MAILAddress",
    "MAILRequest",
    "MAILResponse",
    "MAILBroadcast",
    "MAILInterrupt",
    "MAILMessage",
    "MAILInterswarmMessage",
    "parse_agent_address",
    "format_agent_address",
    "create_agent_address",
    "create_user_address",
    "create_system_address",
    "create_admin_address",
    "build_body_xml",
    "build_mail_xml",
    "build_interswarm_mail_xml",
    "parse_task_contributor",
    "parse_task_contributors",
    "MAIL_ALL_LOCAL_AGENTS",
)


@pytest.mark.parametrize("name", SEED_MESSAGE_NAMES)
def test_seed_promised_names_in_core_message(name: str) -> None:
    module = importlib.import_module("mail.core.message")
    assert name in module.__all__
    assert hasattr(module, name)
