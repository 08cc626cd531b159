"""Fixtures for command-line tests.

* ``run_mail(*args, cwd=None)`` runs ``python -m mail.cli ARGS`` in a subprocess with a clean
  MAIL environment and returns the ``CompletedProcess`` (text, captured output).
* ``mail_env`` is ``os.environ`` without the variables MAIL reads, for other subprocesses.
* ``restore_logging`` keeps the root logger's handlers and level as they were, for tests that
  call ``main(["server", ...])`` in-process (the CLI configures logging).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

RunMail = Callable[..., "subprocess.CompletedProcess[str]"]

# Variables that would change what the CLI reads; subprocesses run without them.
_MAIL_ENV = ("MAIL_CONFIG_PATH", "MAIL_LOG_LEVEL", "SWARM_NAME", "SWARM_SOURCE", "DATABASE_URL")


@pytest.fixture
def mail_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _MAIL_ENV}


@pytest.fixture
def run_mail(mail_env: dict[str, str]) -> RunMail:
    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mail.cli", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=cwd,
            env=mail_env,
        )

    return run


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
