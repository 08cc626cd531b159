"""``server_overrides``: which ``mail server`` flags override which configuration keys."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from mail.cli import build_parser, server_overrides
from mail.config import load_config


def overrides_for(*flags: str) -> dict[str, Any]:
    return server_overrides(build_parser().parse_args(["server", *flags]))


def test_no_flags_override_nothing() -> None:
    assert overrides_for() == {}


def test_only_the_config_path_overrides_nothing() -> None:
    assert overrides_for("-c", "elsewhere.toml") == {}


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["-p", "9000"], {"server": {"port": 9000}}),
        (["--port", "0"], {"server": {"port": 0}}),
        (["-H", "192.0.2.1"], {"server": {"host": "192.0.2.1"}}),
        (["-r"], {"server": {"reload": True}}),
        (["--no-reload"], {"server": {"reload": False}}),
        (["-d"], {"server": {"debug": True}}),
        (["--debug"], {"server": {"debug": True}}),
        (["--no-debug"], {"server": {"debug": False}}),
        (["-rd"], {"server": {"reload": True, "debug": True}}),
        (["-n", "demo"], {"server": {"swarm": {"name": "demo"}}}),
        (["-s", "my.json"], {"server": {"swarm": {"source": "my.json"}}}),
        (["-rf", "reg.json"], {"server": {"swarm": {"registry": "reg.json"}}}),
        (["--swarm-registry", "reg.json"], {"server": {"swarm": {"registry": "reg.json"}}}),
        (["--print-llm-streams", "false"], {"server": {"settings": {"print_llm_streams": False}}}),
        (["--print-llm-streams", "TRUE"], {"server": {"settings": {"print_llm_streams": True}}}),
        (["--print-llm-streams", "no"], {"server": {"settings": {"print_llm_streams": False}}}),
        (["--no-persist"], {"database": {"persist": False}}),
    ],
)
def test_each_flag_sets_its_key(flags: list[str], expected: dict[str, Any]) -> None:
    assert overrides_for(*flags) == expected


def test_all_flags_together() -> None:
    assert overrides_for(
        "-p", "1", "-H", "h", "-r", "--no-debug", "-n", "n", "-s", "s", "-rf", "r",
        "--print-llm-streams", "true", "--no-persist",
    ) == {
        "server": {
            "port": 1,
            "host": "h",
            "reload": True,
            "debug": False,
            "swarm": {"name": "n", "source": "s", "registry": "r"},
            "settings": {"print_llm_streams": True},
        },
        "database": {"persist": False},
    }  # fmt: skip


def test_the_last_of_debug_and_no_debug_wins() -> None:
    assert overrides_for("-d", "--no-debug") == {"server": {"debug": False}}
    assert overrides_for("--no-debug", "-d") == {"server": {"debug": True}}


def test_a_namespace_without_server_flags_gives_nothing() -> None:
    assert server_overrides(argparse.Namespace()) == {}


# --- the overrides as load_config applies them ---------------------------------------------


def test_debug_in_mail_toml_survives_plain_mail_server(tmp_path: Path) -> None:
    # CONTRACT 15.6: the original forced debug/reload to false unless -d/-r was passed.
    path = tmp_path / "mail.toml"
    path.write_text("[server]\ndebug = true\nreload = true\nport = 8100\n", encoding="utf-8")
    config = load_config(path, env={}, overrides=overrides_for("-c", str(path)))
    assert config.server.debug is True
    assert config.server.reload is True
    assert config.server.port == 8100


def test_given_flags_beat_the_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "conf" / "mail.toml"
    path.parent.mkdir()
    path.write_text(
        '[server]\ndebug = true\n[server.swarm]\nname = "file"\nsource = "file.json"\n',
        encoding="utf-8",
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    flags = ("--no-debug", "-n", "flag", "-s", "flag.json", "-rf", "reg/flag.json")
    config = load_config(path, env={"SWARM_NAME": "env"}, overrides=overrides_for(*flags))
    assert config.server.debug is False
    assert config.server.swarm.name == "flag"
    # Relative paths given on the command line resolve against the working directory.
    assert config.server.swarm.source == str(cwd.resolve() / "flag.json")
    assert config.server.swarm.registry == str(cwd.resolve() / "reg/flag.json")


def test_print_llm_streams_and_no_persist_reach_the_config() -> None:
    overrides = overrides_for("--print-llm-streams", "false", "--no-persist")
    config = load_config(env={}, overrides=overrides, search=False)
    assert config.server.settings.print_llm_streams is False
    assert config.database.persist is False
    assert config.database.backend == "memory"
