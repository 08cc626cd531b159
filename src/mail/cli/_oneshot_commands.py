"""The client-side commands of ``mail``: ``client``, ``message``, ``tasks``, ``task``,
``events``, ``cancel``, ``ping``, ``register``.

:mod:`mail.cli` parses the flags and imports this module only when one of these commands
runs. It needs aiohttp, rich and the configuration models, never the server, FastAPI,
LiteLLM or the runtime. Exit statuses: 0 success, 1 a failed task or request, 2 a usage or
configuration error; errors go to stderr as ``mail <command>: ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from mail.cli._connect import UNREACHABLE_HINT, Target, resolve, swarm_link

if TYPE_CHECKING:
    from mail.client import MAILClient
    from mail.errors import MAILClientError

__all__ = [
    "DESKTOP_FILE",
    "desktop_entry",
    "run_cancel",
    "run_client",
    "run_events",
    "run_message",
    "run_ping",
    "run_register",
    "run_task",
    "run_tasks",
]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: Name of the XDG desktop file ``mail register`` writes.
DESKTOP_FILE = "mail-swarm.desktop"
SCHEME_MIME = "x-scheme-handler/swarm"
_T = TypeVar("_T")


def _say(text: str, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    try:
        print(text, file=stream, flush=True)
    except UnicodeEncodeError:  # a terminal that cannot show ✓/✗
        encoding = stream.encoding or "ascii"
        print(text.encode(encoding, "replace").decode(encoding), file=stream, flush=True)


def _fail(command: str, message: object, status: int = EXIT_FAILED) -> int:
    for line in str(message).splitlines() or ["failed"]:
        _say(f"mail {command}: {line}", sys.stderr)
    return status


def _failed_request(command: str, error: MAILClientError) -> int:
    """Report a failed request; one that got no answer at all says where to look."""
    text = str(error) if error.status is not None else f"{error}\n{UNREACHABLE_HINT}"
    return _fail(command, text)


def _target(command: str, args: argparse.Namespace) -> Target | int:
    """The connection, or the exit status after reporting why there is none."""
    from mail.errors import ConfigurationError  # noqa: PLC0415

    try:
        target = resolve(args)
    except (ValueError, ConfigurationError) as e:
        return _fail(command, e, EXIT_USAGE)
    if target.config.verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        logger = logging.getLogger("mail.client")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    return target


def _with_client(target: Target, work: Callable[[MAILClient], Awaitable[_T]]) -> _T:
    from mail.client import MAILClient  # noqa: PLC0415

    async def main() -> _T:
        async with MAILClient(target.url, target.api_key, config=target.config) as client:
            return await work(client)

    return asyncio.run(main())


def run_client(args: argparse.Namespace) -> int:
    """``mail client``: the REPL."""
    target = _target("client", args)
    if isinstance(target, int):
        return target
    from mail.cli._repl_commands import run_repl  # noqa: PLC0415

    return run_repl(target)


def run_message(args: argparse.Namespace) -> int:
    """``mail message BODY``: send, print the answer; 0 when the task completed."""
    from mail.cli import _render as render  # noqa: PLC0415
    from mail.errors import MAILClientError  # noqa: PLC0415

    target = _target("message", args)
    if isinstance(target, int):
        return target
    stream = args.stream or args.raw
    # chosen here (the server takes a new task's id from the request), so that Ctrl+C
    # can say which task goes on without us
    task_id = args.task_id or str(uuid.uuid4())
    common: dict[str, Any] = {
        "subject": args.subject, "entrypoint": args.entrypoint, "task_id": task_id,
        "resume_from": args.resume_from, **args.kwargs,
    }  # fmt: skip
    try:
        if stream:
            return _with_client(target, lambda c: _stream_message(c, args, common))
        result = _with_client(target, lambda c: _post_message(c, args.body, common))
    except MAILClientError as e:
        return _failed_request("message", e)
    except KeyboardInterrupt:
        _say(
            f"mail message: cancelled; task {task_id} goes on on the server; follow it with: "
            f"mail events {task_id} --follow",
            sys.stderr,
        )
        return EXIT_INTERRUPTED
    state = str(result.get("status", "completed"))
    ok = state in render.OK_STATES
    if args.json:
        _say(json.dumps(result, indent=2, ensure_ascii=False))
    elif ok:
        _say(str(result.get("response", "")))
    else:
        return _fail(
            "message", f"task {result.get('task_id', '?')} {state}: {result.get('response', '')}"
        )
    return 0 if ok else EXIT_FAILED


async def _post_message(client: MAILClient, body: str, common: dict[str, Any]) -> Any:
    if not sys.stderr.isatty():  # scripts: no spinner, and no rich to import
        return await client.post_message(body, **common)
    from rich.console import Console  # noqa: PLC0415

    with Console(stderr=True).status("waiting for the answer…"):
        return await client.post_message(body, **common)


async def _stream_message(
    client: MAILClient, args: argparse.Namespace, common: dict[str, Any]
) -> int:
    from rich.console import Console  # noqa: PLC0415

    from mail.cli import _render as render  # noqa: PLC0415

    events = await client.post_message_stream(args.body, **common)
    async with events:
        ok = await render.show_stream(Console(highlight=False), events, raw=args.raw or args.json)
    return 0 if ok else EXIT_FAILED


def run_tasks(args: argparse.Namespace) -> int:
    """``mail tasks``: the caller's newest tasks as a table (or JSON), without their events."""
    from rich.console import Console  # noqa: PLC0415

    from mail.cli import _render as render  # noqa: PLC0415
    from mail.errors import MAILClientError  # noqa: PLC0415

    target = _target("tasks", args)
    if isinstance(target, int):
        return target
    try:
        page: dict[str, Any] = dict(
            _with_client(target, lambda c: c.get_task_page(limit=args.limit, cursor=args.cursor))
        )
    except MAILClientError as e:
        return _failed_request("tasks", e)
    if isinstance(page.get("tasks"), list):
        tasks = {t["task_id"]: t for t in page["tasks"]}
        more = page.get("next_cursor")
    else:  # a v1.3.6 server answers every task, by id
        tasks, more = page, None
    if args.json:
        _say(json.dumps(tasks, indent=2, ensure_ascii=False))
    elif not tasks:
        _say("no tasks")
    else:
        console = Console(highlight=False)
        console.print(render.tasks_table(tasks, console.width))
        if more:
            _say(f"older tasks: mail tasks --cursor {more}")
    return 0


