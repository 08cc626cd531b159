"""One ``aiohttp`` session shared by the registry and the router, created on first use.

A server with no peers never calls one, so ``aiohttp`` (about half a second of imports) is
imported only when the first peer call is made, not at start-up.

A source made with an :class:`~mail.net._guard.AddressPolicy` gives its own session a
connector and a middleware that apply the policy to every request and connection,
redirects included (``mail.net._guard_aiohttp``); an external session keeps its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mail.net._guard import DEFAULT_POLICY, AddressPolicy

if TYPE_CHECKING:
    import aiohttp

__all__ = ["SessionSource"]


class SessionSource:
    """Hands out one ``aiohttp.ClientSession``: ``external`` if given, else its own.

    Its own session is created by the first :meth:`get` (with ``headers``, and a connector
    that refuses what ``policy`` refuses, if given), re-created if it was closed, and
    closed by :meth:`aclose`; an external session is never closed here.
    """

    def __init__(
        self,
        external: aiohttp.ClientSession | None = None,
        *,
        headers: dict[str, str] | None = None,
        policy: AddressPolicy | None = None,
    ) -> None:
        self._session = external
        self._owned = external is None
        self._headers = headers
        self.policy = policy

    @classmethod
    def of(
        cls, session: aiohttp.ClientSession | SessionSource | None
    ) -> tuple[SessionSource, bool]:
        """A source for ``session`` and whether the caller should close it: a source given
        is shared and closed by whoever made it; otherwise a new source over ``session``
        (or over a session of its own, guarded by the default peer policy) is the caller's
        to close."""
        if isinstance(session, SessionSource):
            return session, False
        return cls(session, policy=DEFAULT_POLICY), True

    def get(self) -> aiohttp.ClientSession:
        """The session, created now if this source owns it and has none open."""
        if self._session is None or (self._owned and self._session.closed):
            import aiohttp  # noqa: PLC0415  # first peer call: see the module docstring

            connector = None
            middlewares: tuple[aiohttp.ClientMiddlewareType, ...] = ()
            if self.policy is not None:
                from mail.net._guard_aiohttp import guarded_connector, host_check  # noqa: PLC0415  # imports aiohttp

                connector = guarded_connector(self.policy)
                middlewares = (host_check(self.policy),)
            self._session = aiohttp.ClientSession(
                headers=self._headers, connector=connector, middlewares=middlewares
            )
        return self._session

    async def aclose(self) -> None:
        """Close the session if this source created it."""
        if self._owned and self._session is not None:
            session, self._session = self._session, None
            await session.close()
