"""Peer tokens as ``${VAR}`` environment references: naming, storing, resolving.

A persistent registry entry never holds a token: it holds ``${SWARM_AUTH_TOKEN_<NAME>}``
and the token is read from the environment when a request needs it. Nothing here logs a
token, only variable names.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping

from mail.net._endpoint import SwarmEndpoint

__all__ = [
    "DEFAULT_TOKEN_PREFIX",
    "MovedToken",
    "check_variables",
    "entry_token",
    "env_ref",
    "env_var_name",
    "is_env_ref",
    "move_to_env_refs",
    "persistent_ref",
    "ref_variable",
    "resolve",
    "restore_raw_tokens",
    "stored_ref",
    "token_to_send",
    "warn_if_raw",
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


def warn_if_raw(endpoint: SwarmEndpoint, source: str) -> None:
    """Warn that ``source`` (a file, registry data) holds a raw token for ``endpoint``."""
    if endpoint.auth_token_ref and not is_env_ref(endpoint.auth_token_ref):
        logger.warning(
            "%s holds a raw token for swarm %r (see migrate_auth_tokens_to_env_refs)",
            source,
            endpoint.swarm_name,
        )


def entry_token(
    swarm_name: str, token: str | None, *, volatile: bool, env: Mapping[str, str]
) -> tuple[str | None, str | None]:
    """``(auth_token_ref, memory_token)`` of an entry registered with ``token``.

    A volatile entry holds the token itself. A persistent one holds :func:`persistent_ref`
    and keeps a raw token in memory, for use until the referenced variable is set.
    """
    if volatile:
        return token, None
    return persistent_ref(swarm_name, token, env), None if is_env_ref(token) else token


def token_to_send(endpoint: SwarmEndpoint, env: Mapping[str, str]) -> str | None:
    """The token of requests to ``endpoint``: its reference resolved in ``env``, or, while
    the referenced variable is unset or empty, the raw token it was registered with."""
    ref = endpoint.auth_token_ref
    unset = ref is not None and is_env_ref(ref) and not env.get(ref_variable(ref))
    if endpoint.memory_token and unset:
        return endpoint.memory_token  # registered with it; the variable is not set yet
    return resolve(ref, env, endpoint.swarm_name)


def check_variables(peers: Iterable[SwarmEndpoint], env: Mapping[str, str]) -> dict[str, bool]:
    """Map each variable named by a peer's ``${VAR}`` reference to whether ``env`` sets it.

    Unset or empty variables are logged as warnings.
    """
    results: dict[str, bool] = {}
    for endpoint in peers:
        ref = endpoint.auth_token_ref
        if ref is None or not is_env_ref(ref):
            continue
        variable = ref_variable(ref)
        results[variable] = bool(env.get(variable))
        if not results[variable]:
            logger.warning(
                "environment variable %s (token of swarm %r) is not set",
                variable,
                endpoint.swarm_name,
            )
    return results


#: A peer whose raw token :func:`move_to_env_refs` replaced: (entry, variable, token).
MovedToken = tuple[SwarmEndpoint, str, str]


def move_to_env_refs(
    peers: Iterable[SwarmEndpoint], env: Mapping[str, str], prefix: str
) -> list[MovedToken]:
    """Replace the raw token of each persistent peer by ``${<prefix>_<NAME>}``.

    The token is kept as the entry's ``memory_token``. Returns what was moved, for the
    caller to export (or undo with :func:`restore_raw_tokens`).
    """
    moved: list[MovedToken] = []
    for endpoint in peers:
        ref, name = endpoint.auth_token_ref, endpoint.swarm_name
        if endpoint.volatile or not ref or is_env_ref(ref):
            continue
        variable = env_var_name(name, prefix)
        moved.append((endpoint, variable, ref))
        endpoint.auth_token_ref, endpoint.memory_token = env_ref(variable), ref
        logger.info("swarm %r: token moved to environment variable %s", name, variable)
        if not env.get(variable):
            logger.warning(
                "environment variable %s must be set to swarm %r's token", variable, name
            )
    return moved


def restore_raw_tokens(moved: Iterable[MovedToken]) -> None:
    """Undo :func:`move_to_env_refs`: each entry holds its raw token again."""
    for endpoint, _, token in moved:
        endpoint.auth_token_ref, endpoint.memory_token = token, None
