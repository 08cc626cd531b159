"""Every fenced code block in docs/*.md and README.md is checked, or says why it is not.

A marker on the line just before the opening fence opts a block out of the checks below:

* ``<!-- illustrative -->``: an example nobody runs as written (it needs a running server,
  API keys, docker, a network, or it is a fragment);
* ``<!-- run by tests/PATH.py -->``: that test runs the block (the README's quick start is
  run in a fresh clone by ``tests/test_readme_first_run.py``); this module checks that the
  file exists, the claim itself is reviewed like any other test.

Unmarked blocks are checked by their language:

* ``python``: run; the blocks of one page in order, sharing one namespace.
* ``json``: parsed; a swarm definition (``entrypoint`` and ``agents``) or an agent
  (``factory``) is validated against docs/swarms-schema.json, a registry file
  (``local_swarm_name`` and ``endpoints``) is read by the registry's own reader.
* ``toml``: parsed; a ``mail.toml`` snippet (only ``server``, ``client``, ``auth``,
  ``database``, ``stdlib`` tables) is loaded by :func:`mail.config.load_config`, with no unknown key.
* ``ini``: parsed by :mod:`configparser`.
* ``bash``, ``sh``, ``shell``: every command must be one of the side-effect-free commands
  of :func:`runnable` (``mail version``, ``mail --help``, ``mail COMMAND --help``,
  ``mail doctor``, ``spec/validate_samples.py``, with or without ``uv run``), and each
  exits 0. They run in this checkout, in this test's own environment (the one ``uv run
  pytest`` set up), with the data directory in a temporary directory.
* ``console``: the same, for the lines after a ``$ `` prompt; the lines up to the next
  prompt are the expected output, compared exactly.
* ``text`` and ``mermaid`` are not code (output, usage synopses, diagrams): not checked.

Any other language, or a fence without one, fails :func:`test_every_block_is_checked_or_marked`:
check it here, mark it, or call it ``text``.

Links: every relative markdown link of those pages names an existing file, and the index
(docs/README.md) links every page of docs/.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mail.cli import LOG_LEVEL_ENV
from mail.config import CONFIG_PATH_ENV, ENV_OVERRIDES, load_config
from mail.net._registry_file import read_registry

ROOT = Path(__file__).resolve().parents[2]
PAGES = (*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md")
SWARMS_SCHEMA = json.loads((ROOT / "docs" / "swarms-schema.json").read_text(encoding="utf-8"))

SHELL = frozenset({"bash", "sh", "shell"})
CHECKED = frozenset({"python", "json", "toml", "ini", "console", *SHELL})
NOT_CODE = frozenset({"text", "mermaid"})
MAIL_TOML_TABLES = frozenset({"server", "client", "auth", "database", "stdlib"})

_OPEN = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^<!--\s*(?:(?P<illustrative>illustrative)|run by (?P<test>\S+))\s*-->$")
# `mail` subcommands run as written: they print, read the configuration, and write nothing
# but the task store `mail doctor` opens (in the temporary data directory).
_SAFE_MAIL = frozenset({"version", "--version", "--help", "-h", "doctor"})
_SAFE_SCRIPTS = frozenset({"spec/validate_samples.py"})
_PROMPT = "$ "


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block: where it is, its language, marker and text."""

    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    marker: str | None  # "illustrative", a test path, or None
    code: str
    closed: bool = True

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"


