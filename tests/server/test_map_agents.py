"""MAP's agents and shared conversations against a real server, over real sockets: an agent
key registers agents (``map/agents/register``), they are listed with the swarm's own
(``map/agents/list``, ``map/agents/get``), unregistered by ``map/agents/unregister`` or
when their socket closes; an agent records turns as itself; ``mail/invite`` shares a
conversation with another key's caller (a user, a registered agent) in its role; ``map/send``
delivers to registered agents as ``map/message``; and the refusals."""

from __future__ import annotations

from typing import Any

import pytest
from tests.server.conftest import Running
from tests.server.test_map_rpc import rpc
from tests.server.test_map_socket import Peer, error_of, peer

pytestmark = pytest.mark.timeout(60)

HELLO = {"contentType": "text", "content": {"text": "hello"}}


async def register(client: Peer, **params: Any) -> dict[str, Any]:
    agent: dict[str, Any] = (await client.result("map/agents/register", params))["agent"]
    return agent


async def test_an_agent_key_registers_and_its_agents_are_listed(offline: Running) -> None:
    async with peer(offline, "agent-key") as client:
        agent = await register(client, name="Worker", role="processor", metadata={"k": 1})
        chosen = await register(client, agentId="reviewer-1")
        listed = (await client.result("map/agents/list"))["agents"]
        got = (await client.result("map/agents/get", {"agentId": agent["id"]}))["agent"]
        mine = await client.result("map/agents/list", {"filter": {"ownerId": "agent:peer1"}})
        swarm = await client.result("map/agents/list", {"filter": {"roles": ["swarm"]}})
        user = await offline.user()  # over HTTP too
        seen = (await rpc(user, "map/agents/get", {"agentId": "agent:reviewer-1"}))["result"]
    assert agent["name"] == "Worker" and agent["role"] == "processor"
    assert agent["state"] == "idle" and agent["ownerId"] == "agent:peer1"
    assert agent["metadata"] == {"k": 1} and agent["id"].startswith("agent-")
    assert chosen["id"] == "reviewer-1" and chosen["name"] == "reviewer-1"
    assert got == agent and seen["agent"] == chosen
    ids = [a["id"] for a in listed]
    assert ids == ["supervisor", "weather", "math", agent["id"], "reviewer-1"]
    supervisor = listed[0]
    assert supervisor["role"] == "swarm" and supervisor["ownerId"] == "swarm:offline"
    assert supervisor["metadata"] == {"x-swarm": "offline", "x-entrypoint": True}
    assert [a["id"] for a in mine["agents"]] == [agent["id"], "reviewer-1"]
    assert [a["id"] for a in swarm["agents"]] == ["supervisor", "weather", "math"]
    # the socket closed: its agents are gone
    assert (await rpc(user, "map/agents/list"))["result"]["agents"][3:] == []
    late = await rpc(user, "map/send", {"to": "reviewer-1", "payload": "still there?"})
    assert late["error"]["code"] == 2001


async def test_unregister(offline: Running) -> None:
    async with peer(offline, "agent-key") as one, peer(offline, "admin-key") as admin:
        a = await register(one)
        b = await register(one)
        gone = await one.result("map/agents/unregister", {"agentId": a["id"], "reason": "done"})
        again = await one.call("map/agents/unregister", {"agentId": a["id"]})
        swarm = await one.call("map/agents/unregister", {"agentId": "supervisor"})
        by_admin = await admin.result("map/agents/unregister", {"agentId": b["id"]})
    assert gone["agent"]["id"] == a["id"] and gone["agent"]["state"] == "stopped"
    assert error_of(again)[0] == 2001
    assert error_of(swarm)[0] == 1003 and "agent of the swarm" in error_of(swarm)[1]
    assert by_admin["agent"]["id"] == b["id"]


async def test_bad_registrations_and_lookups_are_refused(offline: Running) -> None:
    async with peer(offline, "agent-key") as agent, peer(offline, "user-key") as user:
        await register(agent, agentId="a1")
        taken = await agent.call("map/agents/register", {"agentId": "a1"})
        swarm = await agent.call("map/agents/register", {"agentId": "supervisor"})
        bad_id = await agent.call("map/agents/register", {"agentId": "a b"})
        bad_name = await agent.call("map/agents/register", {"name": 5})
        by_user = await user.call("map/agents/register", {"name": "x"})
        unknown = await user.call("map/agents/get", {"agentId": "nobody"})
        no_id = await user.call("map/agents/get", {})
        states = await user.call("map/agents/list", {"filter": {"states": "idle"}})
        limit = await user.call("map/agents/list", {"limit": 0})
        not_mine = await user.call("map/agents/unregister", {"agentId": "a1"})
    assert error_of(taken)[0] == 3000 and "'a1' already exists" in error_of(taken)[1]
    assert taken["error"]["data"] == {"name": "AGENT_EXISTS", "agentId": "a1"}
    assert error_of(swarm)[0] == 3000
    assert error_of(bad_id)[0] == -32602 and "params.agentId" in error_of(bad_id)[1]
    assert error_of(bad_name)[0] == -32602 and "params.name" in error_of(bad_name)[1]
    code, message = error_of(by_user)
    assert code == 1003 and "role 'agent'" in message and "user:u1" in message
    assert error_of(unknown)[0] == 2001 and "'nobody'" in error_of(unknown)[1]
    assert unknown["error"]["data"]["name"] == "AGENT_NOT_FOUND"
    assert error_of(no_id) == (-32602, "params.agentId: is required")
    assert error_of(states)[0] == -32602 and "params.filter.states" in error_of(states)[1]
    assert error_of(limit)[0] == -32602 and "params.limit" in error_of(limit)[1]
    assert error_of(not_mine)[0] == 1003 and "agent:peer1" in error_of(not_mine)[1]


