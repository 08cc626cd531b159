"""``mail/*`` answers in the official SDK's shapes (``@multi-agent-protocol/sdk``'s types)
with our own fields kept, and the SDK's filters, over ``POST /map`` against a real server
(issue 36)."""

from __future__ import annotations

from typing import Any

import httpx
from tests.server.conftest import Running
from tests.server.test_map_admin import ADMIN, code, result, say
from tests.server.test_map_rpc import rpc


async def created(user: httpx.AsyncClient, **params: Any) -> str:
    return str((await result(user, "mail/create", params))["conversation"]["id"])


async def texts(client: httpx.AsyncClient, method: str, params: dict[str, Any]) -> list[str]:
    return [t["content"]["text"] for t in (await result(client, method, params))["turns"]]


async def test_conversations_participants_and_turns_have_the_sdks_fields(
    offline: Running,
) -> None:
    user = await offline.user()
    answer = await result(
        user,
        "mail/create",
        {
            "subject": "s",
            "initialParticipants": [{"id": "writer"}],
            "initialTurn": {"contentType": "text", "content": {"text": "Hi."}},
        },
    )
    conversation, me, turn = answer["conversation"], answer["participant"], answer["initialTurn"]
    cid = conversation["id"]
    assert conversation["participantCount"] == 2 and conversation["taskId"] is None
    assert (me["type"], me["conversationId"], me["role"]) == ("user", cid, "initiator")
    assert turn["participant"] == turn["participantId"] == "user:u1"
    assert turn["source"] == {"type": "explicit", "method": "mail/turn"}
    got = await result(user, "mail/get", {"conversationId": cid, "include": {"participants": True}})
    assert [(p["id"], p["type"]) for p in got["participants"]] == [
        ("user:u1", "user"),
        ("writer", "agent"),
    ]
    await result(user, "mail/leave", {"conversationId": cid, "participantId": "writer"})
    listed = await result(user, "mail/list", {})
    assert [c["participantCount"] for c in listed["conversations"]] == [1]
    closed = (await result(user, "mail/close", {"conversationId": cid}))["conversation"]
    assert closed["closedAt"] >= closed["createdAt"] and closed["participantCount"] == 1


async def test_every_list_says_has_more_and_a_null_cursor_on_its_last_page(
    offline: Running,
) -> None:
    user = await offline.user()
    cid = await created(user)
    first = await say(user, cid, "one")
    await say(user, cid, "two")
    await created(user)
    await result(user, "mail/thread/create", {"conversationId": cid, "rootTurnId": first})
    await result(user, "mail/thread/create", {"conversationId": cid, "rootTurnId": first})
    c = {"conversationId": cid}
    for method, params, name in (
        ("mail/list", {}, "conversations"),
        ("mail/turns/list", c, "turns"),
        ("mail/replay", c, "turns"),
        ("mail/thread/list", c, "threads"),
    ):
        page = await result(user, method, {**params, "limit": 1})
        assert (len(page[name]), page["hasMore"]) == (1, True), method
        rest = await result(user, method, {**params, "cursor": page["nextCursor"]})
        assert (len(rest[name]), rest["hasMore"], rest["nextCursor"]) == (1, False, None), method
        assert page[name][0]["id"] != rest[name][0]["id"], method


async def test_leave_invite_replay_and_stats_answer_the_sdks_fields(offline: Running) -> None:
    user = await offline.user()
    cid = await created(user)
    c = {"conversationId": cid}
    first = await say(user, cid, "one")
    await result(
        user, "mail/turn", {**c, "contentType": "data", "content": {"n": 1}, "threadId": None}
    )
    invited = await result(user, "mail/invite", {**c, "participant": {"id": "helper"}})
    assert invited["invited"] is True and invited["participant"]["type"] == "agent"
    left = await result(user, "mail/leave", {**c, "participantId": "helper"})
    assert left["success"] is True and left["participantId"] == "helper"
    replayed = await result(user, "mail/replay", {**c, "fromTurnId": first, "limit": 5})
    assert (replayed["missedCount"], len(replayed["turns"])) == (1, 1)
    everything = await result(user, "mail/replay", {**c, "limit": 1})
    assert (everything["missedCount"], len(everything["turns"])) == (2, 1)
    await result(user, "mail/thread/create", {**c, "rootTurnId": first})
    stats = (await result(user, "mail/get", {**c, "include": {"stats": True}}))["stats"]
    assert {k: stats[k] for k in ("totalTurns", "activeParticipants", "threadCount")} == {
        "totalTurns": 2,
        "activeParticipants": 1,
        "threadCount": 1,
    }
    assert stats["turnsByContentType"] == {"text": 1, "data": 1}
    assert (stats["turnCount"], stats["participantCount"]) == (2, 1)  # ours, kept


