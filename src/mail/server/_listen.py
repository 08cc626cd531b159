"""Where ``mail server`` listens: the port is checked before anything starts, and the
address is recorded in ``<data_dir>/server.json`` for local clients (see
:mod:`mail._server_file`) while the server runs."""

from __future__ import annotations

import errno
import logging
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mail._server_file import local_url, remove_server_file, write_server_file
from mail.errors import ConfigurationError

__all__ = ["check_port", "recorded"]

logger = logging.getLogger("mail.server")


@contextmanager
def recorded(data_dir: str, host: str) -> Iterator[Callable[[int], None]]:
    """A callback to call with the bound port once the server listens: it writes
    ``<data_dir>/server.json``; the file is removed when the block ends. A file that cannot
    be written is logged, not fatal (clients then need ``--url``)."""

    def listening(port: int) -> None:
        url = local_url(host, port)
        # the one line a person starting the server looks for (printed at any log level)
        sys.stderr.write(f"MAIL swarm viewer: {url}/ui\n")
        sys.stderr.flush()
        try:
            write_server_file(data_dir, url)
        except OSError as e:
            logger.warning("cannot record the server's address in %s: %s", data_dir, e)

    try:
        yield listening
    finally:
        remove_server_file(data_dir)


def check_port(host: str, port: int) -> None:
    """Bind ``host:port`` as uvicorn will (``SO_REUSEADDR``, every address ``host`` resolves
    to) and let go at once, so a port in use is one line before the app starts, not a
    traceback after its start-up logs. Port 0 is not checked.

    Raises :class:`~mail.errors.ConfigurationError` naming the address when it cannot be
    bound.
    """
    if port == 0:
        return
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as e:
        raise ConfigurationError(f"cannot listen on {where}: {e.strerror}") from e
    for family, kind, proto, _name, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    raise ConfigurationError(
                        f"port {port} on {host} is already in use (another mail server?); "
                        "stop it or choose another port with -p/--port"
                    ) from e
                raise ConfigurationError(f"cannot listen on {where}: {e.strerror}") from e
