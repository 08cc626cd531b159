"""The commands of the ``mail client`` REPL (CONTRACT 10.2), their arguments and output.

:func:`define` registers each command with :meth:`mail.cli._repl.Repl.add`: the original's
names and aliases, the seed CLI doc's names (``post-message``, ``get-health``, ...) as
further aliases, and ``task-events``; :func:`run_repl` runs a REPL with them. Two of the
original's slips are fixed here: ``message-interswarm`` reads TARGETS as a comma-separated
list (it split the argument into characters), and ``swarm-register`` registers a volatile
swarm unless ``--persistent`` is given, as the API does (the original defaulted to
persistent).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from mail.cli import _render as render
from mail.cli._conversations_render import conversation_lines, fetch_conversation, listing_lines
from mail.cli._repl import BackgroundLoop, Repl

if TYPE_CHECKING:
    from mail.cli._connect import Target
    from mail.cli._repl import ReplParser

__all__ = ["define", "json_object", "json_value", "run_repl", "split_targets"]

RESUME_CHOICES = ("user_response", "breakpoint_tool_call")
#: The order of ``help``.
ORDER = (
    "ping", "health", "health-update", "login", "logout", "whoami", "status", "message",
    "message-stream", "task-events", "message-interswarm", "swarms-get", "swarm-register",
    "swarm-dump", "swarm-load-from-json", "responses", "tasks-get", "task-get", "cancel",
    "conversations", "conversation", "help", "exit",
)  # fmt: skip


def json_value(text: str) -> Any:
    """argparse type: any JSON value."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e}): {text!r}") from None


