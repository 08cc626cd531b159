"""MAILClient against a real server: server info, identity, health, swarms, debug bridge."""

from __future__ import annotations

import json

import pytest
from tests.client.conftest import SWARMS_JSON, Connect, Start, assert_shape
from tests.server.test_responses_bridge import swarm_with_breakpoint

from mail.client import (
    MAILClient,
    MAILClientError,
    ResponsesFunctionCall,
    ResponsesMessage,
    ResponsesOutputText,
    ResponsesResult,
)
from mail.version import PROTOCOL_VERSION

pytestmark = pytest.mark.timeout(30)


async def test_ping_and_get_root(user: MAILClient) -> None:
    root = await user.ping()

    assert root == await user.get_root() | {"uptime": root["uptime"]}
    assert root["name"] == "mail"
    assert root["protocol_version"] == root.get("version") == PROTOCOL_VERSION
    assert root["status"] == "running"
    assert root["swarm"] == {
        "name": "offline",
        "version": "1.3.0",
        "description": root["swarm"]["description"],
        "entrypoint": "supervisor",
        "keywords": ["demo", "offline", "weather", "math"],
        "public": True,
        "breakpoint_tools": [],
    }
    assert isinstance(root["uptime"], float)


async def test_root_and_health_need_no_key(offline: str, connect: Connect) -> None:
    anonymous = connect(offline, None)

    assert (await anonymous.ping())["name"] == "mail"
    assert (await anonymous.get_health())["status"] == "healthy"


async def test_get_health(user: MAILClient) -> None:
    health = await user.get_health()

    assert set(health) == {"status", "swarm_name", "timestamp", "storage", "unsaved_tasks"}
    assert (health["status"], health["swarm_name"], health["storage"]) == (
        "healthy",
        "offline",
        "ok",
    )
    assert health.get("unsaved_tasks", -1) >= 0
    assert health["timestamp"].endswith("+00:00")


async def test_update_health_as_admin(admin: MAILClient, user: MAILClient) -> None:
    updated = await admin.update_health("degraded")

    assert (updated["status"], updated["swarm_name"]) == ("degraded", "offline")
    assert (await user.get_health())["status"] == "degraded"


