"""v1.3.6's ``mail.utils.version``: the package and protocol versions as functions."""

from __future__ import annotations

from mail.version import PROTOCOL_VERSION, __version__

__all__ = ["get_protocol_version", "get_version"]


def get_version() -> str:
    """The installed package's version (:data:`mail.version.__version__`)."""
    return __version__


def get_protocol_version() -> str:
    """The MAIL protocol version this package speaks (:data:`mail.version.PROTOCOL_VERSION`)."""
    return PROTOCOL_VERSION
