"""Tour of :class:`mail.client.MAILClient` against a server started in-process.

    uv run python scripts/demo_client.py

Starts a MAIL server of the offline demo swarm (scripted agents, no LLM) on
``127.0.0.1`` with a free port and a throwaway data directory, then uses the client:
server info, health, who am I, a message, a streamed message with its events, and the
task list. Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from single_swarm_demo import describe_event

from mail.client import MAILClient
from mail.config import ClientConfig, load_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve

REPO = Path(__file__).resolve().parents[1]
SWARMS_JSON = REPO / "swarms.json"
USER_KEY = "demo-user-key"


async def tour(url: str) -> None:
    async with MAILClient(url, api_key=USER_KEY, config=ClientConfig(timeout=60)) as client:
        root = await client.get_root()
        swarm = root.get("swarm") or {}
        print(
            f"Server: {root['name']} protocol {root['protocol_version']}, status {root['status']}"
        )
        print(f"Swarm:  {swarm.get('name')} (entrypoint {swarm.get('entrypoint')})")
        health = await client.get_health()
        print(f"Health: {health['status']}")
        me = await client.get_whoami()
        print(f"Who am I: {me['role']} {me['id']}\n")

        question = "What is 6 * 7?"
        print(f"post_message: {question}")
        answer = await client.post_message(question, show_events=True)
        print(f"  answer: {answer['response']}")
        print(f"  task {answer['task_id']} ({len(answer.get('events') or [])} events)\n")

        question = "Weather in Rome, and what is 2 to the power of 10?"
        print(f"post_message_stream: {question}")
        async with await client.post_message_stream(question, ignore_pings=True) as stream:
            async for event in stream:
                if event.event == "task_complete" and event.id is None:
                    continue  # the final event: printed below
                line = describe_event(event.event, event.json())
                if line:
                    print(f"  [{event.id}] {line}")
        assert stream.final is not None
        print("  answer:")
        for line in str(stream.final.json()["response"]).splitlines():
            print(f"    {line}")
        print()

        tasks = await client.get_tasks()
        print(f"Tasks of {me['id']}: {len(tasks)}")
        for task_id, task in tasks.items():
            state = task.get("state") or ("completed" if task["completed"] else "running")
            print(f"  {task_id}: {state}, {len(task['events'])} events")


async def main() -> int:
    with tempfile.TemporaryDirectory(prefix="mail-demo-") as data_dir:
        config = load_config(
            None,
            # everything of the demo's server, its registry file included, in a temporary folder
            env={
                "MAIL_DATA_DIR": data_dir,
                "SWARM_REGISTRY_FILE": str(Path(data_dir) / "registries" / "offline.json"),
            },
            search=False,
            overrides={
                "server": {
                    "swarm": {"name": "offline", "source": str(SWARMS_JSON)},
                    "settings": {"print_llm_streams": False},
                }
            },
        )
        auth = StaticAuth({USER_KEY: ("user", "alice")})
        app = create_app(config, authenticator=auth)
        async with serve(app) as url:
            print(f"MAIL server of the offline swarm at {url}\n")
            await tour(url)
    print("\nServer stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
