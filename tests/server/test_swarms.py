"""``/swarms`` (list, register, ``/swarms/register``), ``/swarms/dump`` and ``/swarms/load``
(CONTRACT 1.5, 14; security 15.11). Peers are real servers started in the test."""

from __future__ import annotations

import json
import socket
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import (
    SWARMS_JSON,
    Running,
    Start,
    make_config,
    scripted_template,
    shared,
)

from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)

_ENTRY_KEYS = {
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


def offline_swarm_object() -> dict[str, Any]:
    swarms = json.loads(SWARMS_JSON.read_text(encoding="utf-8"))
    found: dict[str, Any] = next(s for s in swarms if s["name"] == "offline")
    return found


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def private_template() -> Any:
    agent = ScriptedAgent(rule=lambda _m: tc("task_complete", finish_message="hi"))
    return scripted_template({"supervisor": agent}, name="hidden", public=False)


# --- GET /swarms -----------------------------------------------------------------------------


async def test_public_local_swarm_is_listed(offline: Running) -> None:
    response = await (await offline.anon()).get("/swarms")

    assert response.status_code == 200
    swarms = response.json()["swarms"]
    assert len(swarms) == 1
    local = swarms[0]
    assert set(local) == _ENTRY_KEYS
    assert local["swarm_name"] == "offline"
    assert local["base_url"] == offline.state.base_url
    assert local["is_active"] is True
    assert local["latency"] is None
    assert local["keywords"] == ["demo", "offline", "weather", "math"]
    assert local["swarm_description"].startswith("Scripted agents, no LLM")


async def test_private_local_swarm_is_not_listed(start: Start) -> None:
    server = await start(template=private_template())

    response = await (await server.anon()).get("/swarms")

    assert response.json() == {"swarms": []}


# --- registration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "name_field"), [("/swarms", "name"), ("/swarms/register", "swarm_name")]
)
async def test_register_a_real_peer(
    start: Start, offline: Running, path: str, name_field: str
) -> None:
    peer = await start()
    admin = await offline.admin()

    response = await admin.post(
        path,
        json={name_field: "remote-offline", "base_url": peer.url + "/", "metadata": {"x": 1}},
    )

    assert response.status_code == 200
    assert response.json() == {"status": "registered", "swarm_name": "remote-offline"}
    swarms = (await (await offline.anon()).get("/swarms")).json()["swarms"]
    assert [s["swarm_name"] for s in swarms] == ["offline", "remote-offline"]
    entry = swarms[1]
    assert set(entry) == _ENTRY_KEYS  # no auth_token, volatile or public leak out
    assert entry["base_url"] == peer.url
    assert entry["version"] == "1.3"
    assert entry["is_active"] is True
    assert entry["latency"] is None or entry["latency"] >= 0  # measured, or not yet
    assert entry["metadata"] == {"x": 1}
    assert entry["keywords"] == ["demo", "offline", "weather", "math"]
    assert entry["swarm_description"].startswith("Scripted agents, no LLM")
    datetime.fromisoformat(entry["last_seen"])


async def test_registered_private_peer_is_not_listed(start: Start, offline: Running) -> None:
    peer = await start(template=private_template())

    response = await (await offline.admin()).post(
        "/swarms", json={"name": "hidden", "base_url": peer.url, "auth_token": "secret"}
    )

    assert response.status_code == 200
    listed = (await (await offline.anon()).get("/swarms")).text
    assert "hidden" not in listed
    assert "secret" not in listed


async def test_registering_the_local_name_is_a_conflict(offline: Running) -> None:
    response = await (await offline.admin()).post(
        "/swarms", json={"name": "offline", "base_url": f"http://127.0.0.1:{closed_port()}"}
    )

    assert response.status_code == 409
    assert response.json() == {
        "detail": "'offline' is this server's own swarm; register peers under their names"
    }
    swarms = (await (await offline.anon()).get("/swarms")).json()["swarms"]
    assert [s["base_url"] for s in swarms] == [offline.state.base_url]


@shared
@pytest.mark.parametrize(
    "payload",
    [{}, {"name": "x"}, {"base_url": "http://127.0.0.1:1"}, {"name": " ", "base_url": "http://a"}],
    ids=["empty", "no-url", "no-name", "blank-name"],
)
async def test_register_needs_name_and_base_url(
    shared_offline: Running, payload: dict[str, str]
) -> None:
    response = await (await shared_offline.admin()).post("/swarms", json=payload)

    assert response.status_code == 400
    assert response.json() == {"detail": "name and base_url are required"}


