"""The ``mail`` command line: ``server``, ``client`` (the REPL), ``message``, ``tasks``,
``ping``, ``register``, ``doctor`` and ``version``.

Importing this module is cheap on purpose (``mail --help`` and ``mail client --help`` must
answer at once): it loads only the standard library and :mod:`mail.version`. The
configuration models, the server, the client and everything they need are imported inside
the command that uses them; the client-side commands live in
:mod:`mail.cli._oneshot_commands` and never import the server, FastAPI, LiteLLM or the
runtime; the task store commands (``db-init``, ``db-migrate``, ``db-prune``) live in
:mod:`mail.cli._db_commands`.

``mail server`` reads ``mail.toml`` and the environment through
:func:`mail.config.load_config`; a flag overrides the configuration only when it is given
(:func:`server_overrides`), so ``debug = true`` in ``mail.toml`` survives a plain
``mail server``. Only this module configures logging handlers.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mail.version import PROTOCOL_VERSION, __version__

__all__ = ["main", "build_parser", "server_overrides"]

#: Exit status for a usage or configuration error (argparse uses the same).
EXIT_USAGE = 2
#: Environment variable selecting the log level of ``mail server`` (default ``INFO``).
LOG_LEVEL_ENV = "MAIL_LOG_LEVEL"

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")
_MAX_PORT = 65535


def _bool_arg(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _port_arg(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {value!r}") from None
    if not 0 <= port <= _MAX_PORT:
        raise argparse.ArgumentTypeError(f"port must be between 0 and {_MAX_PORT}, got {port}")
    return port


def _add_server_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    server = sub.add_parser(
        "server",
        help="run the MAIL HTTP server",
        description=(
            "Run the MAIL HTTP server. Settings come from mail.toml (--config, else "
            "$MAIL_CONFIG_PATH, else ./mail.toml, else the mail.toml above the installed "
            "package) and the environment; each flag below overrides its setting only when "
            "given. Log level: $MAIL_LOG_LEVEL (default INFO)."
        ),
        epilog="See docs/cli.md and docs/configuration.md.",
    )
    server.add_argument("-c", "--config", metavar="PATH", help="mail.toml to read (must exist)")
    server.add_argument(
        "-p",
        "--port",
        type=_port_arg,
        metavar="N",
        help="TCP port, 0 for any free one (overrides [server] port)",
    )
    server.add_argument(
        "-H", "--host", metavar="HOST", help="interface to bind (overrides [server] host)"
    )
    server.add_argument(
        "-r",
        "--reload",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="restart on code changes; --no-reload turns it off (overrides [server] reload)",
    )
    server.add_argument(
        "-d",
        "--debug",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="debug mode; --no-debug turns it off (overrides [server] debug)",
    )
    server.add_argument(
        "-n",
        "--swarm-name",
        metavar="NAME",
        help="swarm to run, by name (overrides [server.swarm] name)",
    )
    server.add_argument(
        "-s",
        "--swarm-source",
        metavar="FILE",
        help="swarms.json file holding the swarm (overrides [server.swarm] source)",
    )
    server.add_argument(
        "-rf",
        "--swarm-registry",
        metavar="FILE",
        help="file keeping the registry of known swarms (overrides [server.swarm] registry)",
    )
    server.add_argument(
        "--print-llm-streams",
        type=_bool_arg,
        metavar="true|false",
        help="echo LLM output to the console (overrides [server.settings] print_llm_streams)",
    )
    server.add_argument(
        "--no-persist",
        dest="persist",
        action="store_const",
        const=False,
        default=None,
        help="keep tasks and events in memory only (sets [database] persist = false)",
    )
    server.add_argument(
        "--skip-llm-check",
        dest="llm_check",
        action="store_const",
        const=False,
        default=None,
        help="start even when an LLM agent's proxy URL or API key is not set "
        "(sets [server] llm_check = false)",
    )
    server.set_defaults(handler=_run_server)


def _add_db_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, text in (
        ("db-init", "create the task store's tables (applies every migration)"),
        ("db-migrate", "apply the task store's pending schema migrations"),
    ):
        cmd = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        cmd.add_argument("-c", "--config", metavar="PATH", help="mail.toml to read")
        cmd.set_defaults(
            handler=_db("db_migrate"), db_command=name, upgrade_from_v1=False, yes=False
        )
        if name == "db-migrate":
            cmd.add_argument(
                "--upgrade-from-v1",
                action="store_true",
                help=(
                    "PostgreSQL shared with v1.3.6: also apply the migrations v1.3.6 cannot "
                    "live with (says what they change and asks first; stop v1.3.6 servers)"
                ),
            )
            cmd.add_argument(
                "-y", "--yes", action="store_true", help="do not ask before --upgrade-from-v1"
            )
    prune = sub.add_parser(
        "db-prune",
        help="delete finished tasks from the task store",
        description=(
            "Delete finished (completed, failed, cancelled) tasks and their rows. With no "
            "flag, applies the configured retention ([database] retention_days, "
            "retention_max_tasks), as the server does every prune_interval seconds."
        ),
    )
    prune.add_argument("-c", "--config", metavar="PATH", help="mail.toml to read")
    prune.add_argument(
        "--older-than",
        type=_positive_float,
        metavar="DAYS",
        help="delete finished tasks last updated more than DAYS days ago",
    )
    prune.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="keep only the N most recently updated finished tasks",
    )
    prune.set_defaults(handler=_db("db_prune"), db_command="db-prune")


def _db(name: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        _configure_logging()
        from mail.cli import _db_commands  # noqa: PLC0415  # config, stores: only when it runs

        status: int = getattr(_db_commands, f"run_{name}")(args)
        return status

    return run


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value!r}")
    return number


def _json_object(value: str) -> dict[str, Any]:
    import json  # noqa: PLC0415  # only `mail message -k` needs it

    try:
        parsed = json.loads(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {value!r}")
    return parsed


def _add_connection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", dest="url_flag", metavar="URL",
        help="server base URL or swarm:// link (default: [client] url, else "
        "http://127.0.0.1:<[server] port>)",
    )  # fmt: skip
    parser.add_argument(
        "-ak", "--api-key", metavar="KEY",
        help="API key (default: the swarm link's token, else [client] api_key, else, for a "
        "loopback URL, the user key the local server wrote)",
    )  # fmt: skip
    parser.add_argument(
        "-t", "--timeout", type=_positive_float, metavar="SEC",
        help="seconds per request (default: [client] timeout)",
    )  # fmt: skip
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log each HTTP request on stderr"
    )
    parser.add_argument("-c", "--config", metavar="PATH", help="mail.toml to read")


def _oneshot(name: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        from mail.cli import _oneshot_commands  # noqa: PLC0415  # aiohttp, rich: only when it runs

        status: int = getattr(_oneshot_commands, f"run_{name}")(args)
        return status

    return run


def _add_client_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    client = sub.add_parser(
        "client",
        help="interactive client (REPL) of a MAIL server",
        description=(
            "Talk to a MAIL server interactively: type `help` at the prompt for the "
            "commands. URL may be an http(s) URL or a swarm://connect?server=HOST[:PORT]"
            "&token=KEY link."
        ),
        epilog="See docs/cli.md.",
    )
    client.add_argument("url", nargs="?", metavar="URL", help="server base URL or swarm:// link")
    _add_connection_flags(client)
    client.set_defaults(handler=_oneshot("client"))

    message = sub.add_parser(
        "message",
        help="send one message and print the answer",
        description=(
            "Send BODY to the swarm and print the answer. Exit status 0 when the task "
            "completed (or paused at a breakpoint), 1 when it failed or the request failed, "
            "2 for a usage error."
        ),
        epilog="See docs/cli.md.",
    )
    message.add_argument("body", metavar="BODY", help="the message text")
    _add_connection_flags(message)
    message.add_argument("--stream", action="store_true", help="show the conversation live")
    message.add_argument("--json", action="store_true", help="print the answer as JSON")
    message.add_argument(
        "--raw", action="store_true", help="stream, printing each event as one JSON line"
    )
    message.add_argument("--subject", default="New Message", help="subject (default: %(default)s)")
    message.add_argument("--task-id", metavar="ID", help="continue this task")
    message.add_argument(
        "--resume-from", choices=("user_response", "breakpoint_tool_call"),
        help="how the message continues --task-id",
    )  # fmt: skip
    message.add_argument("--entrypoint", metavar="NAME", help="the agent to receive it")
    message.add_argument(
        "-k", "--kwargs", type=_json_object, default={}, metavar="JSON",
        help="extra runtime arguments, a JSON object",
    )  # fmt: skip
    message.set_defaults(handler=_oneshot("message"))

    tasks = sub.add_parser(
        "tasks", help="list your tasks", description="List the caller's newest tasks."
    )
    _add_connection_flags(tasks)
    tasks.add_argument("--json", action="store_true", help="print the tasks as JSON")
    tasks.add_argument(
        "-n", "--limit", type=int, default=50, metavar="N",
        help="at most N tasks, newest first (default: %(default)s)",
    )  # fmt: skip
    tasks.add_argument("--cursor", metavar="CURSOR", help="the older tasks after a page")
    tasks.set_defaults(handler=_oneshot("tasks"))
    _add_task_parsers(sub)
    _add_conversation_parsers(sub)

    ping = sub.add_parser(
        "ping",
        help="check that a server answers (GET /health)",
        description="GET /health: print ✓ and exit 0 when the server answers, ✗ and 1 if not.",
    )
    ping.add_argument(
        "url", nargs="?", metavar="URL", help="server URL (default: as `mail client`)"
    )
    ping.add_argument(
        "-t", "--timeout", type=_positive_float, default=5.0, metavar="SEC",
        help="seconds to wait (default: %(default)s)",
    )  # fmt: skip
    ping.add_argument("-c", "--config", metavar="PATH", help="mail.toml to read")
    ping.set_defaults(handler=_oneshot("ping"))

    register = sub.add_parser(
        "register",
        help="open swarm:// links with `mail client`",
        description=(
            "Register `mail client` as the handler of swarm:// links: on Linux an XDG desktop "
            "file (mail-swarm.desktop) and `xdg-mime default`; on macOS and Windows, "
            "instructions."
        ),
    )
    register.add_argument(
        "--dry-run", action="store_true", help="print what would be written, change nothing"
    )
    register.set_defaults(handler=_oneshot("register"))


def _add_task_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, text in (
        ("task", "show one task: state, title, answer"),
        ("events", "show a task's events (--follow: then live, until it ends)"),
        ("cancel", "cancel a running or paused task"),
    ):
        cmd = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        cmd.add_argument("task_id", metavar="ID", help="the task id")
        _add_connection_flags(cmd)
        if name != "cancel":
            cmd.add_argument("--json", action="store_true", help="print JSON")
        if name == "events":
            cmd.add_argument("-f", "--follow", action="store_true", help="follow live events")
        cmd.set_defaults(handler=_oneshot(name))


def _add_conversation_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def run(name: str) -> Any:
        def handler(args: argparse.Namespace) -> int:
            from mail.cli import _conversation_commands as commands  # noqa: PLC0415

            status: int = getattr(commands, f"run_{name}")(args)
            return status

        return handler

    listing = sub.add_parser("conversations", help="list your MAP Mail conversations")
    _add_connection_flags(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "-n",
        "--limit",
        type=int,
        default=50,
        metavar="N",
        help="at most N per page (default: %(default)s)",
    )
    listing.add_argument("--cursor", metavar="CURSOR", help="the next page")
    listing.set_defaults(handler=run("conversations"))
    one = sub.add_parser("conversation", help="show a conversation: participants, threads, turns")
    one.add_argument("conversation_id", metavar="ID", help="the conversation id")
    _add_connection_flags(one)
    one.add_argument("--json", action="store_true", help="print JSON")
    one.set_defaults(handler=run("conversation"))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``mail`` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="mail",
        description="MAIL: the Multi-Agent Interface Layer. Reference implementation.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"mail {__version__} (MAIL protocol {PROTOCOL_VERSION})",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    _add_server_parser(sub)
    _add_client_parsers(sub)
    _add_db_parsers(sub)
    doctor = sub.add_parser(
        "doctor",
        help="check a deployment's configuration and say what to fix",
        description=(
            "Check the configuration: config file, unknown keys, the swarm, LLM keys, auth, "
            "the task store and the registry's peers. One line per check (✓ ok, ! warning, "
            "✗ failure) with how to fix it. Exit status 0 when no check fails, 1 otherwise."
        ),
        epilog="See docs/cli.md.",
    )
    doctor.add_argument("-c", "--config", metavar="PATH", help="mail.toml to check")
    doctor.add_argument(
        "-n", "--swarm-name", metavar="NAME", help="swarm to check (as for `mail server`)"
    )
    doctor.add_argument(
        "-s", "--swarm-source", metavar="FILE", help="swarms.json holding it (as for `mail server`)"
    )
    doctor.set_defaults(handler=_run_doctor)
    version = sub.add_parser(
        "version",
        help="print the implementation and protocol versions",
        description="Print the implementation and protocol versions.",
    )
    version.set_defaults(handler=_run_version)
    return parser


# (argparse dest, config key path) for every `mail server` flag that overrides a setting.
_SERVER_FLAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("port", ("server", "port")),
    ("host", ("server", "host")),
    ("reload", ("server", "reload")),
    ("debug", ("server", "debug")),
    ("swarm_name", ("server", "swarm", "name")),
    ("swarm_source", ("server", "swarm", "source")),
    ("swarm_registry", ("server", "swarm", "registry")),
    ("print_llm_streams", ("server", "settings", "print_llm_streams")),
    ("persist", ("database", "persist")),
    ("llm_check", ("server", "llm_check")),
)


def server_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``overrides`` for :func:`mail.config.load_config` from parsed ``mail server`` flags.

    A nested dict in the shape of ``mail.toml`` holding only the flags that were given, e.g.
    ``{"server": {"debug": True, "swarm": {"name": "demo"}}}`` for ``-d -n demo``; no flags
    give ``{}``. Attributes missing from ``args`` count as not given.
    """
    overrides: dict[str, Any] = {}
    for dest, key in _SERVER_FLAGS:
        value = getattr(args, dest, None)
        if value is None:
            continue
        table = overrides
        for part in key[:-1]:
            table = table.setdefault(part, {})
        table[key[-1]] = value
    return overrides


