"""An A2A agent as a member of a swarm: an agent function that passes each message it
receives to a remote A2A agent with ``a2a-sdk``'s client and answers the sender with the
remote task's outcome.

Per MAIL task, the remote context is the MAIL task id: later messages of the same task
continue the remote conversation, and a remote task waiting for input
(``input-required``) is continued by the next message, also after a restart (the first
message of a context in a process looks for it in the remote's ``ListTasks``). The call goes through the outbound
address guard of ``[stdlib.http]``, within ``timeout`` seconds (then the remote task is
cancelled and the sender told); when the MAIL task is cancelled, so is the remote task.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mail.core import current_task_id, traced_hop
from mail.core.message import parse_incoming
from mail.core.tools import AgentToolCall
from mail.errors import MAILError

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types import StreamResponse

__all__ = ["A2AAgentFunction", "Outcome"]

logger = logging.getLogger("mail.actions")

#: contexts remembered as known to this process (beyond, the remote's list is read again)
_KNOWN = 4096


@dataclass(slots=True)
class Outcome:
    """What a remote A2A task came to: its id, its state's name (``completed``,
    ``input-required``, ``failed``, ...), its artifacts' text and its status message."""

    task_id: str = ""
    state: str = "unknown"
    artifacts: dict[str, str] = field(default_factory=dict)
    status: str = ""

    def read(self, response: StreamResponse) -> None:
        """Apply one response of a send (a task, a status or an artifact update)."""
        from a2a.types import TaskState  # noqa: PLC0415

        kind = response.WhichOneof("payload")
        if kind == "task":
            task = response.task
            self.task_id = task.id
            for artifact in task.artifacts:
                self.artifacts[artifact.artifact_id] = _text(artifact.parts)
            self._status(TaskState.Name(task.status.state), _text(task.status.message.parts))
        elif kind == "status_update":
            status = response.status_update.status
            self.task_id = response.status_update.task_id
            self._status(TaskState.Name(status.state), _text(status.message.parts))
        elif kind == "artifact_update":
            update = response.artifact_update
            aid, text = update.artifact.artifact_id, _text(update.artifact.parts)
            self.artifacts[aid] = self.artifacts.get(aid, "") + text if update.append else text
        elif kind == "message":
            self.state, self.artifacts = "completed", {"message": _text(response.message.parts)}

    def _status(self, state: str, text: str) -> None:
        self.state = state.removeprefix("TASK_STATE_").lower().replace("_", "-")
        if text:
            self.status = text

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in self.artifacts.values() if t) or self.status


def _text(parts: Any) -> str:
    return "\n".join(p.text for p in parts if p.WhichOneof("content") == "text")