@shared
async def test_register_metadata_must_be_an_object(shared_offline: Running) -> None:
    response = await (await shared_offline.admin()).post(
        "/swarms", json={"name": "p", "base_url": "http://127.0.0.1:1", "metadata": [1]}
    )

    assert response.status_code == 400
    assert response.json() == {"detail": "metadata must be an object"}


@shared
async def test_register_unreachable_peer_is_502(shared_offline: Running) -> None:
    url = f"http://127.0.0.1:{closed_port()}"

    response = await (await shared_offline.admin()).post(
        "/swarms", json={"name": "p", "base_url": url}
    )

    assert response.status_code == 502
    # names the peer that failed, not the socket's error (which would let callers probe ports)
    assert response.json() == {
        "detail": f"failed to get remote swarm info from {url}: swarm at {url}/ is unreachable"
    }
    assert len((await (await shared_offline.anon()).get("/swarms")).json()["swarms"]) == 1


@shared
@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://169.254.169.254", "link-local"),
        ("http://[::ffff:169.254.169.254]", "link-local"),
        ("http://0xA9FEA9FE", "link-local"),
        ("http://[fe80::1]", "link-local"),
        ("http://0.0.0.0:1", "unspecified"),
        ("http://224.0.0.1", "multicast"),
        ("http://metadata.google.internal", "metadata"),
    ],
)
async def test_register_refused_address_is_400_naming_the_rule(
    shared_offline: Running, url: str, rule: str
) -> None:
    """Regression (issue 20): registration connected to metadata and link-local addresses.
    The guard refuses before connecting, so nothing outside loopback is contacted."""
    response = await (await shared_offline.admin()).post(
        "/swarms", json={"name": "p", "base_url": url}
    )

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert f"refused by the rule '{rule}'" in detail
    assert "[server.interswarm]" in detail  # where to widen it
    assert len((await (await shared_offline.anon()).get("/swarms")).json()["swarms"]) == 1


@shared
@pytest.mark.parametrize(
    "host",
    ["2852039166", "0251.0376.0251.0376", "0xa9fea9fe", "169.254.43518", "0xa9.0376.43518"],
)
async def test_register_numeric_spelling_of_a_link_local_address_is_400(
    shared_offline: Running, host: str
) -> None:
    """Regression: a numeric spelling of 169.254.169.254 was judged only where the
    system's resolver (and the HTTP client) read it as that address, and was a 502
    elsewhere; the guard reads the spelling itself, before any lookup."""
    response = await (await shared_offline.admin()).post(
        "/swarms", json={"name": "p", "base_url": f"http://{host}/"}
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": f"connection to {host} refused by the rule 'link-local': 169.254.169.254 "
        "is a link-local (metadata) address (add its network to allow_networks in "
        "[server.interswarm] to allow it)"
    }
    assert len((await (await shared_offline.anon()).get("/swarms")).json()["swarms"]) == 1


async def test_deny_networks_refuses_loopback_peers(start: Start, tmp_path: Path) -> None:
    peer = await start()
    narrowed = await start(
        make_config(tmp_path / "n", interswarm={"deny_networks": ["127.0.0.0/8", "::1"]})
    )

    response = await (await narrowed.admin()).post(
        "/swarms", json={"name": "p", "base_url": peer.url}
    )

    assert response.status_code == 400
    assert (
        "127.0.0.1 is in 127.0.0.0/8 of deny_networks in [server.interswarm]"
        in (response.json()["detail"])
    )


@shared
async def test_register_non_http_base_url_is_400(shared_offline: Running) -> None:
    """A base_url that is not an http(s) URL is the caller's mistake, not a gateway failure."""
    response = await (await shared_offline.admin()).post(
        "/swarms", json={"name": "p", "base_url": "ftp://example.com"}
    )

    assert response.status_code == 400
    assert "base_url must be an http(s) URL" in response.json()["detail"]


async def test_register_peer_that_is_not_mail_is_502(start: Start, offline: Running) -> None:
    # A MAIL server's /health answers, but its "/" of a path prefix does not exist: 404.
    peer = await start()

    response = await (await offline.admin()).post(
        "/swarms", json={"name": "p", "base_url": peer.url + "/nowhere"}
    )

    assert response.status_code == 502


