"""What MAILClient puts on the wire and how it reads odd answers (a recording HTTP server),
plus sessions, transport errors, configuration and the credentials file."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.client.conftest import Connect, Echo

from mail.client import (
    USER_AGENT,
    MAILClient,
    MAILClientError,
    default_api_key,
    local_server_url,
)
from mail.config import ClientConfig, load_config
from mail.errors import ConfigurationError
from mail.version import __version__

pytestmark = pytest.mark.timeout(30)


def sent_json(echo: Echo, index: int = -1) -> Any:
    return json.loads(echo.requests[index]["body"])


async def test_headers(echo: Echo, connect: Connect) -> None:
    await connect(echo.url, "secret-key").get_status()
    await connect(echo.url, None).get_health()

    with_key, without_key = (r["headers"] for r in echo.requests)
    assert with_key["authorization"] == "Bearer secret-key"
    assert with_key["accept"] == "application/json"
    assert with_key["user-agent"] == USER_AGENT == f"MAIL-Client/{__version__} (mail-swarms)"
    assert "authorization" not in without_key


async def test_post_message_sends_every_field_with_explicit_nulls(
    echo: Echo, connect: Connect
) -> None:
    echo.answers["/message"] = (200, "application/json", b'{"response": "r", "events": null}')

    await connect(echo.url).post_message("hello", max_steps=3)

    request = echo.requests[-1]
    assert (request["method"], request["path"]) == ("POST", "/message")
    sent = sent_json(echo)
    assert uuid.UUID(sent.pop("task_id")).version == 4  # drawn by the client, for its retries
    assert sent == {
        "subject": "New Message",
        "body": "hello",
        "msg_type": "request",
        "entrypoint": None,
        "show_events": False,
        "resume_from": None,
        "kwargs": {"max_steps": 3},
    }
    assert "idempotency-key" not in request["headers"]  # a new task's key is its id


async def test_post_message_stream_request(echo: Echo, connect: Connect) -> None:
    echo.answers["/message"] = (200, "text/event-stream", b"event: task_complete\ndata: {}\n\n")

    stream = await connect(echo.url).post_message_stream(
        "hi", "Subj", entrypoint="math", resume=False, breakpoint_tool_caller="math"
    )
    events = [e async for e in stream]

    assert [e.event for e in events] == ["task_complete"]
    assert echo.requests[-1]["headers"]["accept"] == "text/event-stream"
    sent = sent_json(echo)
    assert uuid.UUID(sent.pop("task_id")).version == 4
    assert sent == {
        "subject": "Subj",
        "body": "hi",
        "msg_type": "request",
        "entrypoint": "math",
        "resume_from": None,
        "kwargs": {"breakpoint_tool_caller": "math"},
        "stream": True,
    }


async def test_a_resumable_stream_names_its_task_with_a_time_ordered_uuid4(
    echo: Echo, connect: Connect
) -> None:
    echo.answers["/message"] = (200, "text/event-stream", b"event: task_complete\ndata: {}\n\n")
    before = time.time_ns() // 1_000_000
    stream = await connect(echo.url).post_message_stream("hi", "Subj")
    [_ async for _ in stream]
    after = time.time_ns() // 1_000_000

    task_id = uuid.UUID(sent_json(echo)["task_id"])
    assert (task_id.version, task_id.variant) == (4, uuid.RFC_4122)
    assert before <= task_id.int >> 80 <= after  # as the server's own task ids


async def test_get_task_sends_the_query_parameter_and_the_json_body(
    echo: Echo, connect: Connect
) -> None:
    await connect(echo.url).get_task("t 1")

    assert echo.requests[-1]["method"] == "GET"
    assert echo.requests[-1]["path"] == "/task"
    assert echo.requests[-1]["query"] == {"task_id": "t 1"}
    assert sent_json(echo) == {"task_id": "t 1"}  # what a v1.3.6 server reads (CONTRACT 1.5)


async def test_task_events_request_and_pings(echo: Echo, connect: Connect) -> None:
    body = (
        b": comment\r\nevent: ping\r\ndata: {}\r\n\r\n"
        b"event: new_message\r\ndata: {}\r\nid: 8\r\n\r\n"
        b"event: ping\r\ndata: {}\r\n\r\n"
        b"event: task_complete\r\ndata: {}\r\n\r\n"
        b"event: after_the_end\r\ndata: {}\r\n\r\n"
    )
    echo.answers["/tasks/t/1/events"] = (200, "text/event-stream", body)
    client = connect(echo.url)

    quiet = [e.event async for e in await client.task_events("t/1", after=7, ignore_pings=True)]
    loud = [e.event async for e in await client.task_events("t/1", last_event_id="7")]

    assert quiet == ["new_message", "task_complete"]
    assert loud == ["ping", "new_message", "ping", "task_complete"]
    first, second = echo.requests
    assert first["raw_path"] == "/tasks/t%2F1/events?after=7"  # the id is one path segment
    assert first["query"] == {"after": "7"}
    assert "last-event-id" not in first["headers"]
    assert second["headers"]["last-event-id"] == "7"
    assert second["query"] == {}


async def test_swarm_payloads(echo: Echo, connect: Connect) -> None:
    client = connect(echo.url)

    await client.register_swarm("peer", "http://peer:1")
    register = sent_json(echo)
    await client.load_swarm_from_json('{"name": "x"}')
    load = sent_json(echo)
    await client.update_health("ok")
    health = sent_json(echo)

    assert register == {
        "name": "peer",
        "base_url": "http://peer:1",
        "auth_token": None,
        "volatile": True,
        "metadata": None,
    }
    assert load == {"json": '{"name": "x"}'}
    assert health == {"status": "ok"}


async def test_send_interswarm_message_sends_only_given_fields(
    echo: Echo, connect: Connect
) -> None:
    client = connect(echo.url)

    await client.send_interswarm_message("hello", "tok")
    minimal = sent_json(echo)
    await client.send_interswarm_message(
        "hello",
        "tok",
        subject="S",
        targets=["a@remote"],
        msg_type="request",
        task_id="t",
        routing_info={"x": 1},
        stream=False,
        ignore_stream_pings=True,
    )
    full = sent_json(echo)

    assert echo.requests[-1]["path"] == "/interswarm/message"
    assert minimal == {"body": "hello", "user_token": "tok"}
    assert full == {
        "body": "hello",
        "user_token": "tok",
        "subject": "S",
        "targets": ["a@remote"],
        "msg_type": "request",
        "task_id": "t",
        "routing_info": {"x": 1},
        "stream": False,
        "ignore_stream_pings": True,
    }


async def test_raw_interswarm_messages(echo: Echo, connect: Connect) -> None:
    client = connect(echo.url)
    message = {"message_id": "m1", "payload": {"task_id": "t"}}

    assert await client.post_interswarm_message(message) == {"ok": True}
    assert await client.post_interswarm_response(message) == {"ok": True}

    assert [r["path"] for r in echo.requests] == ["/interswarm/message", "/interswarm/response"]
    assert [json.loads(r["body"]) for r in echo.requests] == [message, message]


async def test_debug_post_responses_decodes_the_json_string(echo: Echo, connect: Connect) -> None:
    inner = {"id": "t", "object": "response"}
    echo.answers["/responses"] = (200, "application/json", json.dumps(json.dumps(inner)).encode())

    result = await connect(echo.url).debug_post_responses(
        [{"role": "user", "content": "hi"}], [], tool_choice="auto", extra=1
    )

    assert result == inner
    assert sent_json(echo) == {
        "input": [{"role": "user", "content": "hi"}],
        "tools": [],
        "instructions": None,
        "previous_response_id": None,
        "tool_choice": "auto",
        "parallel_tool_calls": None,
        "kwargs": {"extra": 1},
    }


# --- odd answers -------------------------------------------------------------------------------


async def test_non_json_success_names_the_content_type(echo: Echo, connect: Connect) -> None:
    echo.answers["/"] = (200, "text/html", b"<html>hello</html>")

    with pytest.raises(MAILClientError) as caught:
        await connect(echo.url).ping()

    assert caught.value.detail == "GET /: expected JSON, got text/html"
    assert caught.value.status == 200


async def test_invalid_json_success(echo: Echo, connect: Connect) -> None:
    echo.answers["/health"] = (200, "application/json", b"{broken")

    with pytest.raises(MAILClientError) as caught:
        await connect(echo.url).get_health()

    assert caught.value.detail.startswith("GET /health: invalid JSON")
    assert isinstance(caught.value.__cause__, ValueError)


async def test_json_that_is_not_an_object(echo: Echo, connect: Connect) -> None:
    echo.answers["/whoami"] = (200, "application/json", b"[1, 2]")

    with pytest.raises(MAILClientError) as caught:
        await connect(echo.url).get_whoami()

    assert caught.value.detail == "GET /whoami: expected a JSON object, got list"


async def test_error_without_json_detail_uses_the_reason(echo: Echo, connect: Connect) -> None:
    echo.answers["/status"] = (500, "text/plain", b"Internal Server Error")
    echo.answers["/tasks"] = (422, "application/json", b'{"detail": [{"msg": "bad"}]}')
    client = connect(echo.url)

    with pytest.raises(MAILClientError) as plain:
        await client.get_status()
    with pytest.raises(MAILClientError) as listed:
        await client.get_tasks()

    assert (plain.value.status, plain.value.detail) == (500, "Internal Server Error")
    assert (listed.value.status, listed.value.detail) == (422, '[{"msg": "bad"}]')


# --- transport ---------------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens on it any more


async def test_connection_refused(connect: Connect) -> None:
    url = f"http://127.0.0.1:{closed_port()}"

    with pytest.raises(MAILClientError) as caught:
        await connect(url).ping()
    with pytest.raises(MAILClientError) as streaming:
        await connect(url).post_message_stream("hi")

    for error in (caught.value, streaming.value):
        assert error.status is None
        assert error.detail.startswith(f"cannot reach {url}: ")
        assert isinstance(error.__cause__, aiohttp.ClientConnectorError)


async def test_invalid_url(connect: Connect) -> None:
    with pytest.raises(MAILClientError) as caught:
        await connect("nonsense").ping()

    assert caught.value.status is None
    assert isinstance(caught.value.__cause__, aiohttp.ClientError)


async def test_external_session_is_used_and_left_open(echo: Echo) -> None:
    async with aiohttp.ClientSession(headers={"X-Team": "qa"}) as session:
        async with MAILClient(echo.url, "k", session=session, config=ClientConfig()) as client:
            await client.ping()
        assert not session.closed
        async with MAILClient(echo.url, "k", session=session, config=ClientConfig()) as again:
            await again.ping()

    assert [r["headers"]["x-team"] for r in echo.requests] == ["qa", "qa"]


async def test_closed_external_session_is_an_error(echo: Echo) -> None:
    session = aiohttp.ClientSession()
    await session.close()
    client = MAILClient(echo.url, session=session, config=ClientConfig())

    with pytest.raises(MAILClientError, match="session given to MAILClient is closed"):
        await client.ping()


async def test_own_session_is_closed_and_reopened(echo: Echo) -> None:
    client = MAILClient(echo.url, config=ClientConfig())
    async with client:
        await client.ping()
        session = client._session  # white-box: the client's own session
    assert session is not None
    assert session.closed

    async with client:  # usable again
        await client.ping()
    assert len(echo.requests) == 2


async def test_external_session_with_raise_for_status(offline: str) -> None:
    async with aiohttp.ClientSession(raise_for_status=True) as session:
        client = MAILClient(offline, "wrong", session=session, config=ClientConfig())
        with pytest.raises(MAILClientError) as caught:
            await client.get_whoami()

    assert caught.value.status == 401
    assert isinstance(caught.value.__cause__, aiohttp.ClientResponseError)


async def test_the_key_is_never_logged(
    echo: Echo, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mail.client")
    client = connect(echo.url, "very-secret-key", verbose=True)

    await client.ping()
    await client.login("other-secret-key")

    ours = [r for r in caplog.records if r.name == "mail.client"]
    assert [r.levelno for r in ours] == [logging.INFO, logging.INFO]
    assert "GET / -> 200" in caplog.text
    assert "secret" not in caplog.text
    assert "secret" not in repr(client)


# --- configuration -----------------------------------------------------------------------------


async def test_config_comes_from_mail_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "mail.toml"
    toml.write_text('[client]\ntimeout = 12.5\nverbose = true\napi_key = "from-file"\n')
    monkeypatch.setenv("MAIL_CONFIG_PATH", str(toml))

    client = MAILClient("http://127.0.0.1:1/")
    explicit = MAILClient("http://127.0.0.1:1", "given")

    assert client.url == "http://127.0.0.1:1"
    assert (client.config.timeout, client.config.verbose) == (12.5, True)
    assert client.api_key == "from-file"
    assert explicit.api_key == "given"


async def test_unusable_mail_toml_gives_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    toml = tmp_path / "mail.toml"
    toml.write_text("[client]\ntimeout = -1\n")
    monkeypatch.setenv("MAIL_CONFIG_PATH", str(toml))

    client = MAILClient("http://127.0.0.1:1")

    assert client.config == ClientConfig()
    assert "using the default client settings" in caplog.text


def test_local_server_url(tmp_path: Path) -> None:
    config = load_config(None, env={"MAIL_DATA_DIR": str(tmp_path)}, search=False)
    assert local_server_url(config) is None  # no server recorded
    record = {"url": "http://127.0.0.1:19000", "pid": os.getpid()}  # a process that runs
    (tmp_path / "server.json").write_text(json.dumps(record))
    assert local_server_url(config) == "http://127.0.0.1:19000"
    (tmp_path / "server.json").write_text("{broken")
    assert local_server_url(config) is None


def test_default_api_key(tmp_path: Path) -> None:
    config = load_config(None, env={"MAIL_DATA_DIR": str(tmp_path)}, search=False)
    credentials = Path(config.auth.credentials_file)
    assert default_api_key(config) is None  # no file yet

    keys = [
        {"role": "admin", "id": "admin", "key": "k-admin"},
        {"role": "user", "id": "alice", "key": "k-alice"},
        {"role": "user", "id": "user", "key": "k-user"},
    ]
    credentials.write_text(json.dumps({"version": 1, "keys": keys}))
    assert default_api_key(config) == "k-user"
    assert default_api_key(config, role="admin") == "k-admin"
    assert default_api_key(config, role="agent") is None

    credentials.write_text(json.dumps({"version": 1, "keys": keys[:2]}))
    assert default_api_key(config) == "k-alice"

    credentials.write_text("{broken")
    with pytest.raises(ConfigurationError, match="is malformed"):
        default_api_key(config)
