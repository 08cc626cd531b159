"""``POST /map`` params checked before any effect, on a real server: a wrong type or value
in any field of any method is -32602 naming the field (or the method's documented
error), never an HTTP 500, and the keep-alive connection goes on; text the stores cannot
hold is refused; a batch answers each item on its own; a bad ``mail/join`` joins nobody;
leaving a closed conversation is 10001.

The wrong-type sweep reads each method's params model (its JSON schema) for the types a
field takes, so a field added to a model is swept without touching this file.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import httpx
import pytest
from tests.server.conftest import Running
from tests.server.test_map_rpc import rpc

from mail.conversations import METHODS
from mail.conversations._params import PARAMS

pytestmark = pytest.mark.timeout(120)

#: a value of each JSON kind (a float, an integer, a string, true, a list, an object, null)
WRONG: list[Any] = [2.5, 7, "x", True, [1], {"k": 1}, None]
#: the codes a request with a storable, well-typed but unsuitable value may get: bad
#: params, a map/send refused as POST /message refuses it, a refused ``auth`` (1001 key,
#: 1003 role, 1005 method), map/send to no such agent (2001), MAP Mail's own (10000-10010)
ALLOWED = {-32602, -32000, 1001, 1003, 1005, 2001, *range(10000, 10011)}

SURROGATE = "contains a lone surrogate (U+D800), which is not Unicode text"
NUL = "contains the NUL character U+0000, which the stores cannot hold"


def local_port(response: httpx.Response) -> Any:
    """The client side of the connection that carried ``response``."""
    return response.extensions["network_stream"].get_extra_info("client_addr")


async def post(client: httpx.AsyncClient, body: str | dict[str, Any] | list[Any]) -> Any:
    """``POST /map`` (``body`` as JSON text or a value): HTTP 200 with a JSON answer."""
    text = body if isinstance(body, str) else json.dumps(body)
    response = await client.post(
        "/map", content=text.encode(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def setup(user: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    """A conversation with a turn and a thread, and valid params of every method on it."""
    created = (await rpc(user, "mail/create", {"initialTurn": HELLO}))["result"]
    cid, turn = created["conversation"]["id"], created["initialTurn"]["id"]
    c = {"conversationId": cid}
    thread = (await rpc(user, "mail/thread/create", {**c, "rootTurnId": turn}))["result"]
    tid = thread["thread"]["id"]
    return {**map_params(c, tid), **mail_params(c, turn, tid)}


HELLO = {"contentType": "text", "content": {"text": "hello"}}
VISIBILITY = {"type": "participants", "participants": ["agent:w"], "roles": ["worker"]}
PERMISSIONS = {"canSend": True, "historyAccess": "full"}


def map_params(c: dict[str, str], tid: str) -> dict[str, dict[str, Any]]:
    return {
        "map/connect": {
            "capabilities": {"mail": {"canCreate": True, "canViewHistory": True}},
            "auth": {"method": "api-key", "credential": "user-key"},
        },
        "map/authenticate": {"method": "bearer", "credential": "user-key"},
        "map/disconnect": {"reason": "done"},
        "map/subscribe": {
            "filter": {"eventTypes": ["mail.created"], "mail": {**c, "threadId": tid}}
        },
        "map/unsubscribe": {"subscriptionId": "sub-none"},
        "map/replay": {
            "afterEventId": "9" * 20,  # after every event: none
            "fromTimestamp": 10**13,  # (so without afterEventId: a time to come)
            "toTimestamp": 10**13 + 1,
            "filter": {"eventTypes": ["mail.created"], "mail": {**c, "threadId": tid}},
            "limit": 10,
        },
        # resuming a task that never ran: refused at once (-32000), nothing runs
        "map/send": {
            "to": {"agent": "supervisor"},
            "payload": {"body": "x", "task_id": "never-ran", "resume_from": "user_response"},
            "meta": {"mail": {**c, "threadId": tid, "visibility": VISIBILITY}},
        },
    }


def mail_params(c: dict[str, str], turn: str, tid: str) -> dict[str, dict[str, Any]]:
    return {
        "mail/create": {
            "type": "mixed",
            "subject": "s",
            "initialParticipants": [{"id": "agent:math", "permissions": PERMISSIONS}],
            "initialTurn": {**HELLO, "visibility": {"type": "all"}, "metadata": {"k": "v"}},
            "metadata": {"k": "v"},
        },
        "mail/get": {**c, "include": {"participants": True, "recentTurns": 2, "stats": True}},
        "mail/list": {
            "filter": {"type": ["mixed"], "status": ["active"], "participantId": "agent:math"},
            "limit": 5,
        },
        "mail/invite": {**c, "participant": {"id": "agent:weather", "permissions": PERMISSIONS}},
        "mail/turn": {**c, **HELLO, "threadId": tid, "visibility": VISIBILITY},
        "mail/turns/list": {
            **c,
            "filter": {"threadId": tid, "contentTypes": ["text"], "afterTimestamp": 0},
            "limit": 5,
            "order": "desc",
        },
        "mail/thread/create": {**c, "rootTurnId": turn, "parentThreadId": tid},
        "mail/thread/list": {**c, "parentThreadId": tid},
        "mail/summary": {**c, "scope": {"threadId": tid}, "include": {"keyPoints": True}},
        "mail/replay": {**c, "fromTurnId": turn, "contentTypes": ["text"], "limit": 5},
        "x-mail/turn/redact": {**c, "turnId": turn, "reason": "r"},
        # last: what changes the caller's membership
        "mail/join": {**c, "role": "worker", "catchUp": {"from": 0, "limit": 2}},
        "mail/leave": {**c, "reason": "bye"},
        "mail/close": {**c, "reason": "done"},
    }


# --- the params models' JSON schemas: which kinds of JSON value a field takes ---------------


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def resolve(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives a (sub)schema allows, ``$ref`` and ``anyOf`` unfolded."""
    if "$ref" in schema:
        return resolve(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        return [alt for option in schema["anyOf"] for alt in resolve(option, defs)]
    return [schema]


def takes(options: list[dict[str, Any]], value: Any) -> bool:
    """Whether a field of these alternatives takes a value of ``value``'s kind."""
    kind = kind_of(value)
    for option in options:
        declared = option.get("type")
        if declared is None or declared == kind or (declared, kind) == ("number", "integer"):
            return True
    return False


def fields(
    options: list[dict[str, Any]], base: Any, defs: dict[str, Any], path: str
) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every field the sweep changes: each property of an object schema, and, where the
    valid params hold an object or a list there, the fields inside it."""
    found: list[tuple[str, list[dict[str, Any]]]] = []
    for option in options:
        if option.get("type") == "object" and isinstance(base, dict):
            for name, sub in option.get("properties", {}).items():
                inner = resolve(sub, defs)
                where = f"{path}.{name}" if path else name
                found.append((where, inner))
                found += fields(inner, base.get(name), defs, where)
        elif option.get("type") == "array" and isinstance(base, list) and base:
            inner = resolve(option.get("items", {}), defs)
            found.append((f"{path}[0]", inner))
            found += fields(inner, base[0], defs, f"{path}[0]")
    return found


def with_value(params: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``params`` with ``value`` at ``path`` (``a.b[0].c``)."""
    changed = copy.deepcopy(params)
    steps = path.replace("[", ".[").split(".")
    node: Any = changed
    for step in steps[:-1]:
        node = node[int(step[1:-1])] if step.startswith("[") else node.setdefault(step, {})
    last = steps[-1]
    if last.startswith("["):
        node[int(last[1:-1])] = value
    else:
        node[last] = value
    return changed


async def test_every_method_has_a_params_model() -> None:
    map_methods = {"map/connect", "map/authenticate", "map/disconnect", "map/subscribe"}
    assert set(METHODS) | map_methods | {"map/unsubscribe", "map/replay", "map/send"} == set(PARAMS)


async def test_wrong_types_in_any_field_are_invalid_params_never_a_500(offline: Running) -> None:
    user = await offline.user()
    valid = await setup(user)
    assert set(valid) == set(PARAMS)
    connection = None
    checked = 0
    for method, params in valid.items():
        schema = PARAMS[method].model_json_schema()
        for path, options in fields([schema], params, schema.get("$defs", {}), ""):
            for value in WRONG:
                body = {"jsonrpc": "2.0", "id": checked, "method": method}
                body["params"] = with_value(params, path, value)
                response = await user.post("/map", json=body)
                assert response.status_code == 200, (method, path, value, response.text)
                # every answer came over the same keep-alive connection
                connection = connection or local_port(response)
                assert local_port(response) == connection, (method, path, value)
                answer = response.json()
                assert answer["id"] == checked
                case = (method, path, value, answer)
                if "error" in answer:
                    assert answer["error"]["code"] in ALLOWED, case
                if not takes(options, value):
                    assert answer["error"]["code"] == -32602, case
                    assert f"params.{path}: " in answer["error"]["message"], case
                checked += 1
    assert checked > 500  # the sweep reached the fields
    after = await user.post("/map", json={"jsonrpc": "2.0", "id": 0, "method": "map/connect"})
    assert "result" in after.json() and local_port(after) == connection


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("mail/get", {"include": 5}, "params.include: must be an object, got 5"),
        (
            "mail/list",
            {"filter": {"status": 5}},
            "params.filter.status: must be a list, got 5",
        ),
        (
            "mail/list",
            {"filter": {"status": ["done"]}},
            "params.filter.status[0]: must be 'active', 'paused', 'completed', 'failed' or "
            "'archived', got 'done'",
        ),
        (
            "mail/turn",
            {"contentType": "text", "content": {}, "visibility": "all"},
            "params.visibility: must be an object, got 'all'",
        ),
        (
            "mail/turns/list",
            {"filter": {"afterTimestamp": "x"}},
            "params.filter.afterTimestamp: must be a number, got 'x'",
        ),
        (
            "mail/turns/list",
            {"order": "sideways"},
            "params.order: must be 'asc' or 'desc', got 'sideways'",
        ),
        (
            "mail/join",
            {"catchUp": {"limit": 0}},
            "params.catchUp.limit: must be an integer of at least 1, got 0",
        ),
        (
            "mail/join",
            {"permissions": {"canFly": True}},
            "params.permissions: has no field 'canFly'; its fields are canSend, canObserve, "
            "canInvite, canRemove, canCreateThreads, historyAccess, canSeeInternal",
        ),
        ("mail/turn", {}, "params.contentType: is required; params.content: is required"),
        (
            "mail/get",
            {"conversationId": ""},
            "params.conversationId: must be a non-empty string, got ''",
        ),
        (
            "mail/turns/list",
            {"cursor": base64.urlsafe_b64encode(b'["x"]').decode()},
            "params.cursor: is not one this server handed out (pass nextCursor as it came)",
        ),
        ("map/unsubscribe", {}, "params.subscriptionId: is required"),
        (
            "map/subscribe",
            {"filter": {"mail": {"conversationId": ["c"]}}},
            "params.filter.mail.conversationId: must be a string, got a list",
        ),
        ("map/send", {"meta": {"mail": {}}}, "params.meta.mail.conversationId: is required"),
        ("map/send", {"payload": {}}, "params.payload: no message provided"),
    ],
)
async def test_a_wrong_param_is_named_with_what_it_must_be(
    offline: Running, method: str, params: dict[str, Any], message: str
) -> None:
    user = await offline.user()
    cid = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    sent = {"conversationId": cid, **params} if method.startswith("mail/") else params
    error = (await rpc(user, method, sent))["error"]
    assert error["code"] == -32602
    assert error["message"] == message
    assert error["data"]["name"] == "INVALID_PARAMS"
    assert message.startswith(f"params.{error['data']['field']}: ")


