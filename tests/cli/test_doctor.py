"""``mail doctor`` against good and broken configurations (tmp_path, real checks).

The environment is always explicit: a dict given to :func:`mail.cli._doctor.run_checks`, or
the whole environment of a ``mail doctor`` subprocess (:func:`mail`), never the test
process's own ``os.environ``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests._servers import free_port

from mail.cli._doctor import Check, render, run_checks

from .conftest import REPO, LiveServer

SWARMS = REPO / "swarms.json"


def _toml(tmp_path: Path, swarm: str, source: Path, extra: str = "") -> Path:
    path = tmp_path / "mail.toml"
    path.write_text(
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n\n'
        f'[server.swarm]\nname = "{swarm}"\nsource = "{source}"\n{extra}',
        encoding="utf-8",
    )
    return path


def mail(
    *args: str, env: dict[str, str], home: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``mail ARGS`` in a subprocess whose whole environment is ``env``, plus the ``PATH`` it
    needs to start and ``HOME`` (``home``, also the working directory unless ``cwd``)."""
    base = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "mail.cli", *args], cwd=cwd or home,
        env=base | {"PYTHONIOENCODING": "utf-8"} | env, capture_output=True, text=True,
        encoding="utf-8", timeout=60, check=False,
    )  # fmt: skip


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if not line.startswith("    ")]


def _named(checks: list[Check], name: str) -> list[Check]:
    return [c for c in checks if c.name == name]


# --- through the command line ------------------------------------------------------------


