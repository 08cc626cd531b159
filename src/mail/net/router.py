"""The interswarm router: delivers messages addressed to ``agent@other-swarm`` over HTTP.

One :class:`InterswarmRouter` per server, shared by every caller's runtime, with the
server's :class:`~mail.net.registry.SwarmRegistry` and one ``aiohttp`` session. A runtime
hands it a message with remote recipients (:meth:`InterswarmRouter.send`); for each
target swarm the router, in an owned background task:

1. looks the swarm up in the registry (unknown, or inactive and failing a fresh health
   check: error) and takes the token to send (the registry's, else the environment
   variable ``SWARM_AUTH_TOKEN_<NAME>``; none: error);
2. rewrites the message for the peer (sender ``name@<local>``, unqualified recipients
   ``name@<local>``) and chooses the direction: ``back`` when a contributor of the task
   is in the target swarm, else ``forward``;
3. POSTs ``{"message": MAILInterswarmMessage}`` to ``{peer}/interswarm/{direction}``
   (protocol 1.3), or the bare message to the synchronous ``{peer}/interswarm/message``
   of a peer whose ``GET /`` reported no ``protocol_version`` (or one below 1.2), whose
   answer is then queued as if it had come back through ``/interswarm/back``;
4. records ``interswarm_message_sent`` in the task, or reports the failure to the runtime
   (:meth:`~mail.core._remote.RemoteLedger.delivery_failed`, ``runtime.remote``): an
   ``interswarm_message_error`` event and an ``::agent_error::`` message to the agent
   that sent it, so the agent can react and the task can still complete.

Connection errors and 5xx answers are retried (3 times, after 0.2, 0.4 and 0.8 s by
default); 4xx answers and timeouts are not. Receivers deduplicate by message id, so a
retried delivery runs once. The registry token travels only in the ``Authorization``
header; the body's ``auth_token`` is an empty string.

An agent's ``discover_swarms`` goes through :meth:`InterswarmRouter.discover_swarms`,
which fetches only what the router's :class:`~mail.net.DiscoveryPolicy` allows.

A request a local agent sent (or an interswarm broadcast) that the peer accepted then
awaits a reply: when none comes within ``RouterSettings.reply_timeout`` seconds, or the
registry marks the peer inactive (a failed health check) first, the agent gets an
``::agent_error::`` saying it will get no reply (``runtime.remote.await_reply``), and its
task goes on or ends as the agent decides.

When a task with remote swarms completes, :meth:`InterswarmRouter.notify_completion`
sends each a ``::task_complete::`` response addressed to the agent of that swarm that
last messaged us in the task (else the one we last messaged).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import weakref
from collections.abc import Callable, Collection, Coroutine, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from mail.core import Subject, tracer_of
from mail.core.events import EventName
from mail.core.message import (
    MAILInterswarmMessage,
    MAILMessage,
    build_interswarm_mail_xml,
    create_agent_address,
    get_recipients,
    make_interswarm_message,
    make_response,
    validate_message,
)
from mail.errors import (
    ConfigurationError,
    MAILError,
    PermissionDeniedError,
    RemoteSwarmUnavailableError,
)
from mail.net._addressing import (
    Direction,
    by_swarm,
    contributors_of,
    direction_to,
    from_legacy_answer,
    outbound_message,
)
from mail.net._addressing import synthesized_owner as legacy_task_owner
from mail.net._discovery import DiscoveryPolicy
from mail.net._router_compat import MessageHandler, StreamHandler, V136RouterMethods
from mail.net._session import SessionSource
from mail.net._tokens import env_var_name
from mail.net._transport import JsonPoster

if TYPE_CHECKING:
    import aiohttp

    from mail.core.runtime import MAILRuntime
    from mail.core.tasks import MAILTask
    from mail.net._endpoint import SwarmEndpoint
    from mail.net.registry import SwarmRegistry

__all__ = ["InterswarmRouter", "RouterSettings", "StreamHandler", "legacy_task_owner"]

logger = logging.getLogger("mail.net.router")


@dataclass(frozen=True, slots=True)
class RouterSettings:
    """How the router talks to peers.

    ``timeout``: seconds for one delivery (protocol 1.3 peers answer at once);
    ``retries`` after a connection error or a 5xx, waiting ``backoff``, then twice as
    long each time; ``legacy_timeout``: seconds for the synchronous exchange with a
    protocol 1.1 peer, which answers only once its task is done; ``reply_timeout``: seconds
    a local agent's request accepted by a peer waits for the peer's reply. Raises
    :class:`~mail.errors.ConfigurationError` for a non-positive time or negative count.
    """

    timeout: float = 10.0
    retries: int = 3
    backoff: float = 0.2
    legacy_timeout: float = 600.0
    reply_timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.legacy_timeout <= 0 or self.reply_timeout <= 0:
            raise ConfigurationError("router timeouts must be positive")
        if self.retries < 0 or self.backoff < 0:
            raise ConfigurationError("router retries and backoff must not be negative")


class InterswarmRouter(V136RouterMethods):
    """Routes messages between this server's runtimes and peer swarms (module docstring).

    ``swarm_registry`` is the registry of peers; ``local_swarm_name`` (v1.3.6's second
    parameter) may be given and must then be the registry's local swarm
    (:class:`~mail.errors.ConfigurationError` otherwise). v1.3.6's methods (``start``,
    ``stop``, ``register_message_handler``, ``send_interswarm_message_forward``...) are
    described in :mod:`mail.net._router_compat`. ``session`` is an external ``aiohttp.ClientSession`` or a shared
    :class:`~mail.net.SessionSource` (else one is created on first use and closed
    by :meth:`aclose`); ``env`` is where ``SWARM_AUTH_TOKEN_<NAME>`` is
    looked up for peers the registry holds no token for (default ``os.environ``);
    ``discovery`` bounds what agents' ``discover_swarms`` may fetch (default: loopback
    hosts and the registered swarms).
    """

    def __init__(
        self,
        swarm_registry: SwarmRegistry,
        local_swarm_name: str | None = None,
        *,
        session: aiohttp.ClientSession | SessionSource | None = None,
        settings: RouterSettings | None = None,
        env: Mapping[str, str] | None = None,
        discovery: DiscoveryPolicy | None = None,
    ) -> None:
        registry = swarm_registry
        if local_swarm_name is not None and local_swarm_name != registry.local_swarm_name:
            raise ConfigurationError(
                f"local_swarm_name {local_swarm_name!r} is not the registry's local swarm "
                f"{registry.local_swarm_name!r}"
            )
        self.registry = registry
        self._handlers: dict[str, MessageHandler] = {}
        self.discovery = discovery or DiscoveryPolicy()
        self.settings = settings or RouterSettings()
        self._source, self._closes_source = SessionSource.of(session)
        self._poster: JsonPoster | None = None
        self._env = env
        self._tasks: set[asyncio.Task[Any]] = set()
        #: the deliveries under way, by task (see :meth:`sending`)
        self._sending: dict[str, set[asyncio.Task[Any]]] = {}
        # (runtime, task id) -> (swarm, future): a synchronous protocol 1.1 exchange waits
        # for the first message a local agent sends back to that swarm
        self._replies: dict[tuple[int, str], tuple[str, asyncio.Future[MAILMessage]]] = {}
        # the runtimes with requests awaiting a peer's reply: told when a peer goes down
        self._waiting: weakref.WeakSet[MAILRuntime] = weakref.WeakSet()
        registry.on_peer_down(self._peer_down)
        self._closed = False
        #: told ``(swarm, outcome)`` after each delivery to a peer: ``delivered``,
        #: ``unavailable`` (the peer could not be reached or refused) or ``error``
        self.on_delivery: Callable[[str, str], None] | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _http(self) -> JsonPoster:
        if self._poster is None:
            settings = self.settings
            self._poster = JsonPoster(
                self._source,
                timeout=settings.timeout,
                retries=settings.retries,
                backoff=settings.backoff,
                user_agent=f"MAIL-Interswarm-Router/{self.local_swarm_name}",
            )
        return self._poster

    # --- what runtimes call (mail.core.runtime.RemoteRouter) ------------------------------

    def send(
        self, runtime: MAILRuntime, task: MAILTask, message: MAILMessage, targets: list[str]
    ) -> None:
        """Deliver ``message`` to each swarm of ``targets`` (``agent@swarm``) in the background.

        Failures reach the sending agent through ``runtime.remote.delivery_failed``.
        """
        sender = message["message"]["sender"]["address"]
        agent = sender if sender in runtime.agents else None
        for swarm in by_swarm(targets):
            if self._answer_waiting_exchange(runtime, task, message, swarm):
                continue
            if self._closed:
                reason = f"cannot send to swarm {swarm}: the server is shutting down"
                runtime.remote.delivery_failed(task, agent, reason)
                continue
            self._spawn(
                self._send_one(runtime, task, message, swarm, agent),
                f"interswarm:{task.task_id}:{swarm}",
                task.task_id,
            )

    def notify_completion(
        self,
        runtime: MAILRuntime,
        task: MAILTask,
        agent: str,
        body: str,
        swarms: Collection[str],
    ) -> None:
        """Send each of ``swarms`` a ``::task_complete::`` notice, in the background.

        The notice goes to the agent of that swarm that last messaged us in the task (else
        the one we last messaged, else an agent named like our entrypoint). Protocol 1.1
        peers get none. Failures are recorded as ``interswarm_message_error`` events of
        the (completed) task.
        """
        local = self.local_swarm_name
        for swarm in [] if self._closed else swarms:
            endpoint = self.registry.get_swarm_endpoint(swarm)
            if endpoint is not None and endpoint.legacy:
                continue  # protocol 1.1 has no notices: its exchange ended with the answer
            contact = runtime.remote.contact(task.task_id, swarm) or runtime.entrypoint
            notice = make_response(
                task_id=task.task_id,
                sender=create_agent_address(agent),
                recipient=create_agent_address(f"{contact}@{swarm}"),
                subject=str(Subject.TASK_COMPLETE),
                body=body,
                sender_swarm=local,
                recipient_swarm=swarm,
                routing_info={"origin_swarm": local, "remote_swarm": swarm},
            )
            self._spawn(
                self._send_one(runtime, task, notice, swarm, None),
                f"interswarm-complete:{task.task_id}:{swarm}",
                task.task_id,
            )

    def sending(self, task_id: str) -> bool:
        """Whether deliveries of ``task_id`` (messages, completion notices) are under way."""
        return bool(self._sending.get(task_id))

    async def sent(self, task_id: str) -> None:
        """Wait until the deliveries of ``task_id`` under way have ended (each is bounded
        by its timeouts): what they record of the task is then in its log."""
        while pending := self._sending.get(task_id):
            await asyncio.wait(set(pending))

    def known_swarms(self) -> list[str]:
        """Names of the active peers (the local swarm excluded), sorted."""
        local = self.local_swarm_name
        return sorted(n for n in self.registry.get_active_endpoints() if n != local)

    async def discover_swarms(self, discovery_urls: list[str]) -> list[str]:
        """Register, as volatile entries, the swarms listed by each URL's ``GET /swarms``.

        For agents (the ``discover_swarms`` tool): only URLs the discovery policy allows
        are fetched, and listed swarms at other URLs are skipped. Returns the names added.
        Discovered entries carry no token: messages to them need
        ``SWARM_AUTH_TOKEN_<NAME>`` in the environment. Raises
        :class:`~mail.errors.PermissionDeniedError`, fetching nothing, when discovery is
        disabled or a URL is refused (the message says which and why).
        """
        policy = self.discovery
        if not policy.enabled:
            raise PermissionDeniedError("swarm discovery is disabled on this server")
        peers = [e.base_url for e in self.registry.get_all_endpoints().values()]
        refused = [(url, policy.refusal(url, peers)) for url in discovery_urls]
        problems = [f"{url}: {why}" for url, why in refused if why is not None]
        if problems:
            raise PermissionDeniedError(f"discovery refused for {'; '.join(problems)}")
        return await self.registry.discover_swarms(
            discovery_urls, allow_url=lambda url: policy.refusal(url, peers) is None
        )

    # --- delivery --------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str, task_id: str = "") -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        if task_id:
            self._sending.setdefault(task_id, set()).add(task)
        task.add_done_callback(functools.partial(self._done, task_id=task_id))

    def _done(self, task: asyncio.Task[Any], task_id: str = "") -> None:
        self._tasks.discard(task)
        sending = self._sending.get(task_id)
        if sending is not None:
            sending.discard(task)
            if not sending:
                del self._sending[task_id]
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error("interswarm task %s failed", task.get_name(), exc_info=error)

    async def _send_one(
        self,
        runtime: MAILRuntime,
        task: MAILTask,
        message: MAILMessage,
        swarm: str,
        agent: str | None,
    ) -> None:
        # the reply may come back before the peer's acknowledgement is read: wait from now
        wait = None
        if agent is not None and self._expects_reply(message, swarm):
            self._waiting.add(runtime)
            wait = runtime.remote.await_reply(
                task.task_id, swarm, agent, self.settings.reply_timeout
            )
        try:
            await self.deliver(runtime, task, message, swarm)
        except RemoteSwarmUnavailableError as e:
            logger.warning("task %s: %s", task.task_id, e)
            runtime.remote.delivery_failed(task, agent, str(e))
            self._delivered(swarm, "unavailable")
        except Exception as e:  # a failure must reach the agent, whatever it is
            logger.exception("task %s: delivery to swarm %s failed", task.task_id, swarm)
            reason = f"error sending interswarm message to swarm {swarm}: {type(e).__name__}"
            runtime.remote.delivery_failed(task, agent, reason)
            self._delivered(swarm, "error")
        else:
            self._delivered(swarm, "delivered")
            if wait is not None:
                wait.delivered()
            return
        if wait is not None:
            wait.cancel()

    def _delivered(self, swarm: str, outcome: str) -> None:
        if self.on_delivery is not None:
            self.on_delivery(swarm, outcome)

    def _expects_reply(self, message: MAILMessage, swarm: str) -> bool:
        """A request or broadcast to a protocol 1.3 peer (a 1.1 exchange answers at once)."""
        endpoint = self.registry.get_swarm_endpoint(swarm)
        legacy = endpoint is not None and endpoint.legacy
        return message["msg_type"] in ("request", "broadcast") and not legacy

    def _peer_down(self, swarm: str, problem: str) -> None:
        reason = f"swarm {swarm!r} is inactive: its health check fails ({problem})"
        for runtime in list(self._waiting):
            runtime.remote.swarm_lost(swarm, reason)

    async def deliver(
        self, runtime: MAILRuntime, task: MAILTask, message: MAILMessage, swarm: str
    ) -> Any:
        """Send ``message`` of ``task`` to ``swarm`` now and return the peer's JSON answer.

        Records ``interswarm_message_sent`` on success. Raises
        :class:`~mail.errors.RemoteSwarmUnavailableError` saying ``error sending
        interswarm message <direction> to swarm <swarm>: <what went wrong>``.
        """
        contributors = contributors_of(task.task_contributors, runtime.this_owner)
        direction = direction_to(swarm, contributors)
        tracer = tracer_of(task)
        if tracer is None:
            return await self._deliver(runtime, task, message, swarm, direction, contributors)
        with tracer.hop(task, "interswarm", swarm, f"interswarm {direction}") as headers:
            return await self._deliver(
                runtime, task, message, swarm, direction, contributors, headers
            )

    async def _deliver(
        self,
        runtime: MAILRuntime,
        task: MAILTask,
        message: MAILMessage,
        swarm: str,
        direction: Direction,
        contributors: list[str],
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        try:
            endpoint = await self._usable_endpoint(swarm)
            token = self._token(swarm)
            legacy = endpoint.legacy
            wire = self._wire(task, message, swarm, contributors, legacy=legacy)
            if legacy:
                answer = await self._http().post_json(
                    f"{endpoint.base_url}/interswarm/message",
                    wire,
                    token,
                    timeout=self.settings.legacy_timeout,
                    headers=headers,
                )
            else:
                answer = await self._http().post_json(
                    f"{endpoint.base_url}/interswarm/{direction}",
                    {"message": wire},
                    token,
                    headers=headers,
                )
        except MAILError as e:
            raise RemoteSwarmUnavailableError(
                f"error sending interswarm message {direction} to swarm {swarm}: {e}"
            ) from e
        _record_sent(task, wire, direction, swarm)
        for recipient in get_recipients(wire["payload"]):
            if recipient["address"].endswith(f"@{swarm}"):
                runtime.remote.spoke_to(task.task_id, recipient["address"])
        if legacy:
            self._queue_legacy_answer(runtime, task, answer, swarm, contributors)
        return answer

    def _wire(
        self,
        task: MAILTask,
        message: MAILMessage,
        swarm: str,
        contributors: list[str],
        *,
        legacy: bool = False,
    ) -> MAILInterswarmMessage:
        """``message`` of ``task`` wrapped for ``swarm`` (``legacy``: for a protocol 1.1 peer);
        its ``metadata`` carries what is left of the task's budget, which the peer enforces."""
        metadata = _legacy_metadata(message) if legacy else {}
        if task.budget is not None:
            metadata["budget"] = task.budget.remaining().as_json()
        return make_interswarm_message(
            message=outbound_message(message, self.local_swarm_name, swarm),
            source_swarm=self.local_swarm_name,
            target_swarm=swarm,
            task_owner=task.task_owner,
            task_contributors=contributors,
            auth_token="",  # the token travels in the Authorization header only
            metadata=metadata,
        )

    async def _usable_endpoint(self, swarm: str) -> SwarmEndpoint:
        endpoint = self.registry.get_swarm_endpoint(swarm)
        if endpoint is None or swarm == self.local_swarm_name:
            raise RemoteSwarmUnavailableError(f"swarm '{swarm}' is not registered")
        if not endpoint.is_active:
            # the health loop may be minutes behind: ask now rather than refuse
            if not await self.registry.check_health(swarm):
                raise RemoteSwarmUnavailableError(
                    f"swarm '{swarm}' is inactive: its health check fails"
                )
            endpoint = self.registry.get_swarm_endpoint(swarm) or endpoint
        return endpoint

    def _token(self, swarm: str) -> str:
        token = self.registry.get_resolved_auth_token(swarm)
        if token:
            return token
        variable = env_var_name(swarm)
        token = (os.environ if self._env is None else self._env).get(variable)
        if not token:
            raise RemoteSwarmUnavailableError(f"no token for swarm {swarm}; set {variable}")
        return token

    def _queue_legacy_answer(
        self,
        runtime: MAILRuntime,
        task: MAILTask,
        answer: Any,
        swarm: str,
        contributors: list[str],
    ) -> None:
        try:
            self.queue_answer(runtime, task, validate_message(answer), swarm, contributors)
        except MAILError as e:
            raise RemoteSwarmUnavailableError(
                f"the answer of swarm {swarm} could not be queued: {e}"
            ) from e

    def queue_answer(
        self,
        runtime: MAILRuntime,
        task: MAILTask,
        answer: MAILMessage,
        swarm: str,
        contributors: list[str] | None = None,
    ) -> MAILTask:
        """Queue a protocol 1.1 answer (a bare, validated ``MAILMessage`` from ``swarm``)
        in ``task`` as if it had come back through ``/interswarm/back``.

        Raises like :meth:`~mail.core.runtime.MAILRuntime.receive_interswarm`.
        """
        return runtime.receive_interswarm(
            from_legacy_answer(
                answer,
                source_swarm=swarm,
                local=self.local_swarm_name,
                task_owner=task.task_owner,
                contributors=contributors
                or contributors_of(task.task_contributors, runtime.this_owner),
            ),
            "back",
        )

    # --- synchronous exchanges with protocol 1.1 peers (inbound) ----------------------------

    def expect_reply(
        self, runtime: MAILRuntime, task_id: str, swarm: str
    ) -> asyncio.Future[MAILMessage]:
        """A future of the first message ``runtime``'s agents send to ``swarm`` in the task.

        That message is not sent over HTTP: the caller answers it synchronously. Call
        :meth:`forget_reply` when done waiting.
        """
        future: asyncio.Future[MAILMessage] = asyncio.get_running_loop().create_future()
        self._replies[(id(runtime), task_id)] = (swarm, future)
        return future

    def forget_reply(self, runtime: MAILRuntime, task_id: str) -> None:
        entry = self._replies.pop((id(runtime), task_id), None)
        if entry is not None and not entry[1].done():
            entry[1].cancel()

    def _answer_waiting_exchange(
        self, runtime: MAILRuntime, task: MAILTask, message: MAILMessage, swarm: str
    ) -> bool:
        entry = self._replies.get((id(runtime), task.task_id))
        if entry is None or entry[0] != swarm or entry[1].done():
            return False
        entry[1].set_result(message)
        contributors = contributors_of(task.task_contributors, runtime.this_owner)
        _record_sent(task, self._wire(task, message, swarm, contributors), "back", swarm)
        return True

    # --- shutdown --------------------------------------------------------------------------

    async def aclose(self, timeout: float = 5.0) -> None:
        """Let deliveries in flight finish (up to ``timeout`` s), cancel the rest, and
        close the HTTP session if the router created it."""
        self._closed = True
        pending = set(self._tasks)
        if pending:
            _, late = await asyncio.wait(pending, timeout=timeout)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        for _, future in self._replies.values():
            future.cancel()
        self._replies.clear()
        if self._closes_source:
            await self._source.aclose()


def _legacy_metadata(message: MAILMessage) -> dict[str, Any]:
    routing = message["message"].get("routing_info") or {}
    return {"expect_response": True, "original_message_id": message["id"], "routing_info": routing}


def _record_sent(
    task: MAILTask, wire: MAILInterswarmMessage, direction: Direction, swarm: str
) -> None:
    xml = build_interswarm_mail_xml(wire)["content"]
    task.log.emit(
        EventName.INTERSWARM_MESSAGE_SENT,
        f"sent interswarm message {direction} to swarm {swarm}:\n{xml}",
    )
