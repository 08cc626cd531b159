"""Auth doubles: :class:`StaticAuth` (an in-process authenticator) and :class:`FakeAuthService`.

``StaticAuth`` maps fixed API keys to identities and counts lookups::

    gate = AuthGate(StaticAuth({"k-admin": ("admin", "root"), "k-user": ("user", "alice")}))

``FakeAuthService`` is a real HTTP auth service on loopback speaking the login and token-info
exchange :class:`mail.server.auth.RemoteAuth` uses, with switches to make it fail::

    async with FakeAuthService({"k1": ("user", "alice")}) as service:
        auth = RemoteAuth(service.auth_endpoint, service.token_info_endpoint)
        service.login_status = 500      # or token_info_status, login_body=b"garbage", delay=5.0
        assert service.calls["login"] == 1

Neither import loads aiohttp or the server when this module is imported: ``import
mail.testing`` stays cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mail.errors import AuthenticationError
from mail.testing._loopback import LoopbackApp

if TYPE_CHECKING:
    from aiohttp import web

    from mail.server.auth import Caller, Role

__all__ = ["StaticAuth", "FakeAuthService"]


class StaticAuth:
    """An :class:`~mail.server.auth.Authenticator` over a fixed ``{api_key: (role, id)}`` map.

    ``calls`` counts :meth:`authenticate` calls (so tests can check a request authenticates
    once); ``closed`` tells whether :meth:`aclose` ran. Not constant-time: tests only.
    """

    def __init__(self, mapping: Mapping[str, tuple[Role, str]]) -> None:
        self.mapping = dict(mapping)
        self.calls = 0
        self.closed = False

    async def authenticate(self, api_key: str) -> Caller:
        """The mapped caller. Raises :class:`~mail.errors.AuthenticationError` for other keys."""
        from mail.server.auth import Caller  # noqa: PLC0415  # keeps `import mail.testing` cheap

        self.calls += 1
        found = self.mapping.get(api_key)
        if found is None:
            raise AuthenticationError("invalid API key")
        role, id_ = found
        return Caller(role=role, id=id_, api_key=api_key)

    async def aclose(self) -> None:
        """Mark the authenticator closed."""
        self.closed = True


class FakeAuthService(LoopbackApp):
    """A login + token-info auth service on ``127.0.0.1`` (an async context manager).

    ``POST /login`` with ``Authorization: Bearer <api key>`` answers ``{"token": ...}`` for a
    key in :attr:`users`, else 401; ``GET /token-info`` with ``Bearer <token>`` answers
    ``{"role", "id", "api_key"}`` for a token it issued, else 401.

    Attributes:
        users: ``{api_key: (role, id)}``; roles are not checked, so tests can serve bad ones.
        calls: requests received, by endpoint (``"login"``, ``"token_info"``).
        tokens: ``{token: api_key}`` for every token issued.
        login_status / token_info_status: when set, that endpoint answers this status
            (with a JSON error body) instead of its normal answer.
        login_body / token_info_body: when set, that endpoint answers 200 with these raw bytes.
        delay: seconds every answer waits first (cut short when the service closes).
        hold: when set to an event, every answer waits for it first.
        received: set whenever a request arrives (clear it to wait for the next one).
    """

    def __init__(
        self, users: Mapping[str, tuple[str, str]] | None = None, *, host: str = "127.0.0.1"
    ) -> None:
        super().__init__(host=host)
        self.users: dict[str, tuple[str, str]] = dict(users or {})
        self.calls: Counter[str] = Counter()
        self.tokens: dict[str, str] = {}
        self.login_status: int | None = None
        self.token_info_status: int | None = None
        self.login_body: bytes | None = None
        self.token_info_body: bytes | None = None
        self.delay = 0.0
        self.hold: asyncio.Event | None = None
        self.received = asyncio.Event()

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/login", self._login)
        app.router.add_get("/token-info", self._token_info)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``; the port stays valid after :meth:`close` (then refused)."""
        if not self._port:
            raise RuntimeError("FakeAuthService is not started")
        return f"http://{self._host}:{self._port}"

    @property
    def auth_endpoint(self) -> str:
        """The login URL (``AUTH_ENDPOINT``)."""
        return f"{self.url}/login"

    @property
    def token_info_endpoint(self) -> str:
        """The token-info URL (``TOKEN_INFO_ENDPOINT``)."""
        return f"{self.url}/token-info"

    async def _login(self, request: web.Request) -> web.Response:
        await self._arrive("login")
        if self.login_status is not None:
            return _json(self.login_status, {"detail": "forced failure"})
        if self.login_body is not None:
            return _raw(self.login_body)
        api_key = _bearer(request)
        if api_key not in self.users:
            return _json(401, {"detail": "invalid API key"})
        token = f"jwt-{secrets.token_urlsafe(16)}"
        self.tokens[token] = api_key
        return _json(200, {"token": token})

    async def _token_info(self, request: web.Request) -> web.Response:
        await self._arrive("token_info")
        if self.token_info_status is not None:
            return _json(self.token_info_status, {"detail": "forced failure"})
        if self.token_info_body is not None:
            return _raw(self.token_info_body)
        api_key = self.tokens.get(_bearer(request) or "")
        if api_key is None or api_key not in self.users:
            return _json(401, {"detail": "invalid token"})
        role, id_ = self.users[api_key]
        return _json(200, {"role": role, "id": id_, "api_key": api_key})

    async def _arrive(self, endpoint: str) -> None:
        self.calls[endpoint] += 1
        self.received.set()
        if self.hold is not None:
            await self.hold.wait()
        if self.delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.delay)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    return header.removeprefix("Bearer ") if header.startswith("Bearer ") else None


def _json(status: int, body: object) -> web.Response:
    return _raw(json.dumps(body).encode(), status=status)


def _raw(body: bytes, *, status: int = 200) -> web.Response:
    from aiohttp import web  # noqa: PLC0415

    return web.Response(status=status, body=body, content_type="application/json")