def run_task(args: argparse.Namespace) -> int:
    """``mail task ID``: the task's state, title and answer (or its record as JSON)."""
    from mail.errors import MAILClientError  # noqa: PLC0415

    target = _target("task", args)
    if isinstance(target, int):
        return target
    try:
        task = _with_client(target, lambda c: c.get_task(args.task_id))
    except MAILClientError as e:
        return _failed_request("task", e)
    if args.json:
        _say(json.dumps(task, indent=2, ensure_ascii=False))
        return 0
    state = task.get("state") or ("completed" if task.get("completed") else "running")
    _say(f"task:    {task['task_id']}\nstate:   {state}\ntitle:   {task.get('title') or ''}")
    _say(f"started: {task.get('start_time', '')}\nevents:  {len(task.get('events') or ())}")
    from mail.cli._render import budget_line  # noqa: PLC0415

    budget = budget_line(task.get("budget"))
    if budget is not None:
        _say(f"budget:  {budget}")
    answer = _answer(task.get("events") or [])
    if answer is not None:
        _say(f"answer:  {answer}")
    return 0


def _answer(events: list[Any]) -> str | None:
    """The body of the last ``broadcast_complete`` the task's events show, if any."""
    from mail.cli._render import event_data  # noqa: PLC0415

    for event in reversed(events):
        data = event_data(event.get("data"))
        extra = (data.get("extra_data") if isinstance(data, dict) else None) or {}
        message = extra.get("full_message") if event.get("event") == "new_message" else None
        if isinstance(message, dict) and message.get("msg_type") == "broadcast_complete":
            return str(message["message"]["body"])
    return None


def run_events(args: argparse.Namespace) -> int:
    """``mail events ID [--follow]``: the task's stored events; with ``--follow`` also the
    live ones until the task's turn ends (exit 1 when it ends with ``task_error``)."""
    from rich.console import Console  # noqa: PLC0415

    from mail.cli import _render as render  # noqa: PLC0415
    from mail.errors import MAILClientError  # noqa: PLC0415

    target = _target("events", args)
    if isinstance(target, int):
        return target
    console = Console(highlight=False)
    try:
        if not args.follow:
            task = _with_client(target, lambda c: c.get_task(args.task_id))
            events = task.get("events") or []
            if args.json:
                for event in events:
                    _say(json.dumps(event, ensure_ascii=False))
            else:
                render.show_events(console, events)
            return 0

        async def follow(client: MAILClient) -> bool:
            stream = await client.task_events(args.task_id, ignore_pings=True)
            async with stream:
                return await render.show_stream(console, stream, raw=args.json)

        ok = _with_client(target, follow)
    except MAILClientError as e:
        return _failed_request("events", e)
    return 0 if ok else EXIT_FAILED


def run_cancel(args: argparse.Namespace) -> int:
    """``mail cancel ID``: cancel a running or paused task."""
    from mail.errors import MAILClientError  # noqa: PLC0415

    target = _target("cancel", args)
    if isinstance(target, int):
        return target
    try:
        result = _with_client(target, lambda c: c.cancel_task(args.task_id))
    except MAILClientError as e:
        return _failed_request("cancel", e)
    _say(f"task {result['task_id']}: {result['status']}")
    return 0


