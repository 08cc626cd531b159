"""The swarm served as an A2A agent, driven by ``a2a-sdk``'s own client against a real
server on loopback: the card, send, stream, follow-ups, tasks, cancel, breakpoints,
keys and bad parts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2AClientError
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Part,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf.struct_pb2 import Value
from tests.a2a.conftest import USER_KEY, Start, connect, send, text_message
from tests.server.conftest import WAIT, ask_human_action, gated_swarm, scripted_template

from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(60)

QUESTION = "What is 12*(3+4)?"


async def mail_events(url: str, task_id: str) -> list[dict[str, Any]]:
    """The MAIL task's events, as ``GET /task`` shows them to the user."""
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT
    ) as http:
        task = (await http.get(f"{url}/task", params={"task_id": task_id})).json()
    return [
        {**e, "data": json.loads(e["data"]) if isinstance(e["data"], str) else e["data"]}
        for e in task["events"]
    ]


async def test_the_card_names_the_swarm_its_entrypoint_keys_and_interfaces(
    offline_url: str,
) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        response = await http.get(f"{offline_url}/.well-known/agent-card.json")

    assert response.status_code == 200
    card = response.json()
    assert card["name"] == "offline"
    assert card["description"].startswith("Scripted agents, no LLM")
    assert [s["id"] for s in card["skills"]] == ["supervisor"]
    assert card["capabilities"]["streaming"] is True
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    interfaces = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert interfaces == {"JSONRPC": f"{offline_url}/a2a", "HTTP+JSON": f"{offline_url}/a2a"}


#: A server started in a fresh interpreter: whether the SDK is loaded after its start, then
#: three first A2A requests at once (the card, SendMessage over JSON-RPC and over HTTP+JSON).
_FIRST_REQUESTS = """
import asyncio, sys
from pathlib import Path
import httpx
from tests.server.conftest import KEYS, make_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve

async def main():
    app = create_app(make_config(Path(sys.argv[1])), authenticator=StaticAuth(KEYS))
    async with serve(app) as url:
        print("loaded at start:", "a2a.server.routes" in sys.modules)
        headers = {"Authorization": "Bearer user-key", "A2A-Version": "1.0"}
        message = {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "What is 2 + 3?"}]}
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:
            card, jsonrpc, rest = await asyncio.gather(
                http.get(url + "/.well-known/agent-card.json"),
                http.post(url + "/a2a", json=rpc),
                http.post(url + "/a2a/message:send", json={"message": {**message, "messageId": "n"}}),
            )
        print("card:", card.status_code, card.json()["name"])
        print("jsonrpc:", jsonrpc.json()["result"]["task"]["status"]["state"])
        print("rest:", rest.status_code, rest.json()["task"]["status"]["state"])

asyncio.run(main())
"""


def test_the_sdk_is_imported_at_the_first_a2a_request_not_at_start(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(  # this interpreter, a fixed script
        [sys.executable, "-c", textwrap.dedent(_FIRST_REQUESTS), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        check=False,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "loaded at start: False",
        "card: 200 offline",
        "jsonrpc: TASK_STATE_COMPLETED",
        "rest: 200 TASK_STATE_COMPLETED",
    ]


async def test_send_message_answers_with_the_artifact_and_a_completed_task(
    offline_url: str,
) -> None:
    async with connect(offline_url) as client:
        [response] = await send(client, text_message(QUESTION))

    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [a.artifact_id for a in task.artifacts] == ["answer"]
    assert "12*(3+4) = 84" in task.artifacts[0].parts[0].text
    assert task.history[0].parts[0].text == QUESTION


async def test_the_http_json_binding_answers_too(offline_url: str) -> None:
    headers = {"Authorization": f"Bearer {USER_KEY}", "A2A-Version": "1.0"}
    body = {"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": QUESTION}]}}
    async with httpx.AsyncClient(headers=headers, timeout=WAIT) as http:
        sent = await http.post(f"{offline_url}/a2a/message:send", json=body)
        task = sent.json()["task"]
        read = await http.get(f"{offline_url}/a2a/tasks/{task['id']}")

    assert sent.status_code == 200
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "84" in task["artifacts"][0]["parts"][0]["text"]
    assert read.json()["id"] == task["id"]


