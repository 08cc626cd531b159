"""Which URL and API key ``mail client`` and the one-shot commands use (``mail.cli._connect``)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mail._server_file import local_url, write_server_file
from mail.cli._connect import is_loopback, resolve, swarm_link
from mail.errors import ConfigurationError


@pytest.mark.parametrize(
    ("link", "url", "token"),
    [
        ("swarm://connect?server=mail.example.com&token=K", "https://mail.example.com", "K"),
        (
            "swarm://invite?server=mail.example.com:8443&token=K",
            "https://mail.example.com:8443",
            "K",
        ),
        ("swarm://connect?server=localhost:8000", "http://localhost:8000", None),
        ("swarm://connect?server=127.0.0.1:9000&token=", "http://127.0.0.1:9000", None),
        ("swarm://connect?server=[::1]:8000&token=a%2Bb", "http://[::1]:8000", "a+b"),
        ("swarm://connect?server=http://10.0.0.5:8000/", "http://10.0.0.5:8000", None),
        ("SWARM://Connect?server=h", "https://h", None),
        ("swarm:connect?server=h", "https://h", None),
    ],
)
def test_swarm_links(link: str, url: str, token: str | None) -> None:
    assert swarm_link(link) == (url, token)


@pytest.mark.parametrize(
    ("link", "error"),
    [
        ("swarm://connect?token=K", "without server=HOST"),
        ("swarm://join?server=h", "not a swarm link"),
        ("http://connect?server=h", "not a swarm link"),
    ],
)
def test_bad_swarm_links(link: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        swarm_link(link)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("localhost", True), ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True),
     ("[::1]", True), ("LOCALHOST", True), ("10.0.0.1", False), ("example.com", False),
     ("", False), (None, False)],
)  # fmt: skip
def test_is_loopback(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


# --- resolve: URL, key and settings --------------------------------------------------------


@pytest.fixture
def toml(tmp_path: Path) -> Path:
    """A mail.toml with port 8123 and data in ``tmp_path/state``, where the local server's
    credentials file holds a user key."""
    state = tmp_path / "state"
    state.mkdir()
    keys = [
        {"role": "admin", "id": "admin", "key": "A"},
        {"role": "user", "id": "user", "key": "U"},
    ]
    (state / "credentials.json").write_text(json.dumps({"version": 1, "keys": keys}), "utf-8")
    path = tmp_path / "mail.toml"
    path.write_text('[server]\nport = 8123\ndata_dir = "state"\n', encoding="utf-8")
    return path


def args(config: Path, **given: object) -> argparse.Namespace:
    return argparse.Namespace(config=str(config), **given)


def test_defaults_are_the_local_server_and_its_user_key(toml: Path) -> None:
    target = resolve(args(toml), env={})
    assert (target.url, target.api_key, target.key_source) == (
        "http://127.0.0.1:8123", "U", "credentials file",
    )  # fmt: skip
    assert target.config.timeout == 3600.0
    assert target.config.verbose is False


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    return int(child.stdout)


def test_a_running_local_server_is_found_through_its_data_dir(toml: Path) -> None:
    # issue 21 item 2: a server on another port was not found without --url
    write_server_file(toml.parent / "state", "http://127.0.0.1:19000", pid=os.getpid())
    target = resolve(args(toml), env={})
    assert (target.url, target.api_key) == ("http://127.0.0.1:19000", "U")


def test_a_server_file_whose_process_is_gone_is_ignored(toml: Path) -> None:
    write_server_file(toml.parent / "state", "http://127.0.0.1:19000", pid=dead_pid())
    assert resolve(args(toml), env={}).url == "http://127.0.0.1:8123"


def test_the_client_table_beats_the_server_file(toml: Path) -> None:
    write_server_file(toml.parent / "state", "http://127.0.0.1:19000", pid=os.getpid())
    toml.write_text(toml.read_text("utf-8") + '[client]\nurl = "http://h:1"\n', "utf-8")
    assert resolve(args(toml), env={}).url == "http://h:1"
    assert resolve(args(toml, url_flag="http://g:2"), env={}).url == "http://g:2"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:5"),  # noqa: S104  # a host name, nothing binds
        ("::", "http://[::1]:5"),
        ("::1", "http://[::1]:5"),
        ("127.0.0.1", "http://127.0.0.1:5"),
        ("localhost", "http://localhost:5"),
    ],
)
def test_local_url(host: str, url: str) -> None:
    assert local_url(host, 5) == url


def test_client_table_beats_the_defaults(toml: Path) -> None:
    text = toml.read_text(encoding="utf-8")
    toml.write_text(
        text + '[client]\nurl = "https://far.example"\napi_key = "C"\ntimeout = 5\n', "utf-8"
    )
    target = resolve(args(toml), env={})
    assert (target.url, target.api_key, target.config.timeout) == ("https://far.example", "C", 5.0)


def test_flags_beat_the_file(toml: Path) -> None:
    given = args(toml, url="http://127.0.0.1:9/", api_key="F", timeout=2.5, verbose=True)
    target = resolve(given, env={})
    assert (target.url, target.api_key, target.key_source) == (
        "http://127.0.0.1:9",
        "F",
        "--api-key",
    )
    assert target.config.timeout == 2.5
    assert target.config.verbose is True


def test_url_flag_and_positional(toml: Path) -> None:
    assert resolve(args(toml, url_flag="http://localhost:1"), env={}).url == "http://localhost:1"
    same = args(toml, url="http://localhost:1", url_flag="http://localhost:1")
    assert resolve(same, env={}).url == "http://localhost:1"
    with pytest.raises(ValueError, match="two URLs given"):
        resolve(args(toml, url="http://a", url_flag="http://b"), env={})


def test_a_swarm_link_gives_url_and_key(toml: Path) -> None:
    target = resolve(args(toml, url="swarm://connect?server=peer.example&token=T"), env={})
    assert (target.url, target.api_key, target.key_source) == (
        "https://peer.example",
        "T",
        "swarm link",
    )
    given = args(toml, url="swarm://connect?server=peer.example&token=T", api_key="F")
    assert resolve(given, env={}).api_key == "F"


def test_the_local_key_never_goes_to_another_host(toml: Path) -> None:
    target = resolve(args(toml, url="https://peer.example"), env={})
    assert (target.api_key, target.key_source) == (None, "none")


def test_no_credentials_file_means_no_key(tmp_path: Path) -> None:
    path = tmp_path / "mail.toml"
    path.write_text("", encoding="utf-8")
    assert resolve(args(path), env={"MAIL_DATA_DIR": str(tmp_path / "none")}).api_key is None


def test_not_a_url(toml: Path) -> None:
    with pytest.raises(ValueError, match="not an http"):
        resolve(args(toml, url="localhost:8000"), env={})


def test_a_missing_config_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        resolve(args(tmp_path / "nope.toml"), env={})