def _configure_logging() -> None:
    """One stderr handler on the root logger; level from ``$MAIL_LOG_LEVEL`` (default
    INFO); one JSON object a line with ``MAIL_LOG_FORMAT=json`` (:mod:`mail._log_format`)."""
    import logging  # noqa: PLC0415  # only commands that log need it

    from mail._log_format import JSONFormatter, json_logs  # noqa: PLC0415

    requested = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    level = requested if requested in _LOG_LEVELS else "INFO"
    logging.basicConfig(level=level, format=_LOG_FORMAT, stream=sys.stderr)
    if json_logs():
        for handler in logging.getLogger().handlers:
            handler.setFormatter(JSONFormatter())
    if requested and requested != level:
        logging.getLogger("mail.cli").warning(
            "ignoring %s=%r (expected one of %s)", LOG_LEVEL_ENV, requested, ", ".join(_LOG_LEVELS)
        )


def _fail(command: str, error: BaseException) -> int:
    for line in str(error).splitlines() or [type(error).__name__]:
        print(f"mail {command}: {line}", file=sys.stderr)
    return EXIT_USAGE


def _run_server(args: argparse.Namespace) -> int:
    # Logging first, so the warnings load_config logs (unknown keys) reach stderr once.
    _configure_logging()
    from mail.config import load_config  # noqa: PLC0415  # keep `mail --help` fast
    from mail.errors import ConfigurationError, SwarmDefinitionError  # noqa: PLC0415

    try:
        config = load_config(args.config, overrides=server_overrides(args))
        if config.server.llm_check and (missing := _missing_llm_settings(config)):
            print(f"mail server: {missing}", file=sys.stderr)
            return EXIT_USAGE
        try:
            from mail.server import run_server  # noqa: PLC0415  # fastapi, uvicorn, ...
        except ModuleNotFoundError as e:
            if e.name is None or e.name.split(".")[0] == "mail":
                raise
            print(
                f"mail server: missing dependency {e.name!r}; reinstall mail-swarms "
                "(uv sync, or pip install mail-swarms)",
                file=sys.stderr,
            )
            return 1
        run_server(config)
    except (ConfigurationError, SwarmDefinitionError) as e:
        return _fail("server", e)
    except KeyboardInterrupt:
        return 130
    return 0


def _missing_llm_settings(config: Any) -> str | None:
    from mail.cli._doctor import missing_llm_settings  # noqa: PLC0415  # keep `mail --help` fast

    return missing_llm_settings(config, os.environ)


def _run_doctor(args: argparse.Namespace) -> int:
    import logging  # noqa: PLC0415

    from mail.cli._doctor import render, run_checks  # noqa: PLC0415  # keep `mail --help` fast

    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)  # the checks report warnings
    checks = run_checks(args.config, os.environ, overrides=server_overrides(args))
    print(render(checks))
    return 1 if any(check.status == "fail" for check in checks) else 0


def _run_version(_args: argparse.Namespace) -> int:
    print(f"MAIL reference implementation version: {__version__}")
    print(f"MAIL protocol version: {PROTOCOL_VERSION}")
    print(
        "The implementation version is the release of this package; the protocol version "
        "is the version of the MAIL specification it speaks on the wire."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``mail`` command line with ``argv`` (default ``sys.argv[1:]``).

    Returns the process exit status: 0 on success, 2 for a usage error or an invalid
    configuration or swarm definition (reported as one ``mail <command>: ...`` line per
    problem on stderr, without a traceback).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors: keep main() returning
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    status: int = handler(args)
    return status