async def test_an_agent_acts_as_itself_once_registered(offline: Running) -> None:
    async with peer(offline) as client:
        auth = {"method": "api-key", "credential": "agent-key"}
        connected = await client.result("map/connect", {"participantType": "agent", "auth": auth})
        early = await client.call("mail/create", {"subject": "too early"})
        agent = await register(client, agentId="writer")
        created = await client.result("mail/create", {"subject": "notes"})
        cid = created["conversation"]["id"]
        turn = await client.result("mail/turn", {"conversationId": cid, **HELLO})
        task = await client.call("mail/create", {"startTask": True, "initialTurn": HELLO})
    assert connected["principal"]["id"] == "agent:peer1"
    code, message = error_of(early)
    assert code == 1003 and "map/agents/register" in message
    over_http = await (await offline.agent()).post("/map", json={"jsonrpc": "2.0", "id": 1})
    assert over_http.status_code == 401  # an agent lives on a socket
    assert agent["id"] == "writer"
    assert created["participant"]["id"] == "agent:writer"
    assert turn["turn"]["participantId"] == "agent:writer"
    assert error_of(task)[0] == 1003 and "startTask" in error_of(task)[1]


async def test_an_invitation_shares_a_conversation_between_keys(offline: Running) -> None:
    async with (
        peer(offline, "user-key") as owner,
        peer(offline, "user2-key") as guest,
        peer(offline, "agent-key") as agent,
    ):
        await register(agent, agentId="helper")
        cid = (await owner.result("mail/create", {"subject": "shared"}))["conversation"]["id"]
        before = await guest.call("mail/get", {"conversationId": cid})
        await owner.result("mail/invite", {"conversationId": cid, "participant": {"id": "user:u2"}})
        observer = {"id": "agent:helper", "role": "observer"}
        await owner.result("mail/invite", {"conversationId": cid, "participant": observer})
        said = await guest.result("mail/turn", {"conversationId": cid, **HELLO})
        seen = await agent.result("mail/turns/list", {"conversationId": cid})
        muted = await agent.call("mail/turn", {"conversationId": cid, **HELLO})
        got = await guest.result(
            "mail/get", {"conversationId": cid, "include": {"participants": True}}
        )
        # leaving and coming back keeps the invitation's role
        await agent.result("mail/leave", {"conversationId": cid})
        promoted = await agent.call("mail/join", {"conversationId": cid, "role": "moderator"})
        back = await agent.result("mail/join", {"conversationId": cid})
        owners = await owner.result("mail/turns/list", {"conversationId": cid})
    assert error_of(before)[0] == 10000
    assert said["turn"]["participantId"] == "user:u2"
    assert [t["participantId"] for t in seen["turns"]] == ["user:u2"]
    assert error_of(muted)[0] == 10003  # an observer does not send
    people = sorted(p["id"] for p in got["participants"])
    assert people == ["agent:helper", "user:u1", "user:u2"]
    assert all("principal" not in p for p in got["participants"])
    assert error_of(promoted)[0] == 10003
    assert back["participant"]["role"] == "observer"
    assert back["participant"]["permissions"]["canSend"] is False
    assert [t["participantId"] for t in owners["turns"]] == ["user:u2"]


