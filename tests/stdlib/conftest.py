"""Fixtures of the stdlib tests: the process's stdlib settings, set through the public
``mail.stdlib._settings.configure`` and restored after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mail.config import StdlibConfig, StdlibFSConfig, StdlibHTTPConfig
from mail.stdlib._settings import configure

UseSettings = Callable[..., StdlibConfig]


@pytest.fixture
def use_settings(tmp_path: Path) -> Iterator[UseSettings]:
    """``use_settings(http={...}, fs={...})`` configures stdlib settings for this test: the
    given ``[stdlib.http]``/``[stdlib.fs]`` keys over the defaults, ``fs.root`` defaulting to
    ``tmp_path / "files"``. The settings before the test are restored after it."""
    saved: list[StdlibConfig | None] = []

    def use(
        *, http: dict[str, Any] | None = None, fs: dict[str, Any] | None = None
    ) -> StdlibConfig:
        config = StdlibConfig(
            http=StdlibHTTPConfig(**(http or {})),
            fs=StdlibFSConfig(**({"root": str(tmp_path / "files")} | (fs or {}))),
        )
        previous = configure(config)
        if not saved:
            saved.append(previous)
        return config

    yield use
    if saved:
        configure(saved[0])
