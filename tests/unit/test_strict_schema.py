"""Our messages and spec/examples meet the original's schema rules (issue 22, item 6),
while our own spec/ schemas keep accepting what v1.3.6 writes."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from tests._original_schema import strict_validator

from mail.core import message as m

ROOT = Path(__file__).resolve().parents[2]
STRICT = strict_validator()


def _validate_samples() -> Any:
    spec = importlib.util.spec_from_file_location(
        "validate_samples", ROOT / "spec" / "validate_samples.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VS = _validate_samples()
CORE, INTERSWARM = VS.load_validators()
EXAMPLES = VS.example_files()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_spec_examples_meet_the_original_rules(path: Path) -> None:
    STRICT.validate(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", [name for name, _ in VS.constructor_samples()])
def test_constructor_samples_meet_the_original_rules(name: str) -> None:
    STRICT.validate(dict(VS.constructor_samples())[name])


def _example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "spec" / "examples" / name).read_text())
    return data


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


V136_STYLE = [
    # what v1.3.6 itself writes: null swarm fields and a null auth_token (CONTRACT 1.6)
    ("response.json", ("message", "sender_swarm"), None),
    ("broadcast.json", ("message", "recipient_swarms"), None),
    ("interswarm_request.json", ("auth_token",), None),
    # a client-chosen task id
    ("request.json", ("message", "task_id"), "weather-123"),
    # a response's request_id has no format in the original's schema
    ("response.json", ("message", "request_id"), "req-7"),
    ("interswarm_response.json", ("payload", "request_id"), "req-7"),
]


@pytest.mark.parametrize(("name", "path", "value"), V136_STYLE)
def test_our_schemas_and_validators_accept_what_v136_writes(
    name: str, path: tuple[str, ...], value: Any
) -> None:
    sample = _set(_example(name), path, value)
    VS.validate_sample(sample, CORE, INTERSWARM)  # raises on rejection


@pytest.mark.parametrize(
    ("name", "path", "value"),
    [
        ("response.json", ("message", "sender_swarm"), None),
        ("request.json", ("message", "recipient_swarm"), None),
        ("broadcast.json", ("message", "recipient_swarms"), None),
        ("interswarm_request.json", ("auth_token",), None),
        ("interswarm_request.json", ("metadata",), None),
        ("interswarm_request.json", ("task_owner",), ""),
        ("request.json", ("message", "task_id"), "weather-123"),
        ("request.json", ("message", "request_id"), "req-7"),
        ("interrupt.json", ("message", "interrupt_id"), "int-1"),
        ("request.json", ("id",), "not-a-uuid"),
        ("request.json", ("timestamp",), "yesterday"),
        ("request.json", ("message", "routing_info"), None),
        ("request.json", ("extra",), 1),
        ("request.json", ("message", "extra"), 1),
        ("request.json", ("message", "sender", "extra"), 1),
        ("interswarm_request.json", ("extra",), 1),
        ("interswarm_request.json", ("msg_type",), "broadcast_complete"),
    ],
)
def test_the_strict_rules_reject(name: str, path: tuple[str, ...], value: Any) -> None:
    assert not STRICT.is_valid(_set(_example(name), path, value))


def test_the_strict_rules_accept_a_response_with_any_request_id() -> None:
    STRICT.validate(_set(_example("response.json"), ("message", "request_id"), "req-7"))


def test_constructors_leave_unknown_swarms_out() -> None:
    message = m.make_request(
        task_id=m.new_task_id(),
        sender=m.create_agent_address("a"),
        recipient=m.create_agent_address("b"),
        subject="s",
        body="b",
    )
    assert "sender_swarm" not in message["message"]
    assert "recipient_swarm" not in message["message"]
    STRICT.validate(message)
    wrapped = m.make_interswarm_message(
        message=message,
        source_swarm="alpha",
        target_swarm="beta",
        task_owner="user:u@alpha",
        task_contributors=["user:u@alpha"],
    )
    assert "auth_token" not in wrapped
    STRICT.validate(wrapped)
