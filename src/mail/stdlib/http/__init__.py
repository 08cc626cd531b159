"""HTTP actions behind the outbound guard; see :mod:`mail.stdlib.http.actions`."""

from __future__ import annotations

from mail.stdlib.http.actions import (
    http_delete,
    http_get,
    http_head,
    http_options,
    http_patch,
    http_post,
    http_put,
)

__all__ = [
    "http_delete",
    "http_get",
    "http_head",
    "http_options",
    "http_patch",
    "http_post",
    "http_put",
]