def fenced_blocks(page: Path) -> Iterator[Block]:
    """The fenced code blocks of ``page`` (``` or ~~~, indented ones dedented)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        end = i + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        before = _MARKER.match(lines[i - 1].strip()) if i else None
        marker = before and (before["illustrative"] or before["test"])
        code = "\n".join(line[indent:] for line in lines[i + 1 : end])
        info = opening["info"].strip()
        lang = info.split()[0].lower() if info else ""
        yield Block(page, i + 1, lang, marker, code, closed=end < len(lines))
        i = end + 1


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


BLOCKS = [block for page in PAGES for block in fenced_blocks(page)]


def checked(*langs: str) -> list[Any]:
    """The unmarked blocks in ``langs``, as pytest parameters named by where they are."""
    return [pytest.param(b, id=b.where) for b in BLOCKS if b.marker is None and b.lang in langs]


# --- commands -------------------------------------------------------------------------------


def shell_commands(block: Block) -> list[tuple[list[str], list[str] | None]]:
    """``(words, expected output or None)`` per command of a shell or console block."""
    if block.lang != "console":
        text = block.code.replace("\\\n", " ")
        return [(w, None) for line in text.splitlines() if (w := shlex.split(line, comments=True))]
    commands: list[tuple[list[str], list[str] | None]] = []
    for line in block.code.splitlines():
        if line.startswith(_PROMPT):
            commands.append((shlex.split(line[len(_PROMPT) :], comments=True), []))
        elif commands and commands[-1][1] is not None:
            commands[-1][1].append(line.rstrip())
    return commands


def runnable(words: list[str]) -> list[str] | None:
    """The command line this module runs for documented ``words``, ``None`` if not allowed."""
    if words[:2] == ["uv", "run"]:
        words = words[2:]
    if words[:1] == ["mail"] and len(words) > 1:
        if words[1] in _SAFE_MAIL or words[-1] in ("--help", "-h"):
            return [sys.executable, "-m", "mail.cli", *words[1:]]
        return None
    if words and words[0] in _SAFE_SCRIPTS:
        return [sys.executable, *words]
    return None


def _shell_env(data_dir: Path) -> dict[str, str]:
    dropped = {*ENV_OVERRIDES, CONFIG_PATH_ENV, LOG_LEVEL_ENV}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return env | {
        "MAIL_DATA_DIR": str(data_dir),
        # one registry file per run, in its own data directory
        "SWARM_REGISTRY_FILE": str(data_dir / "registries" / "swarm.json"),
        "PYTHONIOENCODING": "utf-8",
    }


# --- what must be true of every block -------------------------------------------------------


def problems(blocks: list[Block]) -> list[str]:
    """Why each block that is neither checked, marked nor prose fails the rule."""
    found = []
    for block in blocks:
        if (problem := _problem(block)) is not None:
            found.append(f"{block.where}: {problem}")
    return found


def _problem(block: Block) -> str | None:
    if not block.closed:
        return "the fence is never closed"
    if block.marker == "illustrative" or block.lang in NOT_CODE:
        return None
    if block.marker is not None:
        test = (ROOT / block.marker).resolve()
        ok = test.is_file() and test.name.startswith("test_")
        ok = ok and test.is_relative_to(ROOT / "tests")
        return None if ok else f"'run by {block.marker}' names no test file under tests/"
    if not block.lang:
        return "a fence without a language: name it (`text` for output or diagrams)"
    if block.lang not in CHECKED:
        return (
            f"no check for ```{block.lang} blocks: add one to tests/unit/test_docs.py, or "
            "mark the block <!-- illustrative --> or <!-- run by tests/... -->"
        )
    if block.lang in SHELL or block.lang == "console":
        refused = [shlex.join(w) for w, _ in shell_commands(block) if runnable(w) is None]
        if refused:
            return (
                f"`{refused[0]}` is not a side-effect-free command this test runs: mark the "
                "block <!-- illustrative --> or <!-- run by tests/... -->"
            )
        if not shell_commands(block):
            return "a shell block without a command"
    return None


def test_every_block_is_checked_or_marked() -> None:
    assert problems(BLOCKS) == []


@pytest.mark.parametrize(
    ("text", "reported"),
    [
        ("```yaml\na: 1\n```", True),
        ("<!-- illustrative -->\n```yaml\na: 1\n```", False),
        ("```\nplain\n```", True),
        ("```text\nplain\n```", False),
        ("```bash\nuv run mail server\n```", True),
        ("```bash\nuv run mail version  # fine\n```", False),
        ("```console\n$ mail tasks\n```", True),
        ("<!-- run by tests/nosuch/test_x.py -->\n```bash\nmake\n```", True),
        ("<!-- run by tests/test_demos.py -->\n```bash\nmake\n```", False),
        ("```json\n{}", True),
    ],
)
def test_blocks_neither_checked_nor_marked_are_reported(
    tmp_path: Path, text: str, *, reported: bool
) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# A page\n\n{text}\n", encoding="utf-8")
    assert bool(problems(list(fenced_blocks(page)))) is reported


# --- the checks, by language ----------------------------------------------------------------


@pytest.mark.parametrize(
    "page",
    sorted({b.page for b in BLOCKS if b.marker is None and b.lang == "python"}),
    ids=lambda p: p.name,
)
def test_python_blocks_run(page: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for block in BLOCKS:
        if block.page == page and block.marker is None and block.lang == "python":
            # padded so that a traceback's line numbers are the page's
            code = compile("\n" * block.line + block.code, str(page), "exec")
            exec(code, namespace)  # noqa: S102  # our own docs


def _schema_of(name: str) -> dict[str, Any]:
    return {"$defs": SWARMS_SCHEMA["$defs"], "$ref": f"#/$defs/{name}"}


@pytest.mark.parametrize("block", checked("json"))
def test_json_blocks_parse(block: Block, tmp_path: Path) -> None:
    data = json.loads(block.code)
    if isinstance(data, dict) and {"entrypoint", "agents"} <= data.keys():
        jsonschema.Draft202012Validator(_schema_of("swarm")).validate(data)
    elif isinstance(data, dict) and "factory" in data:
        jsonschema.Draft202012Validator(_schema_of("agent")).validate(data)
    elif isinstance(data, dict) and {"local_swarm_name", "endpoints"} <= data.keys():
        path = tmp_path / "registry.json"
        path.write_text(block.code, encoding="utf-8")
        assert read_registry(path) is not None


@pytest.mark.parametrize("block", checked("toml"))
def test_toml_blocks_load(block: Block, tmp_path: Path) -> None:
    data = tomllib.loads(block.code)
    if data and data.keys() <= MAIL_TOML_TABLES:
        path = tmp_path / "mail.toml"
        path.write_text(block.code, encoding="utf-8")
        config = load_config(path, env={}, search=False)
        assert config.warnings == ()


@pytest.mark.parametrize("block", checked("ini"))
def test_ini_blocks_parse(block: Block) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(block.code, source=block.where)
    assert parser.sections()


@pytest.mark.parametrize(
    "block",
    # a block with a command not allowed is reported by test_every_block_is_checked_or_marked
    [p for p in checked("console", *SHELL) if _problem(p.values[0]) is None],
)
def test_shell_blocks_run(block: Block, tmp_path: Path) -> None:
    env = _shell_env(tmp_path / "data")
    for words, expected in shell_commands(block):
        command = runnable(words)
        assert command is not None
        result = subprocess.run(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, encoding="utf-8", timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"{shlex.join(words)}:\n{result.stdout}"
        if expected is not None:
            shown = [line.rstrip() for line in result.stdout.rstrip("\n").splitlines()]
            assert shown == expected, f"{block.where}: `{shlex.join(words)}` printed otherwise"


# --- links ----------------------------------------------------------------------------------

# [text](target) outside code; targets with a scheme (http:, mailto:) are not files
_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_CODE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$|`[^`\n]*`", re.M | re.S)


def relative_links(page: Path) -> list[str]:
    """The file targets of ``page``'s markdown links (anchors dropped), code left out."""
    text = _CODE.sub("", page.read_text(encoding="utf-8"))
    targets = [m["target"].split("#", 1)[0] for m in _LINK.finditer(text)]
    return [t for t in targets if t and not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def _linked(page: Path, target: str) -> Path:
    """The file a link of ``page`` names (``/x`` is relative to the repository root)."""
    return (ROOT / target.lstrip("/") if target.startswith("/") else page.parent / target).resolve()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_point_to_existing_files(page: Path) -> None:
    missing = [t for t in relative_links(page) if not _linked(page, t).exists()]
    assert missing == [], f"{page.relative_to(ROOT)} links to files that do not exist"


def test_docs_index_lists_every_page() -> None:
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / t).resolve() for t in relative_links(index)}
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md") if p != index}
    assert sorted(p.name for p in pages - listed) == []


def test_endpoint_references_go_to_the_http_api_page() -> None:
    """README, quickstart and compatibility send readers to http-api.md for the endpoints."""
    for page in ("README.md", "docs/quickstart.md", "docs/compatibility.md"):
        links = relative_links(ROOT / page)
        assert any(link.endswith("http-api.md") for link in links), page
