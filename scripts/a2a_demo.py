"""A2A both ways, offline, in one command.

    uv run python scripts/a2a_demo.py

Starts, on ``127.0.0.1`` (free ports, a throwaway data directory):

* a remote weather agent served with ``a2a-sdk``'s own server components (it is no MAIL
  swarm: any A2A agent would do);
* a MAIL server whose swarm ``asks-a2a`` has that agent as a member (``a2a_agents`` in its
  definition, named ``weather``) and the offline supervisor, which sends weather questions
  to ``weather``.

Then an A2A client (``a2a-sdk``'s) asks the MAIL server, as it would ask any A2A agent.
The demo prints the stream of the task (who works, which tools are called) and the answer,
which came from the remote agent. No LLM, no network beyond loopback.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from contextlib import AsyncExitStack

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from starlette.applications import Starlette

from mail.api import MAILSwarmTemplate
from mail.config import load_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve

QUESTION = "What's the weather in Lisbon tomorrow?"
USER_KEY = "demo-user-key"


class RemoteWeather(AgentExecutor):
    """The remote agent: a forecast for whatever it is asked."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        asked = context.get_user_input()
        forecast = f"The remote A2A agent says: sunny and 24°C ({asked!r})"
        await updater.add_artifact([Part(text=forecast)], name="forecast")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def remote_app(url_of: list[str]) -> Starlette:
    """The remote agent's app; its card's URL is read per request from ``url_of``."""
    card = AgentCard(
        name="remote-weather",
        description="Forecasts, served by a2a-sdk",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="forecast", name="forecast", description="A forecast", tags=["weather"])
        ],
    )

    async def with_url(served: AgentCard) -> AgentCard:
        served.supported_interfaces[0].url = url_of[0]
        return served

    handler = DefaultRequestHandler(
        agent_executor=RemoteWeather(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card, card_modifier=with_url),
        *create_jsonrpc_routes(handler, rpc_url="/"),
    ]
    return Starlette(routes=routes)


def swarm(remote_url: str) -> MAILSwarmTemplate:
    return MAILSwarmTemplate.from_swarms_json(
        {
            "name": "asks-a2a",
            "version": "1.0.0",
            "description": "The offline supervisor, with a remote A2A agent as its weather agent.",
            "entrypoint": "supervisor",
            "agents": [
                {
                    "name": "supervisor",
                    "factory": "python::mail.examples.offline.agents:OfflineSupervisorFunction",
                    "comm_targets": ["weather"],
                    "agent_params": {},
                    "enable_entrypoint": True,
                    "can_complete_tasks": True,
                }
            ],
            "actions": [],
            "a2a_agents": [{"name": "weather", "url": remote_url, "timeout": 30}],
        }
    )


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="mail-a2a-demo-") as data:
        async with AsyncExitStack() as stack:
            url_of: list[str] = []
            remote = await stack.enter_async_context(serve(remote_app(url_of)))
            url_of.append(remote)
            print(f"remote A2A agent at {remote}")
            config = load_config(
                None,
                env={"MAIL_DATA_DIR": data, "SWARM_REGISTRY_FILE": f"{data}/registry.json"},
                search=False,
                overrides={
                    "server": {"settings": {"print_llm_streams": False}},
                    # the remote agent is on loopback, which the guard refuses by default
                    "stdlib": {"http": {"allow_loopback": True}},
                },
            )
            app = create_app(
                config,
                template=swarm(remote),
                authenticator=StaticAuth({USER_KEY: ("user", "demo")}),
            )
            mail = await stack.enter_async_context(serve(app))
            print(
                f"MAIL server (swarm asks-a2a) at {mail}, its card at {mail}/.well-known/agent-card.json"
            )
            await ask(mail)
        print("Both servers stopped.")


async def ask(mail: str) -> None:
    headers = {"Authorization": f"Bearer {USER_KEY}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        client = await create_client(mail, client_config=ClientConfig(httpx_client=http))
        print(f"\nA2A client asks: {QUESTION}")
        message = Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=QUESTION)]
        )
        answer = ""
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.HasField("status_update"):
                status = event.status_update.status
                state = TaskState.Name(status.state).removeprefix("TASK_STATE_").lower()
                said = status.message.parts[0].text if status.message.parts else ""
                print(f"  {state}: {said}" if said else f"  {state}")
            elif event.HasField("artifact_update"):
                answer = event.artifact_update.artifact.parts[0].text
        await client.close()
    print(f"\nAnswer: {answer}")


if __name__ == "__main__":
    asyncio.run(main())