@shared
@pytest.mark.parametrize("path", ["/swarms", "/swarms/register"])
@pytest.mark.parametrize(
    ("who", "detail"),
    [("user", "invalid role: this route needs admin"), ("anon", "no API key provided")],
)
async def test_register_is_admin_only(
    shared_offline: Running, path: str, who: str, detail: str
) -> None:
    client = await getattr(shared_offline, who)()

    response = await client.post(path, json={"name": "p", "base_url": "http://127.0.0.1:1"})

    assert response.status_code == 401
    assert response.json() == {"detail": detail}


# --- dump ------------------------------------------------------------------------------------


@shared
async def test_dump(shared_offline: Running) -> None:
    response = await (await shared_offline.admin()).get("/swarms/dump")

    assert response.status_code == 200
    assert response.json() == {"status": "dumped", "swarm_name": "offline"}


def _first_agent(**fields: Any) -> dict[str, Any]:
    swarm = offline_swarm_object()
    first = {**swarm["agents"][0], **fields}
    return {**swarm, "agents": [first, *swarm["agents"][1:]]}


@shared
@pytest.mark.parametrize(
    ("swarm", "reason"),
    [
        (_first_agent(factory="python::mail.factories._litellm:os.system"), "'os' is a module"),
        (
            _first_agent(
                factory="python::mail.factories.base:logging.basicConfig",
                agent_params={"filename": "/tmp/mail.log", "force": True},  # noqa: S108
            ),
            "'logging' is a module",
        ),
        (_first_agent(factory="python::mail.factories._litellm:os"), "'os' is a module"),
        (
            _first_agent(factory="python::builtins:eval"),
            "modules must start with mail.examples, mail.factories, mail.stdlib",
        ),
        (
            _first_agent(factory="python::mail.cli:main"),
            "modules must start with mail.examples, mail.factories, mail.stdlib",
        ),
        (
            _first_agent(factory="python::mail.factories.base:MAILAgentFunction.mro"),
            "'MAILAgentFunction.mro' is a builtin",
        ),
        (
            _first_agent(factory="python::mail.factories.base:ABC"),
            "'ABC' is defined in 'abc', not in mail",
        ),
        (
            _first_agent(
                factory="python::mail.factories.base:LiteLLMAgentFunction.__init__.__wrapped__"
            ),
            "not a longer chain",
        ),
        (
            _first_agent(factory="python::mail.factories.base:__builtins__"),
            "names starting with '__'",
        ),
        (
            offline_swarm_object()
            | {"action_imports": ["python::mail.factories.base:logging.basicConfig"]},
            "'logging' is a module",
        ),
        (
            _first_agent(agent_params={"x": "python::mail.factories.base:logger"}),
            "'logger' is defined in 'logging'",
        ),
    ],
)
async def test_load_refuses_references_to_objects_its_modules_do_not_define(
    shared_offline: Running, swarm: dict[str, Any], reason: str
) -> None:
    """Issue 20, item 1: ``python::mail.cli:os.system`` passed the module allow-list. Now
    only the modules made to be named in swarms may be imported (not the CLI, the server or
    the store), and only what they define themselves may be named."""
    response = await (await shared_offline.admin()).post(
        "/swarms/load", json={"json": json.dumps(swarm)}
    )

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("error loading swarm from JSON")
    assert "is not allowed here" in detail
    assert reason in detail
    assert shared_offline.state.template.name == "offline"


@shared
async def test_load_accepts_what_allowed_modules_define(shared_offline: Running) -> None:
    """A class, a Class.attr, a function, a MAILAction and plain data all still load."""
    swarm = offline_swarm_object()
    params = {
        "prompt": "python::mail.examples.supervisor.prompts:SYSPROMPT",
        "class": "python::mail.factories.base:LiteLLMAgentFunction",
        "method": "python::mail.factories.base:LiteLLMAgentFunction.offered_tools",
        "action": "python::mail.examples.math_dummy.actions:calculate_expression",
        "function": "python::mail.factories.supervisor:supervisor_factory",
    }
    first = {**swarm["agents"][0], "agent_params": params}
    loaded = {**swarm, "name": "refs-ok", "agents": [first, *swarm["agents"][1:]]}
    admin = await shared_offline.admin()
    try:
        response = await admin.post("/swarms/load", json={"json": json.dumps(loaded)})

        assert (response.status_code, response.json()["swarm_name"]) == (200, "refs-ok")
        assert shared_offline.state.template.name == "refs-ok"
    finally:
        back = await admin.post("/swarms/load", json={"json": json.dumps(swarm)})
        assert back.status_code == 200


