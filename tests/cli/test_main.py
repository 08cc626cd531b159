"""``mail`` argument handling, called in-process through ``main([...])``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mail.cli import main
from mail.version import PROTOCOL_VERSION, __version__

SERVER_FLAGS = (
    "--config",
    "--port",
    "--host",
    "--reload",
    "--no-reload",
    "--debug",
    "--no-debug",
    "--swarm-name",
    "--swarm-source",
    "--swarm-registry",
    "--print-llm-streams",
    "--no-persist",
)
SHORT_FLAGS = ("-c", "-p", "-H", "-r", "-d", "-n", "-s", "-rf")


# --- help and version --------------------------------------------------------------------


def test_help_lists_only_the_commands_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mail ")
    for command in (
        "server",
        "client",
        "message",
        "tasks",
        "conversations",
        "conversation",
        "ping",
        "register",
        "db-init",
        "db-migrate",
        "db-prune",
        "doctor",
        "version",
    ):
        assert f"\n    {command} " in out or f"\n    {command}\n" in out


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (
            "client",
            (
                "URL",
                "--url",
                "-ak",
                "--api-key",
                "-t",
                "--timeout",
                "-v",
                "--verbose",
                "-c",
                "--config",
            ),
        ),
        (
            "message",
            (
                "BODY",
                "--url",
                "--api-key",
                "--stream",
                "--json",
                "--raw",
                "--task-id",
                "--resume-from",
                "--entrypoint",
                "-k",
                "--kwargs",
            ),
        ),
        ("tasks", ("--url", "--api-key", "--json")),
        ("ping", ("URL", "-t", "--timeout")),
        ("register", ("--dry-run",)),
    ],
)
def test_client_side_help_lists_every_flag(
    command: str, flags: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: mail {command} ")
    for flag in flags:
        assert flag in out


def test_server_help_lists_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["server", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mail server ")
    for flag in (*SERVER_FLAGS, *SHORT_FLAGS):
        assert flag in out
    assert "MAIL_LOG_LEVEL" in out


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: mail ")


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_version_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"MAIL reference implementation version: {__version__}"
    assert lines[1] == f"MAIL protocol version: {PROTOCOL_VERSION}"
    assert PROTOCOL_VERSION == "1.3"
    assert len(lines) == 3
    assert "protocol" in lines[2]


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"mail {__version__} (MAIL protocol {PROTOCOL_VERSION})\n"


# --- usage errors caught by the parser ---------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["server", "-p", "99999"], "port must be between 0 and 65535, got 99999"),
        (["server", "-p", "80a"], "expected a port number, got '80a'"),
        (["server", "--print-llm-streams", "maybe"], "expected true or false, got 'maybe'"),
        (["server", "--print-llm-streams"], "expected one argument"),
        (["server", "--verbose"], "unrecognized arguments: --verbose"),
    ],
)
def test_bad_flag_values_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mail ")  # unknown flags are reported by the top parser
    assert message in err


# --- configuration errors: one line per problem, exit 2, no traceback -------------------


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.toml"
    assert main(["server", "-c", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"mail server: config file '{missing}' does not exist\n"


def test_config_path_that_is_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["server", "--config", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"mail server: config file '{tmp_path}' is not a file\n"


def test_invalid_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mail.toml"
    path.write_text("[server\nport = 1\n", encoding="utf-8")
    assert main(["server", "-c", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mail server: {path.resolve()}: invalid TOML")
    assert err.count("\n") == 1


def test_each_problem_gets_its_own_prefixed_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mail.toml"
    path.write_text('[server]\nport = "8000"\ndebug = 1\n', encoding="utf-8")
    assert main(["server", "-c", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert all(line.startswith(f"mail server: {path.resolve()}: ") for line in lines)
    assert any("'server.port'" in line for line in lines)
    assert any("'server.debug'" in line for line in lines)
