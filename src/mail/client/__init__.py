"""``MAILClient``: the asynchronous Python client of the MAIL HTTP API.

One method per endpoint, typed results, one aiohttp session (yours or its own), every
failure raised as :class:`~mail.errors.MAILClientError` (``status`` is the HTTP status, or
``None`` when no answer arrived; the aiohttp error is chained as ``__cause__``)::

    async with MAILClient("http://127.0.0.1:8000", api_key="...") as client:
        answer = await client.post_message("What is 6*7?")
        async with await client.post_message_stream("Weather in Rome?") as stream:
            async for event in stream:
                print(event.event, event.json())

Streams are :class:`EventStream` objects over :class:`ServerSentEvent`; a stream that
drops mid-task is resumed from ``GET /tasks/{task_id}/events`` with ``Last-Event-ID``.
``POST /message`` is sent again after a lost connection or a 502/503/504 with the same
task id (and, for a follow-up, the same ``Idempotency-Key``), so the server answers the
repeat as the first request and never runs it twice (``_retry.py``).
Importing this module loads aiohttp but neither the server nor any LLM library;
``mail.config`` (pydantic) is imported only when a client is built without a config.
``MAILClientCLI`` (v1.3.6's interactive client, our ``mail client`` REPL) is loaded from
:mod:`mail.cli` on first access, so importing this module does not load the CLI.
See ``docs/client.md``.
"""

from __future__ import annotations

import asyncio
import importlib
import json as jsonlib
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import quote

import aiohttp

from mail.client._config import default_api_key, load_client_config, local_server_url
from mail.client._map import MapMailMethods, MapRpcError
from mail.client._retry import identify, with_retries
from mail.client._sse import ServerSentEvent
from mail.client._stream import EventStream, status_error, transport_error
from mail.client._types import (
    CancelResult,
    DumpResult,
    HealthInfo,
    InterswarmAck,
    InterswarmReply,
    InterswarmReplyPayload,
    InterswarmResponseAck,
    InterswarmSendResult,
    LoadResult,
    MessageAddress,
    MessageEvent,
    MessageResult,
    RegisterResult,
    ResponsesFunctionCall,
    ResponsesMessage,
    ResponsesOutputText,
    ResponsesResult,
    RootInfo,
    RootSwarm,
    StatusInfo,
    StatusSwarm,
    StoredEvent,
    SwarmEntry,
    SwarmsList,
    TaskPage,
    TaskRecord,
    WhoAmI,
)
from mail.errors import MAILClientError
from mail.version import __version__

if TYPE_CHECKING:
    from mail.config import ClientConfig

__all__ = [
    "MAILClient",
    "EventStream",
    "ServerSentEvent",
    "MAILClientError",
    "USER_AGENT",
    "default_api_key",
    "local_server_url",
    "ResumeFrom",
    # result shapes
    "RootInfo",
    "RootSwarm",
    "HealthInfo",
    "WhoAmI",
    "StatusInfo",
    "StatusSwarm",
    "MessageResult",
    "MessageEvent",
    "TaskRecord",
    "TaskPage",
    "CancelResult",
    "StoredEvent",
    "SwarmsList",
    "SwarmEntry",
    "RegisterResult",
    "DumpResult",
    "LoadResult",
    "InterswarmSendResult",
    "InterswarmAck",
    "InterswarmReply",
    "InterswarmReplyPayload",
    "MessageAddress",
    "InterswarmResponseAck",
    "ResponsesResult",
    "ResponsesMessage",
    "ResponsesOutputText",
    "ResponsesFunctionCall",
    "MapRpcError",
]

logger = logging.getLogger("mail.client")

# Loaded on first access (PEP 562): the CLI sits above this module and imports rich.
_LAZY = {"MAILClientCLI": "mail.cli._client_cli"}

# Hidden from type checkers, as in ``mail/__init__.py``: a visible module ``__getattr__``
# would make every misspelt ``mail.client.X`` type-check.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """Load ``MAILClientCLI`` from :mod:`mail.cli._client_cli` on first access."""
        module_name = _LAZY.get(name)
        if module_name is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module_name), name)


#: Sent as ``User-Agent`` with every request.
USER_AGENT = f"MAIL-Client/{__version__} (mail-swarms)"
#: How a message continues a task (``None``: a new task).
ResumeFrom = Literal["user_response", "breakpoint_tool_call"]