@shared
@pytest.mark.parametrize(
    ("who", "detail"),
    [("user", "invalid role: this route needs admin"), ("anon", "no API key provided")],
)
async def test_dump_is_admin_only(shared_offline: Running, who: str, detail: str) -> None:
    response = await (await getattr(shared_offline, who)()).get("/swarms/dump")

    assert (response.status_code, response.json()) == (401, {"detail": detail})


# --- load ------------------------------------------------------------------------------------


async def test_load_replaces_the_swarm_for_new_callers(offline: Running) -> None:
    user, user2, admin = await offline.user(), await offline.user2(), await offline.admin()
    assert (await user.post("/message", json={"body": "what is 1+1?", "task_id": "a"})).is_success
    swarm = offline_swarm_object() | {"name": "offline-2", "description": "loaded over HTTP"}

    response = await admin.post("/swarms/load", json={"json": json.dumps(swarm)})

    assert response.status_code == 200
    assert response.json() == {"status": "success", "swarm_name": "offline-2"}
    answer = await user2.post("/message", json={"body": "what is 6*7?", "task_id": "b"})
    assert answer.status_code == 200
    assert "42" in answer.json()["response"]
    theirs = (await user2.get("/task", params={"task_id": "b"})).json()
    assert theirs["task_owner"] == "user:u2@offline-2"
    # an existing caller keeps the runtime it has
    more = await user.post("/message", json={"body": "what is 2+2?", "task_id": "c"})
    assert more.is_success
    mine = (await user.get("/task", params={"task_id": "c"})).json()
    assert mine["task_owner"] == "user:u1@offline"


@shared
@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ({}, "json is required: the JSON text of one swarm object"),
        ({"json": ""}, "json is required: the JSON text of one swarm object"),
        ({"json": {"name": "x"}}, "json is required: the JSON text of one swarm object"),
    ],
    ids=["missing", "empty", "object-not-text"],
)
async def test_load_needs_json_text(
    shared_offline: Running, payload: dict[str, object], detail: str
) -> None:
    response = await (await shared_offline.admin()).post("/swarms/load", json=payload)

    assert response.status_code == 400
    assert response.json() == {"detail": detail}


@shared
@pytest.mark.parametrize(
    "text",
    ["{not json", "[]", json.dumps([offline_swarm_object()]), json.dumps({"name": "x"})],
    ids=["invalid", "empty-list", "a-list", "incomplete"],
)
async def test_load_rejects_bad_definitions(shared_offline: Running, text: str) -> None:
    response = await (await shared_offline.admin()).post("/swarms/load", json={"json": text})

    assert response.status_code == 400
    assert response.json()["detail"].startswith("error loading swarm from JSON")
    assert shared_offline.state.template.name == "offline"


@shared
async def test_load_rejects_a_swarm_whose_wiring_is_broken(shared_offline: Running) -> None:
    """Loading checks what instantiating would: a comm target no agent answers to."""
    swarm = offline_swarm_object()
    first = {**swarm["agents"][0], "comm_targets": ["nobody"]}
    text = json.dumps({**swarm, "agents": [first, *swarm["agents"][1:]]})
    response = await (await shared_offline.admin()).post("/swarms/load", json={"json": text})

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("error loading swarm from JSON")
    assert "nobody" in detail
    assert shared_offline.state.template.name == "offline"


@shared
@pytest.mark.parametrize(
    "change",
    [
        {"agents": [{**offline_swarm_object()["agents"][0], "factory": "python::os:system"}]},
        {"action_imports": ["python::subprocess:run"]},
        {
            "agents": [
                {
                    **offline_swarm_object()["agents"][0],
                    "agent_params": {"system": "url::http://127.0.0.1:1/prompt.json"},
                }
            ]
        },
    ],
    ids=["python-os-system", "python-action-import", "url-reference"],
)
async def test_load_restricts_references(shared_offline: Running, change: dict[str, Any]) -> None:
    swarm = offline_swarm_object() | change

    response = await (await shared_offline.admin()).post(
        "/swarms/load", json={"json": json.dumps(swarm)}
    )

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("error loading swarm from JSON")
    assert "not allowed" in detail
    assert shared_offline.state.template.name == "offline"


@shared
@pytest.mark.parametrize(
    ("who", "detail"),
    [("user", "invalid role: this route needs admin"), ("anon", "no API key provided")],
)
async def test_load_is_admin_only(shared_offline: Running, who: str, detail: str) -> None:
    swarm = json.dumps(offline_swarm_object())

    response = await (await getattr(shared_offline, who)()).post(
        "/swarms/load", json={"json": swarm}
    )

    assert (response.status_code, response.json()) == (401, {"detail": detail})