async def test_threads_count_their_turns_and_authors(offline: Running) -> None:
    user = await offline.user()
    cid = await created(user)
    c = {"conversationId": cid}
    root = await say(user, cid, "root")
    thread = (await result(user, "mail/thread/create", {**c, "rootTurnId": root}))["thread"]
    assert (thread["turnCount"], thread["participantCount"]) == (0, 0)
    assert thread["updatedAt"] == thread["createdAt"]
    await say(user, cid, "in it", threadId=thread["id"])
    await say(user, cid, "again", threadId=thread["id"])
    (listed,) = (await result(user, "mail/thread/list", c))["threads"]
    assert (listed["turnCount"], listed["participantCount"]) == (2, 1)
    assert listed["updatedAt"] >= thread["createdAt"]
    (got,) = (await result(user, "mail/get", {**c, "include": {"threads": True}}))["threads"]
    assert got == listed


async def test_summary_is_a_string_with_generated(offline: Running) -> None:
    user = await offline.user()
    cid = await created(user)
    c = {"conversationId": cid}
    first = await say(user, cid, "We will ship on Friday.")
    made = await result(user, "mail/summary", c)
    assert isinstance(made["summary"], str) and "ship" in made["summary"]
    assert made["generated"] is True and made["cachedAt"] == made["generatedAt"]
    assert made["generator"] == "extractive" and made["turnCount"] == 1  # ours, kept
    cached = await result(user, "mail/summary", c)
    assert cached == {**made, "generated": False}
    # include names sections only: another key changes nothing
    odd = await result(
        user, "mail/summary", {**c, "include": {"summary": False, "participants": True}}
    )
    assert odd == cached
    second = await say(user, cid, "Nothing else.")
    span = await result(user, "mail/summary", {**c, "scope": {"fromTurnId": second}})
    assert span["turnCount"] == 1 and span["generated"] is True
    assert span["scope"] == {"fromTurnId": second}
    assert (await result(user, "mail/summary", {**c, "scope": {"toTurnId": first}}))[
        "turnCount"
    ] == 1
    joined = await result(
        await offline.admin(), "mail/join", {**c, "catchUp": {"includeSummary": True}}
    )
    assert isinstance(joined["summary"], str)


async def test_visibility_ids_are_seen_by_the_listed_participants(offline: Running) -> None:
    # a turn with the SDK's {type: "participants", ids} was hidden from the listed ids
    user, admin = await offline.user(), await offline.admin()
    cid = await created(user)
    c = {"conversationId": cid}
    for_admin = {"type": "participants", "ids": [ADMIN]}
    turn = (
        await result(
            user,
            "mail/turn",
            {
                **c,
                "contentType": "text",
                "content": {"text": "to the admin"},
                "visibility": for_admin,
            },
        )
    )["turn"]
    assert turn["visibility"] == {**for_admin, "participants": [ADMIN]}  # both names
    await say(user, cid, "ours", visibility={"type": "participants", "participants": [ADMIN]})
    await say(user, cid, "to nobody", visibility={"type": "participants", "ids": ["user:u9"]})
    assert await texts(admin, "mail/turns/list", c) == ["to the admin", "ours"]
    assert await texts(user, "mail/turns/list", c) == ["to the admin", "ours", "to nobody"]


async def test_catch_up_from_a_turn_id(offline: Running) -> None:
    user, admin = await offline.user(), await offline.admin()
    cid = await created(user)
    c = {"conversationId": cid}
    first = await say(user, cid, "one")
    await say(user, cid, "two")
    joined = await result(admin, "mail/join", {**c, "catchUp": {"from": first}})
    assert [t["content"]["text"] for t in joined["history"]] == ["two"]
    await result(admin, "mail/leave", c)
    joined = await result(admin, "mail/join", {**c, "catchUp": {"from": 0}})
    assert [t["content"]["text"] for t in joined["history"]] == ["one", "two"]  # a time


async def test_the_sdks_turn_filters(offline: Running) -> None:
    user = await offline.user()
    cid = await created(user)
    c = {"conversationId": cid}
    ids = [await say(user, cid, text) for text in ("a", "b", "c", "d")]
    turns = (await result(user, "mail/turns/list", c))["turns"]
    listed = "mail/turns/list"
    after_b = {**c, "filter": {"afterTurnId": ids[1]}}
    assert await texts(user, listed, after_b) == ["c", "d"]
    before_c = {**c, "filter": {"beforeTurnId": ids[2]}}
    assert await texts(user, listed, before_c) == ["a", "b"]
    between = {**c, "filter": {"afterTurnId": ids[0], "beforeTurnId": ids[3]}}
    assert await texts(user, listed, between) == ["b", "c"]
    assert await texts(user, listed, {**between, "order": "desc"}) == ["c", "b"]
    last = turns[-1]["timestamp"]
    early = await texts(user, listed, {**c, "filter": {"beforeTimestamp": last}})
    assert "d" not in early and early == ["a", "b", "c"][: len(early)]
    everything = {**c, "filter": {"includeAllThreads": True}}
    assert await texts(user, listed, everything) == ["a", "b", "c", "d"]
    replay = {**c, "fromTimestamp": last}
    assert (await texts(user, "mail/replay", replay))[-1] == "d"
    assert await texts(user, "mail/replay", {**c, "fromTimestamp": last + 1}) == []


