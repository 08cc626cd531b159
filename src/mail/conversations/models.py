"""The MAP Mail wire shapes (camelCase, as the seed writes them) and their vocabulary.

Conversations, participants, turns, threads and summaries are plain JSON objects, typed
here as :class:`~typing.TypedDict`: what a store keeps is what ``mail/*`` returns. Times
are epoch milliseconds (the seed's ``catchUp.from`` and ``afterTimestamp`` are). The
shapes the seed leaves open (11 of its 13 results) are our reading, written down in
``docs/map-mail.md``.
"""

from __future__ import annotations

import time
from typing import Any, Literal, NotRequired, TypedDict, get_args

__all__ = [
    "CLOSED_STATUSES",
    "CONTENT_TYPES",
    "ROLES",
    "Conversation",
    "ConversationStatus",
    "ConversationType",
    "HistoryAccess",
    "Participant",
    "Permissions",
    "Role",
    "Summary",
    "Thread",
    "Turn",
    "TurnSource",
    "Visibility",
    "default_permissions",
    "is_valid_content_type",
    "now_ms",
]

ConversationType = Literal["user-session", "agent-task", "multi-agent", "mixed"]
ConversationStatus = Literal["active", "paused", "completed", "failed", "archived"]
Role = Literal["initiator", "assistant", "worker", "observer", "moderator"]
HistoryAccess = Literal["none", "from-join", "full"]
VisibilityType = Literal["all", "participants", "role", "private"]

ROLES: tuple[str, ...] = get_args(Role)
CONVERSATION_TYPES: tuple[str, ...] = get_args(ConversationType)
#: the well-known content types; any other must start with ``x-``
CONTENT_TYPES: tuple[str, ...] = ("text", "data", "event", "reference")
#: statuses in which a conversation takes no more changes
CLOSED_STATUSES: frozenset[str] = frozenset({"completed", "failed", "archived"})


class Permissions(TypedDict):
    """What a participant may do (the seed's seven permissions)."""

    canSend: bool
    canObserve: bool
    canInvite: bool
    canRemove: bool
    canCreateThreads: bool
    historyAccess: HistoryAccess
    canSeeInternal: bool


class Participant(TypedDict):
    """A participant: its id, role, permissions and when it joined (and left)."""

    id: str
    role: Role
    permissions: Permissions
    joinedAt: int
    leftAt: int | None


class Visibility(TypedDict):
    """Who sees a turn: ``all``, listed ``participants``, listed ``roles``, ``private``."""

    type: VisibilityType
    participants: NotRequired[list[str]]
    roles: NotRequired[list[str]]


class TurnSource(TypedDict):
    """How a turn was recorded: ``explicit`` (``mail/turn``) or ``intercepted`` (a message
    delivered in the swarm; ``messageId`` is the MAIL message id)."""

    type: Literal["explicit", "intercepted"]
    messageId: NotRequired[str]


class Turn(TypedDict):
    """One turn of a conversation; a ``redacted`` one has ``content`` null and
    ``metadata.redaction{by, at, reason}`` (``x-mail/turn/redact``)."""

    id: str
    conversationId: str
    participantId: str
    timestamp: int
    contentType: str
    content: Any
    threadId: str | None
    inReplyTo: str | None
    visibility: Visibility
    source: TurnSource
    metadata: dict[str, Any]
    status: Literal["recorded", "redacted"]


class Thread(TypedDict):
    """A thread rooted at a turn; ``depth`` is 1 for a top-level thread."""

    id: str
    conversationId: str
    rootTurnId: str
    parentThreadId: str | None
    subject: str | None
    depth: int
    createdBy: str
    createdAt: int


class Conversation(TypedDict):
    """A conversation; ``taskId`` is the MAIL task it is bound to, if any."""

    id: str
    type: ConversationType
    status: ConversationStatus
    subject: str | None
    parentConversationId: str | None
    parentTurnId: str | None
    taskId: str | None
    metadata: dict[str, Any]
    createdBy: str
    createdAt: int
    updatedAt: int
    closedBy: NotRequired[str]
    closeReason: NotRequired[str]


class Summary(TypedDict):
    """A summary of a conversation or one thread of it (``scope.threadId``):
    ``generator`` is ``extractive`` or ``litellm`` (then ``model`` names the model);
    ``fallbackFrom: "litellm"`` marks an extractive summary made because the model
    failed."""

    conversationId: str
    scope: dict[str, str]
    text: str
    keyPoints: NotRequired[list[str]]
    keyDecisions: NotRequired[list[str]]
    openQuestions: NotRequired[list[str]]
    turnCount: int
    generatedAt: int
    generator: Literal["extractive", "litellm"]
    model: NotRequired[str]
    fallbackFrom: NotRequired[Literal["litellm"]]


_EVERYTHING = Permissions(
    canSend=True,
    canObserve=True,
    canInvite=True,
    canRemove=True,
    canCreateThreads=True,
    historyAccess="full",
    canSeeInternal=True,
)
_MEMBER = Permissions(
    canSend=True,
    canObserve=True,
    canInvite=False,
    canRemove=False,
    canCreateThreads=True,
    historyAccess="full",
    canSeeInternal=False,
)
_DEFAULTS: dict[str, Permissions] = {
    "initiator": _EVERYTHING,
    "moderator": _EVERYTHING,
    "assistant": {**_MEMBER, "canSeeInternal": True},
    "worker": _MEMBER,
    "observer": {**_MEMBER, "canSend": False, "canCreateThreads": False},
}


def default_permissions(role: str, overrides: dict[str, Any] | None = None) -> Permissions:
    """The permissions of a new participant of ``role``, with ``overrides`` (the known
    keys of a ``mail/invite``'s ``participant.permissions``) applied."""
    permissions = Permissions(**_DEFAULTS.get(role, _MEMBER))
    for name, value in (overrides or {}).items():
        if name in permissions:
            permissions[name] = value  # type: ignore[literal-required]  # checked just above
    return permissions


def is_valid_content_type(content_type: str) -> bool:
    """True for the four well-known types and any ``x-*`` type."""
    return content_type in CONTENT_TYPES or (content_type.startswith("x-") and content_type != "x-")


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000