def run_ping(args: argparse.Namespace) -> int:
    """``mail ping [URL]``: ``GET /health``; ✓ and 0 when it answers, ✗ and 1 when not."""
    from mail.config import ClientConfig  # noqa: PLC0415
    from mail.errors import ConfigurationError, MAILClientError  # noqa: PLC0415

    try:
        if args.url:
            url = swarm_link(args.url)[0] if args.url.lower().startswith("swarm:") else args.url
            target = Target(url.rstrip("/"), None, ClientConfig(timeout=args.timeout), "none")
        else:
            resolved = resolve(argparse.Namespace(config=args.config, timeout=args.timeout))
            target = Target(resolved.url, None, resolved.config, "none")
    except (ValueError, ConfigurationError) as e:
        return _fail("ping", e, EXIT_USAGE)
    try:
        health = _with_client(target, lambda c: c.get_health())
    except MAILClientError as e:
        _say(f"✗ {e}", sys.stderr)
        return EXIT_FAILED
    _say(f"✓ {health.get('swarm_name', '?')} is {health.get('status', '?')}")
    return 0


# --- mail register ------------------------------------------------------------------------

_DESKTOP_SPECIAL = set(" \t\n\"'\\><~|&;$*?#()`")


def _desktop_quote(arg: str) -> str:
    # Desktop Entry spec, "The Exec key": quote reserved characters, escape " ` $ \ inside
    arg = arg.replace("%", "%%")
    if not _DESKTOP_SPECIAL.intersection(arg):
        return arg
    escaped = "".join(f"\\{ch}" if ch in '"`$\\' else ch for ch in arg)
    return f'"{escaped}"'


def desktop_entry(python: str | None = None) -> str:
    """The ``mail-swarm.desktop`` text: ``swarm://`` links open ``mail client`` in a terminal."""
    command = " ".join(
        _desktop_quote(a) for a in (python or sys.executable, "-m", "mail.cli", "client")
    )
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=MAIL client\n"
        "Comment=Open swarm:// links in the MAIL client\n"
        f"Exec={command} %u\n"
        "Terminal=true\n"
        "NoDisplay=true\n"
        f"MimeType={SCHEME_MIME};\n"
    )


def _applications_dir() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME", "")
    # the XDG spec: an unset, empty or relative value means ~/.local/share
    base = (
        Path(data_home)
        if data_home and Path(data_home).is_absolute()
        else Path.home() / ".local" / "share"
    )
    return base / "applications"


def run_register(args: argparse.Namespace) -> int:
    """``mail register``: make ``swarm://`` links open ``mail client``."""
    if sys.platform == "darwin":
        return _instructions_macos()
    if sys.platform == "win32":
        return _instructions_windows()
    path = _applications_dir() / DESKTOP_FILE
    entry = desktop_entry()
    xdg_mime = shutil.which("xdg-mime")
    command = [xdg_mime or "xdg-mime", "default", DESKTOP_FILE, SCHEME_MIME]
    if args.dry_run:
        _say(f"would write {path}:\n")
        _say(entry)
        _say(
            f"would run: {' '.join(command)}"
            if xdg_mime
            else "xdg-mime not found: would not run it"
        )
        return 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(entry, encoding="utf-8")
    except OSError as e:
        return _fail("register", f"cannot write {path}: {e}")
    _say(f"wrote {path}")
    if xdg_mime is None:
        _say(f"xdg-mime not found; make {DESKTOP_FILE} the default for {SCHEME_MIME} yourself")
        return 0
    result = subprocess.run(command, check=False, capture_output=True, text=True)  # noqa: S603
    if result.returncode != 0:
        return _fail("register", f"{' '.join(command)} failed: {result.stderr.strip()}")
    _say(f"swarm:// links now open `mail client` ({' '.join(command[1:])})")
    return 0


def _instructions_macos() -> int:
    _say(
        "macOS hands URL schemes only to application bundles. To open swarm:// links with\n"
        "`mail client`, wrap this command in an app (e.g. an Automator 'Run Shell Script'\n"
        "application) whose Info.plist lists CFBundleURLTypes with the scheme 'swarm':\n\n"
        f'    {sys.executable} -m mail.cli client "$1"\n\n'
        "then open the app once so LaunchServices registers it."
    )
    return 0


def _instructions_windows() -> int:
    exe = sys.executable.replace("\\", "\\\\")
    _say(
        "Save this as swarm.reg and double-click it to open swarm:// links with `mail client`:\n\n"
        "Windows Registry Editor Version 5.00\n\n"
        "[HKEY_CURRENT_USER\\Software\\Classes\\swarm]\n"
        '@="URL:MAIL swarm link"\n'
        '"URL Protocol"=""\n\n'
        "[HKEY_CURRENT_USER\\Software\\Classes\\swarm\\shell\\open\\command]\n"
        f'@="\\"{exe}\\" -m mail.cli client \\"%1\\""'
    )
    return 0
