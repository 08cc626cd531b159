"""``[stdlib]`` settings: read from mail.toml into ``MAILConfig.stdlib`` (paths resolved,
validation shared with ``[server.interswarm]``), ``configure``/``current``, the lazy load of
an unconfigured process, and ``mail server`` configuring them when it starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests._servers import serve

from mail.config import (
    InterswarmConfig,
    MAILConfig,
    StdlibConfig,
    StdlibFSConfig,
    StdlibHTTPConfig,
    load_config,
)
from mail.errors import ConfigurationError
from mail.server import create_app
from mail.stdlib._settings import configure, current

ROOT = Path(__file__).resolve().parents[2]


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deploy" / "mail.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_defaults_are_safe(tmp_path: Path) -> None:
    config = load_config(None, env={"MAIL_DATA_DIR": str(tmp_path / "data")}, search=False)
    http = config.stdlib.http
    assert (http.allow_loopback, http.allow_private) == (False, False)
    assert (http.timeout, http.max_response_bytes, http.max_redirects) == (30.0, 1_048_576, 5)
    assert config.stdlib.fs.root == str((tmp_path / "data" / "files").resolve())
    assert config.stdlib.fs.max_read_bytes == config.stdlib.fs.max_write_bytes == 1_048_576
    assert MAILConfig().stdlib.fs.root == str(Path(".mail") / "files")


def test_read_from_mail_toml_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    path = write_toml(
        tmp_path,
        "[stdlib.http]\nallow_loopback = true\nallow_networks = ['10.1.0.0/16']\n"
        "deny_hosts = ['*.internal.example']\nmax_redirects = 0\ntimeout = 2.5\n"
        "[stdlib.fs]\nroot = 'agent-files'\nmax_write_bytes = 10\n",
    )
    config = load_config(path, env={})
    assert config.stdlib.http == StdlibHTTPConfig(
        allow_loopback=True,
        allow_networks=("10.1.0.0/16",),
        deny_hosts=("*.internal.example",),
        max_redirects=0,
        timeout=2.5,
    )
    assert config.stdlib.fs.root == str(path.parent / "agent-files")
    assert config.stdlib.fs.max_write_bytes == 10


def test_a_data_dir_in_the_file_moves_the_default_root(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[server]\ndata_dir = 'state'\n")
    assert load_config(path, env={}).stdlib.fs.root == str(path.parent / "state" / "files")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[stdlib.http]\nallow_networks = ['10.0.0.0/33']", "expected IP networks such as"),
        ("[stdlib.http]\ndeny_hosts = ['http://x']", "expected host names such as"),
        ("[stdlib.http]\ntimeout = 0", "stdlib.http.timeout"),
        ("[stdlib.http]\nmax_redirects = -1", "stdlib.http.max_redirects"),
        ("[stdlib.fs]\nmax_read_bytes = 0", "stdlib.fs.max_read_bytes"),
        ("[stdlib.fs]\nroot = ''", "stdlib.fs.root"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_config(write_toml(tmp_path, toml), env={})


def test_unknown_keys_are_warnings(tmp_path: Path) -> None:
    config = load_config(write_toml(tmp_path, "[stdlib.http]\nallow_lookback = true\n"), env={})
    assert any("stdlib.http.allow_lookback" in warning for warning in config.warnings)


def test_the_guard_lists_share_one_validation() -> None:
    for model in (InterswarmConfig, StdlibHTTPConfig):
        with pytest.raises(ValueError, match=r"expected IP networks such as 10\.0\.0\.0/8"):
            model(deny_networks=("nope",))
        with pytest.raises(ValueError, match="expected host names such as"):
            model(allow_hosts=("a b",))


def test_configure_and_current() -> None:
    mine = StdlibConfig(http=StdlibHTTPConfig(timeout=1.0))
    previous = configure(mine)
    try:
        assert current() is mine
        assert configure(StdlibConfig()) is mine
    finally:
        configure(previous)


def test_an_unconfigured_process_reads_mail_toml_once(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[stdlib.http]\nallow_private = true\n")
    code = (
        "from pathlib import Path\n"
        "from mail.stdlib._settings import current\n"
        "first = current()\n"
        f"Path({str(path)!r}).write_text('[stdlib.http]\\nallow_private = false\\n')\n"
        "print(first.http.allow_private, current() is first)\n"
    )
    env = {"MAIL_CONFIG_PATH": str(path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # our interpreter, our code
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.stdout.strip() == "True True", done.stderr


async def test_mail_server_configures_the_stdlib_settings(
    use_settings: Any, tmp_path: Path
) -> None:
    use_settings()  # restores the process's settings after the test
    config = load_config(
        None,
        env={"MAIL_DATA_DIR": str(tmp_path / "data")},
        search=False,
        overrides={
            "server": {
                "swarm": {
                    "name": "offline",
                    "source": str(ROOT / "swarms.json"),
                    "registry": str(tmp_path / "registry.json"),
                },
            },
            "stdlib": {"http": {"allow_private": True}, "fs": {"root": str(tmp_path / "r")}},
        },
    )
    async with serve(create_app(config)):
        assert current() is config.stdlib
    assert current().fs == StdlibFSConfig(root=str(tmp_path / "r"))