async def test_the_sdks_list_filters(offline: Running) -> None:
    user = await offline.user()
    parent = (await result(user, "mail/create", {}))["conversation"]
    child = (await result(user, "mail/create", {"parentConversationId": parent["id"]}))[
        "conversation"
    ]

    async def listed(**filter_: Any) -> list[str]:
        found = await result(user, "mail/list", {"filter": filter_})
        return [c["id"] for c in found["conversations"]]

    assert await listed(parentConversationId=parent["id"]) == [child["id"]]
    assert await listed(createdBefore=child["createdAt"]) == (
        [parent["id"]] if parent["createdAt"] < child["createdAt"] else []
    )
    assert await listed(createdAfter=parent["createdAt"] - 1) == [parent["id"], child["id"]]
    assert await listed(createdAfter=child["createdAt"]) == []


async def test_bad_or_unknown_filters_are_invalid_params(offline: Running) -> None:
    user = await offline.user()
    cid = await created(user)
    c = {"conversationId": cid}
    await say(user, cid, "one")
    cases: list[tuple[str, dict[str, Any], str]] = [
        (
            "mail/list",
            {"filter": {"createdSince": 5}},
            "params.filter: has no field 'createdSince'",
        ),
        ("mail/list", {"filter": {"createdAfter": "yesterday"}}, "params.filter.createdAfter"),
        ("mail/list", {"filter": {"createdBefore": -1}}, "params.filter.createdBefore"),
        ("mail/turns/list", {**c, "filter": {"after": 1}}, "params.filter: has no field 'after'"),
        ("mail/turns/list", {**c, "filter": {"afterTurnId": ""}}, "params.filter.afterTurnId"),
        (
            "mail/turns/list",
            {**c, "filter": {"afterTurnId": "turn-nope"}},
            "params.filter.afterTurnId: no turn 'turn-nope'",
        ),
        (
            "mail/turns/list",
            {**c, "filter": {"beforeTurnId": "turn-nope"}},
            "params.filter.beforeTurnId: no turn 'turn-nope'",
        ),
        ("mail/turns/list", {**c, "filter": {"beforeTimestamp": "x"}}, "filter.beforeTimestamp"),
        ("mail/replay", {**c, "fromTimestamp": 1.5}, "params.fromTimestamp"),
        ("mail/thread/list", {**c, "limit": 0}, "params.limit"),
        ("mail/summary", {**c, "scope": {"from": "x"}}, "params.scope: has no field 'from'"),
        (
            "mail/summary",
            {**c, "scope": {"toTurnId": "turn-nope"}},
            "params.scope.toTurnId: no turn 'turn-nope'",
        ),
        ("mail/join", {**c, "catchUp": {"from": True}}, "params.catchUp.from: must be a turn id"),
        (
            "mail/join",
            {**c, "catchUp": {"from": "turn-nope"}},
            "params.catchUp.from: no turn 'turn-nope'",
        ),
        (
            "mail/turn",
            {
                **c,
                "contentType": "text",
                "content": 1,
                "visibility": {"type": "participants", "ids": "x"},
            },
            "params.visibility.ids",
        ),
    ]
    admin = await offline.admin()
    for method, params, message in cases:
        caller = admin if method == "mail/join" else user
        error = (await rpc(caller, method, params))["error"]
        assert error["code"] == -32602, (method, params, error)
        assert message in error["message"], (method, error["message"])
        assert error["data"]["name"] == "INVALID_PARAMS"
    got = await result(user, "mail/get", {**c, "include": {"participants": True}})
    assert [p["id"] for p in got["participants"]] == ["user:u1"]  # the bad joins joined nobody
    assert await code(user, "mail/list", {"filter": {"parentConversationId": 5}}) == -32602


async def test_connect_answers_roles_and_features(offline: Running) -> None:
    user = await offline.user()
    answer = (await rpc(user, "map/connect", {}))["result"]
    assert answer["capabilities"]["roles"] == ["client"]
    assert answer["capabilities"]["features"] == []
    assert answer["capabilities"]["mail"]["enabled"] is True
    assert {"sessionId", "systemInfo", "principal", "ownedAgents", "reconnected"} <= set(answer)


async def test_a_participant_that_does_not_observe_lists_threads_without_counts(
    offline: Running,
) -> None:
    user, admin = await offline.user(), await offline.admin()
    cid = await created(user)
    c = {"conversationId": cid}
    root = await say(user, cid, "root")
    await result(user, "mail/thread/create", {**c, "rootTurnId": root})
    await say(
        user, cid, "in it", threadId=(await result(user, "mail/thread/list", c))["threads"][0]["id"]
    )
    await result(admin, "mail/join", {**c, "permissions": {"canObserve": False}})
    (thread,) = (await result(admin, "mail/thread/list", c))["threads"]
    assert (thread["turnCount"], thread["participantCount"]) == (0, 0)
    assert await code(admin, "mail/turns/list", c) == 10003
