"""swarms.json: loading, defaults, and a table of broken files with the errors they give."""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mail.api import MAILSwarmTemplate
from mail.errors import SwarmDefinitionError
from mail.net import AddressPolicy
from mail.swarms_json import load_swarms_json, parse_swarm
from mail.utils.parsing import ReferencePolicy, read_python_string, read_url_string

FACTORY = "python::mail.testing:scripted_agent"


def swarm(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "demo",
        "version": "1.3.0",
        "entrypoint": "supervisor",
        "agents": [
            {
                "name": "supervisor",
                "factory": FACTORY,
                "comm_targets": ["worker"],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "agent_params": {},
            },
            {
                "name": "worker",
                "factory": FACTORY,
                "comm_targets": ["supervisor"],
                "actions": ["lookup"],
                "agent_params": {},
            },
        ],
        "actions": [
            {
                "name": "lookup",
                "description": "Look something up.",
                "parameters": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}},
                    "required": ["q"],
                },
                "function": "python::json:dumps",
            }
        ],
    }
    base.update(changes)
    return base


def with_agent(index: int, **changes: Any) -> dict[str, Any]:
    data = swarm()
    data["agents"][index].update(changes)
    return data


def without(data: dict[str, Any], *path: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node: Any = data
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return data


def test_defaults_are_filled_in() -> None:
    parsed = parse_swarm(swarm())
    assert parsed["public"] is False
    assert parsed["keywords"] == []
    assert parsed["action_imports"] == []
    assert parsed["enable_db_agent_histories"] is False
    worker = parsed["agents"][1]
    assert worker["tool_format"] == "responses"
    assert worker["enable_entrypoint"] is False
    assert worker["exclude_tools"] == []


def test_a_swarm_budget_loads_and_is_optional() -> None:
    budget = {"total_tokens": 10_000, "cost_usd": 0.5, "seconds": 120, "warn_at": 0.8}
    capped = MAILSwarmTemplate.from_swarms_json(swarm(budget=budget))
    plain = MAILSwarmTemplate.from_swarms_json(swarm())

    assert capped.budget is not None
    assert capped.budget.as_json() == budget
    assert plain.budget is None
    assert parse_swarm(swarm())["budget"] is None


def test_a_valid_swarm_loads_into_a_template() -> None:
    template = MAILSwarmTemplate.from_swarms_json(swarm(public=True, keywords=["demo"]))
    assert template.agent_names == ["supervisor", "worker"]
    assert template.public is True
    assert [a.name for a in template.agents[1].actions] == ["lookup"]


def test_agent_params_tool_format_is_dropped() -> None:
    parsed = parse_swarm(with_agent(0, agent_params={"tool_format": "completions", "llm": "x"}))
    assert parsed["agents"][0]["agent_params"] == {"llm": "x"}
    assert parsed["agents"][0]["tool_format"] == "responses"


def test_swarm_level_tool_format_is_the_agents_default() -> None:
    parsed = parse_swarm(swarm(tool_format="completions"))
    assert {a["tool_format"] for a in parsed["agents"]} == {"completions"}


# Checked when a swarm is loaded: fields, types, references (python::, url::, action and
# tool names) and unique agent names.
BROKEN: list[tuple[str, Any, str | None, str | None, str]] = [
    ("budget not an object", swarm(budget=100), None, "budget", "an object of limits"),
    ("budget unknown limit", swarm(budget={"tokens": 5}), None, "budget", "unknown limit tokens"),
    (
        "budget negative",
        swarm(budget={"total_tokens": -5}),
        None,
        "budget",
        "total_tokens must be a whole number >= 0, got -5",
    ),
    (
        "budget warn_at not a fraction",
        swarm(budget={"agent_turns": 5, "warn_at": 80}),
        None,
        "budget",
        "warn_at must be a fraction between 0 and 1",
    ),
    ("missing entrypoint", without(swarm(), "entrypoint"), None, "entrypoint", "is required"),
    (
        "unknown action",
        with_agent(1, actions=["lokup"]),
        "worker",
        "actions",
        "Did you mean 'lookup'",
    ),
    (
        "bad python factory",
        with_agent(0, factory="python::mail.nowhere:Agent"),
        "supervisor",
        "factory",
        "cannot import",
    ),
    (
        "missing attribute",
        with_agent(0, factory="python::mail.testing:nope"),
        "supervisor",
        "factory",
        "no attribute",
    ),
    (
        "bad python in agent_params",
        with_agent(0, agent_params={"system": "python::mail.nowhere:PROMPT"}),
        "supervisor",
        "agent_params",
        "cannot import",
    ),
    (
        "plain http url",
        with_agent(0, agent_params={"system": "url::http://127.0.0.1:9/prompt.json"}),
        "supervisor",
        "agent_params",
        "only https:// URLs",
    ),
    (
        "comm_targets not a list",
        with_agent(0, comm_targets="worker"),
        "supervisor",
        "comm_targets",
        "must be a list",
    ),
    (
        "malformed comm target",
        with_agent(0, comm_targets=["worker@"]),
        "supervisor",
        "comm_targets",
        "worker@",
    ),
    ("public not a bool", swarm(public="yes"), None, "public", "must be true or false"),
    ("bad tool_format", with_agent(1, tool_format="chat"), "worker", "tool_format", "completions"),
    (
        "unknown agent field",
        with_agent(1, comm_target=["x"]),
        "worker",
        "comm_target",
        "Did you mean 'comm_targets'",
    ),
    (
        "duplicate agents",
        swarm(agents=[swarm()["agents"][0], swarm()["agents"][0]]),
        None,
        "agents",
        "unique",
    ),
    (
        "excluded tool unknown",
        swarm(exclude_tools=["send_requests"]),
        None,
        "exclude_tools",
        "Did you mean",
    ),
    (
        "breakpoint tool unknown",
        swarm(breakpoint_tools=["ask"]),
        None,
        "breakpoint_tools",
        "neither a MAIL tool",
    ),
    (
        "import not an action",
        swarm(action_imports=["python::json:dumps"]),
        None,
        "action_imports",
        "not a MAILAction",
    ),
    (
        "action without function",
        without(swarm(), "actions", 0, "function"),
        None,
        "function",
        "is required",
    ),
    ("version missing", without(swarm(), "version"), None, "version", "is required"),
]

# Checked when a swarm is instantiated: whether its agents reach each other.
UNWIRED: list[tuple[str, Any, str | None, str | None, str]] = [
    ("unknown entrypoint", swarm(entrypoint="boss"), None, "entrypoint", "is not an agent"),
    (
        "entrypoint not enabled",
        with_agent(0, enable_entrypoint=False),
        "supervisor",
        "enable_entrypoint",
        "enable_entrypoint: true",
    ),
    (
        "unknown comm target",
        with_agent(0, comm_targets=["wroker"]),
        "supervisor",
        "comm_targets",
        "Did you mean 'worker'",
    ),
    (
        "remote target without interswarm",
        with_agent(0, comm_targets=["worker", "x@other"]),
        "supervisor",
        "comm_targets",
        "does not enable interswarm",
    ),
    (
        "no agent completes tasks",
        with_agent(0, can_complete_tasks=False),
        None,
        "can_complete_tasks",
        "at least one",
    ),
]


def assert_located(error: SwarmDefinitionError, agent: str | None, field: str | None) -> None:
    assert error.swarm == "demo"
    assert error.agent == agent
    assert error.field == field
    assert "swarm 'demo'" in str(error)


@pytest.mark.parametrize(
    ("case", "data", "agent", "field", "text"), BROKEN, ids=[c[0] for c in BROKEN]
)
def test_broken_swarms_fail_to_load_naming_swarm_agent_and_field(
    case: str, data: Any, agent: str | None, field: str | None, text: str
) -> None:
    with pytest.raises(SwarmDefinitionError, match=re.escape(text)) as info:
        MAILSwarmTemplate.from_swarms_json(data)
    assert_located(info.value, agent, field)


@pytest.mark.parametrize(
    ("case", "data", "agent", "field", "text"), UNWIRED, ids=[c[0] for c in UNWIRED]
)
def test_unwired_swarms_load_and_fail_to_instantiate_naming_swarm_agent_and_field(
    case: str, data: Any, agent: str | None, field: str | None, text: str
) -> None:
    template = MAILSwarmTemplate.from_swarms_json(data)
    with pytest.raises(SwarmDefinitionError, match=re.escape(text)) as info:
        template.instantiate({})
    assert_located(info.value, agent, field)
    with pytest.raises(SwarmDefinitionError, match=re.escape(text)):
        template.validate()


def test_an_unwired_template_can_be_fixed_before_it_is_instantiated() -> None:
    template = MAILSwarmTemplate.from_swarms_json(with_agent(0, comm_targets=["wroker"]))
    template.update_from_adjacency_matrix([[0, 1], [1, 0]])
    assert template.agents[0].comm_targets == ["worker"]
    assert template.instantiate({}).agent_names == ["supervisor", "worker"]


@pytest.mark.parametrize("name", ["../../x", "${HOME}", "-x", "a/b", "x" * 65])
def test_swarm_names_follow_the_name_pattern(name: str) -> None:
    with pytest.raises(SwarmDefinitionError, match="field 'name': must be 1-64 letters"):
        parse_swarm(swarm(name=name))


@pytest.mark.parametrize("name", ["demo", "example-no-proxy", "swarm_2", "v1.2", "A"])
def test_usual_swarm_names_load(name: str) -> None:
    assert parse_swarm(swarm(name=name))["name"] == name


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * 100 + "]" * 100, "nested deeper than 64 levels"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        ('[{"name": NaN}]', "NaN is not a JSON number"),
        ("[1e400]", "out of range"),
    ],
    ids=["deep", "deeper-than-recursion", "nan", "overflow"],
)
def test_hostile_swarms_json_is_refused(text: str, problem: str) -> None:
    with pytest.raises(SwarmDefinitionError, match=problem):
        load_swarms_json(text)
    with pytest.raises(SwarmDefinitionError, match=problem):
        MAILSwarmTemplate.from_swarm_json(text)


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(SwarmDefinitionError, match="JSON array"):
        load_swarms_json(json.dumps(swarm()))
    with pytest.raises(SwarmDefinitionError, match="not valid JSON"):
        load_swarms_json("[{")
    with pytest.raises(SwarmDefinitionError, match="defined twice"):
        load_swarms_json(json.dumps([swarm(), swarm()]))
    path = tmp_path / "swarms.json"
    path.write_text(json.dumps([swarm()]))
    with pytest.raises(SwarmDefinitionError, match=r"no swarm named 'dmeo'.*Did you mean 'demo'"):
        MAILSwarmTemplate.from_swarm_json_file("dmeo", path)
    assert MAILSwarmTemplate.from_swarm_json_file("demo", path).name == "demo"
    with pytest.raises(SwarmDefinitionError, match="cannot read"):
        MAILSwarmTemplate.from_swarm_json_file("demo", tmp_path / "missing.json")


