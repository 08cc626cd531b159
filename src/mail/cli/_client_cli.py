"""v1.3.6's ``mail.client.MAILClientCLI``: the interactive client class, over our ``mail client``
REPL (``mail.client`` loads it from here on first access)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses

from mail.cli._connect import resolve
from mail.cli._repl_commands import run_repl
from mail.config.client import ClientConfig

__all__ = ["MAILClientCLI"]


class MAILClientCLI:
    """The REPL of ``mail client``, started from Python (v1.3.6's ``mail.client.MAILClientCLI``).

    ``args`` is the parsed command line of ``mail client``: the attributes ``url``,
    ``url_flag``, ``api_key``, ``timeout``, ``verbose`` and ``config`` are read, and a
    missing one counts as not given, so ``argparse.Namespace(url="http://127.0.0.1:8000")``
    is enough. ``config``, when given, replaces the ``[client]`` settings read from
    ``mail.toml``.
    """

    def __init__(self, args: argparse.Namespace, config: ClientConfig | None = None) -> None:
        self.args = args
        self.config = config

    async def run(self, attempt_login: bool = True) -> int:
        """Run the REPL until the user leaves; returns the exit status (0).

        The REPL reads the terminal in a worker thread, so the event loop of the caller
        keeps running. ``attempt_login`` is accepted for v1.3.6 callers and has no effect:
        our REPL always asks the server who the key belongs to (``GET /whoami``) and goes
        on without an identity when that fails. Raises ``ValueError`` for a bad URL and
        :class:`~mail.errors.ConfigurationError` for an unusable ``mail.toml``.
        """
        del attempt_login  # see the docstring
        target = resolve(self.args)
        if self.config is not None:
            target = dataclasses.replace(target, config=self.config)
        return await asyncio.to_thread(run_repl, target)
