"""v1.3.6's ``mail.utils.auth``: request and API-key helpers over :mod:`mail.server.auth`.

v1.3.6 exchanged every API key for a JWT at ``AUTH_ENDPOINT`` and read its role at
``TOKEN_INFO_ENDPOINT``. Here the authenticator the configuration names does the work:
inside our server the one the app runs with (``request.app.state.mail``), elsewhere one
built from :func:`mail.config.load_config` once per process (embedded keys from the
credentials file, or the remote exchange when ``[auth] mode = "remote"``). Deliberate
differences:

* :func:`login` returns the API key itself once it is known to be valid: our
  authenticators take the key, so it is the "token" :func:`get_token_info` accepts.
* Refusals raise ``fastapi.HTTPException`` with status 401 (wrong role) as v1.3.6's did;
  an unknown key is 401 too, a failing auth service 500.
* :data:`JWT_SECRET` is read from the environment for code that expects it; nothing here
  signs or checks JWTs.

Importing this module imports FastAPI; ``import mail.utils`` does not (the names
``mail.utils`` re-exports from here load on first use).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from fastapi import HTTPException, Request

from mail.errors import AuthenticationError, AuthServiceError, ConfigurationError
from mail.server.auth import Authenticator, bearer_token, build_authenticator

__all__ = [
    "JWT_SECRET",
    "logger",
    "check_auth_endpoints",
    "extract_token",
    "login",
    "get_token_info",
    "caller_is_role",
    "caller_is_admin",
    "caller_is_user",
    "caller_is_admin_or_user",
    "caller_is_agent",
    "extract_token_info",
    "require_debug",
]

logger = logging.getLogger("mail.utils.auth")

#: ``$JWT_SECRET`` (``None`` when unset); kept for v1.3.6 code, unused here.
JWT_SECRET: str | None = os.environ.get("JWT_SECRET")

_authenticator: Authenticator | None = None


def _process_authenticator() -> Authenticator:
    global _authenticator  # one per process, built on first use
    if _authenticator is None:
        from mail.config import load_config  # noqa: PLC0415

        _authenticator, banner = build_authenticator(load_config().auth)
        if banner:
            logger.info("%s", banner)
    return _authenticator


def _server_state(request: Request | None) -> Any:
    """Our server's state when ``request`` reached our app, else ``None``."""
    app = None if request is None else request.scope.get("app")
    return getattr(getattr(app, "state", None), "mail", None)


def _authenticator_for(request: Request | None) -> Authenticator:
    server = _server_state(request)
    found = getattr(server, "authenticator", None)
    return found if found is not None else _process_authenticator()


async def check_auth_endpoints() -> None:
    """Raise :class:`mail.errors.ConfigurationError` when remote auth is configured without
    both endpoints (v1.3.6 checked ``AUTH_ENDPOINT`` and ``TOKEN_INFO_ENDPOINT``)."""
    from mail.config import load_config  # noqa: PLC0415

    auth = load_config().auth
    if auth.mode == "remote" and not (auth.auth_endpoint and auth.token_info_endpoint):
        raise ConfigurationError("remote auth needs auth_endpoint and token_info_endpoint")


def extract_token(request: Request) -> str:
    """The key of the request's ``Authorization: Bearer`` header; 401 when it has none."""
    try:
        return bearer_token(request.headers.get("authorization"))
    except AuthenticationError as e:
        raise HTTPException(status_code=401, detail=str(e)) from e


async def _info(token: str, request: Request | None = None) -> dict[str, Any]:
    try:
        caller = await _authenticator_for(request).authenticate(token)
    except AuthenticationError as e:
        raise HTTPException(status_code=401, detail=str(e)) from e
    except AuthServiceError as e:
        raise HTTPException(status_code=500, detail=str(e)) from e
    return {"role": caller.role, "id": caller.id, "api_key": caller.api_key}


async def login(api_key: str) -> str:
    """Check ``api_key`` and return the token to present: the key itself (see above)."""
    await _info(api_key)
    return api_key


async def get_token_info(token: str) -> dict[str, Any]:
    """``{"role", "id", "api_key"}`` of the caller owning ``token``; 401 when unknown."""
    return await _info(token)


async def extract_token_info(request: Request) -> dict[str, Any]:
    """:func:`get_token_info` of the request's bearer key."""
    return await _info(extract_token(request), request)


async def caller_is_role(request: Request, role: str, raise_on_false: bool = True) -> bool:
    """Whether the request's caller has ``role``; 401 instead of ``False`` by default."""
    info = await extract_token_info(request)
    if info["role"] == role:
        return True
    if raise_on_false:
        raise HTTPException(status_code=401, detail=f"invalid role: this route needs {role}")
    return False


async def caller_is_admin(request: Request, raise_on_false: bool = True) -> bool:
    """:func:`caller_is_role` for ``admin``."""
    return await caller_is_role(request, "admin", raise_on_false)


async def caller_is_user(request: Request, raise_on_false: bool = True) -> bool:
    """:func:`caller_is_role` for ``user``."""
    return await caller_is_role(request, "user", raise_on_false)


async def caller_is_agent(request: Request, raise_on_false: bool = True) -> bool:
    """:func:`caller_is_role` for ``agent``."""
    return await caller_is_role(request, "agent", raise_on_false)


async def caller_is_admin_or_user(request: Request) -> bool:
    """Whether the caller is an admin or a user; 401 otherwise."""
    info = await extract_token_info(request)
    if info["role"] in ("admin", "user"):
        return True
    raise HTTPException(status_code=401, detail="invalid role: this route needs admin or user")


def require_debug(request: Request) -> None:
    """404 ``Not found`` unless the server runs in debug mode (the app's configuration, or
    :func:`mail.config.load_config` outside our server)."""
    server = _server_state(request)
    if server is not None:
        debug = bool(server.config.server.debug)
    else:
        from mail.config import load_config  # noqa: PLC0415

        debug = load_config().server.debug
    if not debug:
        raise HTTPException(status_code=404, detail="Not found")
