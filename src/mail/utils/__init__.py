"""v1.3.6 import path: re-exports v1.3.6's helper names from their modules.

Nothing in :mod:`mail` imports :mod:`mail.utils`: each name is implemented where it
belongs (reference strings in :mod:`mail.swarms_json.references`) or, for the helpers only
v1.3.6 code calls, in its ``mail.utils`` module. The names re-exported from
:mod:`mail.utils.auth`, :mod:`mail.utils.serialize` and :mod:`mail.utils.store` load on
first use, so ``import mail.utils`` stays cheap (no FastAPI).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mail.swarms_json.references import (
    ReferencePolicy,
    read_python_string,
    read_url_string,
    resolve_prefixed_string_references,
    target_address_is_interswarm,
)
from mail.utils.logger import get_loggers, init_logger
from mail.utils.version import get_protocol_version, get_version

if TYPE_CHECKING:
    from mail.utils.auth import (
        caller_is_admin,
        caller_is_admin_or_user,
        caller_is_agent,
        caller_is_user,
        extract_token,
        extract_token_info,
        get_token_info,
        login,
        require_debug,
    )
    from mail.utils.serialize import export, serialize_mail_value
    from mail.utils.store import get_langmem_store

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
    "caller_is_admin",
    "caller_is_admin_or_user",
    "caller_is_agent",
    "caller_is_user",
    "extract_token",
    "extract_token_info",
    "get_token_info",
    "login",
    "require_debug",
    "export",
    "serialize_mail_value",
    "get_langmem_store",
]

_LAZY = {
    **dict.fromkeys(
        (
            "caller_is_admin",
            "caller_is_admin_or_user",
            "caller_is_agent",
            "caller_is_user",
            "extract_token",
            "extract_token_info",
            "get_token_info",
            "login",
            "require_debug",
        ),
        "mail.utils.auth",
    ),
    "export": "mail.utils.serialize",
    "serialize_mail_value": "mail.utils.serialize",
    "get_langmem_store": "mail.utils.store",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