async def test_an_invitation_is_for_its_principal_only(offline: Running) -> None:
    async with peer(offline, "user-key") as owner, peer(offline, "user2-key") as guest:
        cid = (await owner.result("mail/create", {}))["conversation"]["id"]
        unknown = await owner.call(
            "mail/invite", {"conversationId": cid, "participant": {"id": "agent:nobody"}}
        )
        at_create = await owner.call(
            "mail/create", {"initialParticipants": [{"id": "agent:ghost"}]}
        )
        # named by another id than its own: no access for u2
        await owner.result("mail/invite", {"conversationId": cid, "participant": {"id": "u2"}})
        other = await guest.call("mail/get", {"conversationId": cid})
        await owner.result("mail/invite", {"conversationId": cid, "participant": {"id": "user:u2"}})
        inside = await guest.result("mail/get", {"conversationId": cid})
        await owner.result("mail/leave", {"conversationId": cid, "participantId": "user:u2"})
        removed = await guest.call("mail/get", {"conversationId": cid})
        rejoin = await guest.call("mail/join", {"conversationId": cid})
    code, message = error_of(unknown)
    assert code == 10005 and "'nobody'" in message and "map/agents/list" in message
    assert unknown["error"]["data"]["participantId"] == "agent:nobody"
    assert error_of(at_create)[0] == 10005
    assert error_of(other)[0] == 10000
    assert inside["conversation"]["id"] == cid
    assert error_of(removed)[0] == 10000 and error_of(rejoin)[0] == 10000


async def test_an_admin_still_observes_a_shared_conversation(offline: Running) -> None:
    async with peer(offline, "user-key") as owner, peer(offline, "admin-key") as admin:
        cid = (await owner.result("mail/create", {}))["conversation"]["id"]
        await owner.result("mail/turn", {"conversationId": cid, **HELLO})
        read = await admin.result("mail/turns/list", {"conversationId": cid})
    assert len(read["turns"]) == 1


async def test_send_delivers_to_a_registered_agent(offline: Running) -> None:
    async with peer(offline, "agent-key") as agent, peer(offline, "user-key") as user:
        await register(agent, agentId="inbox")
        cid = (await user.result("mail/create", {}))["conversation"]["id"]
        await user.result(
            "mail/invite", {"conversationId": cid, "participant": {"id": "agent:inbox"}}
        )
        sent = await user.result("map/send", {"to": {"agent": "inbox"}, "payload": {"n": 1}})
        note = await agent.note()
        meta = {"mail": {"conversationId": cid}}
        logged = await user.result("map/send", {"to": "agent:inbox", "payload": "hi", "meta": meta})
        second = await agent.note()
        reply = await agent.result("map/send", {"to": {"agents": ["inbox"]}, "payload": "me"})
        echo = await agent.note()
        turns = await user.result("mail/turns/list", {"conversationId": cid})
    assert sent["delivered"] == ["inbox"] and sent["messageId"].startswith("msg-")
    assert note["method"] == "map/message"
    message = note["params"]["message"]
    assert message["id"] == sent["messageId"] and message["from"] == "user:u1"
    assert message["to"] == {"agent": "inbox"} and message["payload"] == {"n": 1}
    assert second["params"]["message"]["meta"] == meta
    [turn] = turns["turns"]
    assert turn["id"] == logged["turnId"] and turn["participantId"] == "user:u1"
    assert turn["contentType"] == "text" and turn["content"] == {"text": "hi"}
    assert reply["delivered"] == ["inbox"] and echo["params"]["message"]["from"] == "agent:inbox"


async def test_send_refuses_unknown_recipients_and_addresses(offline: Running) -> None:
    async with peer(offline, "user-key") as user, peer(offline, "agent-key") as agent:
        await register(agent, agentId="a1")
        unknown = await user.call("map/send", {"to": {"agent": "nobody"}, "payload": "x"})
        some = await user.call("map/send", {"to": {"agents": ["a1", "ghost"]}, "payload": "x"})
        scope = await user.call("map/send", {"to": {"scope": "s1"}, "payload": "x"})
        into_swarm = await agent.call("map/send", {"to": {"agent": "supervisor"}, "payload": "x"})
        empty = await user.call("map/send", {"to": {"agents": []}, "payload": "x"})
    code, message = error_of(unknown)
    assert code == 2001 and "'nobody'" in message and "swarm 'offline'" in message
    assert error_of(some)[0] == 2001 and "'ghost'" in error_of(some)[1]
    assert error_of(scope)[0] == -32602 and "scope" in error_of(scope)[1]
    assert error_of(into_swarm)[0] == 1003
    assert error_of(empty)[0] == -32602
    assert agent.notes_now() == []  # nothing was delivered


async def test_send_to_a_swarm_agent_takes_text_and_any_json(offline: Running) -> None:
    async with peer(offline, "user-key") as user:
        text = await user.result("map/send", {"to": "supervisor", "payload": "weather in Paris?"})
        data = await user.result("map/send", {"to": {"agent": "supervisor"}, "payload": [1, 2]})
    assert text["status"] == "completed" and "Paris" in text["response"]
    assert data["status"] == "completed"
    task = offline.state.swarms.lookup("user", "u1").get_task_by_id(data["taskId"])
    bodies = [e.extra_data.get("full_message", {}) for e in task.log.all()]
    assert any(m.get("message", {}).get("body") == "[1, 2]" for m in bodies)
