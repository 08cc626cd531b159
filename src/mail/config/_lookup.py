"""Finding and reading mail.toml."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mail.errors import ConfigurationError

#: The file name looked for in the working directory and above the installed package.
CONFIG_FILE_NAME = "mail.toml"
#: Environment variable naming the configuration file to use.
CONFIG_PATH_ENV = "MAIL_CONFIG_PATH"

# src/mail/config/_lookup.py -> src/mail: the installed package directory.
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def locate(path: str | Path | None, env: Mapping[str, str], *, search: bool) -> Path | None:
    """The configuration file to read: ``path``, ``$MAIL_CONFIG_PATH``, or a search."""
    if path is not None:
        return _existing(Path(path), "config file")
    from_env = env.get(CONFIG_PATH_ENV)
    if from_env:
        return _existing(Path(from_env), f"{CONFIG_PATH_ENV}: config file")
    if not search:
        return None
    for directory in (Path.cwd(), *_PACKAGE_DIR.parents):
        candidate = directory / CONFIG_FILE_NAME
        if candidate.is_file():
            return candidate.resolve()
    return None


def _existing(path: Path, label: str) -> Path:
    path = path.expanduser()
    if not path.exists():
        raise ConfigurationError(f"{label} '{path}' does not exist")
    if not path.is_file():
        raise ConfigurationError(f"{label} '{path}' is not a file")
    return path.resolve()


def read_toml(path: Path) -> dict[str, Any]:
    """Parse ``path`` as TOML; any failure is a ConfigurationError naming the file."""
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigurationError(f"{path}: invalid TOML: {e}") from e
    except UnicodeDecodeError as e:
        raise ConfigurationError(f"{path}: invalid TOML: the file is not UTF-8 text") from e
    except OSError as e:
        raise ConfigurationError(f"{path}: cannot read: {e.strerror or e}") from e
