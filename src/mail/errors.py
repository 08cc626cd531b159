"""The one error family of mail.

Library code raises subclasses of :class:`MAILError`; each boundary translates them once
(the server through one exception handler and :func:`http_status_for`, the client by
mapping transport errors to :class:`MAILClientError`, the runtime by turning agent-visible
failures into MAIL system messages).

Tree::

    MAILError
    ├── ConfigurationError            mail.toml / environment is wrong
    ├── SwarmDefinitionError          swarms.json or a template is wrong (names swarm, agent, field)
    ├── InvalidMessageError           a message or payload breaks the protocol (names the field)
    ├── TaskError
    │   ├── TaskNotFoundError         no such task for this caller
    │   ├── TaskStateError            the task cannot take this request in its state
    │   └── TaskTimeoutError          waiting for a task took longer than allowed
    ├── AuthError
    │   ├── AuthenticationError       no, malformed or unknown credentials
    │   └── PermissionDeniedError     valid credentials, wrong role
    ├── AuthServiceError              the external auth service failed (not the caller's fault)
    ├── RemoteSwarmError
    │   └── RemoteSwarmUnavailableError   peer unknown, inactive, unreachable or failing
    ├── StorageError                  the store could not read or write (now: retried)
    │   ├── StorageRefusedError       the store refused a task's rows: they can never be stored
    │   ├── LeaseLostError            cluster mode: another replica holds the task's lease
    │   └── TaskNotStoredError        a task's turn ended but is not committed yet (503)
    ├── AddressRefusedError           an outgoing connection's address is refused (names the rule)
    ├── UnreachableError              a service cannot be reached at all (refused, unknown host)
    └── MAILClientError               an HTTP call made by MAILClient failed (status, detail)
                                      (also a RuntimeError and a ValueError, as v1.3.6's
                                      client raised those: ``except RuntimeError`` works)
"""

from __future__ import annotations

__all__ = [
    "MAILError",
    "ConfigurationError",
    "SwarmDefinitionError",
    "InvalidMessageError",
    "TaskError",
    "TaskNotFoundError",
    "TaskStateError",
    "TaskTimeoutError",
    "AuthError",
    "AuthenticationError",
    "PermissionDeniedError",
    "AuthServiceError",
    "RemoteSwarmError",
    "RemoteSwarmUnavailableError",
    "StorageError",
    "StorageRefusedError",
    "LeaseLostError",
    "TaskNotStoredError",
    "AddressRefusedError",
    "UnreachableError",
    "MAILClientError",
    "http_status_for",
]


class MAILError(Exception):
    """Base of every error raised by mail."""


class ConfigurationError(MAILError):
    """Configuration (mail.toml, environment, CLI flags) is missing or invalid."""