async def test_params_that_are_not_an_object_are_invalid_params(offline: Running) -> None:
    user = await offline.user()
    for method in PARAMS:
        for params, shown in (([1], "a list"), ("x", "'x'"), (5, "5"), (None, "null")):
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            error = (await post(user, body))["error"]
            assert error["code"] == -32602, (method, error)
            assert error["message"] == f"params: must be an object, got {shown}", method


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ('{"subject": "x\\ud800y"}', f"params.subject: {SURROGATE}"),
        ('{"subject": "x\\u0000y"}', f"params.subject: {NUL}"),
        (
            '{"metadata": {"a": ["ok", "\\udfff"]}}',
            "params.metadata.a[1]: contains a lone surrogate (U+DFFF), which is not Unicode text",
        ),
        ('{"metadata": {"k\\u0000": 1}}', f"params.metadata: has a key that {NUL}"),
        (
            '{"initialTurn": {"contentType": "text", "content": {"text": "\\ud800"}}}',
            f"params.initialTurn.content.text: {SURROGATE}",
        ),
    ],
)
async def test_text_the_stores_cannot_hold_is_refused(
    offline: Running, params: str, message: str
) -> None:
    user = await offline.user()
    answer = await post(
        user, f'{{"jsonrpc": "2.0", "id": 1, "method": "mail/create", "params": {params}}}'
    )
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == message
    assert (await rpc(user, "mail/list", {}))["result"]["conversations"] == []


