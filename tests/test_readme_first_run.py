"""README.md's quick start, followed as a new user would, in a fresh clone (issue 9).

The repository holding this file is cloned (``git clone`` takes the committed HEAD, which is
what CI runs) into a temporary directory, and every command is run there with ``uv run``, as
the README writes it, without the caller's virtual environment (``VIRTUAL_ENV`` and the
variables MAIL reads are dropped), with ``UV_PYTHON_DOWNLOADS=never`` and ``UV_OFFLINE=1``:
the clone's environment comes from uv's cache, which ``uv sync --locked`` filled, so nothing
leaves the machine. The commands are parsed from the clone's README.md (the first ``bash``
block: server and tests; the second: the questions) and compared with what this module
expects, so a README change either still passes or fails here.

What differs from a person typing them: ``mail server`` gets ``--port 0`` (the port is read
from what uvicorn prints), so the client commands get ``--url``; that the client would find
the server by itself is checked as the two halves it is made of: the README's URL is the
clone's ``[server] port`` (the client's default URL), and no command is given a key (each
finds the user key the server wrote in ``.mail/credentials.json``).

"The test suite passes" is checked without running it inside itself. What CI covers:
``.ci/run``, which CI runs on a clean clone (nothing installed but Python and pip), installs
uv, runs ``uv sync --locked``, ruff, mypy, ``spec/validate_samples.py`` and then the README's
test command, ``uv run pytest``, which runs this module too; so on every CI run the whole
suite passes in a fresh clone. Here, by default: the README's test command must collect at
least :data:`MIN_TESTS` tests in the clone (a conftest or layout change that drops tests
fails), ``.ci/run`` must run exactly that command, and the part of ``.ci/run`` that finds or
installs uv is run against a scripted ``python3`` (uv on PATH, in the user base, refused by
an externally managed Python, only as ``python3 -m uv``, or nowhere).

With ``MAIL_README_FULL_SUITE=1`` (opt-in: it doubles the time) the whole suite also runs in
the clone. It cannot recurse: the inner run gets ``MAIL_README_NESTED=1``, under which this
module skips itself entirely (so its full-suite test never runs there), and it does not
inherit ``MAIL_README_FULL_SUITE``; :func:`test_full_suite_opt_in_cannot_recurse` checks
both by running this module under the inner run's environment.

docs/quickstart.md repeats the README's commands; its blocks are compared with the README's
here, and its key-reading command is run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests._servers import Server

from mail.cli import LOG_LEVEL_ENV
from mail.config import CONFIG_PATH_ENV, ENV_OVERRIDES

ROOT = Path(__file__).resolve().parents[1]
#: The quick start's commands, as the README's first bash block must hold them.
SERVER_COMMAND = "uv run mail server"
TEST_COMMAND = "uv run pytest"
#: The README's second bash block: ask the offline swarm, then the REPL.
ASK_COMMANDS = (
    'uv run mail message "What is 12 * (3 + 4)?"',
    'uv run mail message "Weather in Paris tomorrow?" --stream',
    "uv run mail client",
)
#: A floor under the suite's size (1734 when this was written): a conftest or layout
#: change that silently drops a directory from collection fails here.
MIN_TESTS = 1700
NESTED_ENV = "MAIL_README_NESTED"
FULL_SUITE_ENV = "MAIL_README_FULL_SUITE"
COMMAND_TIMEOUT = 45.0

# What the clone's commands must not inherit: our virtual environment, paths into this
# checkout, and the variables that change what MAIL reads.
_DROPPED_ENV = frozenset(
    {"VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "PYTHONHOME", "PYTEST_CURRENT_TEST"}
    | {*ENV_OVERRIDES, CONFIG_PATH_ENV, LOG_LEVEL_ENV}
)
_FENCE = re.compile(r"^```(?P<lang>\S*)[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_LISTENING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:(\d+))")

pytestmark = [
    pytest.mark.skipif(
        os.environ.get(NESTED_ENV) == "1",
        reason=f"{NESTED_ENV}=1: this is the full suite run inside test_readme_first_run",
    ),
    pytest.mark.timeout(60),
]


def bash_blocks(page: Path) -> list[str]:
    """The bodies of the ```bash blocks of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    return [m.group("body") for m in _FENCE.finditer(text) if m.group("lang") == "bash"]


def commands(block: str) -> list[list[str]]:
    """The commands of a bash block as argument lists (``shlex``), comments dropped."""
    lines = block.replace("\\\n", " ").splitlines()
    return [words for line in lines if (words := shlex.split(line, comments=True))]


def argv(*written: str) -> list[list[str]]:
    """``written`` commands as argument lists, to compare with :func:`commands`."""
    return [shlex.split(command) for command in written]


@dataclass(frozen=True, slots=True)
class Clone:
    """A fresh clone and the environment its commands run in."""

    path: Path
    env: dict[str, str]

    def run(
        self, command: list[str], *extra: str, stdin: str | None = None, home: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` (plus ``extra`` arguments) in the clone; output captured."""
        env = self.env if home is None else self.env | {"HOME": str(home)}
        return subprocess.run(
            [*command, *extra], cwd=self.path, env=env, input=stdin,
            capture_output=True, text=True, encoding="utf-8", timeout=COMMAND_TIMEOUT,
            check=False,
        )  # fmt: skip


def _clone_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env |= {"UV_PYTHON_DOWNLOADS": "never", "UV_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"}
    env |= {"COLUMNS": "100"}
    # HOME moves for the REPL (it keeps ~/.mail_history): keep uv's cache where it is.
    cache = subprocess.run(
        ["uv", "cache", "dir"], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    return env | {"UV_CACHE_DIR": cache.stdout.strip()}


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Clone:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot clone the repository")
    if not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout (no .git): nothing to clone")
    if shutil.which("uv") is None:
        pytest.skip("uv is not installed: the README's commands need it")
    path = tmp_path_factory.mktemp("first-run") / "mail"
    cloned = subprocess.run(
        ["git", "clone", "--quiet", str(ROOT), str(path)], timeout=60, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert cloned.returncode == 0, f"git clone {ROOT} failed:\n{cloned.stderr}"
    return Clone(path, _clone_env())


@pytest.fixture(scope="module")
def quick_start(clone: Clone) -> list[list[str]]:
    """The commands of the clone's README's first bash block."""
    blocks = bash_blocks(clone.path / "README.md")
    assert blocks, "README.md has no ```bash block"
    return commands(blocks[0])


@pytest.fixture(scope="module")
def asked(clone: Clone) -> list[list[str]]:
    """The commands of the clone's README's second bash block (asking the swarm)."""
    blocks = bash_blocks(clone.path / "README.md")
    assert len(blocks) >= 2, "README.md lost its second bash block (asking the swarm)"
    return commands(blocks[1])


@pytest.fixture(scope="module")
def server(clone: Clone, quick_start: list[list[str]]) -> Iterator[Server]:
    """The ``mail server`` process started by the README's command; ready once it printed
    its URL and ``GET /health`` answers. Stopped with SIGINT to ``uv run`` (which passes it
    on, as Ctrl+C would); killed, its process group with it, if that is not enough."""
    assert quick_start[0] == shlex.split(SERVER_COMMAND)
    command = [*quick_start[0], "--port", "0"]
    log = clone.path.parent / "server.log"
    with Server(
        command, env=clone.env, cwd=clone.path, log=log, printed=_LISTENING, new_session=True
    ) as server:
        yield server


def test_quick_start_block_is_the_server_and_the_test_command(
    quick_start: list[list[str]],
) -> None:
    assert quick_start == argv(SERVER_COMMAND, TEST_COMMAND)


def test_readme_url_is_where_the_client_looks_by_default(clone: Clone) -> None:
    """The README's server URL is ``[server] port`` of the clone's mail.toml, which is the
    client's default URL (http://127.0.0.1:<[server] port>) when no --url is given."""
    readme = (clone.path / "README.md").read_text(encoding="utf-8")
    block = bash_blocks(clone.path / "README.md")[0]
    shown = re.search(r"http://127\.0\.0\.1:(\d+)", block)
    assert shown is not None, "the quick start no longer says where the server listens"
    config = tomllib.loads((clone.path / "mail.toml").read_text(encoding="utf-8"))
    assert int(shown.group(1)) == config["server"]["port"]
    assert config["server"]["host"] == "127.0.0.1"
    assert "client" not in config or "url" not in config["client"]
    assert "the client finds the local" in " ".join(readme.split())


