"""Client errors are what v1.3.6's client docs say they are (seed 002, issue 22 item 2):
``RuntimeError`` for transport failures, ``ValueError`` for answers that are not JSON."""

from __future__ import annotations

import socket

import pytest

from mail.client import MAILClientError
from mail.errors import MAILError

from .conftest import Connect, Echo


def test_client_error_is_a_runtime_error_and_a_value_error() -> None:
    assert issubclass(MAILClientError, MAILError)
    assert issubclass(MAILClientError, RuntimeError)
    assert issubclass(MAILClientError, ValueError)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_unreachable_server_is_caught_as_runtime_error(connect: Connect) -> None:
    client = connect(f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(RuntimeError) as caught:
        await client.get_health()
    assert isinstance(caught.value, MAILClientError)


async def test_non_json_answer_is_caught_as_value_error(connect: Connect, echo: Echo) -> None:
    echo.answers["/health"] = (200, "text/html", b"<html>not json</html>")
    client = connect(echo.url)
    with pytest.raises(ValueError, match=r"."):
        await client.get_health()