def test_restricted_policy_blocks_imports_and_fetches() -> None:
    policy = ReferencePolicy.restricted(("mail.",))
    allowed = swarm(actions=[{**swarm()["actions"][0], "function": "python::mail.testing:tc"}])
    assert MAILSwarmTemplate.from_swarms_json(allowed, policy=policy).name == "demo"
    outside = copy.deepcopy(allowed)
    outside["agents"][0]["agent_params"] = {"x": "python::os:system"}
    with pytest.raises(SwarmDefinitionError, match="not allowed here") as info:
        MAILSwarmTemplate.from_swarms_json(outside, policy=policy)
    assert (info.value.agent, info.value.field) == ("supervisor", "agent_params")
    fetch = copy.deepcopy(allowed)
    fetch["agents"][0]["agent_params"] = {"x": "url::https://example.invalid/p.json"}
    with pytest.raises(SwarmDefinitionError, match="url:: references are not allowed"):
        MAILSwarmTemplate.from_swarms_json(fetch, policy=policy)
    with pytest.raises(SwarmDefinitionError, match="not allowed here"):
        MAILSwarmTemplate.from_swarms_json(swarm(), policy=policy)  # its action imports json


def test_trusted_references_still_follow_attribute_chains() -> None:
    """Only the restricted policy (swarms sent over HTTP) applies the strict rule: a
    swarms.json the operator starts the server with may name anything it can import."""
    assert read_python_string("python::mail.factories._litellm:os.path.join") is os.path.join
    restricted = ReferencePolicy.restricted()
    with pytest.raises(SwarmDefinitionError, match="not a longer chain"):
        read_python_string("python::mail.factories._litellm:os.path.join", restricted)
    with pytest.raises(SwarmDefinitionError, match="'os' is a module"):
        read_python_string("python::mail.factories._litellm:os", restricted)
    assert read_python_string("python::mail.cli:os.path.join") is os.path.join
    with pytest.raises(SwarmDefinitionError, match=r"modules must start with mail\.examples"):
        read_python_string("python::mail.cli:main", restricted)


