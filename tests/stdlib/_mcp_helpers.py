"""Real MCP servers for the MCP tests: the demo server over streamable HTTP (uvicorn on
127.0.0.1, in the test's loop) and over stdio (a child process), plus swarm builders."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests._servers import serve

from mail.examples.mcp_demo.server import build_server

ROOT = Path(__file__).resolve().parents[2]
SWARMS = ROOT / "swarms.json"
#: the demo server over stdio, as swarms.json declares it
STDIO_DEMO: dict[str, Any] = {
    "name": "calc",
    "command": "python",
    "args": ["-m", "mail.examples.mcp_demo.server"],
}
#: a stdio demo server that writes its process id to the file named by $PIDFILE first
PID_SCRIPT = (
    "import os; open(os.environ['PIDFILE'], 'w').write(str(os.getpid())); "
    "from mail.examples.mcp_demo.server import main; main()"
)


def require_bearer(app: Any, token: str) -> Any:
    """``app`` answering 401 to HTTP requests without ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


@asynccontextmanager
async def http_demo(token: str | None = None) -> AsyncIterator[str]:
    """The demo MCP server over streamable HTTP; yields its endpoint URL (``.../mcp``)."""
    app: Any = build_server().streamable_http_app()
    if token is not None:
        app = require_bearer(app, token)
    async with serve(app) as base:
        yield f"{base}/mcp"


def python() -> str:
    return sys.executable
