"""Which file load_config reads: explicit path, $MAIL_CONFIG_PATH, ./mail.toml, the package's
ancestors, or none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import mail.config
from mail.config import default_config_path, load_config
from mail.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[2]
WriteToml = Callable[..., Path]


def _named(write_toml: WriteToml, tmp_path: Path, name: str) -> Path:
    return write_toml(f'[server.swarm]\nname = "{name}"\n', directory=tmp_path / name)


def test_no_file_gives_defaults_resolved_against_the_working_directory(
    elsewhere: Path,
) -> None:
    config = load_config(env={}, search=False)
    assert config.source_path is None
    assert config.warnings == ()
    assert config.server.port == 8000
    assert config.server.swarm.name == "example-no-proxy"
    assert config.server.data_dir == str(elsewhere / ".mail")
    assert config.server.swarm.source == str(elsewhere / "swarms.json")
    assert config.server.swarm.registry == str(elsewhere / ".mail/registries/example-no-proxy.json")
    assert config.auth.credentials_file == str(elsewhere / ".mail/credentials.json")
    assert config.database.sqlite_path == str(elsewhere / ".mail/mail.db")
    assert config.database.backend == "sqlite"
    assert config.auth.mode == "embedded"
    assert config.client.timeout == 3600.0


def test_explicit_path_beats_env_and_cwd(
    write_toml: WriteToml, tmp_path: Path, elsewhere: Path
) -> None:
    explicit = _named(write_toml, tmp_path, "explicit")
    from_env = _named(write_toml, tmp_path, "from-env")
    _named(write_toml, tmp_path, "cwd")
    (elsewhere / "mail.toml").write_text('[server.swarm]\nname = "cwd"\n', encoding="utf-8")
    config = load_config(str(explicit), env={"MAIL_CONFIG_PATH": str(from_env)})
    assert config.server.swarm.name == "explicit"
    assert config.source_path == explicit.resolve()


def test_mail_config_path_beats_cwd(write_toml: WriteToml, tmp_path: Path, elsewhere: Path) -> None:
    from_env = _named(write_toml, tmp_path, "from-env")
    (elsewhere / "mail.toml").write_text('[server.swarm]\nname = "cwd"\n', encoding="utf-8")
    env = {"MAIL_CONFIG_PATH": str(from_env)}
    assert load_config(env=env).server.swarm.name == "from-env"
    assert default_config_path(env=env) == from_env.resolve()
    # search=False still honours MAIL_CONFIG_PATH
    assert load_config(env=env, search=False).server.swarm.name == "from-env"


def test_cwd_mail_toml_is_found(elsewhere: Path) -> None:
    (elsewhere / "mail.toml").write_text('[server.swarm]\nname = "cwd"\n', encoding="utf-8")
    assert default_config_path(env={}) == elsewhere / "mail.toml"
    config = load_config(env={})
    assert config.server.swarm.name == "cwd"
    assert config.source_path == elsewhere / "mail.toml"


def test_empty_mail_config_path_counts_as_unset(elsewhere: Path) -> None:
    (elsewhere / "mail.toml").write_text('[server.swarm]\nname = "cwd"\n', encoding="utf-8")
    assert load_config(env={"MAIL_CONFIG_PATH": ""}).server.swarm.name == "cwd"


def test_source_checkout_finds_its_own_mail_toml_from_anywhere(elsewhere: Path) -> None:
    if not Path(mail.config.__file__).resolve().is_relative_to(REPO):
        pytest.skip("mail is not imported from this checkout")
    assert default_config_path(env={}) == REPO / "mail.toml"
    assert load_config(env={}).source_path == REPO / "mail.toml"


def test_search_false_ignores_cwd_and_package_files(elsewhere: Path) -> None:
    (elsewhere / "mail.toml").write_text('[server.swarm]\nname = "cwd"\n', encoding="utf-8")
    assert default_config_path(env={}, search=False) is None
    assert load_config(env={}, search=False).source_path is None


def test_missing_explicit_path_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigurationError, match=r"nope\.toml' does not exist"):
        load_config(missing, env={})


def test_missing_mail_config_path_is_an_error(tmp_path: Path) -> None:
    env = {"MAIL_CONFIG_PATH": str(tmp_path / "nope.toml")}
    with pytest.raises(ConfigurationError, match=r"MAIL_CONFIG_PATH.*nope\.toml' does not exist"):
        load_config(env=env)
    with pytest.raises(ConfigurationError, match="MAIL_CONFIG_PATH"):
        default_config_path(env=env)


def test_directory_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="is not a file"):
        load_config(tmp_path, env={})


def test_each_call_reads_afresh(write_toml: WriteToml, tmp_path: Path) -> None:
    path = _named(write_toml, tmp_path, "first")
    assert load_config(path, env={}).server.swarm.name == "first"
    path.write_text('[server.swarm]\nname = "second"\n', encoding="utf-8")
    assert load_config(path, env={}).server.swarm.name == "second"
    other = _named(write_toml, tmp_path, "other")
    assert load_config(other, env={}).server.swarm.name == "other"
