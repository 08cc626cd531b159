"""``POST /map`` against a real server: JSON-RPC framing, map/connect, every mail/* method,
mail off (10010) and a restart on the same SQLite data directory (C1, C3, C5, C27)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from tests._servers import serve
from tests.db.conftest import postgres_admin_url, postgres_url
from tests.server.conftest import KEYS, Running, Start, make_config

__all__ = ["postgres_admin_url", "postgres_url"]  # the fixtures the restart test uses

from mail.conversations import METHODS
from mail.server import create_app
from mail.testing import StaticAuth

if TYPE_CHECKING:
    from mail.config import MAILConfig


@asynccontextmanager
async def serving(config: MAILConfig) -> AsyncIterator[httpx.AsyncClient]:
    """A server of ``config`` (behind the test keys) while the block runs, and a client of
    user u1: a restart is two blocks on one configuration."""
    headers = {"Authorization": "Bearer user-key"}
    app = create_app(config, authenticator=StaticAuth(KEYS))
    async with serve(app) as url, httpx.AsyncClient(base_url=url, headers=headers) as client:
        yield client


async def rpc(client: httpx.AsyncClient, method: str, params: Any = None, id: Any = 1) -> Any:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    response = await client.post("/map", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] == id
    return answer


async def test_connect_announces_mail(offline: Running) -> None:  # C5
    user = await offline.user()
    answer = await rpc(user, "map/connect", {"capabilities": {"mail": {"canCreate": True}}})
    mail = answer["result"]["capabilities"]["mail"]
    assert mail == {
        "enabled": True,
        "canCreate": True,
        "canJoin": True,
        "canInvite": True,
        "canViewHistory": True,
        "canCreateThreads": True,
    }


async def test_connect_answers_the_sdks_handshake_over_http(offline: Running) -> None:
    # the official SDK's map/connect params; HTTP keeps no connection: a session per request
    user = await offline.user()
    params = {"protocolVersion": 1, "participantType": "client", "name": "sdk"}
    first = (await rpc(user, "map/connect", params))["result"]
    second = (await rpc(user, "map/connect", params))["result"]
    same = await rpc(user, "map/connect", {"auth": {"method": "api-key", "credential": "user-key"}})
    other = await rpc(user, "map/authenticate", {"method": "bearer", "credential": "admin-key"})
    left = (await rpc(user, "map/disconnect", {}))["result"]
    assert first["protocolVersion"] == 1
    assert first["participantId"] == "user:u1"
    assert first["sessionId"] and first["sessionId"] != second["sessionId"]
    assert first["principal"] == {"id": "user:u1", "claims": {"role": "user"}}
    assert first["systemInfo"]["name"] == "mail" and first["reconnected"] is False
    assert first["ownedAgents"] == []
    assert first["server"]["mapMail"] == "0.0.6" and first["server"]["swarm"] == "offline"
    assert same["result"]["participantId"] == "user:u1"  # params.auth agrees with the header
    assert other["result"]["success"] is False  # ... and may not name another caller
    assert set(left["session"]) == {"id", "createdAt", "closedAt"}


async def test_mail_off_answers_10010_and_hides_the_capability(
    start: Start, tmp_path: Path
) -> None:  # C27
    running = await start(make_config(tmp_path, map={"enabled": False}))
    user = await running.user()
    answer = await rpc(user, "map/connect", {})
    assert "mail" not in answer["result"]["capabilities"]
    for method in METHODS:
        error = (await rpc(user, method, {"conversationId": "c"}))["error"]
        assert error["code"] == 10010, method


async def test_every_mail_method_is_handled(offline: Running) -> None:  # C3
    user = await offline.user()
    created = (
        await rpc(
            user,
            "mail/create",
            {
                "type": "user-session",
                "initialTurn": {"contentType": "text", "content": {"text": "hello"}},
            },
        )
    )["result"]
    cid, turn = created["conversation"]["id"], created["initialTurn"]["id"]
    thread = (await rpc(user, "mail/thread/create", {"conversationId": cid, "rootTurnId": turn}))[
        "result"
    ]["thread"]
    params: dict[str, dict[str, Any]] = {
        "mail/create": {},
        "mail/get": {"conversationId": cid, "include": {"participants": True}},
        "mail/list": {"limit": 5},
        "mail/invite": {"conversationId": cid, "participant": {"id": "agent:math"}},
        "mail/turn": {"conversationId": cid, "contentType": "x-tool-call", "content": {}},
        "mail/turns/list": {"conversationId": cid},
        "mail/thread/create": {
            "conversationId": cid,
            "rootTurnId": turn,
            "parentThreadId": thread["id"],
        },
        "mail/thread/list": {"conversationId": cid},
        "mail/summary": {"conversationId": cid},
        "mail/replay": {"conversationId": cid, "fromTurnId": turn},
        "x-mail/turn/redact": {"conversationId": cid, "turnId": turn},
        "mail/leave": {"conversationId": cid},
        "mail/join": {"conversationId": cid, "role": "initiator"},
        "mail/close": {"conversationId": cid, "reason": "done"},
    }
    assert set(params) == set(METHODS)
    for method, p in params.items():
        answer = await rpc(user, method, p)
        assert "result" in answer, (method, answer)
    got = (await rpc(user, "mail/get", {"conversationId": cid}))["result"]
    assert got["conversation"]["status"] == "completed"


async def test_json_rpc_errors(offline: Running) -> None:
    user = await offline.user()
    parse = (await user.post("/map", content=b"{not json")).json()
    assert parse == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "parse error: the body is not JSON"},
    }
    assert (await user.post("/map", json={"id": 3})).json()["error"]["code"] == -32600
    assert (await user.post("/map", json=[])).json()["error"]["code"] == -32600
    assert (await rpc(user, "map/nope", {}))["error"]["code"] == -32601
    bad = await user.post(
        "/map", json={"jsonrpc": "2.0", "id": 4, "method": "mail/get", "params": [1]}
    )
    assert bad.json()["error"]["code"] == -32602
    missing = (await rpc(user, "mail/get", {"conversationId": "conv-x"}))["error"]
    assert missing["code"] == 10000 and missing["data"]["name"] == "CONVERSATION_NOT_FOUND"
    anon = await offline.anon()
    refused = await anon.post("/map", json={"jsonrpc": "2.0", "id": 1, "method": "map/connect"})
    assert refused.status_code == 401 and "detail" in refused.json()


async def test_a_create_with_bad_participants_stores_nothing(offline: Running) -> None:
    user = await offline.user()
    for people, says in (
        ("agent:bob", "params.initialParticipants: must be a list"),
        (["agent:bob"], "params.initialParticipants[0]: must be an object"),
        ([{"id": "agent:bob", "role": "boss"}], "params.initialParticipants[0].role: must be"),
    ):
        params = {"subject": "half made", "initialParticipants": people}
        error = (await rpc(user, "mail/create", params))["error"]
        assert error["code"] == -32602 and says in error["message"], error
    listed = (await rpc(user, "mail/list", {}))["result"]["conversations"]
    assert [c for c in listed if c["subject"] == "half made"] == []
    twice = [{"id": "agent:math"}, {"id": "agent:math", "role": "observer"}]
    created = (await rpc(user, "mail/create", {"initialParticipants": twice}))["result"]
    got = await rpc(
        user,
        "mail/get",
        {"conversationId": created["conversation"]["id"], "include": {"participants": True}},
    )
    roles = {p["id"]: p["role"] for p in got["result"]["participants"]}
    assert roles == {created["participant"]["id"]: "initiator", "agent:math": "worker"}


async def test_batches_answer_each_request_but_notifications(offline: Running) -> None:
    user = await offline.user()
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "map/connect"},
        {"jsonrpc": "2.0", "method": "mail/list"},  # a notification: no answer
        {"jsonrpc": "2.0", "id": "b", "method": "mail/nope"},
        5,
    ]
    answers = (await user.post("/map", json=batch)).json()
    assert [a["id"] for a in answers] == ["a", "b", None]
    assert "result" in answers[0]
    assert [a["error"]["code"] for a in answers[1:]] == [-32601, -32600]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_conversations_survive_a_restart(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:  # C1
    database = None
    if backend == "postgres":  # skipped, with the reason, without MAIL_TEST_POSTGRES_URL
        database = {"url": request.getfixturevalue("postgres_url")}
    config = make_config(tmp_path, database=database)
    async with serving(config) as c:
        cid = (await rpc(c, "mail/create", {"subject": "kept"}))["result"]["conversation"]["id"]
        turn = (
            await rpc(
                c,
                "mail/turn",
                {"conversationId": cid, "contentType": "text", "content": {"text": "still here"}},
            )
        )["result"]["turn"]
        await rpc(c, "mail/thread/create", {"conversationId": cid, "rootTurnId": turn["id"]})
    async with serving(config) as c:
        got = (
            await rpc(
                c,
                "mail/get",
                {"conversationId": cid, "include": {"threads": True, "participants": True}},
            )
        )["result"]
        assert got["conversation"]["subject"] == "kept"
        assert [t["rootTurnId"] for t in got["threads"]] == [turn["id"]]
        turns = (await rpc(c, "mail/turns/list", {"conversationId": cid}))["result"]["turns"]
        assert turns == [turn]


async def test_an_oversized_body_is_413_with_detail(start: Start, tmp_path: Path) -> None:
    running = await start(make_config(tmp_path, max_body_bytes=2048))
    user = await running.user()
    big = {"jsonrpc": "2.0", "id": 1, "method": "mail/create", "params": {"subject": "x" * 4096}}
    response = await user.post("/map", json=big)
    assert response.status_code == 413 and "detail" in response.json()
