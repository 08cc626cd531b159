"""A swarm from swarms.json that imports stdlib actions (``action_imports``) loads, and a
scripted agent calls them against a loopback server and completes the task with their
results."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from mail.api import MAILAction, MAILSwarmTemplate
from mail.stdlib.fs.actions import write_file
from mail.stdlib.http.actions import http_get
from mail.testing._loopback import LoopbackApp

pytestmark = pytest.mark.timeout(30)


class Page(LoopbackApp):
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/page"

    def _routes(self, app: web.Application) -> None:
        async def page(_request: web.Request) -> web.Response:
            return web.Response(text="the page's text")

        app.router.add_get("/page", page)


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    async with Page() as server:
        yield server


def definition() -> dict[str, Any]:
    return {
        "name": "fetcher",
        "version": "1.3.0",
        "entrypoint": "supervisor",
        "actions": [],
        "action_imports": [
            "python::mail.stdlib.http.actions:http_get",
            "python::mail.stdlib.fs.actions:write_file",
        ],
        "agents": [
            {
                "name": "supervisor",
                "factory": "python::tests.stdlib._stdlib_agents:fetch_and_save",
                "comm_targets": [],
                "actions": ["http_get", "write_file"],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "agent_params": {},
            }
        ],
    }


def test_the_imported_actions_are_the_stdlib_ones() -> None:
    template = MAILSwarmTemplate.from_swarms_json(definition())
    [agent] = template.agents
    names = [action.name for action in agent.actions]
    assert names == ["http_get", "write_file"]
    assert all(isinstance(action, MAILAction) for action in agent.actions)
    by_name = {action.name: action for action in agent.actions}
    assert by_name["http_get"].function is http_get.function
    assert by_name["write_file"].function is write_file.function


async def test_a_scripted_agent_completes_the_task_with_the_actions_results(
    use_settings: Any, page: Page, tmp_path: Path
) -> None:
    use_settings(http={"allow_loopback": True, "timeout": 5.0})
    swarm = MAILSwarmTemplate.from_swarms_json(definition()).instantiate({}, user_id="alice")
    try:
        final, _ = await swarm.post_message_and_run(page.url)
    finally:
        await swarm.shutdown()
    assert final["message"]["subject"] == "::task_complete::"
    assert final["message"]["body"] == "the page's text | successfully wrote to page.txt"
    assert (tmp_path / "files" / "page.txt").read_text(encoding="utf-8") == "the page's text"