def test_server_prints_the_three_keys_and_where_it_keeps_them(clone: Clone, server: Server) -> None:
    output = server.output()
    credentials = clone.path / ".mail" / "credentials.json"
    assert "MAIL API keys (keep them secret; each grants its role):" in output
    for role in ("admin", "user", "agent"):
        assert re.search(rf"^  {role} +mail-{role}-\S+$", output, re.MULTILINE), output
    assert f"Stored in {credentials} (mode 0600)" in output
    assert credentials.stat().st_mode & 0o777 == 0o600
    readme = (clone.path / "README.md").read_text(encoding="utf-8")
    assert "(`.mail/credentials.json`, mode 0600)" in readme
    assert "Traceback" not in output
    # with --port 0 the real port is only known once bound: no misleading ":0" URL
    assert "serving swarm offline on a port the system picks" in output
    assert "127.0.0.1:0" not in output


def test_readme_questions_are_answered(
    clone: Clone, server: Server, asked: list[list[str]]
) -> None:
    assert asked == argv(*ASK_COMMANDS)

    arithmetic = clone.run(asked[0], "--url", server.url)
    assert arithmetic.returncode == 0, arithmetic.stderr
    assert arithmetic.stdout.strip() == "12 * (3 + 4) = 84"

    weather = clone.run(asked[1], "--url", server.url)
    assert weather.returncode == 0, weather.stderr
    assert "Forecast for Paris" in weather.stdout, weather.stdout


