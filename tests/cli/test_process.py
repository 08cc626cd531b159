"""``mail`` as a process: import weight, help, version and error exits."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mail.version import PROTOCOL_VERSION, __version__

RunMail = Callable[..., "subprocess.CompletedProcess[str]"]

HEAVY = ("fastapi", "uvicorn", "litellm", "aiohttp", "pydantic", "starlette")


def _heavy_modules_after(code: str, env: dict[str, str]) -> str:
    probe = (
        f"{code}; import sys; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {set(HEAVY)!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return result.stdout.strip().splitlines()[-1]


def test_import_mail_cli_loads_nothing_heavy(mail_env: dict[str, str]) -> None:
    assert _heavy_modules_after("import mail.cli", mail_env) == "[]"


@pytest.mark.parametrize("command", ["server", "client", "message", "tasks", "ping", "register"])
def test_subcommand_help_loads_nothing_heavy(command: str, mail_env: dict[str, str]) -> None:
    code = f"import contextlib, io, mail.cli\nwith contextlib.redirect_stdout(io.StringIO()): mail.cli.main([{command!r}, '--help'])"
    assert _heavy_modules_after(f"exec({code!r})", mail_env) == "[]"


# What the client-side commands must never load: the server, the runtime, LLM libraries.
SERVER_SIDE = (
    "fastapi",
    "uvicorn",
    "starlette",
    "litellm",
    "asyncpg",
    "mail.server",
    "mail.core",
    "mail.api",
    "mail.net",
    "mail.db",
    "mail.factories",
)


def test_client_commands_load_no_server_runtime_or_llm(mail_env: dict[str, str]) -> None:
    # ping (a closed port), a message (refused before any request: bad link) and the REPL's
    # modules: everything `mail client` and the one-shot commands import.
    code = (
        "import contextlib, io, sys, mail.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    mail.cli.main(['ping', 'http://127.0.0.1:9', '-t', '1'])\n"
        "    mail.cli.main(['message', 'hi', '--url', 'swarm://connect'])\n"
        "import mail.cli._repl, mail.cli._repl_commands, mail.cli._render\n"
        "import mail.cli._oneshot_commands\n"
        f"print(sorted(m for m in sys.modules if m.startswith({SERVER_SIDE!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
        env=mail_env,
    )  # fmt: skip
    assert result.stdout.strip().splitlines()[-1] == "[]"


HELP_ARGS = [["--help"], ["server", "--help"], ["client", "--help"], ["message", "--help"]]


@pytest.mark.parametrize("args", HELP_ARGS, ids=" ".join)
def test_help_runs_as_a_process(args: list[str], run_mail: RunMail) -> None:
    elapsed = []
    for _ in range(3):
        start = time.perf_counter()
        result = run_mail(*args)
        elapsed.append(time.perf_counter() - start)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("usage: mail")
        assert result.stderr == ""
    # Recorded for humans (pytest -s); timings are not asserted.
    print(f"mail {' '.join(args)}: median {statistics.median(elapsed):.3f}s over 3 runs")


def test_version_runs_as_a_process(run_mail: RunMail) -> None:
    result = run_mail("version")
    assert result.returncode == 0
    assert result.stdout.splitlines()[:2] == [
        f"MAIL reference implementation version: {__version__}",
        f"MAIL protocol version: {PROTOCOL_VERSION}",
    ]


def test_console_script(mail_env: dict[str, str]) -> None:
    script = Path(sys.executable).with_name("mail")
    if not script.is_file():
        pytest.skip(f"no console script next to {sys.executable}")
    result = subprocess.run(
        [str(script), "version"], capture_output=True, text=True, timeout=60, check=False,
        env=mail_env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"MAIL reference implementation version: {__version__}\n")


def test_missing_config_file_exits_2_without_traceback(run_mail: RunMail) -> None:
    result = run_mail("server", "-c", "/nonexistent.toml")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "mail server: config file '/nonexistent.toml' does not exist\n"


def test_relative_config_path_is_named_as_given(run_mail: RunMail, tmp_path: Path) -> None:
    result = run_mail("server", "--config", "nope/mail.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr == "mail server: config file 'nope/mail.toml' does not exist\n"


def test_usage_error_exits_2(run_mail: RunMail) -> None:
    result = run_mail("server", "--port", "http")
    assert result.returncode == 2
    assert "argument -p/--port: expected a port number, got 'http'" in result.stderr
