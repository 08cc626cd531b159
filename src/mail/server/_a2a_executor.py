"""The A2A façade's ``AgentExecutor``: each A2A message is a turn of a MAIL task, run
through the server's :class:`~mail.server._task_service.TaskService`.

The A2A ``contextId`` is the MAIL task id: the first message of a context starts the
task, later ones continue it (``resume_from: user_response``), and a message to a task
paused on breakpoint tools answers the first pending call (``breakpoint_tool_call``).
The turn's events become A2A events (see docs/a2a.md for the table):

- a delivered message and a tool call: a ``working`` status update whose message says
  who does what, the MAIL event in its ``metadata.mail``;
- the ``answer`` token deltas of a streaming model: chunks of the ``answer`` artifact;
- the turn's end: the answer as the ``answer`` artifact and ``completed``; a pause on
  breakpoint tools ``input-required`` (the pending calls in the status message); a
  failure ``failed``, a cancellation ``canceled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from a2a.helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import TaskUpdater
from a2a.types import Artifact, CancelTaskRequest, Part, Task, TaskState

from mail._limits import task_id_problem
from mail.core.events import EventName, MAILEvent
from mail.core.tasks import TaskState as MAILState
from mail.core.tasks import closing_event
from mail.errors import MAILError, TaskNotFoundError, TaskStateError
from mail.server._a2a_routes import STREAMING, message_metadata, message_text
from mail.server._a2a_store import RecordTaskStore, caller_of
from mail.server._routes_message import new_turn
from mail.server._shutdown import shutting_down_detail, unless_closing
from mail.server._task_service import Stream, Turn
from mail.server.models import MessageRequest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from a2a.server.events import EventQueue

    from mail.core.tasks import MAILTask
    from mail.server._state import ServerState
    from mail.server.auth import Caller

__all__ = ["SwarmExecutor", "SwarmRequestHandler"]

logger = logging.getLogger("mail.server")

#: the id of the artifact that holds a turn's answer (its live chunks too)
ANSWER = "answer"
_FINAL_STATES = {
    "completed": TaskState.TASK_STATE_COMPLETED,
    "waiting_breakpoint": TaskState.TASK_STATE_INPUT_REQUIRED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
_CANCELLABLE = frozenset(
    {
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_INPUT_REQUIRED,
    }
)
_UNDER_WAY = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
_SHOWN = frozenset({EventName.NEW_MESSAGE, EventName.TOOL_CALL})
_SUMMARY = 200
#: seconds the server's stop waits for the A2A tasks of running turns to be stored
_DRAIN = 5.0


class SwarmExecutor(AgentExecutor):
    """Runs A2A messages as turns of the caller's MAIL tasks on ``state``'s task service."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        #: the A2A tasks whose turn runs
        self.running: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None  # noqa: S101  # the SDK sets both
        self.running.add(context.task_id)
        try:
            await self._execute(context, event_queue)
        finally:
            self.running.discard(context.task_id)

    async def _execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None  # noqa: S101
        assert context.message is not None  # noqa: S101  # a SendMessage always has one
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        caller = caller_of(context.call_context)
        # Each A2A event is a store write of the task: the agents' steps go only to a
        # client that streams, and a send that waits for the end (neither streamed nor
        # returnImmediately) gets its turn as one JSON answer and its task made final at
        # once. Otherwise the A2A task is told once the MAIL turn is under way (or
        # refused): a CancelTask that follows then finds the MAIL task to cancel.
        steps = context.call_context.state.get("method") == STREAMING
        streamed = steps or _returns_at_once(context)
        try:
            turn = await self._turn(caller, context, stream=streamed)
            answer = await self.state.tasks.send(caller, turn)
        except MAILError as e:
            await _created(context, event_queue)
            await updater.failed(updater.new_agent_message([Part(text=str(e))]))
            return
        if not isinstance(answer, Stream):
            await _answered(context, event_queue, updater, answer)
            return
        await _created(context, event_queue)
        await updater.start_work()
        relay = _Relay(updater, steps=steps)
        async for event in self._until_stop(answer):
            if await relay(event):
                return
        await updater.failed(
            updater.new_agent_message([Part(text="the turn's events ended early")])
        )

    async def _until_stop(self, answer: Stream) -> AsyncIterator[MAILEvent]:
        """The turn's events; when the server stops first, the closing ``task_error`` its
        streams end with (none in cluster mode: the task goes on on another replica)."""
        if answer.first is not None:
            yield answer.first
        events = answer.events
        try:
            while True:
                done, event = await unless_closing(anext(events, None), self.state.closing)
                if not done and answer.final_on_stop and answer.task_id is not None:
                    detail = shutting_down_detail(answer.task_id)
                    yield MAILEvent.stream_final(
                        EventName.TASK_ERROR, answer.task_id, detail, status="failed"
                    )
                if event is None:
                    return
                yield event
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    async def _turn(self, caller: Caller, context: RequestContext, *, stream: bool) -> Turn:
        message = context.message
        assert message is not None and context.context_id is not None  # noqa: S101
        task_id, text = context.context_id, message_text(message)
        payload: dict[str, Any] = {
            "body": text,
            "task_id": task_id,
            "entrypoint": message_metadata(message).get("entrypoint"),
            "stream": stream,
        }
        # a message without a contextId opens a new one (the SDK named it): nothing to read
        task = await self._existing(caller, task_id) if message.context_id else None
        if task is not None and task.state is MAILState.WAITING_BREAKPOINT:
            first = next(iter(task.pending_breakpoints), None)
            result = text if first is None else [{"call_id": first, "content": text}]
            payload |= {
                "resume_from": "breakpoint_tool_call",
                "kwargs": {"breakpoint_tool_call_result": result},
            }
        elif task is not None:
            payload["resume_from"] = "user_response"
        request = MessageRequest.model_validate(payload)
        return new_turn(self.state, request, idempotency_key=_key(message.message_id))

    async def _existing(self, caller: Caller, task_id: str) -> MAILTask | None:
        try:
            return await self.state.tasks.task(caller, task_id)
        except TaskNotFoundError:
            return None

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Nothing more to do: :class:`SwarmRequestHandler` cancelled the MAIL task before
        the SDK stops this turn and marks the A2A task ``canceled``."""
        del context, event_queue


class SwarmRequestHandler(DefaultRequestHandler):
    """The SDK's request handler; ``CancelTask`` cancels the MAIL task first (its cascade
    as ``POST /tasks/{id}/cancel``, on whichever replica runs it, and for a task paused
    on a breakpoint that no request runs), then lets the SDK end the A2A task."""

    def __init__(self, state: ServerState, task_store: RecordTaskStore, **options: Any) -> None:
        self.executor = SwarmExecutor(state)
        super().__init__(agent_executor=self.executor, task_store=task_store, **options)
        self.state = state
        self.a2a_tasks = task_store
        task_store.catch_up = self._caught_up

    async def aclose(self) -> None:
        """Stop: the turns under way end as the server's streams do when it stops
        (``failed``), and their A2A tasks are stored so, within ``_DRAIN`` seconds; then
        the SDK's own close."""
        self.state.begin_shutdown()
        running = list(self.executor.running)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_DRAIN):
                await asyncio.gather(*(self._stored(r) for r in running), return_exceptions=True)
        await super().aclose()

    async def _stored(self, task_id: str) -> None:
        """Follow the A2A task's run until its last event is stored (made or not yet: a
        turn not streamed makes its task when it ends)."""
        active = await self._active_task_registry.get(task_id)
        if active is not None:
            async for _ in active.subscribe():
                pass

    async def _caught_up(self, task: Task, context: ServerCallContext) -> Task:
        """``task`` as read from the store, made final (and stored so) when it says a turn
        is under way that no request of this server runs and its MAIL task is no longer
        running: the turn ended on another replica (cluster mode), or the server stopped
        without ending it (a crash). It gets the outcome of the MAIL task's last turn."""
        if task.status.state not in _UNDER_WAY or task.id in self.executor.running:
            return task
        try:
            mail = await self.state.tasks.task(caller_of(context), task.context_id)
        except MAILError as e:  # pruned, or the store fails: as stored
            logger.info("A2A task %s: its MAIL task cannot be read: %s", task.id, e)
            return task
        if mail.is_running:
            return task
        body = mail.response["message"]["body"] if mail.response is not None else ""
        _end(task, closing_event(mail, body).data())
        await self.a2a_tasks.save(task, context)
        return task

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        task = await self.a2a_tasks.get(params.id, context)
        if task is not None and task.status.state in _CANCELLABLE:
            try:
                await self.state.tasks.cancel(caller_of(context), task.context_id)
            except (TaskNotFoundError, TaskStateError) as e:  # ended meanwhile
                logger.info("A2A cancel of task %s: %s", task.context_id, e)
            # its turn may have ended cancelled meanwhile (the executor, or a read caught
            # it up): that is the answer; else the SDK ends it
            after = await self.a2a_tasks.get(params.id, context)
            if after is not None and after.status.state == TaskState.TASK_STATE_CANCELED:
                return after
        cancelled: Task = await super().on_cancel_task(params, context)
        return cancelled


