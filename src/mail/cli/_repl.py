"""The ``mail client`` REPL: one :class:`~mail.client.MAILClient`, one event loop, a prompt.

Each line is split with :mod:`shlex`, its first word looked up among the command names and
aliases (CONTRACT 10.2, plus the names of the seed's CLI doc), and the rest parsed by that
command's own argparse parser; a usage error, a refused request or an unknown command is
reported and the loop goes on. Every command runs on one event loop that a
:class:`BackgroundLoop` thread keeps running while the prompt waits, so the client's pooled
connections see a server close them when idle (uvicorn does after 5 s) and the next request
opens a fresh one instead of failing on a dead one. Ctrl+C cancels the running command and
returns to the prompt; Ctrl+C at the prompt starts a new line, Ctrl+D or ``exit`` leaves. Commands are
defined in :mod:`mail.cli._repl_commands`, which registers them on a :class:`Repl` and runs
it (``run_repl``); this module owns the loop, parsing and history, and knows no command.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import shlex
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from rich.console import Console
from rich.table import Table

from mail.cli._connect import UNREACHABLE_HINT
from mail.errors import MAILClientError
from mail.version import __version__

if TYPE_CHECKING:
    from mail.client import MAILClient

__all__ = ["BackgroundLoop", "Command", "Repl", "ReplParser", "UsageError", "history_path"]

#: Lines of history kept in ``~/.mail_history``.
HISTORY_LENGTH = 1000
Handler = Callable[[argparse.Namespace], Awaitable[None]]
_T = TypeVar("_T")


class UsageError(Exception):
    """A command line that its parser refused; ``str()`` is the message to show."""


class _HelpShown(Exception):
    """``CMD -h`` printed the help: nothing to run."""


class ReplParser(argparse.ArgumentParser):
    """An argparse parser that reports instead of exiting, and prints through rich."""

    def __init__(self, console: Console, **kwargs: Any) -> None:
        super().__init__(exit_on_error=False, **kwargs)
        self.console = console

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.format_usage().rstrip()}\n{self.prog}: error: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status or message:
            raise UsageError((message or "").strip() or f"{self.prog}: error")
        raise _HelpShown

    def print_help(self, file: Any = None) -> None:
        self.console.print(self.format_help().rstrip(), markup=False, highlight=False)


@dataclass(frozen=True, slots=True)
class Command:
    """One REPL command: its names, one-line summary, parser and coroutine."""

    name: str
    aliases: tuple[str, ...]
    summary: str
    parser: ReplParser
    handler: Handler


def history_path() -> Path:
    """``~/.mail_history`` (``$HOME`` respected)."""
    return Path.home() / ".mail_history"


def _import_readline() -> ModuleType | None:
    try:
        import readline  # noqa: PLC0415  # missing on some platforms (Windows)
    except ImportError:
        return None
    return readline


class BackgroundLoop:
    """An event loop that a daemon thread runs from ``__enter__`` to ``__exit__``.

    :meth:`run` is ``asyncio.Runner.run`` for the main thread: it waits for a coroutine on
    that loop, and Ctrl+C (delivered to the main thread) cancels it, waits for its cleanup
    and raises ``KeyboardInterrupt``. Between runs the loop goes on, so the transports of
    pooled connections handle what arrives while the main thread blocks in ``input()``;
    with a loop stopped between commands, a connection the server closed while the user
    typed looked alive and the next request failed ("Can not write request body").
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="mail-repl-loop", daemon=True
        )

    def __enter__(self) -> BackgroundLoop:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coro`` on the loop and return its result (or raise its exception)."""
        finished = threading.Event()
        started: list[asyncio.Task[_T]] = []

        def start() -> None:
            task = self.loop.create_task(coro)
            task.add_done_callback(lambda _task: finished.set())
            started.append(task)

        self.loop.call_soon_threadsafe(start)
        try:
            finished.wait()
        except KeyboardInterrupt:
            self._cancel(started, finished)
            raise
        return started[0].result()

    def _cancel(self, started: list[asyncio.Task[_T]], finished: threading.Event) -> None:
        """Cancel the task ``run`` started and wait until its cleanup is done."""

        def cancel() -> None:  # on the loop, after start(): callbacks run in order
            started[0].cancel()

        while True:
            self.loop.call_soon_threadsafe(cancel)
            try:
                finished.wait()
            except KeyboardInterrupt:
                continue  # another Ctrl+C while it cleans up: cancel again, keep waiting
            return


class Repl:
    """The REPL over ``client``, printing to ``console``; it starts with no command (see
    :meth:`add`; ``mail.cli._repl_commands.define`` adds them all).

    Attributes:
        identity: ``"role:id"`` from ``GET /whoami`` (``None``: unknown, prompt ``mail> ``).
        done: set by ``exit``; :meth:`loop` returns after the current line.
        commands: every command, in help order; ``lookup`` maps each name and alias to one.
    """

    def __init__(self, client: MAILClient, console: Console) -> None:
        self.client = client
        self.console = console
        self.identity: str | None = None
        self.done = False
        self.current_task: str | None = None  # the task a running stream command follows
        self.commands: list[Command] = []
        self.lookup: dict[str, Command] = {}
        self._readline: ModuleType | None = None

    # --- command table -----------------------------------------------------------------

    def add(
        self, name: str, aliases: tuple[str, ...], summary: str, handler: Handler
    ) -> ReplParser:
        """Register command ``name`` (and ``aliases``); returns its parser to add arguments to."""
        parser = ReplParser(self.console, prog=name, description=summary, add_help=True)
        command = Command(name, aliases, summary, parser, handler)
        self.commands.append(command)
        for word in (name, *aliases):
            if word in self.lookup:
                raise ValueError(f"REPL command name {word!r} defined twice")
            self.lookup[word] = command
        return parser

    def names(self) -> list[str]:
        """Every command name and alias."""
        return list(self.lookup)

    def help(self, word: str | None = None) -> None:
        """Print the command list, or the usage of command ``word``."""
        if word is not None:
            command = self.lookup.get(word)
            if command is None:
                self._unknown(word)
            else:
                command.parser.print_help()
            return
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("command", style="cyan", no_wrap=True)
        table.add_column("aliases")
        table.add_column("what it does")
        for command in self.commands:
            table.add_row(command.name, ", ".join(command.aliases), command.summary)
        self.console.print(table)
        self.console.print(
            "'help COMMAND' or 'COMMAND -h' shows a command's arguments; quote arguments "
            "with spaces (shlex rules); Ctrl+C cancels a command; 'exit' or Ctrl+D leaves.",
            markup=False, highlight=False,
        )  # fmt: skip

    # --- one line ----------------------------------------------------------------------

    def error(self, text: str) -> None:
        """Print ``text`` as an error (no markup interpretation)."""
        self.console.print("[bold red]error:[/bold red] ", end="")
        self.console.print(text, markup=False, highlight=False)

    def _unknown(self, word: str) -> None:
        guess = difflib.get_close_matches(word, self.names(), n=1, cutoff=0.6)
        hint = f" Did you mean '{guess[0]}'?" if guess else " Type 'help' for the commands."
        self.error(f"unknown command '{word}'.{hint}")

    def parse(self, line: str) -> tuple[Command, argparse.Namespace] | None:
        """The command and arguments of ``line``; ``None`` (after reporting why) if none."""
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            self.error(f"cannot split the line: {e} (check the quotes)")
            return None
        if not words:
            return None
        command = self.lookup.get(words[0])
        if command is None:
            self._unknown(words[0])
            return None
        try:
            return command, command.parser.parse_args(words[1:])
        except _HelpShown:
            return None
        except UsageError as e:
            self.error(str(e))
        except argparse.ArgumentError as e:
            self.error(f"{command.parser.format_usage().rstrip()}\n{command.name}: error: {e}")
        return None

    async def run(self, line: str) -> None:
        """Parse and run one line; every failure is reported, none escapes (but Ctrl+C)."""
        parsed = self.parse(line)
        if parsed is None:
            return
        command, args = parsed
        try:
            await command.handler(args)
        except MAILClientError as e:
            self.error(f"{command.name}: {e}")
            if e.status is None:  # no server answered
                self.console.print(UNREACHABLE_HINT, markup=False, highlight=False)
        except (ValueError, OSError) as e:
            self.error(f"{command.name}: {e}")
        except Exception as e:  # noqa: BLE001  # a REPL reports a bug and keeps going
            self.error(f"{command.name}: unexpected {type(e).__name__}: {e}")

    async def identify(self) -> None:
        """Ask ``GET /whoami`` who the key belongs to; on failure report it (prompt ``mail> ``)."""
        try:
            me = await self.client.get_whoami()
        except MAILClientError as e:
            self.identity = None
            self.error(f"whoami: {e}")
            if e.status is None:  # no server answered
                self.console.print(UNREACHABLE_HINT, markup=False, highlight=False)
        else:
            self.identity = f"{me.get('role', '?')}:{me.get('id', '?')}"

    # --- the loop ----------------------------------------------------------------------

    def prompt(self) -> str:
        """``role:id@url> `` (coloured on a colour terminal), or ``mail> ``."""
        label = f"{self.identity}@{self.client.url}" if self.identity else "mail"
        if self.console.color_system is None or self.console.no_color:
            return f"{label}> "
        # \001 and \002 tell readline the escape codes take no room on the line
        return f"\001\033[1;32m\002{label}\001\033[0m\002> "

    def _read(self) -> str:
        line = input(self.prompt())
        while line.endswith("\\") and not line.endswith("\\\\"):
            line = line[:-1] + " " + input("... ")
        readline = self._readline
        if readline is not None and line.split()[:1] in (["login"], ["l"]):
            # never keep an API key in the history file (input from a pipe adds no history)
            length = readline.get_current_history_length()
            if length and readline.get_history_item(length).split()[:1] in (["login"], ["l"]):
                readline.remove_history_item(length - 1)
        return line

    def loop(self, runner: BackgroundLoop) -> int:
        """Read, run and print until ``exit`` or end of input; returns the exit status (0)."""
        try:
            runner.run(self.identify())
        except KeyboardInterrupt:
            self.identity = None
            self.console.print("[yellow]cancelled[/yellow] whoami")
        self.console.print(
            f"[bold]MAIL client {__version__}[/bold] · {self.client.url} · "
            "[cyan]help[/cyan] lists the commands",
            highlight=False,
        )
        with self._history():
            while not self.done:
                try:
                    line = self._read()
                except EOFError:
                    self.console.print()
                    break
                except KeyboardInterrupt:
                    self.console.print()
                    continue
                try:
                    runner.run(self.run(line))
                except KeyboardInterrupt:
                    self._cancelled()
        return 0

    def _cancelled(self) -> None:
        self.console.print("[yellow]cancelled[/yellow]")
        if self.current_task:
            # soft_wrap: a narrow terminal folds the line, rich never breaks the command
            self.console.print(
                f"the task goes on on the server; follow it with: task-events {self.current_task}",
                markup=False, highlight=False, soft_wrap=True,
            )  # fmt: skip
        self.current_task = None

    # --- readline ---------------------------------------------------------------------

    def _complete(self, text: str, state: int) -> str | None:
        readline = self._readline
        if readline is None or readline.get_line_buffer()[: readline.get_begidx()].strip():
            return None  # only the command word is completed
        matches = sorted(n for n in self.names() if n.startswith(text))
        return f"{matches[state]} " if state < len(matches) else None

    @contextmanager
    def _history(self) -> Iterator[None]:
        """Load ``~/.mail_history`` and tab completion; save the history when done."""
        readline = self._readline = _import_readline()
        path = history_path()
        if readline is not None:
            with suppress(OSError):  # no history yet, or an unreadable one: start empty
                readline.read_history_file(path)
            readline.set_history_length(HISTORY_LENGTH)
            readline.set_completer_delims(" \t\n")
            readline.set_completer(self._complete)
            libedit = "libedit" in (readline.__doc__ or "")
            readline.parse_and_bind("bind ^I rl_complete" if libedit else "tab: complete")
        try:
            yield
        finally:
            if readline is not None:
                with suppress(OSError):  # a read-only home must not make leaving fail
                    readline.write_history_file(path)
                    path.chmod(0o600)  # lines may hold tokens (interswarm, swarm-register)
