"""v1.3.6's ``MAILSwarm`` adapters: ``await_queue_empty``, ``post_interswarm_user_message``
and ``send_interswarm_message``, with a real peer server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import pytest
from tests._servers import serve
from tests.api.test_swarm_interswarm import (
    BETA_KEY,
    REPO,
    TOKENS,
    WAIT,
    Inbox,
    alpha_rule,
    beta_rule,
    inbox_server,
    one_agent_swarm,
    write_registry,
)

from mail.config import load_config
from mail.core.message import (
    create_agent_address,
    create_user_address,
    make_interswarm_message,
    make_request,
)
from mail.errors import ConfigurationError, InvalidMessageError
from mail.server import create_app
from mail.testing import Incoming, StaticAuth, tc


def done_rule(incoming: Incoming) -> object:
    return tc("task_complete", finish_message=f"done: {incoming.body}")


@asynccontextmanager
async def beta_server(tmp_path: Path) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """A MAIL server of swarm ``beta`` whose supervisor answers alpha's user ``u1``."""
    config = load_config(
        None,
        env={"MAIL_DATA_DIR": str(tmp_path / "beta")},
        search=False,
        overrides={
            "server": {
                "swarm": {
                    "name": "offline",
                    "source": str(REPO / "swarms.json"),
                    "registry": str(tmp_path / "beta" / "registry.json"),
                },
                "settings": {"print_llm_streams": False},
            }
        },
    )
    auth = StaticAuth({BETA_KEY: ("agent", "alpha"), "beta-admin": ("admin", "admin")})
    template = one_agent_swarm("beta", beta_rule, ["u1@alpha"])
    app = create_app(config, template=template, authenticator=auth)
    async with (
        serve(app) as url,
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": "Bearer beta-admin"}, timeout=WAIT
        ) as admin,
    ):
        yield url, admin


async def test_await_queue_empty_returns_once_the_task_is_done() -> None:
    swarm = one_agent_swarm("solo", done_rule, [], interswarm=False).instantiate({}, user_id="u1")
    try:
        message = swarm.build_message("s", "hi", ["supervisor"])
        runner = asyncio.ensure_future(swarm.submit_message(message, timeout=WAIT))
        await asyncio.sleep(0)
        await asyncio.wait_for(swarm.await_queue_empty(), WAIT)
        await asyncio.wait_for(runner, WAIT)
        assert swarm.runtime.scheduler.is_idle()
    finally:
        await swarm.shutdown(timeout=1.0)


async def test_a_user_message_reaches_a_peer_swarm(tmp_path: Path) -> None:
    inbox = Inbox()
    async with AsyncExitStack() as stack:
        beta_url, beta_admin = await stack.enter_async_context(beta_server(tmp_path))
        alpha_url = await stack.enter_async_context(inbox_server(inbox))
        registry_file = tmp_path / "alpha-registry.json"
        await write_registry(registry_file, alpha_url, {"beta": beta_url})
        answer = await beta_admin.post(
            "/swarms", json={"name": "alpha", "base_url": alpha_url, "auth_token": "b-to-a"}
        )
        assert answer.status_code == 200, answer.text
        alpha = one_agent_swarm("alpha", alpha_rule, ["supervisor@beta"]).instantiate(
            {}, user_id="u1", base_url=alpha_url, registry_file=registry_file, env=TOKENS
        )
        inbox.swarm = alpha
        try:
            request = make_request(
                task_id="t-user-1",
                sender=create_user_address("u1"),
                recipient=create_agent_address("supervisor@beta"),
                subject="q",
                body="hello beta",
            )
            wrapped = make_interswarm_message(
                message=request,
                source_swarm="alpha",
                target_swarm="beta",
                task_owner="user:u1@alpha",
                task_contributors=[],
            )
            ack = await alpha.post_interswarm_user_message(wrapped)
            assert ack["task_id"] == "t-user-1"
            task = alpha.get_task_by_id("t-user-1")
            assert task is not None
            reply = await asyncio.wait_for(task.wait_turn(), WAIT)
            assert reply["message"]["body"] == "hello from beta"
            again = make_request(
                task_id="t-user-1",
                sender=create_user_address("u1"),
                recipient=create_agent_address("supervisor@beta"),
                subject="q2",
                body="again",
            )
            wrapped_again = make_interswarm_message(
                message=again, source_swarm="alpha", target_swarm="beta",
                task_owner="user:u1@alpha", task_contributors=[],
            )  # fmt: skip
            ack = await alpha.send_interswarm_message(wrapped_again, "forward")
            assert ack["task_id"] == "t-user-1"
            assert alpha.get_task_by_id("t-user-1") is task  # the same task went on
            with pytest.raises(InvalidMessageError):
                await alpha.send_interswarm_message(wrapped, "sideways")  # type: ignore[arg-type]
        finally:
            await alpha.shutdown(timeout=1.0)
    assert inbox.received[0] == "back"


async def test_sending_needs_interswarm() -> None:
    swarm = one_agent_swarm("solo", done_rule, [], interswarm=False).instantiate({}, user_id="u1")
    request = make_request(
        task_id="t1",
        sender=create_user_address("u1"),
        recipient=create_agent_address("x@beta"),
        subject="q",
        body="b",
    )
    wrapped = make_interswarm_message(
        message=request, source_swarm="solo", target_swarm="beta", task_owner="o",
        task_contributors=[],
    )  # fmt: skip
    with pytest.raises(ConfigurationError):
        await swarm.send_interswarm_message(wrapped)
    await swarm.shutdown(timeout=1.0)