async def _created(context: RequestContext, event_queue: EventQueue) -> None:
    """Enqueue a new A2A task, ``submitted`` (the SDK wants it before any update)."""
    if context.current_task is None:
        assert context.task_id and context.context_id and context.message  # noqa: S101
        task = new_task(
            context.task_id,
            context.context_id,
            TaskState.TASK_STATE_SUBMITTED,
            history=[context.message],
        )
        await event_queue.enqueue_event(task)


def _returns_at_once(context: RequestContext) -> bool:
    """The client asked for the task as soon as it is made (``returnImmediately``)."""
    configuration = context.configuration
    return configuration is not None and configuration.return_immediately


async def _answered(
    context: RequestContext, event_queue: EventQueue, updater: TaskUpdater, answer: dict[str, Any]
) -> None:
    """A turn answered as JSON: a new A2A task is enqueued in its final state at once
    (one event, one store write); a task that waited for input ends as a streamed turn."""
    if context.current_task is not None:
        await _finish(updater, answer)
        return
    assert context.task_id and context.context_id and context.message  # noqa: S101
    state = TaskState.TASK_STATE_SUBMITTED
    task = new_task(context.task_id, context.context_id, state, history=[context.message])
    _end(task, answer)
    await event_queue.enqueue_event(task)


def _end(task: Task, answer: dict[str, Any]) -> None:
    """Make ``task`` final as the turn's closing event ``answer`` says: the answer as its
    artifact, or the status message saying why not."""
    state, text, meta = _outcome(answer)
    task.status.state = state
    task.status.ClearField("message")
    if state == TaskState.TASK_STATE_COMPLETED:
        del task.artifacts[:]
        task.artifacts.append(Artifact(artifact_id=ANSWER, name=ANSWER, parts=[Part(text=text)]))
    else:
        message = new_text_message(text, context_id=task.context_id, task_id=task.id)
        message.message_id = str(uuid.uuid4())
        task.status.message.CopyFrom(message)
    task.status.timestamp.GetCurrentTime()
    task.metadata.update(meta)