async def test_update_health_errors(admin: MAILClient, user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as wrong_role:
        await user.update_health("degraded")
    with pytest.raises(MAILClientError) as empty:
        await admin.update_health("  ")

    assert (wrong_role.value.status, wrong_role.value.detail) == (
        401,
        "invalid role: this route needs admin",
    )
    assert (empty.value.status, empty.value.detail) == (400, "status is required")
    assert str(empty.value) == "HTTP 400: status is required"


async def test_get_whoami(user: MAILClient, admin: MAILClient) -> None:
    assert await user.get_whoami() == {"id": "u1", "role": "user", "username": "u1"}
    assert (await admin.get_whoami())["role"] == "admin"


async def test_get_status(user: MAILClient) -> None:
    before = await user.get_status()
    await user.post_message("what is 6*7?")
    after = await user.get_status()

    assert before == {
        "swarm": {"name": "offline", "status": "ready"},
        "active_users": 0,
        "user_mail_ready": False,
        "user_task_running": False,
    }
    assert after["user_mail_ready"] is True
    assert after["active_users"] == 1


async def test_login_switches_key(offline: str, connect: Connect) -> None:
    client = connect(offline, None)

    identity = await client.login("admin-key")

    assert identity == {"id": "admin1", "role": "admin", "username": "admin1"}
    assert client.api_key == "admin-key"
    assert (await client.get_whoami())["id"] == "admin1"


async def test_failed_login_keeps_the_previous_key(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.login("wrong-key")

    assert (caught.value.status, caught.value.detail) == (401, "invalid API key")
    assert user.api_key == "user-key"
    assert (await user.get_whoami())["id"] == "u1"


async def test_logout_forgets_the_key(user: MAILClient) -> None:
    user.logout()

    assert user.api_key is None
    with pytest.raises(MAILClientError) as caught:
        await user.get_whoami()
    assert (caught.value.status, caught.value.detail) == (401, "no API key provided")


async def test_agent_key_is_refused_on_user_routes(offline: str, connect: Connect) -> None:
    with pytest.raises(MAILClientError) as caught:
        await connect(offline, "agent-key").get_status()

    assert (caught.value.status, caught.value.detail) == (
        401,
        "invalid role: this route needs admin or user",
    )


# --- swarms ----------------------------------------------------------------------------------


async def test_get_swarms_lists_the_public_local_swarm(user: MAILClient, offline: str) -> None:
    listed = await user.get_swarms()

    assert [s["swarm_name"] for s in listed["swarms"]] == ["offline"]
    entry = listed["swarms"][0]
    assert set(entry) == {
        "swarm_name",
        "base_url",
        "version",
        "last_seen",
        "is_active",
        "latency",
        "swarm_description",
        "keywords",
        "metadata",
    }
    # version: the swarm's protocol version (CONTRACT 8.5), not its swarms.json version
    assert (entry["is_active"], entry["latency"], entry["version"]) == (
        True,
        None,
        PROTOCOL_VERSION,
    )


async def test_register_swarm(admin: MAILClient, offline: str) -> None:
    # The server reads the peer's GET /; this server is a fine peer of itself.
    result = await admin.register_swarm("mirror", offline, metadata={"team": "qa"})

    assert result == {"status": "registered", "swarm_name": "mirror"}
    mirror = next(s for s in (await admin.get_swarms())["swarms"] if s["swarm_name"] == "mirror")
    assert (mirror["base_url"], mirror["metadata"]) == (offline, {"team": "qa"})


async def test_register_swarm_errors(admin: MAILClient, user: MAILClient, offline: str) -> None:
    with pytest.raises(MAILClientError) as bad_url:
        await admin.register_swarm("peer", "ftp://nowhere")
    with pytest.raises(MAILClientError) as not_admin:
        await user.register_swarm("peer", offline)

    assert bad_url.value.status == 400
    assert bad_url.value.detail == "base_url must be an http(s) URL, got 'ftp://nowhere'"
    assert not_admin.value.status == 401


async def test_dump_swarm(admin: MAILClient) -> None:
    assert await admin.dump_swarm() == {"status": "dumped", "swarm_name": "offline"}


async def test_load_swarm_from_json(admin: MAILClient) -> None:
    definitions = json.loads(SWARMS_JSON.read_text(encoding="utf-8"))
    offline = next(d for d in definitions if d["name"] == "offline")
    renamed = json.dumps({**offline, "name": "offline-2"})

    result = await admin.load_swarm_from_json(renamed)

    assert result == {"status": "success", "swarm_name": "offline-2"}


async def test_load_swarm_from_bad_json_is_400(admin: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await admin.load_swarm_from_json("{not json")

    assert caught.value.status == 400
    assert caught.value.detail.startswith("error loading swarm from JSON")


# --- interswarm --------------------------------------------------------------------------------


async def test_send_interswarm_message_is_refused_by_a_swarm_without_interswarm(
    user: MAILClient,
) -> None:
    # the offline swarm does not enable interswarm: the proxy send is a clear 400
    with pytest.raises(MAILClientError) as caught:
        await user.send_interswarm_message("hi", "peer-token", targets=["a@b"])

    assert caught.value.status == 400
    assert "interswarm" in caught.value.detail


async def test_post_interswarm_response_needs_the_agent_role(user: MAILClient) -> None:
    # POST /interswarm/response (the protocol 1.1 name) is for remote swarms (role agent)
    with pytest.raises(MAILClientError) as caught:
        await user.post_interswarm_response({"message_id": "m"})

    assert (caught.value.status, caught.value.detail) == (
        401,
        "invalid role: this route needs agent",
    )


# --- POST /responses -------------------------------------------------------------------------


async def test_debug_post_responses(start: Start, connect: Connect) -> None:
    client = connect(await start(debug=True))

    first = await client.debug_post_responses(
        [{"role": "user", "content": "what is 6*7?"}], [], instructions="be brief"
    )
    follow = await client.debug_post_responses(
        [{"role": "user", "content": "what is 2+3?"}], [], previous_response_id=first["id"]
    )

    assert (first["object"], first["status"], first["model"]) == (
        "response",
        "completed",
        "offline",
    )
    assert_shape(first, ResponsesResult)
    (message,) = first["output"]
    assert message["type"] == "message"
    assert_shape(message, ResponsesMessage)
    (text,) = message["content"]
    assert_shape(text, ResponsesOutputText)
    assert (text["type"], text["text"]) == ("output_text", "6*7 = 42")
    assert follow["id"] == first["id"]  # the task continues
    assert (await client.get_task(first["id"]))["task_id"] == first["id"]


async def test_debug_post_responses_pauses_and_resumes_at_a_breakpoint(
    start: Start, connect: Connect
) -> None:
    client = connect(await start(template=swarm_with_breakpoint(), debug=True))

    paused = await client.debug_post_responses([{"role": "user", "content": "ok?"}], [])
    (call,) = paused["output"]
    assert call["type"] == "function_call"
    done = await client.debug_post_responses(
        [{"type": "function_call_output", "call_id": call["call_id"], "output": "yes"}],
        [],
        previous_response_id=paused["id"],
    )

    assert_shape(paused, ResponsesResult)
    assert_shape(call, ResponsesFunctionCall)
    assert (call["name"], json.loads(call["arguments"])) == ("ask_human", {"question": "ok?"})
    assert done["id"] == paused["id"]
    assert done["output"][0]["type"] == "message"
    assert done["output"][0]["content"][0]["text"] == "human said yes"


async def test_debug_post_responses_needs_debug_mode(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.debug_post_responses([{"role": "user", "content": "hi"}], [])

    assert caught.value.status == 404


async def test_debug_post_responses_bad_input_is_400(start: Start, connect: Connect) -> None:
    client = connect(await start(debug=True))

    with pytest.raises(MAILClientError) as caught:
        await client.debug_post_responses([], [])

    assert caught.value.status == 400
    assert caught.value.detail == "parameter 'input' holds no new user text"
