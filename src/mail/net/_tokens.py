"""Peer tokens as ``${VAR}`` environment references: naming, storing, resolving.

A persistent registry entry never holds a token: it holds ``${SWARM_AUTH_TOKEN_<NAME>}``
and the token is read from the environment when a request needs it. Nothing here logs a
token, only variable names.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from mail.net._endpoint import SwarmEndpoint

__all__ = [
    "DEFAULT_TOKEN_PREFIX",
    "env_ref",
    "env_var_name",
    "is_env_ref",
    "persistent_ref",
    "ref_variable",
    "resolve",
    "stored_ref",
]

logger = logging.getLogger("mail.net.registry")

#: Prefix of the environment variables that hold persistent peers' tokens.
DEFAULT_TOKEN_PREFIX = "SWARM_AUTH_TOKEN"  # noqa: S105  # a variable-name prefix, not a secret

_NOT_NAME_CHAR = re.compile(r"[^A-Z0-9_]")
_EMPTY_REF = "${}"


def env_var_name(swarm_name: str, prefix: str = DEFAULT_TOKEN_PREFIX) -> str:
    """``<prefix>_<NAME>``: the swarm name upper-cased, other than A-Z, 0-9, _ as ``_``."""
    return f"{prefix}_{_NOT_NAME_CHAR.sub('_', swarm_name.upper())}"


def env_ref(variable: str) -> str:
    """The reference ``${variable}`` stored in place of a token."""
    return f"${{{variable}}}"


def is_env_ref(value: str | None) -> bool:
    """True for ``${VAR}`` references (as opposed to raw tokens)."""
    return (
        value is not None
        and len(value) > len(_EMPTY_REF)
        and value.startswith("${")
        and value.endswith("}")
    )


def ref_variable(value: str) -> str:
    """The variable named by a ``${VAR}`` reference (call only when :func:`is_env_ref`)."""
    return value[2:-1]


def resolve(ref: str | None, env: Mapping[str, str], swarm_name: str) -> str | None:
    """The token ``ref`` stands for: ``${VAR}`` is looked up in ``env``, a raw token is itself.

    ``None`` when there is no token or the variable is unset or empty (logged).
    """
    if not ref:
        return None
    if not is_env_ref(ref):
        return ref
    value = env.get(ref_variable(ref))
    if not value:
        logger.warning(
            "token of swarm %r: environment variable %s is not set", swarm_name, ref_variable(ref)
        )
        return None
    return value


def persistent_ref(swarm_name: str, token: str | None, env: Mapping[str, str]) -> str | None:
    """What a persistent entry stores for ``token``: a reference, never the token itself.

    A ``${VAR}`` token is kept as is. A raw token becomes ``${SWARM_AUTH_TOKEN_<NAME>}``
    (the caller may keep the token itself in memory; a warning says to set the variable
    when it is unset). No token gives that reference only when the variable is already set.
    """
    if token is not None and is_env_ref(token):
        return token
    variable = env_var_name(swarm_name)
    current = env.get(variable)
    if token is None:
        return env_ref(variable) if current else None
    if not current:
        logger.warning(
            "swarm %r is persistent: its token is kept in memory only, not saved; set "
            "environment variable %s for it to survive a restart",
            swarm_name,
            variable,
        )
    elif current != token:
        logger.warning(
            "swarm %r: environment variable %s holds a different token; it is the one used",
            swarm_name,
            variable,
        )
    return env_ref(variable)


def stored_ref(endpoint: SwarmEndpoint) -> str | None:
    """What a file gets for ``endpoint``'s token: its reference, or one derived from its name."""
    ref = endpoint.auth_token_ref
    if ref is None or is_env_ref(ref):
        return ref
    variable = env_var_name(endpoint.swarm_name)
    if not endpoint.volatile:
        logger.warning(
            "swarm %r holds a raw token in memory; the file gets ${%s} instead "
            "(see migrate_auth_tokens_to_env_refs)",
            endpoint.swarm_name,
            variable,
        )
    return env_ref(variable)