def test_readme_client_repl_answers(
    clone: Clone, server: Server, asked: list[list[str]], tmp_path: Path
) -> None:
    assert asked[2] == shlex.split(ASK_COMMANDS[2])
    lines = ["help", shlex.join(["message", asked[0][-1]]), "exit"]
    stdin = "\n".join(lines) + "\n"
    repl = clone.run(asked[2], "--url", server.url, stdin=stdin, home=tmp_path)
    assert repl.returncode == 0, repl.stderr
    assert "message-stream" in repl.stdout  # `help` lists the commands
    assert "12 * (3 + 4) = 84" in repl.stdout, repl.stdout
    assert "error:" not in repl.stdout, repl.stdout
    assert f"user:user@{server.url}>" in repl.stdout  # found the user key by itself


def test_quickstart_page_repeats_the_readme(clone: Clone, server: Server) -> None:
    """docs/quickstart.md: same server and questions; its key-reading command prints the
    user key the server announced."""
    blocks = [commands(b) for b in bash_blocks(clone.path / "docs" / "quickstart.md")]
    assert blocks[0] == argv(SERVER_COMMAND)
    assert blocks[2] == argv(*ASK_COMMANDS)
    [read_key] = blocks[1]
    printed = clone.run(read_key)
    assert printed.returncode == 0, printed.stderr
    key = printed.stdout.strip()
    assert re.search(rf"^  user +{re.escape(key)}$", server.output(), re.MULTILINE)


def test_server_stops_cleanly_on_ctrl_c(server: Server) -> None:
    status = server.stop()
    output = server.output()
    assert status == 0, output[-2000:]
    assert "Application shutdown complete." in output
    assert "Traceback" not in output


