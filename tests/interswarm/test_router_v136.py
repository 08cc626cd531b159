"""v1.3.6's ``InterswarmRouter`` calls (``mail.net._router_compat``): the constructor,
start/stop, handlers fed received envelopes, and envelopes sent as given to a real peer."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from tests.interswarm.conftest import FakePeer

from mail.core.message import (
    MAILMessage,
    create_agent_address,
    create_user_address,
    make_interswarm_message,
    make_request,
    new_task_id,
)
from mail.errors import ConfigurationError, InvalidMessageError
from mail.net import InterswarmRouter, SwarmRegistry
from mail.net.router import StreamHandler


def _request(recipient: str, task_id: str | None = None) -> MAILMessage:
    return make_request(
        task_id=task_id or new_task_id(),
        sender=create_agent_address("supervisor"),
        recipient=create_agent_address(recipient),
        subject="forecast",
        body="Tokyo?",
    )


async def test_constructor_takes_v136_arguments_and_checks_the_name() -> None:
    async with SwarmRegistry("alpha", "http://127.0.0.1:1", env={}) as registry:
        router = InterswarmRouter(registry, "alpha")
        assert router.local_swarm_name == "alpha"
        with pytest.raises(ConfigurationError, match="not the registry's local swarm"):
            InterswarmRouter(registry, "beta")
        assert await router.is_running()
        await router.start()
        await router.stop()
        assert not await router.is_running()
        with pytest.raises(ConfigurationError, match="stopped"):
            await router.start()
    assert StreamHandler is not None


async def test_received_envelopes_reach_the_registered_handler_unqualified() -> None:
    got: list[MAILMessage] = []

    async def handler(message: MAILMessage) -> str:
        got.append(message)
        return "queued"

    async with SwarmRegistry("beta", "http://127.0.0.1:1", env={}) as registry:
        router = InterswarmRouter(registry, "beta")
        wire = router_for_alpha_envelope("weather@beta")
        with pytest.raises(ConfigurationError, match="no handler registered"):
            await router.receive_interswarm_message_forward(wire)
        router.register_message_handler("local_message_handler", handler)
        assert await router.receive_interswarm_message_forward(wire) == "queued"
        assert await router.receive_interswarm_message_back(wire) == "queued"
        stats = router.get_routing_stats()
        await router.stop()
    assert got[0]["message"]["recipient"] == create_agent_address("weather")  # type: ignore[typeddict-item]
    assert got[0]["id"] == wire["message_id"]
    assert stats["registered_handlers"] == ["local_message_handler"]
    assert stats["local_swarm_name"] == "beta"


async def test_an_envelope_for_another_swarm_is_refused() -> None:
    async with SwarmRegistry("gamma", "http://127.0.0.1:1", env={}) as registry:
        router = InterswarmRouter(registry)
        router.register_message_handler("request", lambda m: None)
        with pytest.raises(InvalidMessageError, match="for swarm 'beta'"):
            await router.receive_interswarm_message_forward(router_for_alpha_envelope("w@beta"))
        await router.stop()


def router_for_alpha_envelope(recipient: str) -> Any:
    """An envelope from alpha's supervisor to ``recipient``, as alpha's router wraps it."""
    return make_interswarm_message(
        message=_request(recipient),
        source_swarm="alpha",
        target_swarm="beta",
        task_owner="user:u1@alpha",
        task_contributors=["user:u1@alpha"],
        auth_token="",
        metadata={},
    )


async def test_envelopes_are_sent_as_given_with_the_registry_token() -> None:
    async with (
        FakePeer("beta") as peer,
        SwarmRegistry("alpha", "http://127.0.0.1:1", env={}) as registry,
    ):
        await registry.register_swarm("beta", peer.url, auth_token="tok-beta")
        router = InterswarmRouter(registry, "alpha")
        wire = router.convert_local_message_to_interswarm(
            _request("weather@beta"), "user:u1@alpha", ["user:u1@alpha"], {"k": 1}
        )
        forward = await router.send_interswarm_message_forward(wire)
        back = await router.send_interswarm_message_back(wire)
        with pytest.raises(InvalidMessageError, match="no recipient in another swarm"):
            router.convert_local_message_to_interswarm(_request("local"), "o", ["o"])
        await router.stop()
    assert wire["target_swarm"] == "beta" and wire["metadata"] == {"k": 1}
    assert wire["payload"]["sender"] == create_agent_address("supervisor@alpha")
    assert [path for path, _, _ in peer.received] == ["/interswarm/forward", "/interswarm/back"]
    assert peer.received[0][1]["Authorization"] == "Bearer tok-beta"
    assert peer.received[0][2] == {"message": wire}
    assert forward["status"] == back["status"] == "success"


async def _answer(_request: web.Request, body: Any) -> web.Response:
    return web.json_response({"response": {"echo": body["body"]}, "events": None})


async def test_user_message_is_posted_to_the_peers_message_route() -> None:
    async with (
        FakePeer("beta", behaviour=_answer) as peer,
        SwarmRegistry("alpha", "http://127.0.0.1:1", env={}) as registry,
    ):
        await registry.register_swarm("beta", peer.url, auth_token="tok-beta")
        router = InterswarmRouter(registry)
        task_id = new_task_id()
        message = make_request(
            task_id=task_id,
            sender=create_user_address("u1"),
            recipient=create_agent_address("weather@beta"),
            subject="s",
            body="Tokyo?",
        )
        wire = make_interswarm_message(
            message=message,
            source_swarm="alpha",
            target_swarm="beta",
            task_owner="user:u1@alpha",
            task_contributors=["user:u1@alpha"],
            auth_token="user-key",
            metadata={},
        )
        answer = await router.post_interswarm_user_message(wire)
        without = {**wire, "auth_token": ""}
        with pytest.raises(InvalidMessageError, match="auth_token"):
            await router.post_interswarm_user_message(without)  # type: ignore[arg-type]
        await router.stop()
    path, headers, body = peer.received[0]
    assert path == "/interswarm/message"
    assert headers["Authorization"] == "Bearer user-key"
    assert body["targets"] == ["weather@beta"] and body["task_id"] == task_id
    assert body["body"] == "Tokyo?" and body["msg_type"] == "request"
    assert answer == {"response": {"echo": "Tokyo?"}, "events": None}
