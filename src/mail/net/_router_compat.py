"""v1.3.6's methods of ``InterswarmRouter`` (mixed into :class:`mail.net.InterswarmRouter`).

v1.3.6's router was driven by hand: started and stopped around a session, fed received
messages by the server, told where to deliver them through registered handlers, and asked
to send ready-made interswarm envelopes. Ours is driven by the runtimes it serves
(``send``, ``deliver``); these methods give v1.3.6 programs their calls on top of it:

* ``start()``/``stop()``/``is_running()``: the router's HTTP session is opened on first
  use either way; ``stop()`` closes it (``aclose``) and a stopped router stays stopped.
* ``register_message_handler(message_type, handler)`` and
  ``receive_interswarm_message_forward/back(message)``: a received envelope becomes the
  local message it carries (recipients of this swarm unqualified) and goes to the handler
  registered for its ``msg_type``, else the one registered as ``"local_message_handler"``
  (v1.3.6's name for the runtime's handler). Our server does not use this path: it hands
  received messages to the caller's runtime itself.
* ``send_interswarm_message_forward/back(message)``: POST the envelope as given to the
  target swarm's ``/interswarm/forward`` or ``/interswarm/back``, with the registry's
  token; return the peer's JSON acknowledgement.
* ``post_interswarm_user_message(message)``: v1.3.6's user-level send: POST the fields of
  ``POST /interswarm/message`` to the target swarm's ``/interswarm/message`` with the
  envelope's ``auth_token`` as the bearer; return the peer's JSON.
* ``convert_local_message_to_interswarm(...)`` and ``get_routing_stats()``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from mail.core.message import (
    MAILInterswarmMessage,
    MAILMessage,
    get_recipients,
    make_interswarm_message,
    parse_agent_address,
    validate_interswarm_message,
)
from mail.errors import ConfigurationError, InvalidMessageError
from mail.net._addressing import Direction, outbound_message

if TYPE_CHECKING:
    from mail.net._endpoint import SwarmEndpoint
    from mail.net._transport import JsonPoster
    from mail.net.registry import SwarmRegistry

__all__ = ["MessageHandler", "StreamHandler", "V136RouterMethods"]

#: v1.3.6's type of a callback fed the chunks of a streamed interswarm answer: ``(event
#: name, data)``. Accepted in signatures for compatibility; our router streams nothing.
StreamHandler: TypeAlias = Callable[[str, str | None], Awaitable[None]]
#: A handler of :meth:`V136RouterMethods.register_message_handler`: takes the local
#: ``MAILMessage`` a received envelope carries (sync or async).
MessageHandler: TypeAlias = Callable[[MAILMessage], Any]

_DEFAULT_HANDLER = "local_message_handler"


class V136RouterMethods:
    """The v1.3.6 calls of the router (module docstring)."""

    registry: SwarmRegistry
    _closed: bool
    _tasks: set[Any]
    _handlers: dict[str, MessageHandler]

    @property
    def local_swarm_name(self) -> str:
        return self.registry.local_swarm_name

    def _http(self) -> JsonPoster:
        raise NotImplementedError  # the router's

    async def _usable_endpoint(self, swarm: str) -> SwarmEndpoint:
        raise NotImplementedError  # the router's

    def _token(self, swarm: str) -> str:
        raise NotImplementedError  # the router's

    async def aclose(self, timeout: float = 5.0) -> None:
        raise NotImplementedError  # the router's

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Open the router's HTTP session. Raises :class:`ConfigurationError` once stopped."""
        if self._closed:
            raise ConfigurationError("this interswarm router was stopped; build a new one")
        self._http()

    async def stop(self) -> None:
        """Finish deliveries in flight and close the router (:meth:`aclose`)."""
        await self.aclose()

    async def is_running(self) -> bool:
        """True until :meth:`stop` (or ``aclose``)."""
        return not self._closed

    # --- receiving -----------------------------------------------------------------------

    def register_message_handler(self, message_type: str, handler: MessageHandler) -> None:
        """Call ``handler(message)`` for received messages of ``message_type`` (a
        ``msg_type``, or ``"local_message_handler"`` for every type without its own)."""
        if not callable(handler):
            raise ConfigurationError(f"the handler for {message_type!r} is not callable")
        self._handlers[message_type] = handler

    async def receive_interswarm_message_forward(self, message: MAILInterswarmMessage) -> Any:
        """Hand a received ``forward`` envelope to its handler; returns what it returns.

        Raises :class:`InvalidMessageError` (malformed, or for another swarm) and
        :class:`ConfigurationError` (no handler registered).
        """
        return await self._receive(message)

    async def receive_interswarm_message_back(self, message: MAILInterswarmMessage) -> Any:
        """Like :meth:`receive_interswarm_message_forward`, for a ``back`` envelope."""
        return await self._receive(message)

    async def _receive(self, message: MAILInterswarmMessage) -> Any:
        checked = validate_interswarm_message(message)
        if checked["target_swarm"] != self.local_swarm_name:
            raise InvalidMessageError(
                f"message for swarm {checked['target_swarm']!r} received by swarm "
                f"{self.local_swarm_name!r}",
                field="target_swarm",
            )
        kind = checked["msg_type"]
        handler = self._handlers.get(kind) or self._handlers.get(_DEFAULT_HANDLER)
        if handler is None:
            raise ConfigurationError(
                f"no handler registered for {kind!r} messages (register_message_handler)"
            )
        result = handler(_local_message(checked, self.local_swarm_name))
        return await result if inspect.isawaitable(result) else result

    # --- sending -------------------------------------------------------------------------

    async def send_interswarm_message_forward(self, message: MAILInterswarmMessage) -> Any:
        """POST ``message`` to its target swarm's ``/interswarm/forward``; returns the
        peer's JSON. Raises :class:`InvalidMessageError` and
        :class:`~mail.errors.RemoteSwarmUnavailableError`."""
        return await self._post_envelope(message, "forward")

    async def send_interswarm_message_back(self, message: MAILInterswarmMessage) -> Any:
        """Like :meth:`send_interswarm_message_forward`, to ``/interswarm/back``."""
        return await self._post_envelope(message, "back")

    async def _post_envelope(self, message: MAILInterswarmMessage, direction: Direction) -> Any:
        checked = validate_interswarm_message(message)
        swarm = checked["target_swarm"]
        endpoint = await self._usable_endpoint(swarm)
        url = f"{endpoint.base_url}/interswarm/{direction}"
        return await self._http().post_json(url, {"message": checked}, self._token(swarm))

    async def post_interswarm_user_message(self, message: MAILInterswarmMessage) -> Any:
        """v1.3.6's user-level send (module docstring); returns the peer's JSON.

        Raises :class:`InvalidMessageError` (malformed, or no ``auth_token`` to send) and
        :class:`~mail.errors.RemoteSwarmUnavailableError`.
        """
        checked = validate_interswarm_message(message)
        token = checked.get("auth_token") or ""
        if not token:
            raise InvalidMessageError("a user message needs its auth_token", field="auth_token")
        payload = checked["payload"]
        body: dict[str, Any] = {
            "user_token": token,
            "body": payload.get("body", ""),
            "subject": payload.get("subject", ""),
            "targets": [r["address"] for r in get_recipients(payload)],
            "msg_type": checked["msg_type"],
            "task_id": payload["task_id"],
        }
        if payload.get("routing_info"):
            body["routing_info"] = payload["routing_info"]
        endpoint = await self._usable_endpoint(checked["target_swarm"])
        return await self._http().post_json(f"{endpoint.base_url}/interswarm/message", body, token)

    def convert_local_message_to_interswarm(
        self,
        message: MAILMessage,
        task_owner: str,
        task_contributors: list[str],
        metadata: dict[str, Any] | None = None,
    ) -> MAILInterswarmMessage:
        """Wrap a local ``message`` for the swarm of its first remote recipient
        (``agent@swarm``). Raises :class:`InvalidMessageError` when no recipient is remote."""
        local = self.local_swarm_name
        swarms = [
            swarm
            for r in get_recipients(message["message"])
            if (swarm := parse_agent_address(r["address"])[1]) and swarm != local
        ]
        if not swarms:
            raise InvalidMessageError("the message has no recipient in another swarm")
        return make_interswarm_message(
            message=outbound_message(message, local, swarms[0]),
            source_swarm=local,
            target_swarm=swarms[0],
            task_owner=task_owner,
            task_contributors=list(task_contributors),
            auth_token="",
            metadata=dict(metadata or {}),
        )

    def get_routing_stats(self) -> dict[str, Any]:
        """What the router knows: this swarm, the registered and active swarms, the
        registered handlers, the deliveries in flight and whether it runs."""
        endpoints = self.registry.get_all_endpoints()
        return {
            "local_swarm_name": self.local_swarm_name,
            "total_endpoints": len(endpoints),
            "active_endpoints": len(self.registry.get_active_endpoints()),
            "registered_handlers": sorted(self._handlers),
            "deliveries_in_flight": len(self._tasks),
            "running": not self._closed,
        }


def _local_message(message: MAILInterswarmMessage, local: str) -> MAILMessage:
    """The local message an envelope carries, recipients of ``local`` unqualified."""
    payload = dict(message["payload"])
    for key in ("recipient", "recipients"):
        value = payload.get(key)
        if isinstance(value, dict):
            payload[key] = _unqualified(value, local)
        elif isinstance(value, list):
            payload[key] = [_unqualified(a, local) for a in value]
    return {
        "id": message["message_id"],
        "timestamp": message["timestamp"],
        "message": payload,  # type: ignore[typeddict-item]  # one of the payloads, as sent
        "msg_type": message["msg_type"],
    }


def _unqualified(address: dict[str, Any], local: str) -> dict[str, Any]:
    name, swarm = parse_agent_address(address["address"])
    return {**address, "address": name} if swarm == local else dict(address)
