"""``mail doctor`` against a good and a broken configuration (tmp_path, real checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mail._doctor import run_checks
from mail.cli import main

from .conftest import REPO, RunMail, free_port

SWARMS = REPO / "swarms.json"
# Variables the checks read; each test starts without them.
_ENV = (
    "MAIL_CONFIG_PATH", "MAIL_DATA_DIR", "SWARM_NAME", "SWARM_SOURCE", "SWARM_REGISTRY_FILE",
    "BASE_URL", "AUTH_ENDPOINT", "TOKEN_INFO_ENDPOINT", "DATABASE_URL", "LITELLM_PROXY_API_BASE",
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
)  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


def _toml(tmp_path: Path, swarm: str, source: Path, extra: str = "") -> Path:
    path = tmp_path / "mail.toml"
    path.write_text(
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n\n'
        f'[server.swarm]\nname = "{swarm}"\nsource = "{source}"\n{extra}',
        encoding="utf-8",
    )
    return path


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if not line.startswith("    ")]


def test_good_configuration_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    assert main(["doctor", "-c", str(config)]) == 0
    out = capsys.readouterr().out
    lines = _lines(out)
    assert lines, out
    assert all(line[0] in "✓!" for line in lines), out
    assert f"✓ config file: using {config}" in out
    assert "✓ swarm: 'offline' loads" in out
    assert "✓ store: sqlite store at" in out
    assert "not created yet" in out
    assert "✗" not in out
    assert not (tmp_path / "data").exists()  # checking creates nothing


def test_existing_sqlite_store_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    assert main(["db-init", "-c", str(config)]) == 0
    capsys.readouterr()
    assert main(["doctor", "-c", str(config)]) == 0
    assert "✓ store: sqlite store at" in (out := capsys.readouterr().out)
    assert "schema version" in out


def test_good_configuration_in_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _toml(tmp_path, "offline", SWARMS, "\n[database]\npersist = false\n")
    assert main(["doctor", "-c", str(config)]) == 0
    assert "✓ store: persist = false" in capsys.readouterr().out


def test_private_credentials_file_is_ok(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    creds = tmp_path / "data" / "credentials.json"
    creds.parent.mkdir(parents=True)
    creds.write_text("{}", encoding="utf-8")
    creds.chmod(0o600)
    auth = [c for c in run_checks(str(config), {}) if c.name == "auth"]
    assert [c.status for c in auth] == ["ok"]


def test_unknown_key_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _toml(tmp_path, "offline", SWARMS, "colour = 1\n")
    assert main(["doctor", "-c", str(config)]) == 0
    out = capsys.readouterr().out
    assert "! config keys:" in out
    assert "server.swarm.colour" in out


def test_unknown_swarm_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _toml(tmp_path, "no-such-swarm", SWARMS)
    assert main(["doctor", "-c", str(config)]) == 1
    out = capsys.readouterr().out
    assert "✗ swarm:" in out
    assert "no swarm named 'no-such-swarm'" in out
    assert "fix: set [server.swarm] name/source" in out


def test_bad_swarms_path_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _toml(tmp_path, "offline", tmp_path / "missing.json")
    assert main(["doctor", "-c", str(config)]) == 1
    out = capsys.readouterr().out
    assert "✗ swarm:" in out
    assert "missing.json" in out


def test_broken_configuration_names_each_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _toml(tmp_path, "example", SWARMS)
    creds = tmp_path / "data" / "credentials.json"
    creds.parent.mkdir(parents=True)
    creds.write_text("{}", encoding="utf-8")
    creds.chmod(0o644)
    port = free_port()
    monkeypatch.setenv("DATABASE_URL", f"postgresql://mail:s3cret-pw@127.0.0.1:{port}/mail")
    assert main(["doctor", "-c", str(config)]) == 1
    out = capsys.readouterr().out
    assert "✗ llm keys: LITELLM_PROXY_API_BASE is not set" in out
    assert "fix: export LITELLM_PROXY_API_BASE=" in out
    assert f"✗ auth: embedded auth; {creds} has mode 0644" in out
    assert f"fix: chmod 600 {creds}" in out
    assert f"✗ store: postgres store at 127.0.0.1:{port}" in out
    assert "fix: start PostgreSQL or correct DATABASE_URL" in out
    assert "s3cret-pw" not in out
    # every ✗ line is followed by its fix
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("✗"):
            assert lines[i + 1].startswith("    fix: "), line


def test_llm_keys_follow_the_environment_mapping(tmp_path: Path) -> None:
    proxied = _toml(tmp_path, "example", SWARMS, "\n[database]\npersist = false\n")
    env = {"LITELLM_PROXY_API_BASE": "http://127.0.0.1:4000"}
    assert [c.status for c in run_checks(str(proxied), env) if c.name == "llm keys"] == ["ok"]
    direct = _toml(tmp_path, "example-no-proxy", SWARMS, "\n[database]\npersist = false\n")
    missing = [c for c in run_checks(str(direct), {}) if c.name == "llm keys"]
    assert [c.status for c in missing] == ["fail"]
    assert "OPENAI_API_KEY" in missing[0].message
    given = run_checks(str(direct), {"OPENAI_API_KEY": "sk-test"})
    assert [c.status for c in given if c.name == "llm keys"] == ["ok"]


def test_unreachable_remote_auth_fails(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS, "\n[database]\npersist = false\n")
    closed = f"http://127.0.0.1:{free_port()}"
    env = {"AUTH_ENDPOINT": f"{closed}/auth", "TOKEN_INFO_ENDPOINT": f"{closed}/info"}
    auth = [c for c in run_checks(str(config), env) if c.name == "auth"]
    assert [c.status for c in auth] == ["fail"]
    assert "unreachable" in auth[0].message
    assert "AUTH_ENDPOINT" in auth[0].fix


def test_missing_config_file_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "-c", str(tmp_path / "nope.toml")]) == 1
    assert "✗ config:" in capsys.readouterr().out


def test_doctor_subprocess(tmp_path: Path, run_mail: RunMail) -> None:
    good = _toml(tmp_path, "offline", SWARMS)
    result = run_mail("doctor", "-c", str(good), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "✓ swarm: 'offline' loads" in result.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(
        f'[server]\ndata_dir = "{tmp_path / "d2"}"\n[server.swarm]\nname = "nope"\n'
        f'source = "{SWARMS}"\n',
        encoding="utf-8",
    )
    result = run_mail("doctor", "-c", str(bad), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "✗ swarm:" in result.stdout
    assert "fix: " in result.stdout
