"""``<data_dir>/server.json``: where a running ``mail server`` listens, for local clients.

``mail server`` writes ``{"url": "http://127.0.0.1:19000", "pid": 4242}`` once it listens
and removes it when it stops cleanly; ``mail client`` and the one-shot commands read it when
no URL is given, so a server on another port (or on port 0) is found without ``--url``. A
file whose process is gone (a server that was killed) is ignored. Standard library only:
both the server and the CLI import it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

__all__ = ["SERVER_FILE", "listening_url", "local_url", "remove_server_file", "write_server_file"]

SERVER_FILE = "server.json"


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server bound to ``host:port``
    (a wildcard address is reached through loopback)."""
    host = host.strip("[]")
    if host in ("", "0.0.0.0"):  # noqa: S104  # the wildcard we translate, not bind
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def write_server_file(data_dir: str | Path, url: str, pid: int | None = None) -> Path:
    """Write ``server.json`` in ``data_dir`` (atomically); returns its path.

    Raises ``OSError`` when the directory cannot be written.
    """
    path = Path(data_dir) / SERVER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{SERVER_FILE}.{os.getpid()}")
    record = {"url": url, "pid": os.getpid() if pid is None else pid}
    temporary.write_text(json.dumps(record) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


def remove_server_file(data_dir: str | Path, pid: int | None = None) -> None:
    """Remove ``server.json`` from ``data_dir`` if it names process ``pid`` (default: this
    one); another server's file, or none, is left alone."""
    path = Path(data_dir) / SERVER_FILE
    if _read(path).get("pid") == (os.getpid() if pid is None else pid):
        with contextlib.suppress(OSError):
            path.unlink()


def listening_url(data_dir: str | Path) -> str | None:
    """The URL in ``data_dir``'s ``server.json`` when its process still runs, else ``None``
    (no file, an unreadable one, or a server that is gone)."""
    record = _read(Path(data_dir) / SERVER_FILE)
    url, pid = record.get("url"), record.get("pid")
    if not isinstance(url, str) or not isinstance(pid, int) or not _alive(pid):
        return None
    return url


def _read(path: Path) -> dict[str, object]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill(pid, 0) would end the process there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True