async def test_text_checks_reach_every_method_and_the_request_id(offline: Running) -> None:
    user = await offline.user()
    for method in PARAMS:
        text = f'{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"x":"\\ud800"}}}}'
        error = (await post(user, text))["error"]
        assert (error["code"], error["message"]) == (-32602, f"params.x: {SURROGATE}"), method
    answer = await post(user, '{"jsonrpc": "2.0", "id": "a\\ud800", "method": "map/connect"}')
    assert answer["id"] is None and answer["error"]["code"] == -32600


async def test_a_batch_answers_each_request_with_its_own_result_or_error(
    offline: Running,
) -> None:
    user = await offline.user()
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "mail/create", "params": {"subject": "kept"}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "mail/get",
            "params": {"conversationId": "c", "include": 5},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "mail/list", "params": {"filter": {"status": 5}}},
        {"jsonrpc": "2.0", "id": 4, "method": "mail/list", "params": {}},
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "mail/turns/list",
            "params": {"conversationId": "c", "order": "x"},
        },
    ]
    answers = await post(user, batch)
    assert [a["id"] for a in answers] == [1, 2, 3, 4, 5]
    codes = [a["error"]["code"] if "error" in a else None for a in answers]
    assert codes == [None, -32602, -32602, None, -32602]
    created = answers[0]["result"]["conversation"]
    assert [c["id"] for c in answers[3]["result"]["conversations"]] == [created["id"]]