def _key(message_id: str) -> str | None:
    """The A2A message id as the turn's idempotency key (a repeat is answered once)."""
    return message_id if message_id and task_id_problem(message_id) is None else None


class _Relay:
    """Passes a turn's events on to its A2A task (the agents' steps and live tokens only
    with ``steps``)."""

    def __init__(self, updater: TaskUpdater, *, steps: bool) -> None:
        self.updater = updater
        self.steps = steps
        self.answering = False  # the answer artifact's first chunk was sent

    async def __call__(self, event: MAILEvent) -> bool:
        """Pass ``event`` on; ``True`` when it ended the turn."""
        updater, name = self.updater, event.event
        if event.seq is None and name in (EventName.TASK_COMPLETE, EventName.TASK_ERROR):
            await _finish(updater, event.data())
            return True
        if event.seq is None and name == EventName.STORAGE_ERROR:
            text = f"the turn ended but is not stored yet: {event.description or event.data()}"
            await updater.failed(updater.new_agent_message([Part(text=text)]))
            return True
        if not self.steps:
            return False
        if name == EventName.TOKEN_DELTA:
            data = event.data()
            if data.get("kind") == "answer" and data.get("delta"):
                # the first chunk makes the artifact (anew on a follow-up), the next ones grow it
                await updater.add_artifact(
                    [Part(text=str(data["delta"]))],
                    artifact_id=ANSWER,
                    name=ANSWER,
                    append=self.answering,
                )
                self.answering = True
            return False
        if name in _SHOWN:
            summary = updater.new_agent_message([Part(text=_summary(event))])
            mail = {"event": name, "seq": event.seq, "extra_data": event.extra_data}
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, summary, metadata={"mail": _jsonable(mail)}
            )
        return False


async def _finish(updater: TaskUpdater, data: dict[str, Any]) -> None:
    state, text, meta = _outcome(data)
    if state == TaskState.TASK_STATE_COMPLETED:
        await updater.add_artifact(
            [Part(text=text)], artifact_id=ANSWER, name=ANSWER, last_chunk=True
        )
        await updater.update_status(state, metadata=meta)
        return
    await updater.update_status(state, updater.new_agent_message([Part(text=text)]), metadata=meta)


def _outcome(data: dict[str, Any]) -> tuple[TaskState, str, dict[str, Any]]:
    """The A2A state a turn ended in, the answer or status text, and the status's metadata."""
    status = str(data.get("status") or "completed")
    response = str(data.get("response") or "")
    state = _FINAL_STATES.get(status, TaskState.TASK_STATE_FAILED)
    meta = {"mail": {"status": status, "usage": data.get("usage")}}
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        calls = json.loads(response) if response.startswith("[") else []
        meta["mail"]["calls"] = calls
        response = _pending(calls) or response
    return state, response, _jsonable(meta)


def _pending(calls: list[dict[str, Any]]) -> str:
    """What the swarm waits for, one line per breakpoint call; the next message answers
    the first."""
    lines = [f"{c.get('name')}({c.get('arguments')})" for c in calls if isinstance(c, dict)]
    if not lines:
        return ""
    return "The swarm waits for the result of " + "; ".join(lines) + ": reply with it."


def _summary(event: MAILEvent) -> str:
    if event.event == EventName.NEW_MESSAGE:
        full = event.extra_data.get("full_message")
        inner = full.get("message") if isinstance(full, dict) else None
        if isinstance(inner, dict):
            return _message_summary(inner)
    return event.description[:_SUMMARY]


def _message_summary(message: dict[str, Any]) -> str:
    def address(value: Any) -> str:
        return str(value.get("address")) if isinstance(value, dict) else "?"

    recipients = message.get("recipients")
    to = (
        ", ".join(address(r) for r in recipients)
        if isinstance(recipients, list)
        else address(message.get("recipient"))
    )
    subject = str(message.get("subject") or "")[:_SUMMARY]
    return f"{address(message.get('sender'))} -> {to}: {subject}"


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON (a status's metadata is a protobuf ``Struct``)."""
    return json.loads(json.dumps(value, default=str))
