"""The ``mail`` command line: ``mail server`` and ``mail version``.

Importing this module is cheap on purpose (``mail --help`` must answer at once): it loads
only the standard library and :mod:`mail.version`. The configuration models, the server and
everything they need are imported inside the command that uses them.

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
    server.set_defaults(handler=_run_server)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``mail`` command (subcommands ``server`` and ``version``)."""
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
    """One stderr handler on the root logger; level from ``$MAIL_LOG_LEVEL`` (default INFO)."""
    import logging  # noqa: PLC0415  # only commands that log need it

    requested = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    level = requested if requested in _LOG_LEVELS else "INFO"
    logging.basicConfig(level=level, format=_LOG_FORMAT, stream=sys.stderr)
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


if __name__ == "__main__":
    raise SystemExit(main())