def json_object(text: str) -> dict[str, Any]:
    """argparse type: a JSON object."""
    value = json_value(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def json_text_or_file(text: str) -> str:
    """argparse type: ``@FILE`` is replaced by the file's text; anything else is kept."""
    if not text.startswith("@"):
        return text
    try:
        return Path(text[1:]).expanduser().read_text(encoding="utf-8")
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot read {text[1:]}: {e.strerror}") from None


def split_targets(values: list[str]) -> list[str]:
    """Comma-separated targets, possibly repeated: ``["a@x,b@y", "c@z"]`` → three targets."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _verbose(parser: ReplParser) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", help="print the raw JSON answer")


def _message_flags(parser: ReplParser, *, stream: bool) -> None:
    parser.add_argument("body", help="the message text (quote it)")
    parser.add_argument(
        "-s", "--subject", default="New Message", help="subject (default: %(default)s)"
    )
    parser.add_argument(
        "-t",
        "--msg-type",
        default="request",
        help="request|response|broadcast|interrupt (default: %(default)s)",
    )
    parser.add_argument("-tid", "--task-id", help="continue this task (with --resume-from)")
    parser.add_argument("-e", "--entrypoint", help="the agent to receive the message")
    parser.add_argument(
        "-rf", "--resume-from", choices=RESUME_CHOICES, help="how the message continues --task-id"
    )
    parser.add_argument(
        "-k",
        "--kwargs",
        type=json_object,
        default={},
        metavar="JSON",
        help="extra runtime arguments, a JSON object",
    )
    if stream:
        parser.add_argument("--raw", action="store_true", help="print each event as one JSON line")
    else:
        parser.add_argument(
            "-se",
            "--show-events",
            action="store_true",
            help="list the task's events before the answer",
        )
        _verbose(parser)


class _Commands:
    def __init__(self, repl: Repl) -> None:
        self.repl = repl
        self.client = repl.client
        self.console = repl.console

    def say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    async def ping(self, a: argparse.Namespace) -> None:
        root = await self.client.ping()
        if a.verbose:
            return render.print_json(self.console, root)
        swarm = root.get("swarm", {})
        self.say(
            f"pong: swarm {swarm.get('name', '?')} ({root.get('status', '?')}), MAIL protocol "
            f"{root.get('protocol_version', '?')}, up {float(root.get('uptime', 0)):.0f} s"
        )
        return None

    async def health(self, a: argparse.Namespace) -> None:
        info = await self.client.get_health()
        if a.verbose:
            return render.print_json(self.console, info)
        self.say(f"health: {info.get('status')} (swarm {info.get('swarm_name')})")
        return None

    async def health_update(self, a: argparse.Namespace) -> None:
        info = await self.client.update_health(a.status)
        if a.verbose:
            return render.print_json(self.console, info)
        self.say(f"health set to {info.get('status')}")
        return None

    async def login(self, a: argparse.Namespace) -> None:
        me = await self.client.login(a.api_key)
        self.repl.identity = f"{me.get('role', '?')}:{me.get('id', '?')}"
        if a.verbose:
            return render.print_json(self.console, me)
        self.say(f"logged in to {self.client.url} as {self.repl.identity}")
        return None

    async def logout(self, _a: argparse.Namespace) -> None:
        self.client.logout()
        self.repl.identity = None
        self.say(f"logged out of {self.client.url}: requests now carry no API key")

    async def whoami(self, a: argparse.Namespace) -> None:
        me = await self.client.get_whoami()
        self.repl.identity = f"{me.get('role', '?')}:{me.get('id', '?')}"
        if a.verbose:
            return render.print_json(self.console, me)
        self.say(f"role {me.get('role')}, id {me.get('id')}")
        return None

    async def status(self, a: argparse.Namespace) -> None:
        info = await self.client.get_status()
        if a.verbose:
            return render.print_json(self.console, info)
        swarm = info.get("swarm", {})
        ready = bool(info.get("user_mail_ready"))
        # user_task_running says the runtime's loop is alive, not that a task runs: count
        tasks = (await self.client.get_tasks()).values() if ready else ()
        running = sum(1 for t in tasks if t.get("is_running"))
        count = f"{running} task(s) running" if running else "no task running"
        self.say(
            f"swarm {swarm.get('name')}: {swarm.get('status')}; your runtime: "
            f"{'ready' if ready else 'not started'}, {count}; "
            f"{info.get('active_users', 0)} active user(s)"
        )
        return None

    async def message(self, a: argparse.Namespace) -> None:
        with self.console.status("waiting for the answer…"):
            result = await self.client.post_message(
                a.body, a.subject, a.msg_type, entrypoint=a.entrypoint,
                show_events=a.show_events, task_id=a.task_id, resume_from=a.resume_from,
                **a.kwargs,
            )  # fmt: skip
        render.print_result(self.console, result, verbose=a.verbose)

    async def message_stream(self, a: argparse.Namespace) -> None:
        with self.console.status("sending…"):
            stream = await self.client.post_message_stream(
                a.body, a.subject, a.msg_type, entrypoint=a.entrypoint, task_id=a.task_id,
                resume_from=a.resume_from, **a.kwargs,
            )  # fmt: skip
        await self._follow(stream, raw=a.raw)

    async def task_events(self, a: argparse.Namespace) -> None:
        stream = await self.client.task_events(a.task_id, after=a.after)
        await self._follow(stream, raw=a.raw)

    async def _follow(self, stream: Any, *, raw: bool) -> None:
        self.repl.current_task = stream.task_id
        async with stream:
            await render.show_stream(self.console, stream, raw=raw)
        self.repl.current_task = None

    async def message_interswarm(self, a: argparse.Namespace) -> None:
        targets = split_targets([a.targets, *a.target])
        result = await self.client.send_interswarm_message(
            a.body, a.user_token, subject=a.subject, targets=targets, msg_type=a.msg_type,
            task_id=a.task_id,
        )  # fmt: skip
        render.print_interswarm(self.console, result, verbose=a.verbose)

    async def swarms_get(self, a: argparse.Namespace) -> None:
        swarms = await self.client.get_swarms()
        if a.verbose:
            return render.print_json(self.console, swarms)
        entries = swarms.get("swarms", [])
        self.say(f"{len(entries)} swarm(s) known")
        for s in entries:
            active = "active" if s.get("is_active") else "inactive"
            self.say(
                f"  {s.get('swarm_name')}  {s.get('base_url')}  {active}  {s.get('version') or ''}"
            )
        return None

    async def swarm_register(self, a: argparse.Namespace) -> None:
        result = await self.client.register_swarm(
            a.name, a.base_url, auth_token=a.auth_token, volatile=a.volatile, metadata=a.metadata
        )
        if a.verbose:
            return render.print_json(self.console, result)
        kind = "volatile" if a.volatile else "persistent"
        self.say(f"swarm {result.get('swarm_name', a.name)} registered ({kind})")
        return None

    async def swarm_dump(self, a: argparse.Namespace) -> None:
        result = await self.client.dump_swarm()
        if a.verbose:
            return render.print_json(self.console, result)
        self.say(f"swarm {result.get('swarm_name')} dumped to the server's log")
        return None

    async def swarm_load(self, a: argparse.Namespace) -> None:
        result = await self.client.load_swarm_from_json(a.swarm_json)
        if a.verbose:
            return render.print_json(self.console, result)
        self.say(f"swarm {result.get('swarm_name')} loaded")
        return None

    async def responses(self, a: argparse.Namespace) -> None:
        choice = a.tool_choice
        if choice is not None and choice.lstrip().startswith("{"):
            choice = json_object(choice)
        result = await self.client.debug_post_responses(
            a.input, a.tools, a.instructions, a.previous_response_id, choice,
            a.parallel_tool_calls, **a.kwargs,
        )  # fmt: skip
        render.print_response(self.console, result, verbose=a.verbose)

    async def tasks_get(self, a: argparse.Namespace) -> None:
        tasks = await self.client.get_tasks()
        if a.verbose:
            return render.print_json(self.console, tasks)
        if not tasks:
            self.say("no tasks yet")
        else:
            self.console.print(render.tasks_table(tasks, self.console.width))
        return None

    async def task_get(self, a: argparse.Namespace) -> None:
        task = await self.client.get_task(a.task_id)
        if a.verbose:
            return render.print_json(self.console, task)
        state = task.get("state") or ("completed" if task.get("completed") else "running")
        events = task.get("events") or []
        self.say(
            f"task {task.get('task_id')}: {state}, started {task.get('start_time')}, {len(events)} event(s)"
        )
        budget = render.budget_line(task.get("budget"))
        if budget is not None:
            self.say(f"budget: {budget}")
        render.show_events(self.console, events)
        return None

    async def cancel(self, a: argparse.Namespace) -> None:
        result = await self.client.cancel_task(a.task_id)
        self.say(f"task {result['task_id']}: {result['status']}")

    async def conversations(self, a: argparse.Namespace) -> None:
        params: dict[str, Any] = {"limit": a.limit}
        if a.cursor:
            params["cursor"] = a.cursor
        page = await self.client.mail_list(**params)
        if a.verbose:
            return render.print_json(self.console, page)
        for line in listing_lines(page, more="conversations --cursor"):
            self.say(line)
        return None

    async def conversation(self, a: argparse.Namespace) -> None:
        got = await fetch_conversation(self.client, a.conversation_id)
        if a.verbose:
            return render.print_json(self.console, got)
        for line in conversation_lines(got):
            self.say(line)
        return None

    async def help(self, a: argparse.Namespace) -> None:
        self.repl.help(a.command)

    async def exit(self, _a: argparse.Namespace) -> None:
        self.repl.done = True


def define(repl: Repl) -> None:
    """Register every REPL command on ``repl``."""
    c = _Commands(repl)
    _define_simple(repl, c)
    _define_messages(repl, c)
    _define_swarms(repl, c)
    _define_tasks(repl, c)
    _define_conversations(repl, c)
    repl.commands.sort(key=lambda command: ORDER.index(command.name))


def run_repl(target: Target, console: Console | None = None) -> int:
    """Run the REPL against ``target`` until the user leaves; returns the exit status."""
    from mail.client import MAILClient  # noqa: PLC0415

    console = console or Console(highlight=False)
    with BackgroundLoop() as runner:
        client = MAILClient(target.url, target.api_key, config=target.config)
        try:
            repl = Repl(client, console)
            define(repl)
            return repl.loop(runner)
        finally:
            runner.run(client.aclose())


def _define_simple(repl: Repl, c: _Commands) -> None:
    add = repl.add
    for name, aliases, summary, handler in (
        ("ping", ("p",), "GET /: the server, its swarm and protocol", c.ping),
        ("health", ("h", "get-health"), "GET /health", c.health),
        ("whoami", ("me", "id", "get-whoami"), "GET /whoami: your role and id", c.whoami),
        ("status", ("s",), "your runtime and how many tasks run", c.status),
        ("swarms-get", ("sg", "swarms-g", "get-swarms"), "GET /swarms: known swarms", c.swarms_get),
        (
            "swarm-dump",
            ("sd", "swarm-d", "dump-swarm"),
            "(admin) log the loaded swarm on the server",
            c.swarm_dump,
        ),
        (
            "tasks-get",
            ("tsg", "tasks-g"),
            "your tasks: id, state, title, start, events",
            c.tasks_get,
        ),
    ):
        _verbose(add(name, aliases, summary, handler))
    p = add(
        "health-update", ("hu",), "(admin) POST /health: set the health status", c.health_update
    )
    p.add_argument("status", help="the new health status, e.g. healthy")
    _verbose(p)
    p = add("login", ("l",), "use another API key (checked with GET /whoami)", c.login)
    p.add_argument("api_key", metavar="API_KEY", help="the key (not kept in the history)")
    _verbose(p)
    add("logout", ("lo",), "forget the API key", c.logout)
    p = add("help", ("?",), "list the commands, or show one command's usage", c.help)
    p.add_argument("command", nargs="?", metavar="COMMAND")
    add("exit", ("quit",), "leave the REPL (Ctrl+D works too)", c.exit)


def _define_messages(repl: Repl, c: _Commands) -> None:
    add = repl.add
    p = add(
        "message", ("m", "msg", "post-message"), "send a message, wait, show the answer", c.message
    )
    _message_flags(p, stream=False)
    p = add(
        "message-stream",
        ("ms", "msg-s", "post-message-stream"),
        "send a message, show the conversation live",
        c.message_stream,
    )
    _message_flags(p, stream=True)
    p = add(
        "message-interswarm",
        ("mi", "msg-i", "send-interswarm-message"),
        "send a message to agents of other swarms",
        c.message_interswarm,
    )
    p.add_argument("body", help="the message text")
    p.add_argument("targets", metavar="TARGETS", help="agent@swarm addresses, comma-separated")
    p.add_argument(
        "user_token", metavar="USER_TOKEN", help="required by the protocol; kept by the server"
    )
    p.add_argument(
        "--to",
        dest="target",
        action="append",
        default=[],
        metavar="TARGET",
        help="one more target (repeatable)",
    )
    p.add_argument("-s", "--subject", help="subject")
    p.add_argument("-t", "--msg-type", help="request (default) or broadcast")
    p.add_argument("-tid", "--task-id", help="the task to continue")
    _verbose(p)
    p = add("responses", ("r", "resp"), "(debug servers) OpenAI Responses-style call", c.responses)
    p.add_argument("input", type=json_value, metavar="INPUT_JSON")
    p.add_argument("tools", type=json_value, metavar="TOOLS_JSON")
    p.add_argument("-i", "--instructions")
    p.add_argument("-pr", "--previous-response-id")
    p.add_argument("-tc", "--tool-choice", help="auto|required|none or a JSON object")
    p.add_argument("-ptc", "--parallel-tool-calls", action=argparse.BooleanOptionalAction)
    p.add_argument(
        "--no-ptc", dest="parallel_tool_calls", action="store_false", help=argparse.SUPPRESS
    )
    p.add_argument("-k", "--kwargs", type=json_object, default={}, metavar="JSON")
    _verbose(p)


def _define_swarms(repl: Repl, c: _Commands) -> None:
    add = repl.add
    p = add(
        "swarm-register",
        ("sr", "swarm-r", "register-swarm"),
        "(admin) register a remote swarm",
        c.swarm_register,
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("base_url", metavar="BASE_URL")
    p.add_argument("auth_token", metavar="AUTH_TOKEN", nargs="?", help="token for calling it")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument(
        "--persistent",
        dest="volatile",
        action="store_false",
        help="keep it in the registry file across restarts",
    )
    kind.add_argument(
        "-V",
        "--volatile",
        dest="volatile",
        action="store_true",
        default=True,
        help="forget it on restart (default)",
    )
    p.add_argument(
        "-m", "--metadata", type=json_object, metavar="JSON", help="metadata, a JSON object"
    )
    _verbose(p)
    p = add(
        "swarm-load-from-json",
        ("sl", "swarm-l", "load-swarm-from-json"),
        "(admin) load a swarm definition",
        c.swarm_load,
    )
    p.add_argument(
        "swarm_json",
        type=json_text_or_file,
        metavar="JSON",
        help="one swarms.json object, or @FILE",
    )
    _verbose(p)


def _define_conversations(repl: Repl, c: _Commands) -> None:
    p = repl.add("conversations", ("convs",), "your MAP Mail conversations", c.conversations)
    p.add_argument("-n", "--limit", type=int, default=50, help="conversations per page")
    p.add_argument("--cursor", metavar="CURSOR", help="the next page, as the last one said")
    _verbose(p)
    p = repl.add(
        "conversation", ("conv",), "a conversation: participants, threads, turns", c.conversation
    )
    p.add_argument("conversation_id", metavar="ID")
    _verbose(p)


def _define_tasks(repl: Repl, c: _Commands) -> None:
    add = repl.add
    p = add("task-get", ("tg", "task-g"), "one task and its events", c.task_get)
    p.add_argument("task_id", metavar="TASK_ID")
    _verbose(p)
    p = add("cancel", ("tc", "task-cancel"), "cancel a running or paused task", c.cancel)
    p.add_argument("task_id", metavar="TASK_ID")
    p = add("task-events", ("te",), "follow a task's events (stored, then live)", c.task_events)
    p.add_argument("task_id", metavar="TASK_ID")
    p.add_argument("--after", type=int, metavar="N", help="only events after sequence number N")
    p.add_argument("--raw", action="store_true", help="print each event as one JSON line")