_JSON = "application/json"
_EVENT_STREAM = "text/event-stream"
_UNSET: Any = object()
#: The longest wait for the cancel of a task whose request the client gave up on.
_CANCEL_WAIT = 10.0


class MAILClient(MapMailMethods):
    """Asynchronous client of one MAIL server (an async context manager).

    Args:
        url: the server's base URL, e.g. ``http://127.0.0.1:8000`` (a trailing ``/`` is
            dropped).
        api_key: sent as ``Authorization: Bearer <api_key>``; ``None``: ``config.api_key``.
        session: an ``aiohttp.ClientSession`` to use; the client never closes it. Without
            one, the client opens its own on first use and closes it in :meth:`aclose`.
        config: timeout (seconds per request; for streams, per read), verbosity and the
            retries of ``POST /message``; ``None``: the ``[client]`` table of ``mail.toml``
            (the defaults if the file is unusable).

    Every request method raises :class:`~mail.errors.MAILClientError`: with the HTTP
    ``status`` and the server's ``detail`` for a non-2xx answer, with ``status=None`` when
    the server cannot be reached or does not answer within the timeout.

    Attributes:
        url: the base URL.
        config: the :class:`~mail.config.ClientConfig` in use.
        reconnect_attempts: how many reconnects in a row a dropped event stream may try.
        reconnect_backoff: seconds before the first reconnect (doubled for each next one).
    """

    reconnect_attempts: int = 5
    reconnect_backoff: float = 0.1

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        session: aiohttp.ClientSession | None = None,
        config: ClientConfig | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.config = config if config is not None else load_client_config()
        self._api_key = api_key if api_key is not None else self.config.api_key
        self._session = session
        self._owns_session = session is None
        self._log_level = logging.INFO if self.config.verbose else logging.DEBUG

    def __repr__(self) -> str:
        return f"MAILClient({self.url!r})"  # never the key

    @property
    def api_key(self) -> str | None:
        """The API key sent with each request (changed by :meth:`login` and :meth:`logout`)."""
        return self._api_key

    async def __aenter__(self) -> MAILClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's own session (never one passed in). Streams read through it end
        with :class:`MAILClientError` instead of reconnecting; the client stays usable."""
        if self._owns_session and self._session is not None:
            session, self._session = self._session, None
            await session.close()

    # --- transport ---------------------------------------------------------------------

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        elif self._session.closed:
            if not self._owns_session:
                raise MAILClientError("the aiohttp session given to MAILClient is closed")
            self._session = aiohttp.ClientSession()
        return self._session

    def _headers(self, accept: str, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        if extra:
            headers.update(extra)
        return headers

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = _UNSET,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        stream: bool = False,
    ) -> aiohttp.ClientResponse:
        """Send one request; return the 2xx response (the caller releases it)."""
        timeout = self.config.timeout
        client_timeout = (
            aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
            if stream
            else aiohttp.ClientTimeout(total=timeout)
        )
        kwargs: dict[str, Any] = {} if json is _UNSET else {"json": json}
        try:
            response = await self._http().request(
                method,
                f"{self.url}{path}",
                params=params,
                headers=self._headers(_EVENT_STREAM if stream else _JSON, headers),
                timeout=client_timeout,
                **kwargs,
            )
        except (aiohttp.ClientError, TimeoutError) as e:
            logger.log(self._log_level, "%s %s failed: %s", method, path, e)
            raise transport_error(e, self.url, timeout) from e
        logger.log(self._log_level, "%s %s -> %d", method, path, response.status)
        if response.status // 100 != 2:  # noqa: PLR2004  # the 2xx class
            try:
                raise await status_error(response)
            finally:
                response.release()
        return response

    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = _UNSET,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request and return its JSON answer. Raises :class:`MAILClientError`."""
        response = await self._send(method, path, json=json, params=params, headers=headers)
        try:
            raw = await response.read()
        except (aiohttp.ClientError, TimeoutError) as e:
            raise transport_error(e, self.url, self.config.timeout) from e
        finally:
            response.release()
        return _decode_json(response, raw, path)

    async def _object(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        data = await self._request(method, path, **kwargs)
        if not isinstance(data, dict):
            raise MAILClientError(
                f"{method} {path}: expected a JSON object, got {type(data).__name__}", status=200
            )
        return data

    # --- server and identity -----------------------------------------------------------

    async def ping(self) -> RootInfo:
        """``GET /``: the server and its swarm. Raises :class:`MAILClientError`."""
        return cast("RootInfo", await self._object("GET", "/"))

    async def get_root(self) -> RootInfo:
        """Same as :meth:`ping`."""
        return await self.ping()

    async def get_health(self) -> HealthInfo:
        """``GET /health``. Raises :class:`MAILClientError`."""
        return cast("HealthInfo", await self._object("GET", "/health"))

    async def update_health(self, status: str) -> HealthInfo:
        """``POST /health`` (admin): set the health string; returns the new health.

        Raises :class:`MAILClientError` (401 for a non-admin key, 400 for an empty status).
        """
        return cast("HealthInfo", await self._object("POST", "/health", json={"status": status}))

    async def login(self, api_key: str) -> WhoAmI:
        """Use ``api_key`` from now on, after ``GET /whoami`` accepted it; returns the identity.

        Raises :class:`MAILClientError` (e.g. 401) and then keeps the previous key.
        """
        previous, self._api_key = self._api_key, api_key
        try:
            return await self.get_whoami()
        except BaseException:
            self._api_key = previous
            raise

    def logout(self) -> None:
        """Forget the API key: later requests are sent without one."""
        self._api_key = None

    async def get_whoami(self) -> WhoAmI:
        """``GET /whoami``: the caller's ``id`` and ``role``. Raises :class:`MAILClientError`."""
        return cast("WhoAmI", await self._object("GET", "/whoami"))

    async def get_status(self) -> StatusInfo:
        """``GET /status``: the caller's runtime. Raises :class:`MAILClientError`."""
        return cast("StatusInfo", await self._object("GET", "/status"))

    # --- messages and tasks ------------------------------------------------------------

    async def post_message(
        self,
        body: str,
        subject: str = "New Message",
        msg_type: str = "request",
        *,
        entrypoint: str | None = None,
        show_events: bool = False,
        task_id: str | None = None,
        resume_from: ResumeFrom | None = None,
        **kwargs: Any,
    ) -> MessageResult:
        """``POST /message``: send ``body`` and wait for the task's answer.

        ``task_id`` names a new task, or continues one (with ``resume_from``); ``None``
        starts a new task under an id drawn here (returned as ``task_id``). ``kwargs`` go
        to the server as ``kwargs`` (``breakpoint_tool_call_result``, ``max_steps``,
        ``timeout``, ...). The client's own ``config.timeout`` bounds each attempt.

        After a lost connection or a 502/503/504 the request is sent again, up to
        ``config.retries`` times, with the same task id (a follow-up also with the same
        ``Idempotency-Key``): the server answers a repeat as the first request, never
        running it twice. When the call gives up on a request the server may have taken
        (retries used up, a timeout), it cancels the task first (best effort).

        Raises :class:`MAILClientError`: 400 for bad input (e.g. an unknown ``msg_type``),
        401, 404 or 409 for a task that cannot be continued, ``status=None`` on timeout
        or when the server could not be reached.
        """
        task_id, headers = identify(task_id, resume_from)
        payload = {
            "subject": subject,
            "body": body,
            "msg_type": msg_type,
            "entrypoint": entrypoint,
            "show_events": show_events,
            "task_id": task_id,
            "resume_from": resume_from,
            "kwargs": kwargs,
        }

        async def attempt() -> dict[str, Any]:
            return await self._object("POST", "/message", json=payload, headers=headers)

        return cast(
            "MessageResult", await with_retries(attempt, task_id, self.config, self._abandon)
        )

    async def post_message_stream(
        self,
        body: str,
        subject: str = "New Message",
        msg_type: str = "request",
        *,
        entrypoint: str | None = None,
        task_id: str | None = None,
        resume_from: ResumeFrom | None = None,
        resume: bool = True,
        ignore_pings: bool = False,
        **kwargs: Any,
    ) -> EventStream:
        """``POST /message`` with ``stream: true``: the task's events as they happen.

        Returns once the server answered; iterate the :class:`EventStream` for the events,
        the last being ``task_complete`` (``data.response`` is the answer) or
        ``task_error``. With ``resume`` (default), a dropped connection is resumed without
        losing or repeating an event, and a closing event the server holds back (its
        store has not committed the task yet) is asked for again; ``ignore_pings`` skips
        the ``ping`` heartbeats. Other arguments, the task id drawn for a new task and
        the retries of the request, are as for :meth:`post_message`; a stream that
        breaks for good cancels its task too.

        Raises :class:`MAILClientError` for a refused request (400, 401, 404, 409) or an
        unreachable server; iterating raises it when the stream breaks for good.
        """
        task_id, headers = identify(task_id, resume_from)
        payload = {
            "subject": subject,
            "body": body,
            "msg_type": msg_type,
            "entrypoint": entrypoint,
            "task_id": task_id,
            "resume_from": resume_from,
            "kwargs": kwargs,
            "stream": True,
        }

        async def attempt() -> aiohttp.ClientResponse:
            return await self._send("POST", "/message", json=payload, headers=headers, stream=True)

        response = await with_retries(attempt, task_id, self.config, self._abandon)
        # a new task is resumable from its start; a continued one only after its first event
        start = "0" if resume_from is None else None
        return self._stream(
            response, task_id, start, resume=resume, ignore_pings=ignore_pings, owned=True
        )

    async def _abandon(self, task_id: str) -> None:
        """Cancel ``task_id``, whose request this client gave up on (best effort: a task
        that never started or already ended is left as it is)."""
        try:
            async with asyncio.timeout(min(self.config.timeout, _CANCEL_WAIT)):
                await self.cancel_task(task_id)
        except (MAILClientError, TimeoutError) as e:
            logger.info("gave up on task %s; it was not cancelled: %s", task_id, e)
        else:
            logger.info("gave up on task %s and cancelled it", task_id)

    async def task_events(
        self,
        task_id: str,
        after: int | None = None,
        last_event_id: str | None = None,
        *,
        resume: bool = True,
        ignore_pings: bool = False,
    ) -> EventStream:
        """``GET /tasks/{task_id}/events``: the task's stored events after sequence number
        ``after`` (or ``last_event_id``; default: all), then live ones until it ends.

        Returns once the server answered; the :class:`EventStream` ends with the final
        ``task_complete``/``task_error`` (at once for a finished task).

        Raises :class:`MAILClientError`: 404 for an unknown task (or another caller's),
        400 for a bad ``after``/``last_event_id``, 401, or ``status=None``.
        """
        params = {"after": str(after)} if after is not None else None
        headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else None
        response = await self._send(
            "GET", _events_path(task_id), params=params, headers=headers, stream=True
        )
        start = str(after) if after is not None else (last_event_id or "0")
        return self._stream(response, task_id, start, resume=resume, ignore_pings=ignore_pings)

    def _stream(
        self,
        response: aiohttp.ClientResponse,
        task_id: str | None,
        start: str | None,
        *,
        resume: bool,
        ignore_pings: bool,
        owned: bool = False,
    ) -> EventStream:
        """An :class:`EventStream` of ``response``; ``owned``: this call started the task's
        turn, so a stream that breaks for good cancels the task."""
        session = self._session  # the stream reconnects only while this session is in use

        def usable() -> bool:
            return session is not None and not session.closed and session is self._session

        async def reopen(last_event_id: str) -> aiohttp.ClientResponse:
            assert task_id is not None  # noqa: S101  # resume is only offered with a task id
            if not usable():
                raise MAILClientError(
                    f"the event stream of task {task_id!r} cannot reconnect: the client was closed"
                )
            return await self._send(
                "GET", _events_path(task_id), headers={"Last-Event-ID": last_event_id}, stream=True
            )

        async def give_up() -> None:
            if task_id is not None and usable():
                await self._abandon(task_id)

        return EventStream(
            response,
            url=self.url,
            timeout=self.config.timeout,
            task_id=task_id,
            last_event_id=start,
            reopen=reopen if resume and task_id is not None else None,
            give_up=give_up if owned else None,
            ignore_pings=ignore_pings,
            attempts=self.reconnect_attempts,
            backoff=self.reconnect_backoff,
        )

    async def get_tasks(self, *, events: bool = True) -> dict[str, TaskRecord]:
        """``GET /tasks``: the caller's tasks by id (without their ``events`` if not
        ``events``). Raises :class:`MAILClientError`."""
        params = None if events else {"events": "false"}
        return cast("dict[str, TaskRecord]", await self._object("GET", "/tasks", params=params))

    async def get_task_page(
        self, limit: int = 100, cursor: str | None = None, *, events: bool = False
    ) -> TaskPage:
        """``GET /tasks?limit=&cursor=``: one page of the caller's tasks, newest first,
        with the ``next_cursor`` to pass back (``None`` on the last page). Without
        ``events`` the records leave out their events.

        Raises :class:`MAILClientError` (400 for a bad ``limit`` or ``cursor``).
        """
        params = {"limit": str(limit), "events": "true" if events else "false"}
        if cursor is not None:
            params["cursor"] = cursor
        return cast("TaskPage", await self._object("GET", "/tasks", params=params))

    async def cancel_task(self, task_id: str) -> CancelResult:
        """``POST /tasks/{task_id}/cancel``: cancel a running or paused task; its open
        streams end with ``task_error`` (data ``status: cancelled``).

        Raises :class:`MAILClientError`: 404 for an unknown task (or another caller's),
        409 for a task that already finished.
        """
        path = f"/tasks/{quote(task_id, safe='')}/cancel"
        return cast("CancelResult", await self._object("POST", path))

    async def get_task(self, task_id: str) -> TaskRecord:
        """``GET /task?task_id=``: one of the caller's tasks with its stored events. The id
        also goes as the JSON body ``{"task_id"}``, which is all v1.3.6 servers read.

        Raises :class:`MAILClientError` (404 for an unknown task or another caller's).
        """
        params = {"task_id": task_id}
        data = await self._object("GET", "/task", params=params, json=params)
        return cast("TaskRecord", data)

    # --- swarms ------------------------------------------------------------------------

    async def get_swarms(self) -> SwarmsList:
        """``GET /swarms``: the public swarms the server knows. Raises :class:`MAILClientError`."""
        return cast("SwarmsList", await self._object("GET", "/swarms"))

    async def register_swarm(
        self,
        name: str,
        base_url: str,
        *,
        auth_token: str | None = None,
        volatile: bool = True,
        metadata: Mapping[str, Any] | None = None,
    ) -> RegisterResult:
        """``POST /swarms`` (admin): register the remote swarm ``name`` at ``base_url``.

        The server reads the peer's ``GET /`` first. Raises :class:`MAILClientError`
        (400 for a bad name or URL, 401, 502 when the peer cannot be read).
        """
        payload = {
            "name": name,
            "base_url": base_url,
            "auth_token": auth_token,
            "volatile": volatile,
            "metadata": dict(metadata) if metadata is not None else None,
        }
        return cast("RegisterResult", await self._object("POST", "/swarms", json=payload))

    async def dump_swarm(self) -> DumpResult:
        """``GET /swarms/dump`` (admin): log the loaded swarm on the server.

        Raises :class:`MAILClientError`.
        """
        return cast("DumpResult", await self._object("GET", "/swarms/dump"))

    async def load_swarm_from_json(self, swarm_json: str) -> LoadResult:
        """``POST /swarms/load`` (admin): replace the swarm for new callers with
        ``swarm_json``, the JSON text of ONE swarms.json object.

        Raises :class:`MAILClientError` (400 for an invalid definition, 401).
        """
        data = await self._object("POST", "/swarms/load", json={"json": swarm_json})
        return cast("LoadResult", data)

    # --- interswarm --------------------------------------------------------------------

    async def send_interswarm_message(  # noqa: PLR0917  # the original's positional signature
        self,
        body: str,
        user_token: str,
        subject: str | None = None,
        targets: list[str] | None = None,
        msg_type: str | None = None,
        task_id: str | None = None,
        routing_info: Mapping[str, Any] | None = None,
        stream: bool | None = None,
        ignore_stream_pings: bool | None = None,
    ) -> InterswarmSendResult:
        """``POST /interswarm/message``: send ``body`` to ``targets`` (``agent@swarm``, all
        in one remote swarm registered on this server; ``msg_type`` ``"request"``, the
        server's default, takes exactly one) in a new local task, or in ``task_id``.

        Only the arguments that are not ``None`` are sent; ``user_token`` is required by the
        protocol but stays on this server (it presents its own token to the peer). Returns
        once the peer accepted the message: ``response`` is its receipt, and the remote
        agent's reply later ends task ``task_id`` (see :meth:`task_events`).

        Raises :class:`MAILClientError`: 400 for bad targets, an unregistered swarm or a
        swarm without interswarm messaging, 401, 502 when the peer cannot be reached.
        """
        payload: dict[str, Any] = {"body": body, "user_token": user_token}
        optional = {
            "subject": subject,
            "targets": targets,
            "msg_type": msg_type,
            "task_id": task_id,
            "routing_info": dict(routing_info) if routing_info is not None else None,
            "stream": stream,
            "ignore_stream_pings": ignore_stream_pings,
        }
        payload.update({k: v for k, v in optional.items() if v is not None})
        data = await self._object("POST", "/interswarm/message", json=payload)
        return cast("InterswarmSendResult", data)

    async def post_interswarm_message(self, message: Mapping[str, Any]) -> InterswarmReply:
        """``POST /interswarm/message`` with a whole ``MAILInterswarmMessage`` as the body:
        the synchronous exchange of protocol 1.1, for a key with role ``agent`` (the
        remote swarm ``source_swarm``). Waits until the addressed agent answers and
        returns that answer. (With ``metadata.stream`` the server streams events instead,
        which this method refuses as not JSON.)

        Raises :class:`MAILClientError`: 400 for an invalid message, 401 for a key that is
        not an agent's, 504 when no answer comes within the server's task timeout.
        """
        data = await self._object("POST", "/interswarm/message", json=dict(message))
        return cast("InterswarmReply", data)

    async def post_interswarm_response(self, message: Mapping[str, Any]) -> InterswarmResponseAck:
        """``POST /interswarm/response`` (protocol 1.1, key with role ``agent``): deliver
        ``message``, a ``MAILMessage`` answering a task that asked the caller's swarm.

        Returns ``status`` ``"response_processed"`` when a running task took it,
        ``"no_mail_instance"`` when none waits for it. Raises :class:`MAILClientError`
        (400 for an invalid message, 401 for a key that is not an agent's).
        """
        data = await self._object("POST", "/interswarm/response", json=dict(message))
        return cast("InterswarmResponseAck", data)

    # --- debug -------------------------------------------------------------------------

    async def debug_post_responses(
        self,
        input: list[Any],
        tools: list[Any],
        instructions: str | None = None,
        previous_response_id: str | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        parallel_tool_calls: bool | None = None,
        **kwargs: Any,
    ) -> ResponsesResult:
        """``POST /responses`` (debug servers only): the swarm behind an OpenAI
        Responses-style call; returns the Response object (``id`` is the task id, to pass
        back as ``previous_response_id``).

        Raises :class:`MAILClientError` (404 when the server is not in debug mode, 400).
        """
        payload = {
            "input": input,
            "tools": tools,
            "instructions": instructions,
            "previous_response_id": previous_response_id,
            "tool_choice": dict(tool_choice) if isinstance(tool_choice, Mapping) else tool_choice,
            "parallel_tool_calls": parallel_tool_calls,
            "kwargs": kwargs,
        }
        data = await self._request("POST", "/responses", json=payload)
        if isinstance(data, str):  # the server sends the Response as a JSON string
            try:
                data = jsonlib.loads(data)
            except ValueError as e:
                raise MAILClientError(
                    f"POST /responses: invalid JSON inside: {e}", status=200
                ) from e
        if not isinstance(data, dict):
            raise MAILClientError(
                f"POST /responses: expected a Response object, got {type(data).__name__}",
                status=200,
            )
        return cast("ResponsesResult", data)


def _events_path(task_id: str) -> str:
    return f"/tasks/{quote(task_id, safe='')}/events"


def _decode_json(response: aiohttp.ClientResponse, raw: bytes, path: str) -> Any:
    content_type = response.content_type
    if content_type != _JSON and not content_type.endswith("+json"):
        raise MAILClientError(
            f"{response.method} {path}: expected JSON, got {content_type or 'no content type'}",
            status=response.status,
        )
    try:
        return jsonlib.loads(raw)
    except ValueError as e:
        raise MAILClientError(
            f"{response.method} {path}: invalid JSON: {e}", status=response.status
        ) from e