class A2AAgentFunction:
    """The agent function of A2A agent ``name`` at ``url`` (its agent card's URL, or the
    base URL it is served at), with bearer ``token`` if any, streaming when ``streaming``
    and the card allows it, each call bounded by ``timeout`` seconds."""

    def __init__(
        self, name: str, url: str, *, token: str | None, streaming: bool, timeout: float
    ) -> None:
        self.name = name
        self.base, self.card_path = _split(url)
        self.token = token
        self.streaming = streaming
        self.timeout = timeout
        #: MAIL task id -> the remote task waiting for input in its context
        self.waiting: dict[str, str] = {}
        #: the MAIL task ids this process sent messages in (at most ``_KNOWN``)
        self.known: set[str] = set()

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> tuple[str | None, list[AgentToolCall]]:
        del tool_choice
        incoming = parse_incoming(messages)
        context = current_task_id() or f"{self.name}-{uuid.uuid4()}"
        body = await self._ask(context, incoming.body)
        reply = {"target": incoming.sender, "subject": f"Re: {incoming.subject}", "body": body}
        return None, [_send_response(reply)]

    async def _ask(self, context: str, text: str) -> str:
        import httpx  # noqa: PLC0415
        from a2a.utils.errors import A2AError  # noqa: PLC0415

        try:
            outcome = await self._send(context, text)
        except TimeoutError:
            return f"error: A2A agent {self.name} did not answer within {self.timeout:g} s"
        except (A2AError, MAILError, OSError, httpx.HTTPError) as e:
            logger.info("A2A agent %s failed: %s", self.name, e)
            return f"error: A2A agent {self.name} failed: {type(e).__name__}: {e}"
        return self._answer(context, outcome)

    def _answer(self, context: str, outcome: Outcome) -> str:
        self.waiting.pop(context, None)
        if outcome.state == "completed":
            return outcome.text
        if outcome.state == "input-required":
            self.waiting[context] = outcome.task_id
            return (
                f"A2A agent {self.name} needs more input: {outcome.status or outcome.text} "
                "(send it a request with the answer)"
            )
        detail = outcome.status or outcome.text or "no detail"
        return f"error: A2A agent {self.name} ended the task {outcome.state}: {detail}"

    async def _send(self, context: str, text: str) -> Outcome:
        # a span of its own when the turn is traced, its traceparent on every request
        with traced_hop("a2a", self.name, "a2a send_message") as trace:
            return await self._send_traced(context, text, trace)

    async def _send_traced(self, context: str, text: str, trace: dict[str, str]) -> Outcome:
        from a2a.client import ClientConfig, create_client  # noqa: PLC0415
        from a2a.types import Message, Part, Role, SendMessageRequest  # noqa: PLC0415

        from mail.net import guarded_async_client  # noqa: PLC0415
        from mail.stdlib._settings import http_policy  # noqa: PLC0415

        outcome = Outcome()
        async with guarded_async_client(http_policy(), timeout=self.timeout) as http:
            http.headers.update(trace)
            if self.token:
                http.headers["Authorization"] = f"Bearer {self.token}"
            config = ClientConfig(streaming=self.streaming, httpx_client=http)
            async with asyncio.timeout(self.timeout):
                client = await create_client(
                    self.base, client_config=config, relative_card_path=self.card_path
                )
                waiting = self.waiting.get(context)
                if waiting is None and context not in self.known:
                    # a context new to this process: the server may have restarted since
                    # the remote asked for input in it, the remote's list says
                    waiting = await _waiting(client, context)
                if len(self.known) >= _KNOWN:
                    self.known.clear()
                self.known.add(context)
                message = Message(
                    role=Role.ROLE_USER,
                    message_id=str(uuid.uuid4()),
                    parts=[Part(text=text)],
                    context_id=context,
                    task_id=waiting or "",
                )
                try:
                    async for response in client.send_message(SendMessageRequest(message=message)):
                        outcome.read(response)
                except BaseException:
                    await asyncio.shield(_cancel(client, outcome.task_id, context))
                    raise
                finally:
                    await client.close()
        return outcome


async def _waiting(client: Client, context: str) -> str | None:
    """The remote task waiting for input in ``context``, as the remote lists it (the
    newest); ``None`` when there is none or the remote cannot list its tasks."""
    from a2a.types import ListTasksRequest, TaskState  # noqa: PLC0415

    try:
        listed = await client.list_tasks(
            ListTasksRequest(context_id=context, status=TaskState.TASK_STATE_INPUT_REQUIRED)
        )
    except Exception as e:  # noqa: BLE001  # a remote without ListTasks: a new task, as before
        logger.info("listing the A2A tasks of %s failed: %s", context, e)
        return None
    waiting = [t for t in listed.tasks if t.status.state == TaskState.TASK_STATE_INPUT_REQUIRED]
    if not waiting:
        return None
    return max(waiting, key=lambda t: t.status.timestamp.ToDatetime()).id


async def _cancel(client: Client, task_id: str, context: str) -> None:
    """Cancel the remote task (the MAIL task was cancelled, or the call timed out); when
    its id did not come back yet, the unfinished tasks of the context."""
    from a2a.types import CancelTaskRequest, ListTasksRequest, TaskState  # noqa: PLC0415

    ended = {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
    try:
        async with asyncio.timeout(5):
            ids = [task_id]
            if not task_id:
                listed = await client.list_tasks(ListTasksRequest(context_id=context))
                ids = [t.id for t in listed.tasks if t.status.state not in ended]
            for one in ids:
                await client.cancel_task(CancelTaskRequest(id=one))
    except Exception as e:  # noqa: BLE001  # the remote is gone or the task ended: nothing else to do
        logger.info("cancelling the A2A task of %s failed: %s", context, e)


def _split(url: str) -> tuple[str, str | None]:
    """``url`` as the base URL and the card's path the client takes."""
    if url.endswith(".json"):
        scheme, _, rest = url.partition("://")
        host, _, path = rest.partition("/")
        return f"{scheme}://{host}", "/" + path
    return url.rstrip("/"), None


def _send_response(args: dict[str, str]) -> AgentToolCall:
    call_id = f"a2a_{uuid.uuid4().hex[:12]}"
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": "send_response",
        "arguments": json.dumps(args),
        "status": "completed",
    }
    return AgentToolCall(
        tool_name="send_response",
        tool_args=args,
        tool_call_id=call_id,
        completion={},
        responses=[item],
        reasoning=None,
        preamble=None,
    )
