"""Fixtures for the A2A façade's tests: a real server on loopback and ``a2a-sdk``'s own
client pointed at it.

* :func:`a2a_start`: ``await a2a_start(template=None, config=None)`` serves the offline
  swarm (or ``template``) with uvicorn behind the static test keys and yields its URL;
* :func:`connect`: ``async with connect(url, key, streaming=...) as client``: the SDK's
  client built from the server's agent card, sending ``Authorization: Bearer <key>``;
* :func:`text_message`, :func:`send`: a user message, and the events of one send.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse
from tests._servers import serve
from tests.server.conftest import KEYS, WAIT, make_config

from mail.api import MAILSwarmTemplate
from mail.config import MAILConfig
from mail.server import create_app
from mail.testing import StaticAuth

USER_KEY = "user-key"

Start = Callable[..., Awaitable[str]]


@pytest.fixture
async def a2a_start(tmp_path: Path) -> AsyncIterator[Start]:
    async with AsyncExitStack() as stack:

        async def start(
            template: MAILSwarmTemplate | None = None, config: MAILConfig | None = None
        ) -> str:
            app = create_app(
                config or make_config(tmp_path), template=template, authenticator=StaticAuth(KEYS)
            )
            url: str = await stack.enter_async_context(serve(app))
            return url

        yield start


@pytest.fixture
async def offline_url(a2a_start: Start) -> str:
    return await a2a_start()


@asynccontextmanager
async def connect(
    url: str, key: str | None = USER_KEY, *, streaming: bool = False
) -> AsyncIterator[Client]:
    """The SDK's client of the agent at ``url`` (its card read from the server)."""
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    async with httpx.AsyncClient(headers=headers, timeout=WAIT) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        client = await create_client(url, client_config=config)
        try:
            yield client
        finally:
            await client.close()


def text_message(text: str, *, context_id: str = "", task_id: str = "", **extra: Any) -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=extra.pop("message_id", ""),
        parts=extra.pop("parts", None) or [Part(text=text)],
        context_id=context_id,
        task_id=task_id,
        **extra,
    )


async def send(client: Client, message: Message) -> list[StreamResponse]:
    """Every response of one ``SendMessage`` (one, or a stream's events)."""
    if not message.message_id:
        import uuid

        message.message_id = str(uuid.uuid4())
    return [r async for r in client.send_message(SendMessageRequest(message=message))]
