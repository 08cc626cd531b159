"""The ``mail`` command line."""

from __future__ import annotations

import argparse
import sys

from mail.version import PROTOCOL_VERSION, __version__

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mail", description="MAIL: the Multi-Agent Interface Layer"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("server", help="run the MAIL HTTP server")
    sub.add_parser("version", help="print implementation and protocol versions")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``mail`` command line; returns the process exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"MAIL reference implementation version: {__version__}")
        print(f"MAIL protocol version: {PROTOCOL_VERSION}")
        print("The implementation version tracks releases of this package; the protocol")
        print("version is what this server speaks on the wire.")
        return 0
    if args.command == "server":
        print(
            "mail server: not yet available in this build. The runtime and protocol types are "
            "ready (see README.md); the HTTP server lands with the server issue.",
            file=sys.stderr,
        )
        return 2
    parser.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
