"""The package graph (STYLE 2): dependencies point down, with no cycle, and what one package
needs from another is public there.

A package is the first name under ``mail``: ``mail.api`` for ``mail/api/_swarm.py``. A
top-level module is a package of its own (``mail.errors``, ``mail._limits``), and
``mail/__init__.py`` is the package ``mail``. An edge is an import statement that runs when
the module is imported: imports inside functions (optional SDKs, the launchers, the v1.3.6
helpers that load the server) and under ``if TYPE_CHECKING:`` are not edges. Checked:

(a) no cycle among packages;
(b) every edge goes to a lower layer of :data:`LAYERS` (packages of one layer import each
    other not at all), except :data:`LAUNCHER`;
(c) no module imports another package's private module (``mail.x._y`` from outside
    ``mail.x``), or an ``_underscore`` name of it, anywhere in the module (functions and
    ``TYPE_CHECKING`` blocks included), except the pairs of :data:`ALLOWED_PRIVATE`.
    Top-level private modules (``mail._limits``, ``mail._text``, ``mail._sse``,
    ``mail._server_file``) are the whole distribution's shared internals: any package may
    import them.

The v1.3.6 compatibility modules (:data:`V136_SHIMS`) say so in their first docstring line,
the re-exporting ones hold no code, and nothing else imports them.

docs/architecture.md describes the layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "mail"

#: The layers, lowest first. A package imports only packages of lower layers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("mail.errors", "mail.version", "mail._text", "mail._server_file", "mail.url_scheme"),
    ("mail._limits",),  # what outside input may look like (over mail._text)
    ("mail.config", "mail.db"),  # settings; the store interface and its backends
    ("mail.core",),  # protocol, tools, tasks, runtime: no HTTP, SQL or LLM
    # (mail._log_format: log records as JSON, with the agent turn they were logged in)
    (
        "mail.net",
        "mail.factories",
        "mail.conversations",
        "mail._sse",
        "mail.summarizer",
        "mail._log_format",
    ),
    # the swarm definitions (url:: fetches through mail.net's guard); traces (the runtime's
    # tracer seam, JSON logs' trace ids)
    ("mail.swarms_json", "mail.telemetry"),
    ("mail.api",),  # MAILAction, MAILAgent(Template), MAILSwarm(Template)
    ("mail.stdlib", "mail.testing"),  # actions and doubles over the API
    ("mail.examples",),  # example swarms: agents, actions and scripted doubles
    ("mail.server", "mail.client"),
    ("mail.cli",),  # `mail ...`: reaches the server, client, api and stores lazily
    ("mail.utils", "mail"),  # v1.3.6's helper names (some over the server); the facade
)

#: The one upward edge: ``python -m mail.server`` is ``mail server``, so the server's
#: ``__main__`` calls the CLI's ``main``.
LAUNCHER = ("mail.server.__main__", "mail.cli")

#: Imports of another package's private module, each with the reason it stays.
ALLOWED_PRIVATE: Mapping[tuple[str, str], str] = {
    ("mail.cli._doctor_cluster", "mail.server._cluster"): (
        "`mail doctor` surveys a replica set through the cluster's own connection code "
        "(Redis and PostgreSQL probes), which is no public API of the server"
    ),
    ("mail.cli._doctor_cluster", "mail.server._cluster_leases"): (
        "`mail doctor` reads the task leases with the cluster's own queries, so that what it "
        "reports is what the replicas see"
    ),
    ("mail.server._cluster_registry", "mail.net._registry_file"): (
        "replicas share registry entries in the registry file's own encoding: one format, "
        "read and written by the registry and its shared twin only"
    ),
    ("mail.server._cluster_registry", "mail.net._tokens"): (
        "replicas store a peer's token as the registry does, as an environment reference; "
        "the token rules stay private to the registry and its shared twin"
    ),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def package_of(module: str) -> str:
    """``mail.api`` for ``mail.api._swarm``, ``mail.errors`` for itself, ``mail`` for ``mail``."""
    return ".".join(module.split(".")[:2])


def _is_private(module: str) -> bool:
    """Whether ``module`` is private to its package: a name below the package's that starts
    with ``_`` (``__main__`` is not private)."""
    return any(p.startswith("_") and not p.startswith("__") for p in module.split(".")[2:])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_at_import(body: Sequence[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that run when the module is imported: not in a
    function, nor under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _run_at_import(block)
            for handler in node.handlers:
                yield from _run_at_import(handler.body)
        elif isinstance(node, ast.With | ast.AsyncWith | ast.ClassDef):
            yield from _run_at_import(node.body)


@dataclass(frozen=True)
class Import:
    importer: str
    module: str  # the module imported (a submodule when ``from pkg import submodule``)
    names: tuple[str, ...]  # what ``from ... import`` takes from it
    line: int


def _from_module(importer: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    base = package.split(".")
    if node.level > 1:
        base = base[: -(node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(
    path: Path, nodes: Iterator[ast.Import | ast.ImportFrom] | list[ast.stmt]
) -> Iterator[Import]:
    """Our modules each statement of ``nodes`` imports (relative imports resolved)."""
    importer = _module_name(path)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(importer, alias.name, (), node.lineno)
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        module = _from_module(importer, path, node)
        names = []
        for alias in node.names:
            if f"{module}.{alias.name}" in MODULES:  # ``from mail import server``
                yield Import(importer, f"{module}.{alias.name}", (), node.lineno)
            else:
                names.append(alias.name)
        if names:
            yield Import(importer, module, tuple(names), node.lineno)


def _ours(found: Iterator[Import]) -> list[Import]:
    return [i for i in found if i.module == "mail" or i.module.startswith("mail.")]


def module_level_imports(path: Path, source: str | None = None) -> list[Import]:
    """The imports of ``path`` that run when it is imported."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    return _ours(_imports(path, _run_at_import(tree.body)))


