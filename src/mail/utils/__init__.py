"""Small helpers shared by the layers above the core (reference strings, parsing)."""

from __future__ import annotations

from mail.utils.parsing import (
    ReferencePolicy,
    read_python_string,
    read_url_string,
    resolve_prefixed_string_references,
    target_address_is_interswarm,
)

__all__ = [
    "ReferencePolicy",
    "read_python_string",
    "read_url_string",
    "resolve_prefixed_string_references",
    "target_address_is_interswarm",
]