async def test_a_stream_shows_who_works_the_tool_calls_and_ends_with_the_artifact(
    offline_url: str,
) -> None:
    async with connect(offline_url, streaming=True) as client:
        events = await send(client, text_message("What is the weather in Paris and 2+2?"))

    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert kinds[-2:] == ["artifact_update", "status_update"]
    working = [
        e.status_update.status
        for e in events
        if e.HasField("status_update")
        and e.status_update.status.state == TaskState.TASK_STATE_WORKING
    ]
    said = [s.message.parts[0].text for s in working if s.message.parts]
    assert "u1 -> supervisor: New Message" in said
    assert "supervisor -> weather: Weather forecast" in said
    assert "agent weather called get_weather_forecast" in said
    assert "Forecast for Paris" in events[-2].artifact_update.artifact.parts[0].text
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_follow_up_in_the_same_context_continues_the_mail_task(offline_url: str) -> None:
    async with connect(offline_url) as client:
        [first] = await send(client, text_message(QUESTION))
        context = first.task.context_id
        [second] = await send(client, text_message("And 2+2?", context_id=context))
        listed = await client.list_tasks(ListTasksRequest(context_id=context))
    mail_task = await mail_events(offline_url, context)

    assert second.task.context_id == context
    assert second.task.id != first.task.id
    assert second.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert "2+2 = 4" in second.task.artifacts[0].parts[0].text
    assert {t.id for t in listed.tasks} == {first.task.id, second.task.id}
    # one MAIL task, two turns: both questions were delivered to it
    bodies = [
        e["data"]["extra_data"]["full_message"]["message"]["body"]
        for e in mail_task
        if e["event"] == "new_message"
    ]
    assert QUESTION in bodies
    assert "And 2+2?" in bodies


async def test_get_task_reads_the_stored_task_and_others_tasks_are_not_found(
    offline_url: str,
) -> None:
    async with connect(offline_url) as client:
        [sent] = await send(client, text_message(QUESTION))
        read = await client.get_task(GetTaskRequest(id=sent.task.id))
    async with connect(offline_url, "user2-key") as other:
        with pytest.raises(TaskNotFoundError):
            await other.get_task(GetTaskRequest(id=sent.task.id))

    assert read.status.state == TaskState.TASK_STATE_COMPLETED
    assert read.artifacts[0].parts[0].text == sent.task.artifacts[0].parts[0].text


async def test_cancel_task_cancels_the_mail_task(a2a_start: Start) -> None:
    gate = asyncio.Event()  # never set: the worker waits until the task is cancelled
    template, _worker = gated_swarm(gate)
    url = await a2a_start(template=template)
    request = SendMessageRequest(
        message=text_message("work", message_id="m-cancel"),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    async with connect(url) as client:
        [started] = [r async for r in client.send_message(request)]
        cancelled = await client.cancel_task(CancelTaskRequest(id=started.task.id))
        read = await client.get_task(GetTaskRequest(id=started.task.id))
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT
    ) as http:
        context = started.task.context_id
        mail_task = (await http.get(f"{url}/task", params={"task_id": context})).json()

    assert started.task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert read.status.state == TaskState.TASK_STATE_CANCELED
    assert mail_task["state"] == "cancelled"


