"""File actions confined to a directory: ``read_file``, ``write_file``, ``delete_file``,
``create_directory`` and ``read_directory``, as ``swarms.json`` imports them
(``python::mail.stdlib.fs.actions:read_file``).

Each is a :class:`~mail.api.MAILAction` that can also be awaited as a function of its
arguments (``await read_file({"path": "notes/today.txt"})``). Paths are relative to
``[stdlib.fs] root`` of ``mail.toml`` (default ``files/`` in the data directory, created on
first use); an absolute path is accepted only inside the root. A path that leads out
(``..``, an absolute path elsewhere, a symlink to outside, at any component) is refused.

Results, always a string (``P`` is the path as given, never the server's absolute path):

* ``read_file {path}``: the file's text (UTF-8), or ``Error: file not found at P``,
  ``Error: P is not a file``, ``Error: P is larger than N bytes (max_read_bytes in
  [stdlib.fs])``;
* ``write_file {path, content}``: creates missing parent directories, replaces the file:
  ``successfully wrote to P``, or ``Error: P is a directory``, ``Error: the content is
  larger than N bytes (max_write_bytes in [stdlib.fs])``;
* ``delete_file {path}``: ``successfully deleted P``, or ``Error: file not found at P``,
  ``Error: P is not a file``;
* ``create_directory {path}`` (with missing parents): ``successfully created directory
  P``, or ``Error: P already exists``;
* ``read_directory {path}`` (``"."`` is the root): the sorted entry names, one per line
  (empty for an empty directory), or ``Error: directory not found at P``, ``Error: P is
  not a directory``.

Any refusal or failure is an ``Error: ...`` text. File I/O runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mail.config import StdlibFSConfig
from mail.stdlib._kit import ActionFailed, ActionFunction, define, schema, text_arg
from mail.stdlib._settings import current
from mail.stdlib.fs._paths import confined

__all__ = [
    "DIR_CREATE_PARAMETERS",
    "DIR_READ_PARAMETERS",
    "FILE_DELETE_PARAMETERS",
    "FILE_READ_PARAMETERS",
    "FILE_WRITE_PARAMETERS",
    "create_directory",
    "delete_file",
    "read_directory",
    "read_file",
    "write_file",
]

_SECTION = "[stdlib.fs]"
_PATH = {"type": "string", "description": "A path relative to the files directory."}

#: ``read_file {path}``
FILE_READ_PARAMETERS = schema({"path": _PATH}, ["path"])
#: ``write_file {path, content}``
FILE_WRITE_PARAMETERS = schema(
    {"path": _PATH, "content": {"type": "string", "description": "The text to write."}},
    ["path", "content"],
)
#: ``delete_file {path}``
FILE_DELETE_PARAMETERS = schema({"path": _PATH}, ["path"])
#: ``create_directory {path}``
DIR_CREATE_PARAMETERS = schema({"path": _PATH}, ["path"])
#: ``read_directory {path}``
DIR_READ_PARAMETERS = schema({"path": _PATH}, ["path"])

Operation = Callable[[Path, str, StdlibFSConfig, dict[str, Any]], str]


def _read(target: Path, given: str, settings: StdlibFSConfig, _args: dict[str, Any]) -> str:
    if not target.exists():
        raise ActionFailed(f"file not found at {given}")
    if not target.is_file():
        raise ActionFailed(f"{given} is not a file")
    cap = settings.max_read_bytes
    with target.open("rb") as file:
        data = file.read(cap + 1)
    if len(data) > cap:
        raise ActionFailed(f"{given} is larger than {cap} bytes (max_read_bytes in {_SECTION})")
    return data.decode("utf-8", errors="replace")


def _write(target: Path, given: str, settings: StdlibFSConfig, args: dict[str, Any]) -> str:
    content = args.get("content")
    if not isinstance(content, str):
        raise ActionFailed("'content' must be a string")
    data = content.encode("utf-8")
    cap = settings.max_write_bytes
    if len(data) > cap:
        raise ActionFailed(
            f"the content is larger than {cap} bytes (max_write_bytes in {_SECTION})"
        )
    if target.is_dir():
        raise ActionFailed(f"{given} is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return f"successfully wrote to {given}"


def _delete(target: Path, given: str, _settings: StdlibFSConfig, _args: dict[str, Any]) -> str:
    if not target.exists():
        raise ActionFailed(f"file not found at {given}")
    if not target.is_file():
        raise ActionFailed(f"{given} is not a file")
    target.unlink()
    return f"successfully deleted {given}"


def _mkdir(target: Path, given: str, _settings: StdlibFSConfig, _args: dict[str, Any]) -> str:
    if target.exists():
        raise ActionFailed(f"{given} already exists")
    target.mkdir(parents=True)
    return f"successfully created directory {given}"


def _list(target: Path, given: str, _settings: StdlibFSConfig, _args: dict[str, Any]) -> str:
    if not target.exists():
        raise ActionFailed(f"directory not found at {given}")
    if not target.is_dir():
        raise ActionFailed(f"{given} is not a directory")
    return "\n".join(sorted(entry.name for entry in target.iterdir()))


def _run(operation: Operation, args: dict[str, Any]) -> str:
    given = text_arg(args, "path")
    settings = current().fs
    try:
        return operation(confined(settings.root, given), given, settings, args)
    except OSError as e:
        # strerror only: the exception's filename is the server's absolute path
        raise ActionFailed(f"{given}: {e.strerror or type(e).__name__}") from None


def _threaded(operation: Operation) -> ActionFunction:
    async def run(args: dict[str, Any]) -> str:
        return await asyncio.to_thread(_run, operation, args)

    return run


read_file = define(
    "read_file", "Read a text file and return its content.", FILE_READ_PARAMETERS, _threaded(_read)
)
write_file = define(
    "write_file",
    "Write text to a file, creating it and its parent directories if needed.",
    FILE_WRITE_PARAMETERS,
    _threaded(_write),
)
delete_file = define("delete_file", "Delete a file.", FILE_DELETE_PARAMETERS, _threaded(_delete))
create_directory = define(
    "create_directory",
    "Create a directory and any missing parents.",
    DIR_CREATE_PARAMETERS,
    _threaded(_mkdir),
)
read_directory = define(
    "read_directory",
    "List a directory's entries, sorted, one name per line ('.' is the files directory).",
    DIR_READ_PARAMETERS,
    _threaded(_list),
)