class _Handler(BaseHTTPRequestHandler):
    stop = threading.Event()  # set when the test's server shuts down

    def do_GET(self) -> None:
        if self.path.startswith("/to/"):  # /to/<url>: a redirect to <url>
            self.send_response(302)
            self.send_header("Location", self.path.removeprefix("/to/"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/trickle/"):  # /trickle/<n>.json: n bytes, slowly
            self._trickle(int(self.path.removeprefix("/trickle/").removesuffix(".json")))
            return
        if self.path == "/prompt.json":
            body = json.dumps({"prompt": "be brief"}).encode()
        elif self.path == "/big.json":
            body = b'"' + b"x" * 5000 + b'"'
        else:
            body = b"not json"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, size: int) -> None:
        # a valid JSON document, one byte every 20 ms: each read gets data long before a
        # per-read timeout, so only a deadline on the whole fetch stops it
        body = b" " * (size - 2) + b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                if self.stop.wait(0.02):
                    return
        except OSError:  # the client gave up
            return

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def http_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    _Handler.stop.clear()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _Handler.stop.set()
        server.shutdown()
        server.server_close()


def test_url_references_fetch_json_within_limits(http_url: str) -> None:
    policy = ReferencePolicy(allow_http=True, max_bytes=1000, timeout=5)
    assert json.loads(read_url_string(f"url::{http_url}/prompt.json", policy)) == {
        "prompt": "be brief"
    }
    with pytest.raises(SwarmDefinitionError, match="larger than 1000 bytes"):
        read_url_string(f"url::{http_url}/big.json", policy)
    with pytest.raises(SwarmDefinitionError, match="not JSON"):
        read_url_string(f"url::{http_url}/text", policy)
    template = MAILSwarmTemplate.from_swarms_json(
        with_agent(0, agent_params={"system": f"url::{http_url}/prompt.json"}), policy=policy
    )
    assert template.agents[0]._params == {"system": json.dumps({"prompt": "be brief"})}


def test_url_reference_times_out() -> None:
    # a listening socket that never answers: the fetch must give up after the timeout
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        policy = ReferencePolicy(allow_http=True, timeout=0.3)
        with pytest.raises(SwarmDefinitionError, match="fetch failed"):
            read_url_string(f"url::http://127.0.0.1:{port}/p.json", policy)


def test_url_reference_refused_connection() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(SwarmDefinitionError, match="fetch failed"):
        read_url_string(
            f"url::http://127.0.0.1:{port}/p.json", ReferencePolicy(allow_http=True, timeout=2)
        )


def test_url_reference_follows_redirects_to_allowed_schemes_only(http_url: str) -> None:
    policy = ReferencePolicy(allow_http=True, timeout=5)
    followed = read_url_string(f"url::{http_url}/to/{http_url}/prompt.json", policy)
    assert json.loads(followed) == {"prompt": "be brief"}
    with pytest.raises(SwarmDefinitionError, match=r"redirected \(302\) to 'ftp:") as info:
        read_url_string(f"url::{http_url}/to/ftp://127.0.0.1:1/p.json", policy)
    assert "only https:// and http:// URLs are allowed" in str(info.value)
    with pytest.raises(SwarmDefinitionError, match="file:///etc/hostname' is not allowed"):
        read_url_string(f"url::{http_url}/to/file:///etc/hostname", policy)
    # the same check guards https-only policies (an https page redirected to http://):
    # tests/net/test_fetch.py checks redirects against a narrowed list of schemes


def test_url_reference_follows_at_most_five_redirects(http_url: str) -> None:
    policy = ReferencePolicy(allow_http=True, timeout=5)
    five = f"{http_url}/to/" * 5 + f"{http_url}/prompt.json"
    assert json.loads(read_url_string(f"url::{five}", policy)) == {"prompt": "be brief"}
    with pytest.raises(SwarmDefinitionError, match="more than 5 redirects"):
        read_url_string(f"url::{http_url}/to/{five}", policy)


def test_url_reference_deadline_covers_the_whole_fetch(http_url: str) -> None:
    # Regression: the timeout applied to each socket read, so a server sending a byte now
    # and then kept a fetch going for as long as it liked.
    policy = ReferencePolicy(allow_http=True, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(SwarmDefinitionError, match=r"no complete answer within 0.5 s"):
        read_url_string(f"url::{http_url}/trickle/500.json", policy)
    assert time.monotonic() - started < 3.0  # the whole body would take 10 s
    patient = ReferencePolicy(allow_http=True, timeout=10)
    assert json.loads(read_url_string(f"url::{http_url}/trickle/10.json", patient)) == {}


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://169.254.169.254/latest", "link-local"),
        ("http://[::ffff:169.254.169.254]/latest", "link-local"),
        ("http://0xA9FEA9FE/latest", "link-local"),
        ("http://2852039166/latest", "link-local"),
        ("http://metadata.google.internal/latest", "metadata"),
    ],
)
def test_url_reference_to_a_metadata_address_is_refused(url: str, rule: str) -> None:
    """Regression (issue 20): a ``url::`` fetch connected to the cloud metadata address."""
    policy = ReferencePolicy(allow_http=True, timeout=5)
    with pytest.raises(SwarmDefinitionError, match=f"refused by the rule '{rule}'"):
        read_url_string(f"url::{url}", policy)


def test_url_reference_redirected_to_a_link_local_address_is_refused(http_url: str) -> None:
    policy = ReferencePolicy(allow_http=True, timeout=5)
    with pytest.raises(SwarmDefinitionError, match="refused by the rule 'link-local'"):
        read_url_string(f"url::{http_url}/to/http://169.254.169.254/latest", policy)


def test_url_reference_address_policy_can_refuse_loopback(http_url: str) -> None:
    addresses = AddressPolicy(deny_networks=("127.0.0.0/8",))
    policy = ReferencePolicy(allow_http=True, timeout=5, addresses=addresses)
    with pytest.raises(SwarmDefinitionError, match=re.escape("is in 127.0.0.0/8 of deny_networks")):
        read_url_string(f"url::{http_url}/prompt.json", policy)
