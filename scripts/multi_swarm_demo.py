"""Two MAIL servers on this machine answer one task together.

    uv run python scripts/multi_swarm_demo.py

Starts two servers on ``127.0.0.1`` (free ports, throwaway data directories):

* swarm ``alpha``: a scripted supervisor that forwards the user's question to
  ``weather@beta`` and completes the task with the answer;
* swarm ``beta``: a scripted weather agent that runs the ``get_weather_forecast`` action
  and answers ``supervisor@alpha``.

Each server registers the other over HTTP (``POST /swarms``, volatile, with the key the
peer accepts from it). A user then asks ``alpha`` through :class:`mail.client.MAILClient`;
the demo prints alpha's events as they stream in, beta's side of the task, and the answer.
No LLM, no network beyond loopback.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from single_swarm_demo import describe_event

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.client import MAILClient
from mail.config import ClientConfig, load_config
from mail.examples.offline.agents import OfflineWeatherFunction
from mail.examples.weather_dummy.actions import get_weather_forecast
from mail.server import create_app
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, StaticAuth, tc
from mail.testing.server import serve

REPO = Path(__file__).resolve().parents[1]
SWARMS_JSON = REPO / "swarms.json"
QUESTION = "What's the weather in Lisbon tomorrow?"
_WAIT = 30.0


def keys(name: str, peer: str) -> dict[str, tuple[str, str]]:
    """API keys of swarm ``name``'s server: its admin, its user and the peer swarm."""
    return {
        f"{name}-admin": ("admin", "admin"),
        f"{name}-user": ("user", "u1"),
        f"{peer}-to-{name}": ("agent", peer),
    }


# --- the two swarms ------------------------------------------------------------------------


def alpha_supervisor(incoming: Incoming) -> ScriptedCall:
    """Ask beta's weather agent; complete the task with its answer (or the error)."""
    if incoming.sender_type == "user":
        return tc("send_request", target="weather@beta", subject="Forecast", body=incoming.body)
    if incoming.sender_type == "system":
        return tc("task_complete", finish_message=f"Sorry, no forecast: {incoming.body}")
    return tc("task_complete", finish_message=f"{incoming.sender} says: {incoming.body}")


def alpha_swarm() -> MAILSwarmTemplate:
    supervisor = MAILAgentTemplate(
        "supervisor",
        lambda **_params: ScriptedAgent(rule=alpha_supervisor),
        ["weather@beta"],
        [],
        {},
        enable_entrypoint=True,
        enable_interswarm=True,
        can_complete_tasks=True,
    )
    return MAILSwarmTemplate(
        "alpha",
        "1.0.0",
        [supervisor],
        [],
        "supervisor",
        enable_interswarm=True,
        description="asks beta about the weather",
        public=True,
    )


def beta_swarm() -> MAILSwarmTemplate:
    supervisor = MAILAgentTemplate(
        "supervisor",
        lambda **_params: ScriptedAgent(rule=lambda _m: tc("task_complete", finish_message="-")),
        ["weather"],
        [],
        {},
        enable_entrypoint=True,
        enable_interswarm=True,
        can_complete_tasks=True,
    )
    # The offline swarm's scripted weather agent: runs the action, answers whoever asked.
    weather = MAILAgentTemplate(
        "weather",
        OfflineWeatherFunction,
        ["supervisor", "supervisor@alpha"],
        [get_weather_forecast],
        {},
        enable_interswarm=True,
    )
    return MAILSwarmTemplate(
        "beta",
        "1.0.0",
        [supervisor, weather],
        [get_weather_forecast],
        "supervisor",
        enable_interswarm=True,
        description="knows the weather",
        public=True,
    )


# --- servers -------------------------------------------------------------------------------


async def start(
    stack: AsyncExitStack, data_dir: Path, template: MAILSwarmTemplate, peer: str
) -> tuple[str, Any]:
    """Start a server of ``template``; return its URL and its app."""
    name = template.name
    config = load_config(
        None,
        # everything of the demo's servers, registry files included, in its temporary folder
        env={
            "MAIL_DATA_DIR": str(data_dir / name),
            "SWARM_REGISTRY_FILE": str(data_dir / name / "registries" / f"{name}.json"),
        },
        search=False,
        overrides={
            "server": {
                # the swarm comes from ``template``; swarms.json only fills the config
                "swarm": {"name": "offline", "source": str(SWARMS_JSON)},
                "settings": {"print_llm_streams": False},
            }
        },
    )
    app = create_app(config, template=template, authenticator=StaticAuth(keys(name, peer)))
    url = await stack.enter_async_context(serve(app))
    # what BASE_URL would say; the port is only known once bound
    state = app.state.mail
    state.base_url = url
    state.registry.register_local_swarm(url)
    return url, app


async def register(name: str, url: str, peer: str, peer_url: str) -> None:
    """Register swarm ``peer`` on ``name``'s server, with the key ``peer`` accepts from it."""
    async with MAILClient(url, api_key=f"{name}-admin") as admin:
        await admin.register_swarm(peer, peer_url, auth_token=f"{name}-to-{peer}", volatile=True)
    print(f"registered {peer} ({peer_url}) on {name}")


# --- the task ------------------------------------------------------------------------------


async def run_task(alpha_url: str, beta_app: Any) -> str:
    config = ClientConfig(timeout=_WAIT)
    async with MAILClient(alpha_url, api_key="alpha-user", config=config) as client:
        print(f"\nu1@alpha asks alpha: {QUESTION}")
        print("alpha's events:")
        async with await client.post_message_stream(QUESTION, ignore_pings=True) as stream:
            async for event in stream:
                if event.event == "task_complete" and event.id is None:
                    continue  # the final event: the answer is printed below
                line = describe_event(event.event, event.json())
                if line:
                    print(f"  {line}")
        if stream.final is None or stream.final.event != "task_complete":
            raise RuntimeError(f"the task did not complete: {stream.final}")
        answer = str(stream.final.json()["response"])
        task_id = stream.task_id

    # Beta ran its part of the task in the runtime of its caller, swarm alpha. Only that
    # caller's agent key may read it, and agents have no task routes: read beta's state.
    runtime = beta_app.state.mail.swarms.lookup("agent", "alpha").runtime
    copy = runtime.tasks.get(str(task_id))
    if copy is None:
        raise RuntimeError(f"beta has no copy of task {task_id}")
    async with asyncio.timeout(_WAIT):
        await copy.wait_turn()  # until alpha's completion notice has closed it
    print("beta's events (the same task, run for caller alpha):")
    for event in copy.log.all():
        line = describe_event(str(event.event), event.data())
        if line:
            print(f"  {line}")
    return answer


async def main() -> int:
    with tempfile.TemporaryDirectory(prefix="mail-multi-demo-") as tmp:
        data_dir = Path(tmp)
        async with AsyncExitStack() as stack:
            alpha_url, _ = await start(stack, data_dir, alpha_swarm(), "beta")
            beta_url, beta_app = await start(stack, data_dir, beta_swarm(), "alpha")
            print(f"alpha at {alpha_url}\nbeta  at {beta_url}")
            await register("alpha", alpha_url, "beta", beta_url)
            await register("beta", beta_url, "alpha", alpha_url)
            answer = await run_task(alpha_url, beta_app)
            print(f"\nAnswer: {answer}")
    print("\nBoth servers stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
