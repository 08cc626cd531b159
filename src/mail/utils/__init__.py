"""Small helpers shared by the layers above the core (reference strings, parsing)."""

from __future__ import annotations

from mail.utils.logger import get_loggers, init_logger
from mail.utils.parsing import (
    ReferencePolicy,
    read_python_string,
    read_url_string,
    resolve_prefixed_string_references,
    target_address_is_interswarm,
)
from mail.utils.version import get_protocol_version, get_version

__all__ = [
    "get_loggers",
    "get_protocol_version",
    "get_version",
    "init_logger",
    "ReferencePolicy",
    "read_python_string",
    "read_url_string",
    "resolve_prefixed_string_references",
    "target_address_is_interswarm",
]
