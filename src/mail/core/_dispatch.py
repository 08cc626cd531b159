"""One agent turn: call the agent, record its output, run its tool calls.

Each MAIL tool has one handler in :data:`HANDLERS`; any other tool name is an action.
Adding a MAIL tool means writing one handler and adding one line to the table.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mail._text import clean_text
from mail.core._budget_keeper import BudgetKeeper
from mail.core._live import LiveTurn, live_turn, logged_turn, traced_action, turn_failed
from mail.core._manual import ManualStep
from mail.core._scheduler import Scheduler
from mail.core._system_messages import Subject, SystemMessages, build_help
from mail.core.actions import ActionCore, ActionOverrideFunction
from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.message import (
    MAILMessage,
    build_mail_xml,
    create_agent_address,
    make_broadcast,
    make_broadcast_complete,
    parse_agent_address,
)
from mail.core.tasks import ActionRun, MAILTask, PendingBreakpoint, TaskState
from mail.core.tools import (
    MAIL_TOOL_NAMES,
    AgentToolCall,
    convert_call_to_mail_message,
    convert_manual_step_call_to_mail_message,
    normalize_breakpoint_tool_call,
)
from mail.errors import InvalidMessageError, MAILError, TaskStateError, UnreachableError

__all__ = ["HANDLERS", "MAX_AGENT_RETRIES", "SwarmDirectory", "TurnContext", "TurnRunner"]

logger = logging.getLogger("mail.runtime")

#: How many times an agent that failed on a user or system message is re-prompted
#: before its task fails.
MAX_AGENT_RETRIES = 1


class SwarmDirectory(Protocol):
    """What the interswarm tools need of the router (``mail.net.InterswarmRouter``)."""

    def known_swarms(self) -> list[str]:
        """Names of the active remote swarms."""

    async def discover_swarms(self, discovery_urls: list[str]) -> list[str]:
        """Register the swarms each URL lists; returns the names added."""


#: Tells the remote swarms of a task that it completed here: ``(task, agent, answer)``.
CompletionNotice = Callable[[MAILTask, str, str], None]


@dataclass(slots=True)
class TurnContext:
    """What the handlers of one turn share."""

    task: MAILTask
    agent: str
    core: AgentCore
    trigger: MAILMessage
    history: list[dict[str, Any]]
    # the task turn this agent turn belongs to; a later turn may have begun meanwhile
    turn: int = 0
    #: set when the turn is a manual step (its text answer is routed as the step says)
    step: ManualStep | None = None
    stop: bool = False
    action_ran: bool = False
    action_errors: list[tuple[str, str]] = field(default_factory=list)

    def result(self, call: AgentToolCall, content: str) -> None:
        self.history.append(call.create_response_msg(content))

    @property
    def current(self) -> bool:
        """True while the task still runs the turn this agent turn started in."""
        return self.task.state is TaskState.RUNNING and self.turn == self.task.turn_number


Handler = Callable[["TurnRunner", TurnContext, AgentToolCall], Awaitable[None]]


class TurnRunner:
    """Runs agent turns for one runtime.

    Args:
        agents, actions: the swarm's agents and actions by name.
        histories: ``{task_id}::{agent}`` -> that agent's history in that task.
        swarm_name: the local swarm.
        system: the builder of the runtime's own messages.
        scheduler: where the messages of a turn go, and where turns end.
        breakpoint_tools: tool names that pause the task for the caller to answer.
        exclude_tools: MAIL tools no agent of the swarm may use.
        interswarm: returns the router while interswarm messaging is enabled, else ``None``.
        notify_completion: tells the remote swarms of a task that it completed here.
        budgets: counts agent turns and actions against the tasks' budgets.
    """

    def __init__(
        self,
        *,
        budgets: BudgetKeeper,
        agents: Mapping[str, AgentCore],
        actions: Mapping[str, ActionCore],
        histories: dict[str, list[dict[str, Any]]],
        swarm_name: str,
        system: SystemMessages,
        scheduler: Scheduler,
        breakpoint_tools: frozenset[str],
        exclude_tools: frozenset[str],
        interswarm: Callable[[], SwarmDirectory | None],
        notify_completion: CompletionNotice,
    ) -> None:
        self.agents = agents
        self.actions = actions
        self.histories = histories
        self.swarm_name = swarm_name
        self.system = system
        self.scheduler = scheduler
        self.breakpoint_tools = breakpoint_tools
        self.exclude_tools = exclude_tools
        self.interswarm = interswarm
        self.notify_completion = notify_completion
        self.budgets = budgets
        #: replaces every action while set
        self.action_override: ActionOverrideFunction | None = None

    def excluded_tools(self, agent: str) -> frozenset[str]:
        """The MAIL tools ``agent`` may not use."""
        return self.exclude_tools | self.agents[agent].exclude_tools

    async def run(
        self, task: MAILTask, agent: str, message: MAILMessage, xml: dict[str, str]
    ) -> None:
        """Run ``agent`` on ``message`` (already rendered as ``xml``) within ``task``."""
        step = self.scheduler.manual_steps.get(message["id"])
        with logged_turn(task, agent):  # log records name the task and the agent
            if step is None:
                await self._run(task, agent, message, xml, None)
                return
            step.started = True
            try:
                await self._run(task, agent, message, xml, step)
            except BaseException:
                step.settle(TaskStateError(f"the manual step of agent {agent} was cancelled"))
                raise
            step.settle()

    async def _run(
        self,
        task: MAILTask,
        agent: str,
        message: MAILMessage,
        xml: dict[str, str],
        step: ManualStep | None,
    ) -> None:
        if not self.budgets.turn(task):
            return  # the turn would go past the task's agent_turns (or it is spent)
        core = self.agents[agent]
        history = self.histories.setdefault(f"{task.task_id}::{agent}", [])
        task.agents.add(agent)
        if message["message"]["subject"] != Subject.ACTION_COMPLETE_BROADCAST:
            history.append(xml)
        turn = task.turn_number
        try:
            with live_turn(task, agent) as live:
                _text, calls = await core.function(history, self._tool_choice(core, message))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001  # an agent's failure is reported, never fatal to the loop
            logger.warning("agent %s failed in task %s: %s", agent, task.task_id, e)
            reason = clean_text(f"agent {agent} raised {type(e).__name__}: {e}")
            turn_failed(task, reason)
            retry = not isinstance(e, UnreachableError)  # another turn will not reach it either
            self._agent_failed(task, agent, message, turn, reason, retry=retry)
            return
        if self.budgets.stopped(task):
            return  # its model calls spent the budget: what it asked for is not done
        if not calls:
            self._agent_failed(task, agent, message, turn, f"agent {agent} returned no tool calls")
            return
        calls = [call.cleaned() for call in calls]  # text every store holds
        task.agent_failures.pop(agent, None)
        first = calls[0]
        if first.completion:
            history.append(first.completion)
        else:
            history.extend(first.responses)
        self._emit_tool_calls(task, agent, calls, live)
        await self._process(TurnContext(task, agent, core, message, history, turn, step), calls)

    def _tool_choice(self, core: AgentCore, message: MAILMessage) -> str | dict[str, Any]:
        payload = message["message"]
        if (
            payload["subject"] == Subject.MAXIMUM_STEPS_REACHED
            and payload["sender"]["address_type"] == "system"
        ):
            if core.tool_format == "completions":
                return {"type": "function", "function": {"name": "task_complete"}}
            return {"type": "function", "name": "task_complete"}
        # manual mode, and manual steps: the agent may answer in plain text
        manual = self.scheduler.mode == "manual" or message["msg_type"] == "buffered"
        return "auto" if manual else "required"

    def _emit_tool_calls(
        self, task: MAILTask, agent: str, calls: list[AgentToolCall], live: LiveTurn
    ) -> None:
        reasoning_ref: str | None = None
        for i, call in enumerate(calls):
            extra: dict[str, Any] = {
                "tool_name": call.tool_name,
                "tool_args": call.tool_args,
                "tool_call_id": call.tool_call_id,
            }
            if i == 0:  # the turn's first call tells when the turn began and its model calls
                extra["turn_started"] = live.started
                if live.model_calls:
                    extra["model_calls"] = live.model_calls
            if call.reasoning:
                extra["reasoning"] = "\n\n".join(call.reasoning)
                reasoning_ref = call.tool_call_id
            elif reasoning_ref is not None:
                extra["reasoning_ref"] = reasoning_ref
            if call.preamble:
                extra["preamble"] = call.preamble
            task.log.emit(EventName.TOOL_CALL, f"agent {agent} called {call.tool_name}", extra)

    async def _process(self, ctx: TurnContext, calls: list[AgentToolCall]) -> None:
        breakpoints = [c for c in calls if c.tool_name in self.breakpoint_tools]
        rest = [c for c in calls if c.tool_name not in self.breakpoint_tools]
        excluded = self.excluded_tools(ctx.agent)
        for i, call in enumerate(rest):
            name = call.tool_name
            handler = HANDLERS.get(name, TurnRunner._action)
            if name in excluded and name in MAIL_TOOL_NAMES:
                handler = TurnRunner._excluded
            await handler(self, ctx, call)
            if ctx.stop:
                why = (
                    "the task's budget is spent"
                    if self.budgets.stopped(ctx.task)
                    else "the turn ended with await_message"
                )
                for skipped in rest[i + 1 :]:
                    ctx.result(skipped, f"ERROR: not executed: {why}")
                break
        if breakpoints:
            self._pause_on_breakpoints(ctx, breakpoints)
            return
        if ctx.stop:
            return
        if ctx.action_errors:
            self.scheduler.put(
                self.system.action_error(ctx.task.task_id, ctx.agent, ctx.action_errors)
            )
        elif ctx.action_ran:
            self.scheduler.put(self.system.action_complete(ctx.task.task_id, ctx.agent))

    # --- failures ----------------------------------------------------------------------

    def _agent_failed(
        self,
        task: MAILTask,
        agent: str,
        trigger: MAILMessage,
        turn: int,
        error: str,
        *,
        retry: bool = True,
    ) -> None:
        task.log.emit(EventName.AGENT_ERROR, error)
        if not task.is_running or turn != task.turn_number:
            return  # the turn it belonged to is over; nobody waits on this agent any more
        payload = trigger["message"]
        sender = payload["sender"]
        if (
            sender["address_type"] == "agent"
            and sender["address"] in self.agents
            and sender["address"] != agent
        ):
            body = f"Agent '{agent}' failed to process your message '{payload['subject']}': {error}"
            self.scheduler.put(self.system.agent_error(task.task_id, sender["address"], body))
            return
        failures = task.agent_failures[agent] = task.agent_failures.get(agent, 0) + 1
        if retry and failures <= MAX_AGENT_RETRIES:
            body = f"Your previous turn failed: {error}. Continue the task using your tools."
            self.scheduler.put(self.system.agent_error(task.task_id, agent, body))
            return
        task.log.emit(EventName.TASK_ERROR, f"error for task: {error}")
        self.scheduler.finish(task, TaskState.FAILED, self.system.task_error(task.task_id, error))

    def _tool_error(self, ctx: TurnContext, call: AgentToolCall, error: str) -> None:
        ctx.result(call, f"ERROR: {error}")
        ctx.task.log.emit(EventName.AGENT_ERROR, f"agent {ctx.agent}: {error}")
        self.scheduler.put(self.system.tool_call_error(ctx.task.task_id, ctx.agent, error))

    async def _excluded(self, ctx: TurnContext, call: AgentToolCall) -> None:
        self._tool_error(ctx, call, f"tool {call.tool_name} is not available to agent {ctx.agent}")

    # --- MAIL tools --------------------------------------------------------------------

    async def _send(self, ctx: TurnContext, call: AgentToolCall) -> None:
        task = ctx.task
        try:
            message = convert_call_to_mail_message(
                call, ctx.agent, task.task_id, swarm=self.swarm_name
            )
        except InvalidMessageError as e:
            self._tool_error(ctx, call, f"error sending message: {e}")
            return
        target = call.tool_args.get("target")
        if isinstance(target, str) and "@" in target:
            try:
                _, swarm = parse_agent_address(target)
            except InvalidMessageError as e:
                self._tool_error(ctx, call, f"error sending message: {e}")
                return
            if swarm and swarm != self.swarm_name:
                routing = message["message"]["routing_info"]
                if routing is not None:
                    routing["remote_swarm"] = swarm
                task.remote_swarms.add(swarm)
        name = call.tool_name
        if name == "send_request":
            task.outstanding[ctx.agent] = task.outstanding.get(ctx.agent, 0) + 1
        elif name == "send_response" and isinstance(target, str):
            task.outstanding[target] = max(task.outstanding.get(target, 0) - 1, 0)
        self.scheduler.put(message)
        ctx.result(call, "SUCCESS: message sent")

    async def _task_complete(self, ctx: TurnContext, call: AgentToolCall) -> None:
        task, agent = ctx.task, ctx.agent
        if not ctx.core.can_complete_tasks:
            self._tool_error(ctx, call, f"agent {agent} cannot complete tasks")
            return
        if not ctx.current:
            ctx.result(call, "SUCCESS: task already completed")
            task.log.emit(
                EventName.TASK_COMPLETE_CALL_DUPLICATE,
                f"agent {agent} called task_complete on already completed task",
            )
            return
        finish = call.tool_args.get("finish_message")
        body = finish if isinstance(finish, str) else "Task completed successfully"
        final = make_broadcast_complete(
            task_id=task.task_id,
            sender=create_agent_address(agent),
            subject=Subject.TASK_COMPLETE,
            body=body,
            sender_swarm=self.swarm_name,
            recipient_swarms=[self.swarm_name],
        )
        ctx.result(call, "SUCCESS: task completed")
        task.log.emit(
            EventName.TASK_COMPLETE_CALL,
            f"agent {agent} called task_complete, full response to follow",
        )
        task.log.emit_message(
            f"task_complete response from {agent}:\n", build_mail_xml(final)["content"], final
        )
        self.notify_completion(task, agent, body)
        self.scheduler.finish(task, TaskState.COMPLETED, final)

    async def _acknowledge_broadcast(self, ctx: TurnContext, call: AgentToolCall) -> None:
        if ctx.trigger["msg_type"] != "broadcast":
            self._tool_error(ctx, call, "improper use of `acknowledge_broadcast`")
            return
        ctx.result(call, "SUCCESS: broadcast acknowledged")

    async def _ignore_broadcast(self, ctx: TurnContext, call: AgentToolCall) -> None:
        ctx.result(call, "SUCCESS: broadcast ignored")
        ctx.task.log.emit(EventName.BROADCAST_IGNORED, f"agent {ctx.agent} called ignore_broadcast")

    async def _await_message(self, ctx: TurnContext, call: AgentToolCall) -> None:
        task, agent = ctx.task, ctx.agent
        ctx.stop = True
        waiting_for = (
            task.outstanding.get(agent, 0) > 0
            or task.queued > 0
            or bool(task.busy - {agent})
            or self.scheduler.waiting_for(task.task_id, agent) > 0
        )
        if not waiting_for:
            self._tool_error(ctx, call, "no outstanding requests and message queue is empty")
            return
        reason = call.tool_args.get("reason")
        suffix = f" (reason: '{reason}')" if reason else ""
        ctx.result(call, f"SUCCESS: waiting for a new message{suffix}")
        description = f"agent '{agent}' is awaiting a new message" + (
            f": {reason}" if reason else ""
        )
        task.log.emit(EventName.AWAIT_MESSAGE, description, {"reason": reason} if reason else {})

    async def _help(self, ctx: TurnContext, call: AgentToolCall) -> None:
        args = call.tool_args
        tool_help = args.get("get_tool_help") or []
        body = build_help(
            ctx.agent,
            ctx.core,
            self.swarm_name,
            get_summary=bool(args.get("get_summary", True)),
            get_identity=bool(args.get("get_identity", False)),
            get_tool_help=[str(t) for t in tool_help] if isinstance(tool_help, list) else [],
            get_full_protocol=bool(args.get("get_full_protocol", False)),
        )
        ctx.result(
            call, "SUCCESS: help string generated; will be sent to you in a subsequent prompt"
        )
        ctx.task.log.emit(EventName.HELP_CALLED, f"agent {ctx.agent} called help")
        self.scheduler.put(self.system.help(ctx.task.task_id, ctx.agent, body))

    async def _builtin(self, ctx: TurnContext, call: AgentToolCall) -> None:
        args = call.tool_args
        if call.tool_name == "web_search_call":
            description = f"agent {ctx.agent} used web_search with query: {args.get('query', '')}"
            tool_type = "web_search"
        else:
            description = f"agent {ctx.agent} used code_interpreter"
            tool_type = "code_interpreter"
        ctx.task.log.emit(
            EventName.BUILTIN_TOOL_CALL, description, {"tool_type": tool_type, "tool_args": args}
        )

    async def _text_output(self, ctx: TurnContext, call: AgentToolCall) -> None:
        step = ctx.step
        if step is not None:
            try:
                message = convert_manual_step_call_to_mail_message(
                    call, ctx.agent, ctx.task.task_id, step.response_targets, step.response_type
                )
            except InvalidMessageError as e:
                self._tool_error(ctx, call, f"error sending message: {e}")
                return
            step.sent = message
            self.scheduler.put(message)
            return
        content = call.tool_args.get("content")
        text = content if isinstance(content, str) else ""
        others = [a for a in self.agents if a != ctx.agent]
        if others:
            self.scheduler.put(
                make_broadcast(
                    task_id=ctx.task.task_id,
                    sender=create_agent_address(ctx.agent),
                    recipients=[create_agent_address(a) for a in others],
                    subject="",
                    body=text,
                )
            )

    # --- interswarm tools --------------------------------------------------------------

    def _interswarm_refusal(self, ctx: TurnContext, router: SwarmDirectory | None) -> str | None:
        if router is None:
            return f"interswarm messaging is not enabled in swarm {self.swarm_name}"
        if not ctx.core.enable_interswarm:
            return f"agent {ctx.agent} is not enabled for interswarm messaging"
        return None

    async def _interswarm_broadcast(self, ctx: TurnContext, call: AgentToolCall) -> None:
        """Broadcast to every agent of the named remote swarms (all active ones by default)."""
        args, router = call.tool_args, self.interswarm()
        refusal = self._interswarm_refusal(ctx, router)
        subject, body, wanted = args.get("subject"), args.get("body"), args.get("target_swarms")
        if refusal is None and not (isinstance(subject, str) and isinstance(body, str)):
            refusal = "send_interswarm_broadcast needs string arguments subject and body"
        if refusal is None and not (
            wanted is None or (isinstance(wanted, list) and all(isinstance(w, str) for w in wanted))
        ):
            refusal = "target_swarms must be a list of swarm names"
        if refusal is not None:
            self._tool_error(ctx, call, refusal)
            return
        assert router is not None  # noqa: S101  # checked by _interswarm_refusal
        named = [w.strip() for w in wanted or () if w.strip() and w.strip() != self.swarm_name]
        swarms = list(dict.fromkeys(named)) or router.known_swarms()
        if not swarms:
            self._tool_error(
                ctx, call, "no remote swarm is known; register one or call discover_swarms"
            )
            return
        task = ctx.task
        task.remote_swarms.update(swarms)
        # each swarm is expected to answer, so the agent may await_message meanwhile
        task.outstanding[ctx.agent] = task.outstanding.get(ctx.agent, 0) + len(swarms)
        self.scheduler.put(
            make_broadcast(
                task_id=task.task_id,
                sender=create_agent_address(ctx.agent),
                recipients=[create_agent_address(f"all@{swarm}") for swarm in swarms],
                subject=str(subject),
                body=str(body),
            )
        )
        ctx.result(call, f"SUCCESS: broadcast sent to swarms {', '.join(swarms)}")

    async def _discover_swarms(self, ctx: TurnContext, call: AgentToolCall) -> None:
        """Register (as volatile entries) the swarms the given MAIL servers list.

        Like an action, it re-prompts the agent (``::action_complete::``) with the result
        in its history.
        """
        urls, router = call.tool_args.get("discovery_urls"), self.interswarm()
        refusal = self._interswarm_refusal(ctx, router)
        if refusal is None and not (
            isinstance(urls, list) and urls and all(isinstance(u, str) for u in urls)
        ):
            refusal = "discovery_urls must be a non-empty list of server URLs"
        if refusal is not None:
            self._tool_error(ctx, call, refusal)
            return
        assert router is not None  # noqa: S101  # checked by _interswarm_refusal
        try:
            added = await router.discover_swarms([str(u) for u in urls or ()])
        except MAILError as e:
            self._tool_error(ctx, call, f"swarm discovery failed: {e}")
            return
        if added:
            ctx.result(call, f"SUCCESS: registered {len(added)} new swarm(s): {', '.join(added)}")
        else:
            ctx.result(call, "SUCCESS: no new swarm found")
        ctx.action_ran = True  # like an action: ::action_complete:: re-prompts the agent

    # --- actions -----------------------------------------------------------------------

    async def _action(self, ctx: TurnContext, call: AgentToolCall) -> None:
        task, name = ctx.task, call.tool_name
        action = self.actions.get(name)
        if action is None:
            error = f"action {name} not found"
        elif not ctx.core.can_access_action(name):
            error = f"agent {ctx.agent} cannot access action {name}"
        else:
            error = ""
        if error:
            ctx.result(
                call,
                "ERROR: "
                + ("action not found" if action is None else "agent cannot access action"),
            )
            task.log.emit(EventName.ACTION_ERROR, error, {**_call_data(call), "error": error})
            ctx.action_errors.append((name, error))
            return
        assert action is not None  # noqa: S101  # narrowed by the checks above
        if not self.budgets.action(task):
            ctx.result(call, "ERROR: not executed: the task's budget is spent")
            ctx.stop = True
            return
        args = json.dumps(call.tool_args, separators=(",", ":"))
        task.log.emit(
            EventName.ACTION_CALL,
            f"agent {ctx.agent} executing action tool: {name} with args: {args}",
            _call_data(call),
        )
        with traced_action(task, ctx.agent, ActionRun(name, call.tool_call_id)) as run:
            status, content = await action.execute(call, action_override=self.action_override)
            run.status = status
        ctx.result(call, ("SUCCESS: " if status == "success" else "ERROR: ") + content)
        task.log.emit(
            EventName.ACTION_COMPLETE,
            f"action complete (caller = {ctx.agent}):\n{content}",
            {**_call_data(call), "content": content, "status": status},
        )
        ctx.action_ran = True

    # --- breakpoints -------------------------------------------------------------------

    def _pause_on_breakpoints(self, ctx: TurnContext, calls: list[AgentToolCall]) -> None:
        task = ctx.task
        paused = task.state is TaskState.WAITING_BREAKPOINT and ctx.turn == task.turn_number
        if not (ctx.current or paused):
            for call in calls:
                ctx.result(call, "ERROR: the task ended before this call could be answered")
            return
        normalized = [normalize_breakpoint_tool_call(c) for c in calls]
        names = ", ".join(c.tool_name for c in calls)
        args = ", ".join(json.dumps(c.tool_args) for c in calls)
        task.log.emit(
            EventName.BREAKPOINT_TOOL_CALL,
            f"agent {ctx.agent} used breakpoint tools {names} with args: {args}",
            {"calls": [{k: n[k] for k in ("call_id", "name", "arguments")} for n in normalized]},
        )
        for call, norm in zip(calls, normalized, strict=True):
            task.pending_breakpoints[call.tool_call_id] = PendingBreakpoint(
                agent=ctx.agent, call=call, normalized=norm
            )
        if paused:
            return  # already paused by another agent: these calls are returned on resume
        pending = [p.normalized for p in task.pending_breakpoints.values()]
        self.scheduler.finish(
            task,
            TaskState.WAITING_BREAKPOINT,
            self.system.breakpoint_tool_call(task.task_id, pending),
        )


def _call_data(call: AgentToolCall) -> dict[str, Any]:
    """The ``extra_data`` that names an action call in its events."""
    return {
        "tool_name": call.tool_name,
        "tool_call_id": call.tool_call_id,
        "tool_args": call.tool_args,
    }


HANDLERS: dict[str, Handler] = {
    "send_request": TurnRunner._send,
    "send_response": TurnRunner._send,
    "send_interrupt": TurnRunner._send,
    "send_broadcast": TurnRunner._send,
    "task_complete": TurnRunner._task_complete,
    "acknowledge_broadcast": TurnRunner._acknowledge_broadcast,
    "ignore_broadcast": TurnRunner._ignore_broadcast,
    "await_message": TurnRunner._await_message,
    "help": TurnRunner._help,
    "web_search_call": TurnRunner._builtin,
    "code_interpreter_call": TurnRunner._builtin,
    "text_output": TurnRunner._text_output,
    "send_interswarm_broadcast": TurnRunner._interswarm_broadcast,
    "discover_swarms": TurnRunner._discover_swarms,
}
