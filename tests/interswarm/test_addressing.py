"""Addressing interswarm messages (``mail.net._addressing``): what the router puts on the
wire (CONTRACT 8.1-8.3), as pure functions."""

from __future__ import annotations

import pytest

from mail.core.message import (
    create_agent_address,
    create_user_address,
    make_broadcast,
    make_request,
    new_task_id,
    validate_message,
)
from mail.errors import ConfigurationError
from mail.net import RouterSettings
from mail.net._addressing import (
    by_swarm,
    contributors_of,
    direction_to,
    is_legacy_version,
    outbound_message,
)


def test_targets_are_grouped_by_swarm_in_order() -> None:
    assert by_swarm(["a@x", "b@y", "c@x", "local"]) == {"x": ["a@x", "c@x"], "y": ["b@y"]}


def test_the_sender_is_rewritten_as_a_qualified_agent() -> None:
    message = make_request(
        task_id=new_task_id(),
        sender=create_user_address("u1"),
        recipient=create_agent_address("weather@beta"),
        subject="s",
        body="b",
    )

    out = outbound_message(message, "alpha", "beta")

    assert out["message"]["sender"] == create_agent_address("u1@alpha")
    assert out["message"]["recipient"] == create_agent_address("weather@beta")
    assert out["message"]["sender_swarm"] == "alpha"
    assert out["message"]["recipient_swarm"] == "beta"  # type: ignore[typeddict-item]
    assert out["id"] == message["id"]
    assert message["message"]["sender"] == create_user_address("u1")  # the original is intact
    validate_message(out)


def test_unqualified_broadcast_recipients_stay_ours() -> None:
    message = make_broadcast(
        task_id=new_task_id(),
        sender=create_agent_address("supervisor"),
        recipients=[create_agent_address("worker"), create_agent_address("all@beta")],
        subject="s",
        body="b",
    )

    out = outbound_message(message, "alpha", "beta")

    assert out["message"]["recipients"] == [  # type: ignore[typeddict-item]
        create_agent_address("worker@alpha"),
        create_agent_address("all@beta"),
    ]
    assert out["message"]["recipient_swarms"] == ["beta"]  # type: ignore[typeddict-item]


def test_direction_is_back_when_a_contributor_is_in_the_target_swarm() -> None:
    contributors = contributors_of(["user:u1@alpha"], "swarm:alpha@beta")

    assert contributors == ["user:u1@alpha", "swarm:alpha@beta"]
    assert direction_to("alpha", contributors) == "back"
    assert direction_to("gamma", contributors) == "forward"
    assert contributors_of(contributors, "user:u1@alpha") == contributors


@pytest.mark.parametrize(
    ("version", "legacy"),
    [
        ("1.1.0", True),
        ("0.1.0", True),
        ("v1.1", True),
        ("1.2", False),
        ("1.3", False),
        ("2.0.1", False),
        (None, False),
        ("", False),
        ("unknown", False),
    ],
)
def test_legacy_peers_are_those_below_protocol_1_2(version: str | None, legacy: bool) -> None:
    assert is_legacy_version(version) is legacy


@pytest.mark.parametrize(
    "kwargs", [{"timeout": 0}, {"legacy_timeout": -1}, {"retries": -1}, {"backoff": -0.1}]
)
def test_router_settings_are_checked(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError):
        RouterSettings(**kwargs)  # type: ignore[arg-type]


def test_router_defaults_match_the_documented_policy() -> None:
    settings = RouterSettings()
    assert (settings.timeout, settings.retries, settings.backoff) == (10.0, 3, 0.2)