@pytest.mark.timeout(120)
def test_readme_test_command_collects_the_suite(clone: Clone, quick_start: list[list[str]]) -> None:
    assert quick_start[1] == shlex.split(TEST_COMMAND)
    collected = clone.run(quick_start[1], "--collect-only", "-q")
    tail = "\n".join(collected.stdout.splitlines()[-15:])
    assert collected.returncode == 0, f"{tail}\n{collected.stderr}"
    found = re.search(r"^(\d+) tests? collected", collected.stdout, re.MULTILINE)
    assert found is not None, tail
    assert int(found.group(1)) >= MIN_TESTS, tail
    assert "error" not in collected.stdout.splitlines()[-1], tail


def test_ci_runs_the_readme_test_command(clone: Clone, quick_start: list[list[str]]) -> None:
    """.ci/run, which CI runs on a clean clone, runs the README's test command as written."""
    script = (clone.path / ".ci" / "run").read_text(encoding="utf-8")
    runs = [shlex.split(line, comments=True) for line in script.splitlines() if "pytest" in line]
    pytest_runs = [words for words in runs if "pytest" in words]
    assert pytest_runs == [quick_start[1]]


@pytest.mark.timeout(3600)
@pytest.mark.skipif(
    os.environ.get(FULL_SUITE_ENV) != "1",
    reason=f"the whole suite in the clone runs only with {FULL_SUITE_ENV}=1 (it doubles the time)",
)
def test_readme_test_command_passes(clone: Clone) -> None:
    result = subprocess.run(
        shlex.split(TEST_COMMAND), cwd=clone.path, env=nested_env(clone.env),
        capture_output=True, text=True, encoding="utf-8", timeout=3500, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


def nested_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of the suite run inside the clone: marked nested (this module skips
    itself there) and without the opt-in, so that run can never start another."""
    return {k: v for k, v in env.items() if k != FULL_SUITE_ENV} | {NESTED_ENV: "1"}


@pytest.mark.timeout(120)
def test_full_suite_opt_in_cannot_recurse() -> None:
    env = nested_env(os.environ | {FULL_SUITE_ENV: "1"})
    assert FULL_SUITE_ENV not in env
    assert env[NESTED_ENV] == "1"
    # Even if the opt-in leaked into the inner run, this module runs nothing there.
    leaked = env | {FULL_SUITE_ENV: "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(Path(__file__)), "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=leaked, capture_output=True, text=True, encoding="utf-8", timeout=100,
        check=False,
    )  # fmt: skip
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert re.fullmatch(r"\d+ skipped in [\d.]+s", summary), summary


# --- .ci/run on a clean machine: finding uv ------------------------------------------------------

_CI_UV_SECTION = re.compile(r"^# BEGIN ensure-uv.*?$(.*?)^# END ensure-uv$", re.M | re.S)
# A stand-in for `python3` (pip, site, `-m uv`), scripted by fake.json next to it: the one
# process boundary .ci/run's uv lookup crosses. It logs its arguments to calls.log.
_FAKE_PYTHON = """\
import json, shutil, sys
from pathlib import Path
here = Path(__file__).parent
fake = json.loads((here / "fake.json").read_text())
args = sys.argv[1:]
with (here / "calls.log").open("a") as log:
    log.write(" ".join(args) + "\\n")
if args[:2] == ["-m", "site"]:
    print(fake["user_base"])
    sys.exit(fake.get("site_status", 0))
if args[:3] == ["-m", "pip", "install"]:
    mode = "break" if "--break-system-packages" in args else "user" if "--user" in args else "plain"
    if mode not in fake["pip_accepts"]:
        print("error: externally-managed-environment", file=sys.stderr)
        sys.exit(1)
    if fake["installs"] == "module":
        (here / "module-installed").touch()
    else:
        bin_dir = Path(fake["user_base"]) / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(here / "uv-binary", bin_dir / "uv")
    sys.exit(0)
if args[:2] == ["-m", "uv"] and (here / "module-installed").exists():
    print("uv 0.0.0 (python3 -m uv)")
    sys.exit(0)
print(f"unexpected: python3 {' '.join(args)}", file=sys.stderr)
sys.exit(2)
"""


def _ci_uv_section() -> str:
    found = _CI_UV_SECTION.search((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert found is not None, ".ci/run lost its '# BEGIN ensure-uv' ... '# END ensure-uv' part"
    return found.group(1)


def _write_executable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


@pytest.mark.parametrize(
    ("uv_on_path", "fake", "found", "pip_calls"),
    [
        (True, {"pip_accepts": [], "installs": "user"}, "on PATH", 0),
        # pip without --user on a Python whose site-packages is not writable: ~/.local/bin
        (False, {"pip_accepts": ["plain"], "installs": "user"}, "user base", 1),
        # a venv's python3 -m site --user-base exits 1, but prints the path
        (False, {"pip_accepts": ["plain"], "installs": "user", "site_status": 1}, "user base", 1),
        # PEP 668: refused without --break-system-packages
        (False, {"pip_accepts": ["break"], "installs": "user"}, "user base", 3),
        (False, {"pip_accepts": ["plain"], "installs": "module"}, "python3 -m uv", 1),
    ],
    ids=["uv on PATH", "user base", "user site disabled", "externally managed", "module only"],
)
def test_ci_run_finds_uv(
    tmp_path: Path, *, uv_on_path: bool, fake: dict[str, object], found: str, pip_calls: int
) -> None:
    shell = shutil.which("bash")
    if shell is None:
        pytest.skip("bash is not installed")
    bin_dir, user_base = tmp_path / "bin", tmp_path / "user-base"
    bin_dir.mkdir()
    _write_executable(bin_dir / "uv-binary", "#!/bin/sh\necho 'uv 9.9.9 (binary)'\n")
    if uv_on_path:
        _write_executable(bin_dir / "uv", "#!/bin/sh\necho 'uv 9.9.9 (binary)'\n")
    _write_executable(bin_dir / "python3", f"#!{sys.executable}\n{_FAKE_PYTHON}")
    (bin_dir / "fake.json").write_text(
        json.dumps({**fake, "user_base": str(user_base)}), encoding="utf-8"
    )
    script = f"set -euo pipefail\n{_ci_uv_section()}\ntype -t uv\ncommand -v uv\nuv --version\n"
    result = subprocess.run(
        [shell, "-c", script], env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    kind, where, version = result.stdout.splitlines()
    log = bin_dir / "calls.log"
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    assert len([c for c in calls if c.startswith("-m pip install")]) == pip_calls, calls
    assert (not calls) is uv_on_path  # with uv on PATH, python3 is never run
    if found == "on PATH":
        assert (kind, where) == ("file", str(bin_dir / "uv"))
    elif found == "user base":
        assert (kind, where) == ("file", str(user_base / "bin" / "uv"))
    else:
        assert (kind, where, version) == ("function", "uv", "uv 0.0.0 (python3 -m uv)")


def test_ci_run_fails_when_uv_cannot_be_installed(tmp_path: Path) -> None:
    shell = shutil.which("bash")
    if shell is None:
        pytest.skip("bash is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _write_executable(bin_dir / "python3", f"#!{sys.executable}\n{_FAKE_PYTHON}")
    fake = {"pip_accepts": [], "installs": "user", "user_base": str(tmp_path / "user-base")}
    (bin_dir / "fake.json").write_text(json.dumps(fake), encoding="utf-8")
    script = f"set -euo pipefail\n{_ci_uv_section()}\necho 'not reached'\n"
    result = subprocess.run(
        [shell, "-c", script], env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "not reached" not in result.stdout
    assert "install uv (https://docs.astral.sh/uv/)" in result.stderr
