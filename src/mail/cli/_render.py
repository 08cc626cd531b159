"""How ``mail client`` and ``mail message`` show results: rich rendering of tasks and events.

:class:`EventView` turns one task event into one line (who sent what to whom, tool and
action calls, errors in red; ``ping`` and duplicates give nothing) and keeps the little
state that needs (the running action, who is thinking). :func:`show_stream` prints a
stream through it under a spinner and ends with the answer in a panel; :func:`raw_line`
is the ``--raw`` form, one JSON object per event. Everything takes a ``rich`` console, so
tests render into ``Console(record=True)``. Imported only by commands that print.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Iterable, Mapping
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.status import Status
from rich.table import Table
from rich.text import Text

__all__ = [
    "EventView",
    "SSEvent",
    "answer_panel",
    "event_data",
    "print_interswarm",
    "print_json",
    "print_response",
    "print_result",
    "raw_line",
    "show_events",
    "show_stream",
    "shorten",
    "tasks_table",
]

#: Task states (``MessageResult.status``, ``TaskRecord.state``) that count as success.
OK_STATES = frozenset({"completed", "waiting_breakpoint"})
_ERRORS = frozenset(
    {"agent_error", "task_error", "action_error", "interswarm_message_error", "run_loop_error"}
)
# Shown elsewhere (the tool_call line, the answer panel) or not at all.
_HIDDEN = frozenset({"ping", "task_complete_call", "token_delta"})
# MAIL's own tools: their effect (a message, the answer) gets its own line.
_MAIL_TOOLS = frozenset(
    {
        "send_request", "send_response", "send_interrupt", "send_broadcast", "task_complete",
        "acknowledge_broadcast", "ignore_broadcast", "await_message", "help",
    }
)  # fmt: skip
# The stream's closing events (sent without an id; stored ones carry theirs).
_FINAL = frozenset({"task_complete", "task_error"})
_PREVIEW = 72
_ARGS = 60


class SSEvent(Protocol):
    """What the renderers read of an event (a :class:`mail.client.ServerSentEvent`)."""

    event: str
    data: str
    id: str | None


def shorten(text: str, limit: int = _PREVIEW) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def event_data(data: Any) -> Any:
    """An event's ``data``: parsed when it is JSON text, else as given."""
    if isinstance(data, str | bytes):
        try:
            return json.loads(data)
        except ValueError:
            return data
    return data


def raw_line(event: SSEvent) -> str:
    """The ``--raw`` form of ``event``: ``{"event", "id", "data"}`` as one JSON line."""
    record = {"event": event.event, "id": event.id, "data": event_data(event.data)}
    return json.dumps(record, ensure_ascii=False)