class SwarmDefinitionError(MAILError):
    """A swarm definition is invalid.

    ``swarm``, ``agent`` and ``field`` locate the problem when known; they are also part
    of the message so a log line alone says what to fix.
    """

    def __init__(
        self,
        message: str,
        *,
        swarm: str | None = None,
        agent: str | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = message
        self.swarm = swarm
        self.agent = agent
        self.field = field
        where = [
            f"{label} '{value}'"
            for label, value in (("swarm", swarm), ("agent", agent), ("field", field))
            if value is not None
        ]
        super().__init__(f"{', '.join(where)}: {message}" if where else message)

    def located(
        self, *, swarm: str | None = None, agent: str | None = None
    ) -> SwarmDefinitionError:
        """A copy with the swarm and agent filled in where this error left them open."""
        return SwarmDefinitionError(
            self.reason, swarm=self.swarm or swarm, agent=self.agent or agent, field=self.field
        )


class InvalidMessageError(MAILError):
    """A MAIL message or interswarm payload breaks the protocol; ``field`` names where."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class TaskError(MAILError):
    """A task-level request failed."""


class TaskNotFoundError(TaskError):
    """No task with this id exists for this caller."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        super().__init__(f"task '{task_id}' not found")


class TaskStateError(TaskError):
    """The task exists but cannot take this request in its current state."""


class TaskTimeoutError(TaskError):
    """Waiting for a task took longer than the allowed time."""


class AuthError(MAILError):
    """Authentication or authorization failed."""


class AuthenticationError(AuthError):
    """Credentials are missing, malformed or unknown."""


class PermissionDeniedError(AuthError):
    """Credentials are valid but do not grant this operation."""


class AuthServiceError(MAILError):
    """The external auth service failed, timed out or answered nonsense.

    Not the caller's fault (so not an :class:`AuthError`): the server answers 500 with a
    fixed detail, as the original does (CONTRACT §1.2), and logs the cause.
    """


class RemoteSwarmError(MAILError):
    """A remote swarm could not be reached or answered with an error."""


class RemoteSwarmUnavailableError(RemoteSwarmError):
    """The remote swarm is unknown, inactive, unreachable, slow or failing."""


class StorageError(MAILError):
    """The task store could not read or write.

    ``retry_after`` (seconds), when set, is when asking again may succeed: the server
    sends it as ``Retry-After`` with its 503.
    """

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StorageRefusedError(StorageError):
    """The store refused a task's rows (a value it cannot hold, a constraint, a size):
    writing them again cannot succeed, so the task is set aside (it ends ``failed``)."""


class LeaseLostError(StorageError):
    """Cluster mode: this replica no longer holds the lease of the task it wrote (another
    replica runs it now), so nothing of that write was stored."""


class TaskNotStoredError(StorageError):
    """A task's turn ended but the store could not commit it within the bound
    (``[database] commit_timeout``): its answer is held back. The task goes on and is
    stored once the store works again; ``task_id`` names it, ``retry_after`` says when to
    ask again (``GET /task``, or the event stream with ``Last-Event-ID``)."""

    def __init__(self, task_id: str, reason: str, *, retry_after: float = 1.0) -> None:
        super().__init__(
            f"task '{task_id}' ended but is not stored yet ({reason}); its answer is "
            f"held back until it is: ask again (GET /task?task_id={task_id}) in a moment",
            retry_after=retry_after,
        )
        self.task_id = task_id


class AddressRefusedError(MAILError):
    """An outgoing connection was refused before it was made: its host or an address the
    host resolves to is not allowed (link-local, cloud metadata, a denied network...).

    ``host`` is what was asked for, ``address`` the refused address (``None`` when the
    name itself is refused) and ``rule`` the rule that refused it (``link-local``,
    ``deny_networks``...); the message names all three and where to change the rule.
    """

    def __init__(self, message: str, *, host: str, rule: str, address: str | None = None) -> None:
        self.host = host
        self.address = address
        self.rule = rule
        super().__init__(message)


class UnreachableError(MAILError):
    """A service an agent needs cannot be reached at all: the connection was refused or
    its host name does not resolve. Asking again soon will not help, so the runtime gives
    the agent no further turn for it (the task fails after the first round of retries).
    """


class MAILClientError(MAILError, RuntimeError, ValueError):
    """An HTTP call made by the client failed.

    It is also a :class:`RuntimeError` (v1.3.6 raised one for transport errors) and a
    :class:`ValueError` (v1.3.6 raised one for non-JSON answers), so code written for the
    original's client keeps catching it.

    ``status`` is the HTTP status (``None`` when no response arrived), ``detail`` the
    server's explanation or the transport error text, and ``retry_after`` the seconds the
    server's ``Retry-After`` header asked to wait before trying again (``None`` without one).
    """

    def __init__(
        self, detail: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.detail = detail
        self.retry_after = retry_after
        prefix = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{prefix}{detail}")


_HTTP_STATUS: dict[type[MAILError], int] = {
    ConfigurationError: 500,
    SwarmDefinitionError: 422,
    InvalidMessageError: 422,
    TaskNotFoundError: 404,
    TaskStateError: 409,
    TaskTimeoutError: 504,
    AuthenticationError: 401,
    # The contract answers 401 for a wrong role, as the original does.
    PermissionDeniedError: 401,
    AuthServiceError: 500,
    RemoteSwarmUnavailableError: 502,
    RemoteSwarmError: 502,
    StorageError: 503,
    AddressRefusedError: 400,
    MAILClientError: 502,
}


def http_status_for(error: MAILError) -> int:
    """Return the HTTP status the server answers for ``error`` (500 when unmapped)."""
    for cls in type(error).__mro__:
        status = _HTTP_STATUS.get(cls)
        if status is not None:
            return status
    return 500