async def test_subscribe_to_task_follows_a_running_task_to_its_end(a2a_start: Start) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    url = await a2a_start(template=template)
    request = SendMessageRequest(
        message=text_message("job", message_id="m-subscribe"),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    async with connect(url) as client, connect(url, streaming=True) as watcher:
        [started] = [r async for r in client.send_message(request)]
        events = watcher.subscribe(SubscribeToTaskRequest(id=started.task.id))
        first = await asyncio.wait_for(anext(events), WAIT)
        gate.set()
        rest = [e async for e in events]

    assert first.task.id == started.task.id
    assert rest[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    answers = [e.artifact_update.artifact for e in rest if e.HasField("artifact_update")]
    assert answers[-1].parts[0].text == "done: worked"


async def test_a_mail_cancel_ends_the_running_a2a_task_canceled(a2a_start: Start) -> None:
    template, _worker = gated_swarm(asyncio.Event())  # the worker waits until cancelled
    url = await a2a_start(template=template)
    request = SendMessageRequest(
        message=text_message("work", message_id="m-mail-cancel"),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    async with connect(url) as client, connect(url, streaming=True) as watcher:
        [started] = [r async for r in client.send_message(request)]
        events = watcher.subscribe(SubscribeToTaskRequest(id=started.task.id))
        await asyncio.wait_for(anext(events), WAIT)
        async with httpx.AsyncClient(
            headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT
        ) as http:
            cancel = await http.post(f"{url}/tasks/{started.task.context_id}/cancel")
        rest = [e async for e in events]

    assert cancel.status_code == 200
    assert rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED


async def test_a_breakpoint_is_input_required_and_the_next_message_answers_it(
    a2a_start: Start,
) -> None:
    supervisor = ScriptedAgent(
        [
            tc("ask_human", call_id="bp-1", question="What is your name?"),
            lambda incoming: tc("task_complete", finish_message="thanks, human"),
        ]
    )
    template = scripted_template(
        {"supervisor": supervisor}, breakpoint_tools=["ask_human"], actions=[ask_human_action()]
    )
    url = await a2a_start(template=template)
    async with connect(url) as client:
        [paused] = await send(client, text_message("hello"))
        task = paused.task
        [answered] = await send(
            client, text_message("Ada", task_id=task.id, context_id=task.context_id)
        )

    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    asked = task.status.message.parts[0].text
    assert "ask_human" in asked
    assert "What is your name?" in asked
    assert answered.task.id == task.id
    assert answered.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert answered.task.artifacts[0].parts[0].text == "thanks, human"
    # the answer went to the pending call as its result
    results = [
        e["data"]["description"]
        for e in await mail_events(url, task.context_id)
        if e["event"] == "breakpoint_action_complete"
    ]
    assert len(results) == 1
    assert "Ada" in results[0]


async def test_no_key_a_wrong_key_or_an_agent_key_is_401(offline_url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}]}},
    }
    async with httpx.AsyncClient(timeout=WAIT) as http:
        missing = await http.post(f"{offline_url}/a2a", json=body)
        wrong = await http.post(
            f"{offline_url}/a2a", json=body, headers={"Authorization": "Bearer nope"}
        )
        agent = await http.get(
            f"{offline_url}/a2a/tasks", headers={"Authorization": "Bearer agent-key"}
        )
    async with connect(offline_url, "nope") as client:
        with pytest.raises(A2AClientError, match="401"):
            await send(client, text_message(QUESTION))

    assert missing.status_code == 401
    assert missing.json() == {"detail": "no API key provided"}
    assert missing.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401
    assert wrong.json() == {"detail": "invalid API key"}
    # a key of another role, as on POST /message (CONTRACT 1.5)
    assert agent.status_code == 401
    assert agent.json() == {"detail": "invalid role: this route needs admin or user"}


@pytest.mark.parametrize(
    ("parts", "says"),
    [
        ([Part(data=Value(string_value="x"))], "message.parts[0]: a data part"),
        ([Part(text="hi"), Part(url="https://example.com/a.txt")], "message.parts[1]: a url part"),
        ([Part(raw=b"\x00")], "message.parts[0]: a raw part"),
        ([Part(text="  ")], "message.parts: no text to send"),
    ],
)
async def test_parts_this_swarm_cannot_read_are_refused(
    offline_url: str, parts: list[Part], says: str
) -> None:
    async with connect(offline_url) as client:
        with pytest.raises(InvalidParamsError) as refused:
            await send(client, text_message("", parts=parts))

    assert says in str(refused.value)


async def test_a_context_id_that_is_no_task_id_is_refused(offline_url: str) -> None:
    async with connect(offline_url) as client:
        with pytest.raises(InvalidParamsError, match=r"message\.contextId: must be 1-256"):
            await send(client, text_message(QUESTION, context_id="x" * 300))
