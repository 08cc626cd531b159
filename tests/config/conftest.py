"""Fixtures for configuration tests.

* ``write_toml(text, name="mail.toml", directory=None)`` writes a file under ``tmp_path``
  (or ``directory``) and returns its path.
* ``elsewhere`` is an empty working directory that is not the config file's directory.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

WriteToml = Callable[..., Path]


@pytest.fixture
def write_toml(tmp_path: Path) -> WriteToml:
    def write(text: str, name: str = "mail.toml", directory: Path | None = None) -> Path:
        folder = directory or tmp_path / "conf"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd.resolve()