async def test_a_body_past_the_json_limits_is_a_parse_error(offline: Running) -> None:
    user = await offline.user()
    deep = '{"jsonrpc": "2.0", "id": 1, "method": "mail/list", "params": {"x": ' + "[" * 100_000
    deep += "]" * 100_000 + "}}"
    nan = '{"jsonrpc": "2.0", "id": 1, "method": "mail/create", "params": {"metadata": {"x": NaN}}}'
    for body, message in (
        (deep, "parse error: JSON is nested deeper than 64 levels"),
        (nan, "parse error: NaN is not a JSON number; send a finite number"),
        ("{not json", "parse error: the body is not JSON"),
    ):
        answer = await post(user, body)
        assert answer == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": message},
        }
    assert (await rpc(user, "mail/list", {}))["result"]["conversations"] == []


async def test_a_join_with_bad_params_joins_nobody(offline: Running) -> None:
    user, admin = await offline.user(), await offline.admin()
    cid = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    c = {"conversationId": cid}
    for catch_up in (True, 5, "x", [1], {"limit": 0}, {"from": "x"}, {"includeSummary": 1}):
        error = (await rpc(admin, "mail/join", {**c, "catchUp": catch_up}))["error"]
        assert error["code"] == -32602 and "params.catchUp" in error["message"], catch_up
    people = await rpc(user, "mail/get", {**c, "include": {"participants": True}})
    assert [p["id"] for p in people["result"]["participants"]] == ["user:u1"]
    joined = await rpc(admin, "mail/join", {**c, "catchUp": {"limit": 1, "includeSummary": True}})
    assert joined["result"]["participant"]["id"] == "admin:admin1"
    assert "summary" in joined["result"]


async def test_leaving_a_closed_conversation_is_10001(offline: Running) -> None:
    user, admin = await offline.user(), await offline.admin()
    closed = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    await rpc(user, "mail/close", {"conversationId": closed})
    archived = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    await rpc(admin, "mail/close", {"conversationId": archived, "status": "archived"})
    for cid in (closed, archived):
        error = (await rpc(user, "mail/leave", {"conversationId": cid}))["error"]
        assert error["code"] == 10001 and error["data"]["name"] == "CONVERSATION_CLOSED"
        people = await rpc(
            user, "mail/get", {"conversationId": cid, "include": {"participants": True}}
        )
        assert [p["id"] for p in people["result"]["participants"]] == ["user:u1"]  # still in