def print_json(console: Console, value: Any) -> None:
    """``value`` as indented JSON, without markup or highlighting surprises."""
    console.print(
        json.dumps(value, indent=2, ensure_ascii=False),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _address(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value.get("address", "?"))
    return str(value) if value is not None else "?"


def _args(args: Any) -> str:
    if not isinstance(args, Mapping):
        return shorten(json.dumps(args, ensure_ascii=False), _ARGS) if args else ""
    parts = [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items()]
    return shorten(", ".join(parts), _ARGS)


def _agent(description: str) -> str:
    # "agent weather called get_weather" / "agent weather executing action tool: ..."
    words = description.split()
    return words[1] if len(words) > 1 and words[0] == "agent" else "?"


class EventView:
    """One line per task event; call :meth:`line` for each event in order.

    Attributes:
        thinking: what the spinner should say now (e.g. ``"weather is thinking…"``).
    """

    def __init__(self) -> None:
        self.thinking = "waiting for the swarm…"
        self._actions: dict[str, str] = {}  # caller -> action it is running

    def line(self, event: str, data: Any) -> Text | None:
        """The line for ``event`` with ``data`` (object or JSON text), or ``None`` to skip.

        The line never wraps: what does not fit the console ends in an ellipsis.
        """
        text = self._line(event, data)
        if text is not None:
            text.no_wrap = True
            text.overflow = "ellipsis"
        return text

    def _line(self, event: str, data: Any) -> Text | None:
        payload = event_data(data)
        if not isinstance(payload, Mapping):
            return Text(f"{event}: {shorten(str(payload))}", style="dim")
        description = str(payload.get("description") or payload.get("response") or "")
        extra = payload.get("extra_data") or {}
        if event in _HIDDEN:
            return None
        if event == "new_message" and isinstance(extra, Mapping) and "full_message" in extra:
            return self._message(extra["full_message"])
        if event == "tool_call" and isinstance(extra, Mapping):
            return self._tool_call(description, extra)
        if event == "action_call":
            return self._action_call(description)
        if event == "action_complete":
            return self._action_complete(description)
        first = shorten(description.split("\n", 1)[0], 90) if description else ""
        if event in _ERRORS:
            return Text(f"✗ {event}: {first}", style="bold red")
        return Text(f"· {first or event}", style="dim")

    def _message(self, full: Any) -> Text:
        message = full.get("message", {}) if isinstance(full, Mapping) else {}
        sender = _address(message.get("sender"))
        recipients = message.get("recipients")
        if recipients is None:
            recipients = [message.get("recipient")]
        to = ", ".join(_address(r) for r in recipients)
        subject = str(message.get("subject", ""))
        body = shorten(str(message.get("body", "")))
        if full.get("msg_type") == "broadcast_complete":
            self.thinking = "finishing…"
            return Text.assemble((f"✔ {sender} completed the task", "green"), (f"  {body}", "dim"))
        if not subject.startswith("::"):
            self.thinking = f"{to} is thinking…"
        return Text.assemble(
            (sender, "bold cyan"), " → ", (to, "bold magenta"), f": {subject}", (f"  {body}", "dim")
        )

    def _tool_call(self, description: str, extra: Mapping[str, Any]) -> Text:
        name = str(extra.get("tool_name", "?"))
        text = Text.assemble(
            "  ",
            (_agent(description), "cyan"),
            " called ",
            (name, "yellow"),
            f"({_args(extra.get('tool_args'))})",
        )
        if name in _MAIL_TOOLS:  # the message line that follows says the same, louder
            text.stylize("dim")
        reasoning = extra.get("reasoning")
        if isinstance(reasoning, str) and reasoning.strip():
            text.append(f"  thinking: {shorten(reasoning, 50)}", style="dim italic")
        return text

    def _action_call(self, description: str) -> Text:
        agent = _agent(description)
        _, _, rest = description.partition("action tool: ")
        name = rest.split(" with args:", 1)[0].strip() or "?"
        self._actions[agent] = name
        self.thinking = f"{agent} is running {name}…"
        return Text.assemble("  ⚙ ", (agent, "cyan"), " runs action ", (name, "yellow"))

    def _action_complete(self, description: str) -> Text:
        head, _, result = description.partition("\n")
        caller = head.partition("caller = ")[2].rstrip("):").strip() or "?"
        name = self._actions.pop(caller, "action")
        self.thinking = f"{caller} is thinking…"
        style = "red" if result.startswith("failed to execute") else "green"
        return Text.assemble("  ⚙ ", (name, "yellow"), " → ", (shorten(result, _PREVIEW), style))


def answer_panel(response: str, *, state: str = "completed", task_id: str | None = None) -> Panel:
    """The final answer, set apart: "Answer" (green), "Paused at a breakpoint" (yellow) or
    "Task failed" (red, for ``failed``/``cancelled``/``error``)."""
    if state == "completed":
        title, style = "Answer", "green"
    elif state == "waiting_breakpoint":
        title, style = "Paused at a breakpoint", "yellow"
    else:
        title, style = "Task failed", "red"
    subtitle = f"task {escape(task_id)}" if task_id else None
    return Panel(
        Text(response), title=f"[bold]{title}[/bold]", subtitle=subtitle, border_style=style,
        title_align="left", subtitle_align="right",
    )  # fmt: skip


def show_events(console: Console, events: Iterable[Mapping[str, Any]]) -> None:
    """Print stored events (``{"event", "data", ...}`` dicts) one line each."""
    view = EventView()
    for event in events:
        line = view.line(str(event.get("event", "")), event.get("data"))
        if line is not None:
            console.print(line, no_wrap=True, overflow="ellipsis")


def print_result(console: Console, result: Mapping[str, Any], *, verbose: bool = False) -> None:
    """A ``POST /message`` answer: its events (if any), then the answer panel; with
    ``verbose`` the whole JSON instead."""
    if verbose:
        print_json(console, result)
        return
    events = result.get("events")
    if events:  # the stored task_complete repeats the answer shown below
        show_events(console, [e for e in events if e.get("event") != "task_complete"])
    state = str(result.get("status", "completed"))
    console.print(
        answer_panel(str(result.get("response", "")), state=state, task_id=result.get("task_id"))
    )


def print_interswarm(console: Console, result: Mapping[str, Any], *, verbose: bool = False) -> None:
    """A proxy send (``POST /interswarm/message``): the peer's receipt and how to follow the
    reply, or the reply itself when the peer answered at once; ``verbose``: the JSON."""
    response = result.get("response")
    task_id = result.get("task_id")
    if isinstance(response, Mapping):
        task_id = task_id or response.get("task_id")
        message = response.get("message")
    else:
        message = None
    if verbose:
        print_json(console, result)
    elif isinstance(response, Mapping) and response.get("status") == "success":
        console.print(
            f"sent to swarm {response.get('swarm')} ({response.get('local_runner')} runs it); "
            f"the reply ends task {task_id}: follow it with task-events {task_id}",
            markup=False, highlight=False,
        )  # fmt: skip
    elif isinstance(message, Mapping) and "body" in message:  # a protocol 1.1 peer's reply
        console.print(answer_panel(str(message["body"]), task_id=task_id))
    elif isinstance(response, str):  # older servers answer with the reply's text
        console.print(answer_panel(response, task_id=task_id))
    else:
        print_json(console, result)


def print_response(console: Console, result: Mapping[str, Any], *, verbose: bool = False) -> None:
    """A ``POST /responses`` Response: its id and status, then the answer's text or the
    breakpoint calls the task paused on; ``verbose``: the JSON."""
    if verbose:
        print_json(console, result)
        return
    lines = [f"response {result.get('id')} ({result.get('status', '?')})"]
    for item in result.get("output") or []:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "function_call":
            lines.append(f"  call {item.get('name')}({item.get('arguments', '')})")
        lines.extend(
            f"  {part['text']}"
            for part in item.get("content") or []
            if isinstance(part, Mapping) and "text" in part
        )
    for line in lines:
        console.print(line, markup=False, highlight=False)


class _LiveAnswer:
    """The answer as the model writes it (``token_delta`` events of kind ``answer``),
    printed as it grows; the closing event then needs no panel if it says the same."""

    def __init__(self, console: Console, status: Status) -> None:
        self.console = console
        self.status = status
        self.parts: list[str] = []
        self.open = False  # the answer's line is not ended yet

    def add(self, data: Mapping[str, Any]) -> None:
        delta = data.get("delta")
        if data.get("kind") != "answer" or not isinstance(delta, str):
            agent = data.get("agent")
            if not self.parts and isinstance(agent, str):
                self.status.update(f"{agent} is writing…")
            return
        if not self.parts:
            self.status.stop()
            self.console.print(Text("Answer", style="bold green"))
        self.console.print(delta, end="", markup=False, highlight=False)
        self.parts.append(delta)
        self.open = True

    def covers(self, event: SSEvent) -> bool:
        """``True`` for the completion message of a streamed answer (it says the same)."""
        if not self.parts or event.event != "new_message":
            return False
        data = event_data(event.data)
        extra = data.get("extra_data") if isinstance(data, Mapping) else None
        full = extra.get("full_message") if isinstance(extra, Mapping) else None
        return isinstance(full, Mapping) and full.get("msg_type") == "broadcast_complete"

    def end_line(self) -> None:
        if self.open:
            self.console.print()
            self.open = False

    def shown(self, response: str, state: str) -> bool:
        """``True`` when the streamed text is the whole completed answer."""
        self.end_line()
        return state == "completed" and bool(self.parts) and "".join(self.parts) == response


async def show_stream(
    console: Console, stream: AsyncIterable[SSEvent], *, raw: bool = False
) -> bool:
    """Print a task's events as they arrive; ``True`` when it ended with ``task_complete``.

    Rendered: one line per event under a spinner, the answer as it streams (live
    ``token_delta`` events), then the answer panel (``task_error``: the "Task failed"
    panel) unless the streamed answer already showed it. ``raw``: each event as one JSON
    line (:func:`raw_line`), written straight to ``console.file`` without colours.
    """
    if raw:
        return await _raw_stream(console, stream)
    view = EventView()
    with console.status(view.thinking) as status:
        live = _LiveAnswer(console, status)
        async for event in stream:
            data = event_data(event.data)
            if event.event == "token_delta" and event.id is None:
                if isinstance(data, Mapping):
                    live.add(data)
                continue
            if event.id is None and event.event in _FINAL:
                status.stop()
                _show_final(console, live, event.event, data)
                return event.event == "task_complete"
            line = None if live.covers(event) else view.line(event.event, event.data)
            if line is not None:
                live.end_line()
                console.print(line, no_wrap=True, overflow="ellipsis")
            status.update(view.thinking)
    live.end_line()
    console.print("[red]✗ the stream ended before the task finished[/red]")
    return False


def _show_final(console: Console, live: _LiveAnswer, name: str, data: Any) -> None:
    body = data.get("response", "") if isinstance(data, Mapping) else data
    task_id = data.get("task_id") if isinstance(data, Mapping) else None
    status = data.get("status") if isinstance(data, Mapping) else None
    state = "completed" if name == "task_complete" else "failed"
    if isinstance(status, str) and (status in OK_STATES or name == "task_error"):
        state = status
    if live.shown(str(body), state):
        console.print(Text(f"✓ completed · task {task_id}", style="dim green"))
        return
    console.print(answer_panel(str(body), state=state, task_id=task_id))


async def _raw_stream(console: Console, stream: AsyncIterable[SSEvent]) -> bool:
    final = None
    async for event in stream:
        console.file.write(raw_line(event) + "\n")
        console.file.flush()
        if event.id is None and event.event in _FINAL:
            final = event.event
    return final == "task_complete"


#: Below this many columns ``mail tasks`` shows start times without their year.
WIDE_TABLE = 100


def tasks_table(tasks: Mapping[str, Mapping[str, Any]], width: int | None = None) -> Table:
    """The caller's tasks (``GET /tasks``), oldest first: id, state, title, started (UTC),
    the number of events when the records have them, and when a task has a budget, the
    limit it spent most of (``turns 4/50``).

    The id, the state and the start time are never cut: the title takes what is left of
    ``width`` columns. Narrower than :data:`WIDE_TABLE` columns (a terminal of 80), the start time loses
    its year (``11-25 23:16``); wider, the title gets the extra room."""
    table = Table(box=None, header_style="bold", pad_edge=False, collapse_padding=True)
    rows = sorted(tasks.values(), key=lambda t: str(t.get("start_time", "")))
    states = [_task_state(t) for t in rows]
    compact = width is not None and width < WIDE_TABLE
    id_width = max((len(str(t.get("task_id", ""))) for t in rows), default=2)
    # one row per task; the id is for copying, so it is never cut
    state_width = max(map(len, states), default=5)
    started_width = 11 if compact else 16
    counted = any("events" in t for t in rows)  # pages of GET /tasks leave events out
    budgets = [(budget_parts(t.get("budget"), short=True) or [""])[0] for t in rows]
    budget_width = max(map(len, budgets), default=0)
    others = id_width + state_width + started_width + (7 if counted else 0) + 3
    others += budget_width + 1 if budget_width else 0
    title_width = max(5, width - others) if width is not None else None
    table.add_column("id", no_wrap=True, min_width=id_width)
    table.add_column("state", no_wrap=True, min_width=state_width)
    table.add_column("title", no_wrap=True, overflow="ellipsis", max_width=title_width)
    table.add_column("started", no_wrap=True, min_width=started_width)
    if counted:
        table.add_column("events", no_wrap=True, justify="right", min_width=6)
    if budget_width:  # the limit each task spent most of
        table.add_column("budget", no_wrap=True, min_width=budget_width)
    for task, state, budget in zip(rows, states, budgets, strict=True):
        style = (
            "green"
            if state == "completed"
            else "red"
            if state in {"failed", "cancelled"}
            else "yellow"
        )
        started = str(task.get("start_time", ""))[:16].replace("T", " ")
        cells: list[str | Text] = [
            str(task.get("task_id", "")),
            Text(state, style=style),
            str(task.get("title") or ""),
            started[5:] if compact else started,
        ]
        if counted:
            cells.append(str(len(task.get("events") or ())))
        if budget_width:
            cells.append(budget)
        table.add_row(*cells)
    return table


def _amount(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") or "0"
    return str(value)


#: The limits' short names, in ``mail tasks``'s budget column.
_SHORT_LIMITS = {
    "input_tokens": "in",
    "output_tokens": "out",
    "total_tokens": "tokens",
    "cost_usd": "usd",
    "agent_turns": "turns",
    "actions": "actions",
    "seconds": "s",
}


def budget_parts(budget: Any, *, short: bool = False) -> list[str]:
    """Each limit of a task's ``budget`` (``GET /task``) as ``name spent/limit``, the most
    spent first (``short``: with short names); empty for no budget."""
    if not isinstance(budget, Mapping):
        return []
    limits, spent = budget.get("limits") or {}, budget.get("spent") or {}
    shares = []
    for name, limit in limits.items():
        if name == "warn_at" or not isinstance(limit, int | float):
            continue
        used = spent.get(name, 0)
        share = used / limit if limit else (1.0 if used else 0.0)
        label = _SHORT_LIMITS.get(name, name) if short else name
        shares.append((share, f"{label} {_amount(used)}/{_amount(limit)}"))
    return [text for _share, text in sorted(shares, key=lambda s: -s[0])]


def budget_line(budget: Any) -> str | None:
    """A task's budget on one line: what it spent of each limit, and the limit that
    stopped it (``None`` for no budget)."""
    parts = budget_parts(budget)
    if not parts:
        return None
    stopped = budget.get("stopped_by")
    return ", ".join(parts) + (f" (stopped: {stopped} exceeded)" if stopped else "")


def _task_state(task: Mapping[str, Any]) -> str:
    return str(task.get("state") or ("completed" if task.get("completed") else "running"))