def test_good_configuration_passes(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    result = mail("doctor", "-c", str(config), env={}, home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    lines = _lines(out)
    assert lines, out
    assert all(line[0] in "✓!" for line in lines), out
    assert f"✓ config file: using {config}" in out
    assert "✓ swarm: 'offline' loads" in out
    assert "✓ store: sqlite store at" in out
    assert "not created yet" in out
    assert "✗" not in out
    assert not (tmp_path / "data").exists()  # checking creates nothing


def test_broken_configuration_names_each_problem(tmp_path: Path) -> None:
    config = _toml(tmp_path, "example", SWARMS)
    creds = tmp_path / "data" / "credentials.json"
    creds.parent.mkdir(parents=True)
    creds.write_text("{}", encoding="utf-8")
    creds.chmod(0o644)
    port = free_port()
    env = {"DATABASE_URL": f"postgresql://mail:s3cret-pw@127.0.0.1:{port}/mail"}
    result = mail("doctor", "-c", str(config), env=env, home=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "✗ llm keys: LITELLM_PROXY_API_BASE is not set" in out
    assert "fix: export LITELLM_PROXY_API_BASE=" in out
    assert f"✗ auth: embedded auth; {creds} has mode 0644" in out
    assert f"fix: chmod 600 {creds}" in out
    assert f"✗ store: postgres store at 127.0.0.1:{port}" in out
    assert "fix: start PostgreSQL or correct DATABASE_URL" in out
    assert "s3cret-pw" not in out + result.stderr
    # every ✗ line is followed by its fix
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("✗"):
            assert lines[i + 1].startswith("    fix: "), line


def test_unknown_swarm_exits_1_with_a_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        f'[server]\ndata_dir = "{tmp_path / "d2"}"\n[server.swarm]\nname = "nope"\n'
        f'source = "{SWARMS}"\n',
        encoding="utf-8",
    )
    result = mail("doctor", "-c", str(bad), env={}, home=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "✗ swarm:" in result.stdout
    assert "fix: " in result.stdout


def test_config_from_the_environment_variable(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = mail("doctor", env={"MAIL_CONFIG_PATH": str(config)}, home=tmp_path, cwd=elsewhere)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"✓ config file: using {config}" in result.stdout


def test_down_peer_warns_but_does_not_fail(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS, "\n[database]\npersist = false\n")
    registry = _registry(tmp_path, {"beta": f"http://127.0.0.1:{free_port()}"})
    result = mail(
        "doctor", "-c", str(config), env={"SWARM_REGISTRY_FILE": str(registry)}, home=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "! registry: unreachable peer(s): beta (http://127.0.0.1:" in result.stdout
    assert f"    fix: start those swarms, or remove them from {registry}" in result.stdout


def test_existing_sqlite_store_is_opened(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    created = mail("db-init", "-c", str(config), env={}, home=tmp_path)
    assert created.returncode == 0, created.stdout + created.stderr
    [store] = _named(run_checks(str(config), {}), "store")
    assert store.status == "ok"
    assert store.message.startswith("sqlite store at ")
    assert "schema version" in store.message


# --- the checks, with an environment dict -----------------------------------------------------


def test_no_mail_toml_found_warns_and_uses_the_defaults(tmp_path: Path) -> None:
    env = {
        "MAIL_DATA_DIR": str(tmp_path / "data"),
        "SWARM_SOURCE": str(SWARMS),
        "SWARM_NAME": "offline",
    }
    checks = run_checks(None, env, search=False)
    [found] = _named(checks, "config file")
    assert found.status == "warn"
    assert found.message.startswith("no mail.toml found; defaults in use (working directory ")
    assert found.fix == "create mail.toml, pass -c PATH or set MAIL_CONFIG_PATH"
    assert "! config file: no mail.toml found" in render(checks)
    assert "    fix: create mail.toml, pass -c PATH or set MAIL_CONFIG_PATH" in render(checks)
    # the environment is what the rest was checked against
    assert [c.status for c in _named(checks, "swarm")] == ["ok"]
    assert not any(c.status == "fail" for c in checks), render(checks)
    assert not (tmp_path / "data").exists()


def test_mail_config_path_in_the_env_dict_is_used(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    checks = run_checks(None, {"MAIL_CONFIG_PATH": str(config)}, search=False)
    [found] = _named(checks, "config file")
    assert (found.status, found.message) == ("ok", f"using {config}")


def test_good_configuration_in_memory(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS, "\n[database]\npersist = false\n")
    [store] = _named(run_checks(str(config), {}), "store")
    assert (store.status, store.message) == ("ok", "persist = false: tasks are kept in memory only")


def test_private_credentials_file_is_ok(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    creds = tmp_path / "data" / "credentials.json"
    creds.parent.mkdir(parents=True)
    creds.write_text("{}", encoding="utf-8")
    creds.chmod(0o600)
    auth = _named(run_checks(str(config), {}), "auth")
    assert [c.status for c in auth] == ["ok"]


def test_unknown_key_warns(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS, "colour = 1\n")
    checks = run_checks(str(config), {})
    out = render(checks)
    assert "! config keys:" in out
    assert "server.swarm.colour" in out
    assert not any(c.status == "fail" for c in checks), out


def test_unknown_swarm_fails(tmp_path: Path) -> None:
    config = _toml(tmp_path, "no-such-swarm", SWARMS)
    out = render(run_checks(str(config), {}))
    assert "✗ swarm:" in out
    assert "no swarm named 'no-such-swarm'" in out
    assert "fix: set [server.swarm] name/source" in out


def test_swarm_with_broken_wiring_fails(tmp_path: Path) -> None:
    """The swarm loads, but cannot be instantiated: an agent names an unknown comm target."""
    swarms = json.loads(SWARMS.read_text(encoding="utf-8"))
    [offline] = [s for s in swarms if s["name"] == "offline"]
    offline["agents"][0]["comm_targets"] = ["nobody"]
    source = tmp_path / "swarms.json"
    source.write_text(json.dumps([offline]), encoding="utf-8")
    [swarm] = _named(run_checks(str(_toml(tmp_path, "offline", source)), {}), "swarm")
    assert swarm.status == "fail"
    assert "nobody" in swarm.message


def test_bad_swarms_path_fails(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", tmp_path / "missing.json")
    [swarm] = _named(run_checks(str(config), {}), "swarm")
    assert swarm.status == "fail"
    assert "missing.json" in swarm.message


def test_missing_config_file_fails(tmp_path: Path) -> None:
    [check] = run_checks(str(tmp_path / "nope.toml"), {})
    assert (check.name, check.status) == ("config", "fail")
    assert "nope.toml" in check.message
    assert render([check]).startswith("✗ config:")


def test_llm_keys_follow_the_environment_mapping(tmp_path: Path) -> None:
    proxied = _toml(tmp_path, "example", SWARMS, "\n[database]\npersist = false\n")
    env = {"LITELLM_PROXY_API_BASE": "http://127.0.0.1:4000"}
    assert [c.status for c in _named(run_checks(str(proxied), env), "llm keys")] == ["ok"]
    direct = _toml(tmp_path, "example-no-proxy", SWARMS, "\n[database]\npersist = false\n")
    missing = _named(run_checks(str(direct), {}), "llm keys")
    assert [c.status for c in missing] == ["fail"]
    assert "OPENAI_API_KEY" in missing[0].message
    given = run_checks(str(direct), {"OPENAI_API_KEY": "sk-test"})
    assert [c.status for c in _named(given, "llm keys")] == ["ok"]


def test_unreachable_remote_auth_fails(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS, "\n[database]\npersist = false\n")
    closed = f"http://127.0.0.1:{free_port()}"
    env = {"AUTH_ENDPOINT": f"{closed}/auth", "TOKEN_INFO_ENDPOINT": f"{closed}/info"}
    auth = _named(run_checks(str(config), env), "auth")
    assert [c.status for c in auth] == ["fail"]
    assert "unreachable" in auth[0].message
    assert "AUTH_ENDPOINT" in auth[0].fix


# --- registry peers ---------------------------------------------------------------------------


def _registry(tmp_path: Path, peers: dict[str, str]) -> Path:
    """A registry file (the format the server writes) with persistent ``{name: base_url}``."""
    path = tmp_path / "registry.json"
    endpoints = {
        name: {"swarm_name": name, "base_url": url, "volatile": False}
        for name, url in peers.items()
    }
    path.write_text(
        json.dumps({"local_swarm_name": "offline", "endpoints": endpoints}), encoding="utf-8"
    )
    return path


def _registry_checks(tmp_path: Path, registry: Path) -> list[Check]:
    config = _toml(tmp_path, "offline", SWARMS, "\n[database]\npersist = false\n")
    return _named(run_checks(str(config), {"SWARM_REGISTRY_FILE": str(registry)}), "registry")


def test_registry_peer_down_warns_with_a_fix(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    registry = _registry(tmp_path, {"beta": down})
    [check] = _registry_checks(tmp_path, registry)
    assert check.status == "warn"
    assert check.message == f"unreachable peer(s): beta ({down})"
    assert check.fix == f"start those swarms, or remove them from {registry}"


def test_registry_peer_live_is_ok(tmp_path: Path, live_server: LiveServer) -> None:
    registry = _registry(tmp_path, {"beta": live_server.url})
    [check] = _registry_checks(tmp_path, registry)
    assert (check.status, check.message, check.fix) == ("ok", "1 peer(s) reachable", "")


def test_registry_names_only_the_peers_that_are_down(
    tmp_path: Path, live_server: LiveServer
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    registry = _registry(tmp_path, {"beta": live_server.url, "gamma": down})
    [check] = _registry_checks(tmp_path, registry)
    assert check.status == "warn"
    assert check.message == f"unreachable peer(s): gamma ({down})"


def test_registry_without_peers_or_file_is_ok(tmp_path: Path) -> None:
    [empty] = _registry_checks(tmp_path, _registry(tmp_path, {}))
    assert (empty.status, empty.message) == ("ok", f"{tmp_path / 'registry.json'}: no peers")
    missing = tmp_path / "none.json"
    [absent] = _registry_checks(tmp_path, missing)
    assert (absent.status, absent.message) == ("ok", f"no registry file at {missing} (no peers)")


def test_broken_registry_file_fails_with_a_fix(tmp_path: Path) -> None:
    registry = tmp_path / "registry.json"
    registry.write_text('{"endpoints": {"beta": {"base_url": 7}}}', encoding="utf-8")
    [check] = _registry_checks(tmp_path, registry)
    assert check.status == "fail"
    assert "base_url" in check.message
    assert check.fix == f"correct or remove {registry}"


# --- the swarm flags and interswarm targets (issue 21) -----------------------------------

FEDERATION = REPO / "examples" / "federation" / "swarms.json"


def test_swarm_flags_choose_the_swarm_as_for_mail_server(tmp_path: Path) -> None:
    config = _toml(tmp_path, "offline", SWARMS)
    result = mail(
        "doctor", "-c", str(config), "-n", "example-no-proxy", "-s", str(SWARMS),
        env={"OPENAI_API_KEY": "sk-test"}, home=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"✓ swarm: 'example-no-proxy' loads from {SWARMS}" in result.stdout
    assert "✓ llm keys: 3 LLM agent(s) have a proxy or key" in result.stdout

    long = mail(
        "doctor", "-c", str(config), "--swarm-name", "beta", "--swarm-source", str(FEDERATION),
        env={}, home=tmp_path,
    )  # fmt: skip
    assert long.returncode == 0, long.stdout + long.stderr
    assert f"✓ swarm: 'beta' loads from {FEDERATION}" in long.stdout
    assert "✓ interswarm: 1 agent(s) may message other swarms" in long.stdout


def test_an_agent_naming_a_peer_without_interswarm_warns(tmp_path: Path) -> None:
    swarms = json.loads(FEDERATION.read_text(encoding="utf-8"))
    alpha = next(s for s in swarms if s["name"] == "alpha")
    del alpha["agents"][0]["enable_interswarm"]  # what the README once left out
    source = tmp_path / "my-swarms.json"
    source.write_text(json.dumps(swarms), encoding="utf-8")
    config = _toml(tmp_path, "alpha", source)

    [check] = _named(run_checks(str(config), {}), "interswarm")

    assert check.status == "warn"
    assert check.message == (
        "agent 'supervisor' names weather@beta but has no enable_interswarm: "
        "it is not told that it may message other swarms"
    )
    assert "set \"enable_interswarm\": true on agent 'supervisor'" in check.fix


def test_a_swarm_without_interswarm_whose_agents_name_peers_warns(tmp_path: Path) -> None:
    swarms = json.loads(FEDERATION.read_text(encoding="utf-8"))
    beta = next(s for s in swarms if s["name"] == "beta")
    beta["enable_interswarm"] = False
    source = tmp_path / "my-swarms.json"
    source.write_text(json.dumps(swarms), encoding="utf-8")

    checks = _named(run_checks(str(_toml(tmp_path, "beta", source)), {}), "interswarm")

    assert [c.status for c in checks] == ["warn"]
    assert "the swarm has no enable_interswarm" in checks[0].message


def test_a_swarm_naming_no_peer_has_nothing_to_check(tmp_path: Path) -> None:
    [check] = _named(run_checks(str(_toml(tmp_path, "offline", SWARMS)), {}), "interswarm")
    assert (check.status, check.message) == ("ok", "no agent names an agent of another swarm")
