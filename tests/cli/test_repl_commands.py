"""The REPL's commands in-process: names and aliases, parsing, and what each prints.

A :class:`mail.cli._repl.Repl` over a real :class:`MAILClient` prints into a recording console;
the live ``mail server`` answers, and a recording aiohttp app stands in for a server where
the test is about the request the REPL sends.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from rich.console import Console
from tests.cli.conftest import LiveServer
from tests.client.conftest import Gated, gated_template

from mail.cli._repl import Repl
from mail.cli._repl_commands import define, split_targets
from mail.client import MAILClient
from mail.config import ClientConfig

#: CONTRACT 10.2's names and aliases, and the seed CLI doc's names, for each command.
EXPECTED: dict[str, tuple[str, ...]] = {
    "ping": ("p",),
    "health": ("h", "get-health"),
    "health-update": ("hu",),
    "login": ("l",),
    "logout": ("lo",),
    "whoami": ("me", "id", "get-whoami"),
    "status": ("s",),
    "message": ("m", "msg", "post-message"),
    "message-stream": ("ms", "msg-s", "post-message-stream"),
    "message-interswarm": ("mi", "msg-i", "send-interswarm-message"),
    "swarms-get": ("sg", "swarms-g", "get-swarms"),
    "swarm-register": ("sr", "swarm-r", "register-swarm"),
    "swarm-dump": ("sd", "swarm-d", "dump-swarm"),
    "swarm-load-from-json": ("sl", "swarm-l", "load-swarm-from-json"),
    "responses": ("r", "resp"),
    "tasks-get": ("tsg", "tasks-g"),
    "task-get": ("tg", "task-g"),
    "cancel": ("tc", "task-cancel"),
    "task-events": ("te",),
    "conversations": ("convs",),
    "conversation": ("conv",),
    "help": ("?",),
    "exit": ("quit",),
}

MakeRepl = Callable[..., Repl]


def recording_console() -> Console:
    return Console(record=True, width=100, color_system=None, file=io.StringIO())


def offline_repl(url: str = "http://127.0.0.1:9", key: str | None = None) -> Repl:
    repl = Repl(MAILClient(url, key, config=ClientConfig(timeout=10)), recording_console())
    define(repl)
    return repl


@pytest.fixture
async def make_repl() -> AsyncIterator[MakeRepl]:
    repls: list[Repl] = []

    def make(url: str, key: str | None = None) -> Repl:
        repl = offline_repl(url, key)
        repls.append(repl)
        return repl

    yield make
    for repl in repls:
        await repl.client.aclose()


async def say(repl: Repl, line: str) -> str:
    await repl.run(line)
    return repl.console.export_text()


# --- the command table ---------------------------------------------------------------------


def test_every_command_and_alias() -> None:
    repl = offline_repl()
    assert {c.name: c.aliases for c in repl.commands} == EXPECTED
    for name, aliases in EXPECTED.items():
        for word in (name, *aliases):
            assert repl.lookup[word].name == name


def test_help_lists_every_command_in_order() -> None:
    repl = offline_repl()
    repl.help()
    text = repl.console.export_text()
    positions = [text.index(f"\n{command.name} ") for command in repl.commands]
    assert positions == sorted(positions)
    assert "post-message-stream" in text


def test_help_for_one_command_is_its_usage() -> None:
    repl = offline_repl()
    repl.help("msg-s")  # an alias works too
    text = repl.console.export_text()
    assert text.startswith("usage: message-stream [-h]")
    for flag in (
        "--subject",
        "--msg-type",
        "--task-id",
        "--entrypoint",
        "--resume-from",
        "--kwargs",
        "--raw",
    ):
        assert flag in text


def test_unknown_words_get_a_suggestion_or_a_pointer_to_help() -> None:
    repl = offline_repl()
    assert repl.parse("helth") is None
    assert repl.parse("xyzzy") is None
    text = repl.console.export_text()
    assert "unknown command 'helth'. Did you mean 'health'?" in text
    assert "unknown command 'xyzzy'. Type 'help' for the commands." in text


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('message "open', "No closing quotation"),
        ("message", "the following arguments are required: body"),
        ("message hi --resume-from later", "invalid choice: 'later'"),
        ("message hi -k '{bad'", "not valid JSON"),
        ("task-events T --after x", "invalid int value: 'x'"),
        ("swarm-register a http://b --persistent --volatile", "not allowed with argument"),
        ("whoami --nope", "unrecognized arguments: --nope"),
        ("swarm-load-from-json @/nonexistent/swarm.json", "cannot read /nonexistent/swarm.json"),
    ],
)
def test_usage_errors_are_reported_not_raised(line: str, error: str) -> None:
    repl = offline_repl()
    assert repl.parse(line) is None
    text = repl.console.export_text()
    assert text.startswith("error: ")
    assert error in text


def test_dash_h_prints_help_and_runs_nothing() -> None:
    repl = offline_repl()
    assert repl.parse("task-get -h") is None
    assert "usage: task-get [-h] [-v] TASK_ID" in repl.console.export_text()


def test_blank_lines_and_comments_do_nothing() -> None:
    repl = offline_repl()
    assert repl.parse("   ") is None
    assert repl.parse("# a note") is None
    assert repl.console.export_text() == ""


def test_message_flags_have_the_original_and_the_seed_spellings() -> None:
    repl = offline_repl()
    short = repl.parse("m hi -s S -t response -tid T -e math -se -rf user_response -k '{\"a\": 1}'")
    long = repl.parse(
        "post-message hi --subject S --msg-type response --task-id T --entrypoint math "
        "--show-events --resume-from user_response --kwargs '{\"a\": 1}'"
    )
    assert short is not None
    assert long is not None
    assert vars(short[1]) == vars(long[1])
    assert vars(short[1]) == {
        "body": "hi", "subject": "S", "msg_type": "response", "task_id": "T", "entrypoint": "math",
        "show_events": True, "resume_from": "user_response", "kwargs": {"a": 1}, "verbose": False,
    }  # fmt: skip


def test_interswarm_targets_are_a_list_not_characters() -> None:
    # CONTRACT 10.2: the original parsed TARGETS with type=list[str], i.e. into characters.
    repl = offline_repl()
    parsed = repl.parse('mi hello "a@x, b@y" TOKEN --to c@z --to d@w,e@v')
    assert parsed is not None
    args = parsed[1]
    assert split_targets([args.targets, *args.target]) == ["a@x", "b@y", "c@z", "d@w", "e@v"]


def test_swarm_register_is_volatile_unless_persistent() -> None:
    # CONTRACT 10.2: the original registered persistent swarms unless -V was given.
    repl = offline_repl()
    plain = repl.parse("sr peer http://peer:8000")
    persistent = repl.parse("sr peer http://peer:8000 TOKEN --persistent")
    assert plain is not None
    assert persistent is not None
    assert plain[1].volatile is True
    assert plain[1].auth_token is None
    assert persistent[1].volatile is False
    assert persistent[1].auth_token == "TOKEN"


def test_swarm_load_reads_at_file(tmp_path: Path) -> None:
    path = tmp_path / "swarm.json"
    path.write_text('{"name": "s"}', encoding="utf-8")
    parsed = offline_repl().parse(f"sl @{path}")
    assert parsed is not None
    assert parsed[1].swarm_json == '{"name": "s"}'


def test_prompt_shows_the_identity_or_mail() -> None:
    repl = offline_repl("http://h:1")
    assert repl.prompt() == "mail> "
    repl.identity = "user:u1"
    assert repl.prompt() == "user:u1@http://h:1> "


async def test_exit_ends_the_loop() -> None:
    repl = offline_repl()
    await repl.run("quit")
    assert repl.done is True


# --- against the live server ---------------------------------------------------------------


async def test_identify_sets_the_prompt(live_server: LiveServer, make_repl: MakeRepl) -> None:
    repl = make_repl(live_server.url, live_server.user_key)
    await repl.identify()
    assert repl.prompt() == f"user:user@{live_server.url}> "


async def test_identify_failure_is_reported(live_server: LiveServer, make_repl: MakeRepl) -> None:
    repl = make_repl(live_server.url, "wrong")
    await repl.identify()
    assert repl.prompt() == "mail> "
    assert "error: whoami: HTTP 401" in repl.console.export_text()


async def test_server_info_commands(live_server: LiveServer, make_repl: MakeRepl) -> None:
    repl = make_repl(live_server.url, live_server.user_key)
    assert "pong: swarm offline (running), MAIL protocol 1.3" in await say(repl, "p")
    assert await say(repl, "h") == "health: healthy (swarm offline)\n"
    assert await say(repl, "me") == "role user, id user\n"
    assert "swarm offline:" in await say(repl, "s")
    assert f"offline  {live_server.url}  active" in await say(repl, "sg")
    assert json.loads(await say(repl, "whoami -v")) == {
        "id": "user",
        "role": "user",
        "username": "user",
    }


async def test_status_counts_running_tasks_instead_of_saying_one_runs(
    gated: Gated, make_repl: MakeRepl
) -> None:
    # issue 21 item 4: "a task is running" was printed whenever the runtime existed
    repl = make_repl(gated.url, "user-key")
    assert await say(repl, "status") == (
        "swarm gated: ready; your runtime: not started, no task running; 0 active user(s)\n"
    )
    stream = await repl.client.post_message_stream("do the job")
    async with stream:
        await anext(aiter(stream))  # the task has started: the worker waits for the gate
        text = await say(repl, "status")
        assert text.endswith("your runtime: ready, 1 task(s) running; 1 active user(s)\n")
        gated.gate.set()
        async for _event in stream:
            pass
    text = await say(repl, "status")
    assert text.endswith("your runtime: ready, no task running; 1 active user(s)\n")


async def test_admin_commands(live_server: LiveServer, make_repl: MakeRepl) -> None:
    repl = make_repl(live_server.url, live_server.admin_key)
    assert await say(repl, "hu healthy") == "health set to healthy\n"
    assert await say(repl, "sd") == "swarm offline dumped to the server's log\n"
    user = make_repl(live_server.url, live_server.user_key)
    assert "error: health-update: HTTP 401" in await say(user, "hu down")


async def test_message_task_get_and_task_events(
    live_server: LiveServer, make_repl: MakeRepl
) -> None:
    repl = make_repl(live_server.url, live_server.user_key)
    answer = json.loads(await say(repl, 'message "what is 3*4?" -v'))
    assert answer["status"] == "completed"
    assert "12" in answer["response"]
    task_id = answer["task_id"]

    text = await say(repl, f"tg {task_id}")
    assert text.startswith(f"task {task_id}: completed, started ")
    assert "supervisor → math: Calculation" in text

    text = await say(repl, f"te {task_id} --after 10")
    assert "user → supervisor" not in text  # events 1-10 are skipped
    assert "╭─ Answer" in text

    await say(repl, f"te {task_id} --raw")  # written straight to the console's file
    written = repl.console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    raw = [line for line in written if line.startswith('{"event": ')]
    assert json.loads(raw[0])["id"] == "1"
    assert json.loads(raw[-1])["event"] == "task_complete"

    assert task_id in await say(repl, "tasks-get")
    assert task_id in json.loads(await say(repl, "tsg -v"))


async def test_message_show_events(live_server: LiveServer, make_repl: MakeRepl) -> None:
    repl = make_repl(live_server.url, live_server.user_key)
    text = await say(repl, 'msg "what is 2+2?" -se')
    assert text.index("user → supervisor") < text.index("╭─ Answer")


async def test_refused_commands_keep_the_repl(live_server: LiveServer, make_repl: MakeRepl) -> None:
    repl = make_repl(live_server.url, live_server.user_key)
    assert "error: task-get: HTTP 404" in await say(repl, "tg no-such-task")
    assert "error: login: HTTP 401" in await say(repl, "login wrong")
    assert repl.client.api_key == live_server.user_key  # the old key is kept
    assert "logged out" in await say(repl, "lo")
    assert repl.prompt() == "mail> "
    assert "error: message: HTTP 401" in await say(repl, "m hi")


async def test_unreachable_server_is_an_error_line(closed_url: str, make_repl: MakeRepl) -> None:
    text = await say(make_repl(closed_url, "k"), "health")
    assert text.startswith(f"error: health: cannot reach {closed_url}")


# --- the requests the fixed commands send --------------------------------------------------


@asynccontextmanager
async def recording_server() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def record(request: web.Request) -> web.Response:
        seen.append({"path": request.path, "body": await request.json()})
        if request.path == "/swarms":
            return web.json_response({"status": "registered", "swarm_name": "peer"})
        return web.json_response({"response": "hi back", "events": None})

    app = web.Application()
    app.router.add_post("/swarms", record)
    app.router.add_post("/interswarm/message", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_interswarm_sends_a_list_of_targets(make_repl: MakeRepl) -> None:
    async with recording_server() as (url, seen):
        repl = make_repl(url, "k")
        text = await say(repl, 'mi "hello there" "weather@peer,math@peer" TOKEN')
    assert seen == [
        {
            "path": "/interswarm/message",
            "body": {
                "body": "hello there",
                "user_token": "TOKEN",
                "targets": ["weather@peer", "math@peer"],
            },
        }
    ]
    assert "hi back" in text


async def test_swarm_register_sends_volatile_by_default(make_repl: MakeRepl) -> None:
    async with recording_server() as (url, seen):
        repl = make_repl(url, "k")
        assert await say(repl, "sr peer http://peer:8000") == "swarm peer registered (volatile)\n"
        assert "(persistent)" in await say(
            repl, "sr peer http://peer:8000 T --persistent -m '{\"a\": 1}'"
        )
    assert [s["body"]["volatile"] for s in seen] == [True, False]
    assert seen[1]["body"]["auth_token"] == "T"
    assert seen[1]["body"]["metadata"] == {"a": 1}


async def test_cancel_a_running_task(start: Any, make_repl: MakeRepl) -> None:
    gate = asyncio.Event()
    template, _worker = gated_template(gate)
    url = await start(template=template)
    repl = make_repl(url, "user-key")
    stream = await repl.client.post_message_stream("job", task_id="t-repl")
    async with stream:
        async for event in stream:
            if event.event == "new_message" and "worker" in event.data:
                break
        text = await say(repl, "cancel t-repl")
        final = [event async for event in stream][-1]

    assert "task t-repl: cancelled" in text
    assert (final.event, final.json()["status"]) == ("task_error", "cancelled")
    again = await say(repl, "tc t-repl")
    assert "error: cancel: HTTP 409" in again
    assert "already cancelled" in again


# --- MAP Mail conversations ----------------------------------------------------------------


async def test_conversations_and_one_conversation(
    live_server: LiveServer, make_repl: MakeRepl
) -> None:
    repl = make_repl(live_server.url, live_server.user_key)
    created = await repl.client.mail_create(
        subject="repl-release",
        initialTurn={"contentType": "text", "content": {"text": "From the REPL?"}},
    )
    cid = str(created["conversation"]["id"])

    listing = await say(repl, "convs -n 500")
    shown = await say(repl, f"conversation {cid}")
    missing = await say(repl, "conv conv-nope")

    (row,) = [line for line in listing.splitlines() if line.startswith(cid)]
    assert "active" in row and row.rstrip().endswith("repl-release")
    assert f"conversation: {cid}" in shown
    assert "participants: user:" in shown
    assert "text: From the REPL?" in shown
    assert "10000" in missing  # CONVERSATION_NOT_FOUND, reported, the REPL goes on