def every_import(path: Path, source: str | None = None) -> list[Import]:
    """Every import statement of ``path``, wherever it is."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    return _ours(_imports(path, iter(nodes)))


def package_edges(imports: Sequence[Import]) -> dict[tuple[str, str], list[Import]]:
    """``(importing package, imported package)`` -> the imports that make the edge."""
    edges: dict[tuple[str, str], list[Import]] = {}
    for found in imports:
        edge = (package_of(found.importer), package_of(found.module))
        if edge[0] != edge[1]:
            edges.setdefault(edge, []).append(found)
    return edges


def find_cycle(edges: Sequence[tuple[str, str]]) -> list[str]:
    """One cycle ``[a, b, ..., a]`` of the graph of ``edges``, or ``[]``."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for nxt in graph.get(node, ()):
            cycle = visit(nxt, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return []

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return []


def layer_of(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def upward(edges: Mapping[tuple[str, str], list[Import]]) -> list[str]:
    """The imports of ``edges`` that do not go to a lower layer."""
    return [
        f"{i.importer}:{i.line} imports {i.module} ({a} -> {b})"
        for (a, b), found in sorted(edges.items())
        if layer_of(b) >= layer_of(a)
        for i in found
        if (i.importer, i.module) != LAUNCHER
    ]


def private_crossings(imports: Sequence[Import]) -> dict[tuple[str, str], list[int]]:
    """``(importer, private module)`` -> lines, for imports of another package's private
    module or of an ``_underscore`` name from another package."""
    found: dict[tuple[str, str], list[int]] = {}
    for i in imports:
        if package_of(i.importer) == package_of(i.module) or i.module.count(".") < 1:
            continue
        private_name = any(n.startswith("_") and not n.startswith("__") for n in i.names)
        if _is_private(i.module) or private_name:
            found.setdefault((i.importer, i.module), []).append(i.line)
    return found


MODULE_LEVEL = [i for p in MODULES.values() for i in module_level_imports(p)]
EVERYWHERE = [i for p in MODULES.values() for i in every_import(p)]
EDGES = package_edges(MODULE_LEVEL)


def test_every_package_has_one_layer() -> None:
    packages = {package_of(m) for m in MODULES}
    placed = [p for layer in LAYERS for p in layer]
    assert len(placed) == len(set(placed)), "a package is in two layers"
    assert packages - set(placed) == set(), "place the new package in LAYERS"
    assert set(placed) - packages == set(), "LAYERS names a package that is gone"


def test_no_cycle_among_packages() -> None:
    cycle = find_cycle(list(EDGES))
    assert cycle == [], "packages that import each other: " + " -> ".join(cycle)


def test_imports_point_down_but_the_launcher() -> None:
    wrong = upward(EDGES)
    # move the shared piece down to the package that owns it (or import inside the function
    # that needs it, for an optional SDK or a launcher)
    assert wrong == [], "imports that do not point down:\n" + "\n".join(wrong)
    assert LAUNCHER in {(i.importer, i.module) for i in MODULE_LEVEL}, "update LAUNCHER"


def test_no_private_module_of_another_package_is_imported() -> None:
    found = private_crossings(EVERYWHERE)
    new = sorted(
        f"{a} imports {b} (lines {found[a, b]})" for a, b in set(found) - set(ALLOWED_PRIVATE)
    )
    # make what is needed public in its package (its __init__ or a public module) instead
    assert new == [], "\n".join(new)
    gone = sorted(set(ALLOWED_PRIVATE) - set(found))
    assert gone == [], f"no longer imported, take them off ALLOWED_PRIVATE: {gone}"


def test_each_allowed_private_import_says_why() -> None:
    assert all(why.strip() for why in ALLOWED_PRIVATE.values())


# --- the v1.3.6 compatibility modules ---------------------------------------------------------

#: The modules that exist for code written against v1.3.6. ``"re-export"``: an import path
#: whose names live elsewhere (no code of its own). ``"v1.3.6 API"``: v1.3.6 behaviour that
#: nothing else in mail uses, implemented here since it has no other home (the private ones
#: are the v1.3.6 methods mixed into a class of ours).
V136_SHIMS: Mapping[str, str] = {
    "mail.utils": "re-export",
    "mail.utils.parsing": "re-export",
    "mail.stdlib.openai.agents": "re-export",
    "mail.utils.auth": "v1.3.6 API",
    "mail.utils.context": "v1.3.6 API",
    "mail.utils.logger": "v1.3.6 API",
    "mail.utils.openai": "v1.3.6 API",
    "mail.utils.serialize": "v1.3.6 API",
    "mail.utils.store": "v1.3.6 API",
    "mail.utils.string_builder": "v1.3.6 API",
    "mail.utils.version": "v1.3.6 API",
    "mail.db.init": "v1.3.6 API",
    "mail.db.types": "v1.3.6 API",
    "mail.db.utils": "v1.3.6 API",
    "mail.net.server_utils": "v1.3.6 API",
    "mail.net.types": "v1.3.6 API",
    "mail.summarizer": "v1.3.6 API",
    "mail.cli._client_cli": "v1.3.6 API",
    "mail.core._runtime_compat": "v1.3.6 API",
    "mail.core._task_compat": "v1.3.6 API",
    "mail.net._router_compat": "v1.3.6 API",
    "mail.server._v136_routes": "v1.3.6 API",
}
_LAZY_LOADERS = frozenset({"__getattr__", "__dir__"})


def _first_line(module: str) -> str:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return (ast.get_docstring(tree) or "").partition("\n")[0]


def test_each_shim_says_so_first() -> None:
    wrong = {
        m: _first_line(m)
        for m, kind in V136_SHIMS.items()
        if not _first_line(m).startswith(
            "v1.3.6 import path: re-exports" if kind == "re-export" else "v1.3.6"
        )
    }
    assert wrong == {}


def test_re_exporting_shims_hold_no_code() -> None:
    for module, kind in V136_SHIMS.items():
        if kind != "re-export":
            continue
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        defined = [
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.name not in _LAZY_LOADERS
        ]
        assert defined == [], f"{module} defines {defined}: move them to their real module"


def test_nothing_but_shims_imports_a_v136_import_path() -> None:
    # the private ones are mixed into their class, by its module
    paths = {m for m in V136_SHIMS if not _is_private(m)}
    users = sorted(
        f"{i.importer}:{i.line} imports {i.module}"
        for i in EVERYWHERE
        if i.module in paths and i.importer not in V136_SHIMS
    )
    assert users == [], "\n".join(users)


# --- the guard of the guard (nothing is written) --------------------------------------------


def _probe(source: str, name: str = "api/_probe.py") -> tuple[list[Import], list[Import]]:
    path = PACKAGE / name
    return module_level_imports(path, source), every_import(path, source)


def test_the_scanner_tells_import_time_from_lazy_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from mail.core import emit_delta\n"
        "from .. import server\n"
        "import mail.net\n"
        "try:\n    from mail.db import store\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    from mail.cli import main\nelse:\n    from mail import utils\n"
        "def f():\n    from mail.stdlib.mcp.sessions import MCPToolbox\n"
    )
    at_import, everywhere = _probe(source)
    assert {i.module for i in at_import} == {
        "mail.core",
        "mail.server",
        "mail.net",
        "mail.db.store",
        "mail.utils",
    }
    assert {i.module for i in everywhere} >= {"mail.cli", "mail.stdlib.mcp.sessions"}


def test_an_upward_import_or_a_cycle_is_seen() -> None:
    at_import, _ = _probe("from mail.server import create_app\n", "core/_probe.py")
    edges = package_edges(at_import)
    assert upward(edges) == ["mail.core._probe:1 imports mail.server (mail.core -> mail.server)"]
    assert find_cycle([*EDGES, *edges]) != []
    peer, _ = _probe("import mail.factories\n", "net/_probe.py")
    assert upward(package_edges(peer)) != []  # one layer: no imports either way


def test_a_private_import_is_seen() -> None:
    _, everywhere = _probe(
        "def f():\n"
        "    from mail.core._live import live_turn\n"
        "    from mail.server import _v136_routes\n"
        "    from mail.core.runtime import _helper\n"
        "    from mail.api._swarm import MAILSwarm\n"  # its own package: fine
        "    from mail._limits import loads\n"  # a top-level private module: fine
    )
    assert sorted(private_crossings(everywhere)) == [
        ("mail.api._probe", "mail.core._live"),
        ("mail.api._probe", "mail.core.runtime"),
        ("mail.api._probe", "mail.server._v136_routes"),
    ]
