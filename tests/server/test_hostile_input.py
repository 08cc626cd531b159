"""Hostile input over every JSON route: a clear 4xx that says what to fix, never a 500.

One table (:data:`ROWS`): deep nesting, ``NaN``/``Infinity``/overflowing numbers, wrong
types, huge strings, control characters, traversal names, ``python::`` references past what
an allowed module defines, and peers at link-local (metadata) addresses. Each row sends its request to
one server (debug mode, so ``/responses`` is reachable), then checks that the server still
answers ``GET /health`` on the same connection and that what was stored before the table
(a finished task, a persistent registry entry) is still there.

To add a row, append a :class:`Row` to :data:`ROWS` (or a value to :data:`HOSTILE_JSON`,
which is sent inside the body of every route of :data:`JSON_ROUTES`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from tests._servers import serve
from tests.server.conftest import KEYS, SWARMS_JSON, Running, make_config, within

from mail.core.message import (
    create_agent_address,
    make_interswarm_message,
    make_request,
    new_task_id,
)
from mail.server import create_app
from mail.testing import StaticAuth

pytestmark = [pytest.mark.timeout(60), pytest.mark.asyncio(loop_scope="module")]

KEPT_TASK = "kept-task"
KEPT_PEER = "kept-peer"
NAME_RULE = "must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
TASK_ID_RULE = "must be 1-256 characters, no control characters"
PARSE = "error parsing request: "
REFERENCE = (
    "error loading swarm from JSON: swarm 'offline', agent 'supervisor', field 'factory': "
    "reference "
)
LINK_LOCAL = "refused by the rule 'link-local': 169.254.169.254 is a link-local (metadata) address"


@dataclass(frozen=True)
class Row:
    """One hostile request: ``body`` is sent as JSON text (``str``) or encoded (other
    values); the answer must have ``status`` and a ``detail`` starting with ``detail``."""

    id: str
    path: str
    body: Any
    detail: str
    role: str = "user"
    status: int = 400
    method: str = "POST"
    content_type: str = "application/json"


#: Every route that reads a JSON body: (method, path, role, body text with ``%s`` where the
#: hostile JSON value goes).
JSON_ROUTES: list[tuple[str, str, str, str]] = [
    ("POST", "/message", "user", '{"body": "hi", "kwargs": {"x": %s}}'),
    ("POST", "/chat", "user", '{"body": "hi", "kwargs": {"x": %s}}'),
    ("POST", "/ui/message", "user", '{"body": "hi", "stream": false, "kwargs": {"x": %s}}'),
    ("POST", "/health", "admin", '{"status": %s}'),
    ("POST", "/swarms", "admin", '{"name": "p", "base_url": "http://p", "metadata": %s}'),
    ("POST", "/swarms/register", "admin", '{"name": "p", "base_url": "http://p", "x": %s}'),
    ("POST", "/swarms/load", "admin", '{"json": "{}", "x": %s}'),
    ("POST", "/interswarm/forward", "agent", '{"message": {"payload": %s}}'),
    ("POST", "/interswarm/back", "agent", '{"message": {"payload": %s}}'),
    ("POST", "/interswarm/message", "agent", '{"payload": %s}'),
    (
        "POST",
        "/interswarm/message",
        "user",
        '{"user_token": "user-key", "body": "hi", "targets": ["a@b"], "routing_info": %s}',
    ),
    ("POST", "/interswarm/send", "user", '{"user_token": "user-key", "body": %s}'),
    ("POST", "/interswarm/response", "agent", '{"message": %s}'),
    ("POST", "/responses", "user", '{"input": [%s], "tools": []}'),
    ("GET", "/task", "user", '{"task_id": %s}'),
]

#: JSON values no route takes -> the start of the detail (after "error parsing request: ").
HOSTILE_JSON: dict[str, tuple[str, str]] = {
    "deep": ("[" * 100 + "]" * 100, "JSON is nested deeper than 64 levels"),
    "deep-object": ('{"a":' * 100 + "1" + "}" * 100, "JSON is nested deeper than 64 levels"),
    "nan": ("NaN", "NaN is not a JSON number"),
    "infinity": ("Infinity", "Infinity is not a JSON number"),
    "minus-infinity": ("-Infinity", "-Infinity is not a JSON number"),
    "overflow": ("1e400", "number 1e400 is out of range"),
    "huge-integer": ("9" * 400, "number 999999999999999999999999... is out of range"),
}


#: Strings no store holds (docs/http-api.md, "Text every store holds") -> the detail's
#: words after the field's path; sent as JSON escapes, the only way JSON spells them.
HOSTILE_TEXT: dict[str, tuple[str, str]] = {
    "lone-surrogate": ('"x\\ud800y"', "contains a lone surrogate (U+D800), which is not"),
    "lone-low-surrogate": ('"\\udfff"', "contains a lone surrogate (U+DFFF)"),
    "nul": ('"a\\u0000b"', "contains the NUL character U+0000, which the stores"),
    "nul-in-a-key": ('{"k\\u0000": 1}', ""),
}
_MARK = "@@hostile@@"


def _path_to(value: Any, path: str = "") -> str | None:
    """Where the string :data:`_MARK` is in ``value``, as the server names a field."""
    if value == _MARK:
        return path
    if isinstance(value, dict):
        items = [(f"{path}.{k}" if path else k, v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    else:
        return None
    return next((p for where, v in items if (p := _path_to(v, where)) is not None), None)


def _route_rows() -> list[Row]:
    rows = []
    for method, path, role, template in JSON_ROUTES:
        for name, (value, detail) in HOSTILE_JSON.items():
            rows.append(
                Row(
                    f"{name}-{method}-{path}-{role}",
                    path,
                    template % value,
                    PARSE + detail,
                    role=role,
                    method=method,
                )
            )
        where = _path_to(json.loads(template % json.dumps(_MARK)))
        for name, (value, detail) in HOSTILE_TEXT.items():
            expected = (
                f"{where} has a key that contains the NUL character"
                if name == "nul-in-a-key"
                else f"{where} {detail}"
            )
            rows.append(
                Row(
                    f"{name}-{method}-{path}-{role}",
                    path,
                    template % value,
                    PARSE + expected,
                    role=role,
                    method=method,
                )
            )
    return rows


def _interswarm(**payload: Any) -> dict[str, Any]:
    """A valid forward body from peer ``alpha``, with ``payload`` changes."""
    message = make_request(
        task_id=new_task_id(),
        sender=create_agent_address("supervisor@alpha"),
        recipient=create_agent_address("supervisor@offline"),
        subject="Hi",
        body="hello",
    )
    wire: dict[str, Any] = dict(
        make_interswarm_message(
            message=message,
            source_swarm="alpha",
            target_swarm="offline",
            task_owner="swarm:peer1@alpha",
            task_contributors=["swarm:peer1@alpha"],
        )
    )
    wire["payload"] = {**wire["payload"], **payload}
    return {"message": wire}


def _swarm_with_factory(reference: str) -> dict[str, str]:
    swarm = json.loads(SWARMS_JSON.read_text())[0]
    first = {**swarm["agents"][0], "factory": reference}
    return {"json": json.dumps({**swarm, "agents": [first, *swarm["agents"][1:]]})}


def _swarm_named(name: str) -> dict[str, str]:
    swarm = json.loads(SWARMS_JSON.read_text())[0]
    return {"json": json.dumps({**swarm, "name": name})}


ROWS: list[Row] = [
    *_route_rows(),
    Row(
        "recursion-deep",
        "/message",
        '{"body": "hi", "kwargs": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}",
        PARSE + "JSON is nested deeper than 64 levels",
    ),
    Row(
        "deep-as-text",
        "/message",
        "[" * 5000 + "]" * 5000,
        PARSE + "JSON is nested deeper than 64 levels",
        content_type="text/plain",
    ),
    Row(
        "timeout-nan",
        "/message",
        '{"body": "hi", "kwargs": {"timeout": NaN}}',
        PARSE + "NaN is not a JSON number",
    ),
    Row(
        "timeout-overflow",
        "/message",
        '{"body": "hi", "kwargs": {"timeout": 1e400}}',
        PARSE + "number 1e400 is out of range",
    ),
    # wrong types
    Row(
        "task-id-int",
        "/message",
        {"body": "hi", "task_id": 123},
        "task_id must be a string, got int",
    ),
    Row(
        "task-id-object",
        "/message",
        {"body": "hi", "task_id": {"a": 1}},
        "task_id must be a string, got dict",
    ),
    Row(
        "task-id-bool",
        "/ui/message",
        {"body": "hi", "task_id": True},
        "task_id must be a string, got bool",
    ),
    Row(
        "send-task-id-int",
        "/interswarm/send",
        {"user_token": "user-key", "body": "hi", "targets": ["a@b"], "task_id": 7},
        "task_id must be a string, got int",
    ),
    Row(
        "forward-task-id-int",
        "/interswarm/forward",
        _interswarm(task_id=5),
        "invalid interswarm message: payload.task_id: must be a string, got int",
        role="agent",
    ),
    Row("get-task-int", "/task", {"task_id": 5}, "task_id must be a string", method="GET"),
    # huge strings
    Row(
        "task-id-huge",
        "/message",
        {"body": "hi", "task_id": "t" * 500_000},
        "task_id must be at most 256 characters, got 500000",
    ),
    Row(
        "health-status-huge",
        "/health",
        {"status": "ok" * 450_000},
        "status must be at most 256 characters, got 900000",
        role="admin",
    ),
    Row(
        "peer-name-huge",
        "/swarms",
        {"name": "p" * 100_000, "base_url": "http://p"},
        f"name {NAME_RULE}",
        role="admin",
    ),
    # NUL and control characters
    Row(
        "task-id-nul",
        "/message",
        {"body": "hi", "task_id": "a\x00b"},
        "error parsing request: task_id contains the NUL character U+0000",
    ),
    Row(
        "task-id-newline",
        "/message",
        {"body": "hi", "task_id": "a\nb"},
        f"task_id {TASK_ID_RULE}",
    ),
    Row(
        "send-task-id-escape",
        "/interswarm/send",
        {"user_token": "user-key", "body": "hi", "targets": ["a@b"], "task_id": "\x1b[2J"},
        f"task_id {TASK_ID_RULE}",
    ),
    Row(
        "forward-task-id-nul",
        "/interswarm/forward",
        _interswarm(task_id="a\x00b"),
        "error parsing request: message.payload.task_id contains the NUL character U+0000",
        role="agent",
    ),
    Row(
        "previous-response-id-nul",
        "/responses",
        {"input": [], "tools": [], "previous_response_id": "a\x00b"},
        "error parsing request: previous_response_id contains the NUL character U+0000",
    ),
    Row(
        "query-task-id-nul",
        "/task?task_id=a%00b",
        None,
        f"query.task_id {TASK_ID_RULE}",
        method="GET",
    ),
    Row(
        "path-task-id-newline",
        "/tasks/a%0Ab/events",
        None,
        f"path.task_id {TASK_ID_RULE}",
        method="GET",
    ),
    # traversal and other names outside the pattern
    Row(
        "peer-traversal",
        "/swarms",
        {"name": "../../../x", "base_url": "http://p"},
        f"name {NAME_RULE}, got '../../../x'",
        role="admin",
    ),
    Row(
        "peer-variable",
        "/swarms/register",
        {"swarm_name": "${HOME}", "base_url": "http://p"},
        f"name {NAME_RULE}, got '${{HOME}}'",
        role="admin",
    ),
    Row(
        "peer-own-name",
        "/swarms",
        {"name": "offline", "base_url": "http://p"},
        "'offline' is this server's own swarm",
        role="admin",
        status=409,
    ),
    Row(
        "swarm-traversal",
        "/swarms/load",
        _swarm_named("../../x"),
        f"error loading swarm from JSON: field 'name': {NAME_RULE}, got '../../x'",
        role="admin",
    ),
    # references that would reach past what an allowed module defines
    Row(
        "reference-attribute-chain",
        "/swarms/load",
        _swarm_with_factory("python::mail.factories._litellm:os.system"),
        REFERENCE
        + "'python::mail.factories._litellm:os.system' is not allowed here: 'os' is a module",
        role="admin",
    ),
    Row(
        "reference-foreign-function",
        "/swarms/load",
        _swarm_with_factory("python::mail.factories.base:logging.basicConfig"),
        REFERENCE
        + "'python::mail.factories.base:logging.basicConfig' is not allowed here: "
        + "'logging' is a module",
        role="admin",
    ),
    Row(
        "reference-server-module",
        "/swarms/load",
        _swarm_with_factory("python::mail.cli:main"),
        REFERENCE + "'python::mail.cli:main' is not allowed here: modules must start with "
        "mail.examples, mail.factories, mail.stdlib",
        role="admin",
    ),
    Row(
        "reference-builtin",
        "/swarms/load",
        _swarm_with_factory("python::builtins:eval"),
        REFERENCE + "'python::builtins:eval' is not allowed here: modules must start with "
        "mail.examples, mail.factories, mail.stdlib",
        role="admin",
    ),
    # peers at addresses no federation needs (refused before any connection)
    Row(
        "peer-metadata",
        "/swarms",
        {"name": "meta", "base_url": "http://169.254.169.254/"},
        "connection to 169.254.169.254 " + LINK_LOCAL,
        role="admin",
    ),
    Row(
        "peer-mapped-metadata",
        "/swarms",
        {"name": "meta", "base_url": "http://[::ffff:169.254.169.254]/"},
        "connection to 169.254.169.254 " + LINK_LOCAL,
        role="admin",
    ),
    Row(
        "peer-hex-metadata",
        "/swarms/register",
        {"swarm_name": "meta", "base_url": "http://0xA9FEA9FE/"},
        "connection to 0xa9fea9fe " + LINK_LOCAL,
        role="admin",
    ),
    Row(
        "swarm-json-deep",
        "/swarms/load",
        {"json": "[" * 5000 + "]" * 5000},
        "error loading swarm from JSON: swarm JSON is not valid: JSON is nested deeper",
        role="admin",
    ),
    Row(
        "swarm-json-nan",
        "/swarms/load",
        {"json": '{"name": NaN}'},
        "error loading swarm from JSON: swarm JSON is not valid: NaN is not a JSON number",
        role="admin",
    ),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hostile(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    """A debug-mode server holding a finished task and a persistent registry entry."""
    auth = StaticAuth(KEYS)
    app = create_app(
        make_config(tmp_path_factory.mktemp("hostile"), debug=True), authenticator=auth
    )
    async with serve(app) as url, AsyncExitStack() as clients:
        running = Running(url, app, auth, clients)
        task = await (await running.user()).post(
            "/message", json={"body": "what is 6*7?", "task_id": KEPT_TASK}
        )
        assert task.status_code == 200, task.text
        peer = {"name": KEPT_PEER, "base_url": url, "volatile": False}
        registered = await (await running.admin()).post("/swarms", json=peer)
        assert registered.status_code == 200, registered.text
        yield running


def _content(body: Any) -> bytes | None:
    if body is None:
        return None
    return (body if isinstance(body, str) else json.dumps(body)).encode()


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
async def test_hostile_input_is_refused_clearly(hostile: Running, row: Row) -> None:
    client = await getattr(hostile, row.role)()

    response = await within(
        client.request(
            row.method,
            row.path,
            content=_content(row.body),
            headers={"Content-Type": row.content_type},
        )
    )

    assert response.status_code == row.status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str)
    assert detail.startswith(row.detail), detail
    assert "Traceback" not in detail
    # the same connection still works, and nothing stored before is lost
    assert (await client.get("/health")).status_code == 200
    user = await hostile.user()
    assert (await user.get("/task", params={"task_id": KEPT_TASK})).status_code == 200
    assert hostile.state.registry.get_swarm_endpoint(KEPT_PEER) is not None
