"""The MAP Mail wire shapes (camelCase, as the seed writes them) and their vocabulary.

Conversations, participants, turns, threads and summaries are plain JSON objects, typed
here as :class:`~typing.TypedDict`: what a store keeps is what ``mail/*`` returns. Times
are epoch milliseconds (the seed's ``catchUp.from`` and ``afterTimestamp`` are). The
shapes the seed leaves open (11 of its 13 results) follow the official SDK's types
(``@multi-agent-protocol/sdk``) and keep our own fields besides, written down in
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
    "ParticipantType",
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
    "participant_type",
    "visibility_of",
]

ConversationType = Literal["user-session", "agent-task", "multi-agent", "mixed"]
ConversationStatus = Literal["active", "paused", "completed", "failed", "archived"]
Role = Literal["initiator", "assistant", "worker", "observer", "moderator"]
HistoryAccess = Literal["none", "from-join", "full"]
VisibilityType = Literal["all", "participants", "role", "private"]
ParticipantType = Literal["user", "agent", "system"]

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
    """A participant: its id, role, permissions and when it joined (and left); ``type``
    (the SDK's) says whether it is a caller (``user``), an agent or the ``system``."""

    id: str
    conversationId: str
    type: ParticipantType
    role: Role
    permissions: Permissions
    joinedAt: int
    leftAt: int | None


class Visibility(TypedDict):
    """Who sees a turn: ``all``, listed participants (``ids``, the SDK's name, and
    ``participants``, ours: the same list), listed ``roles``, ``private``."""

    type: VisibilityType
    ids: NotRequired[list[str]]
    participants: NotRequired[list[str]]
    roles: NotRequired[list[str]]


class TurnSource(TypedDict):
    """How a turn was recorded: ``explicit`` (``method: "mail/turn"``) or ``intercepted`` (a
    message delivered in the swarm; ``messageId`` is the MAIL message id)."""

    type: Literal["explicit", "intercepted"]
    method: NotRequired[Literal["mail/turn"]]
    messageId: NotRequired[str]


class Turn(TypedDict):
    """One turn of a conversation; ``participant`` (the SDK's name) and ``participantId``
    (ours) are its author. A ``redacted`` one has ``content`` null and
    ``metadata.redaction{by, at, reason}`` (``x-mail/turn/redact``)."""

    id: str
    conversationId: str
    participant: str
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
    """A thread rooted at a turn; ``depth`` is 1 for a top-level thread. ``turnCount``,
    ``participantCount`` (the authors of its turns) and ``updatedAt`` (its last turn's
    time, or ``createdAt``) count the turns the reader sees."""

    id: str
    conversationId: str
    rootTurnId: str
    parentThreadId: str | None
    subject: str | None
    depth: int
    createdBy: str
    createdAt: int
    turnCount: int
    participantCount: int
    updatedAt: int


class Conversation(TypedDict):
    """A conversation; ``taskId`` is the MAIL task it is bound to, if any;
    ``participantCount`` counts the participants that have not left; ``closedAt`` is set
    when it is closed."""

    id: str
    type: ConversationType
    status: ConversationStatus
    subject: str | None
    parentConversationId: str | None
    parentTurnId: str | None
    taskId: str | None
    metadata: dict[str, Any]
    participantCount: int
    createdBy: str
    createdAt: int
    updatedAt: int
    closedAt: NotRequired[int]
    closedBy: NotRequired[str]
    closeReason: NotRequired[str]


class Summary(TypedDict):
    """``mail/summary``'s answer: the summary of a conversation or one thread of it
    (``scope.threadId``) as the SDK reads it (``summary``, the text; the sections;
    ``generated``: made by this call rather than read from the cache; ``cachedAt``: when
    it was made), with ours: ``turnCount`` (the public turns it covers), ``generator``,
    ``extractive`` or ``litellm`` (then ``model`` names the model), and ``fallbackFrom:
    "litellm"`` for an extractive summary made because the model failed."""

    conversationId: str
    scope: dict[str, str]
    summary: str
    keyPoints: NotRequired[list[str]]
    keyDecisions: NotRequired[list[str]]
    openQuestions: NotRequired[list[str]]
    generated: bool
    cachedAt: int
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


def participant_type(participant_id: str) -> ParticipantType:
    """The SDK's ``type`` of a participant: a caller of this server (``user:…``,
    ``admin:…``) is a ``user``, ``system`` (who closes a conversation whose task failed)
    the ``system``, anyone else (an agent of the swarm, an invited id) an ``agent``."""
    if participant_id == "system":
        return "system"
    if participant_id.startswith(("user:", "admin:")):
        return "user"
    return "agent"


def visibility_of(given: dict[str, Any] | None) -> Visibility:
    """A turn's stored ``visibility`` from its params: ``all`` when none; for
    ``participants``, the ids given as ``ids`` (the SDK's name) or ``participants`` (ours),
    both kept under both names."""
    if not given:
        return Visibility(type="all")
    visibility = Visibility(type=given["type"])
    if visibility["type"] == "role":
        visibility["roles"] = list(given.get("roles") or [])
    if visibility["type"] == "participants":
        ids = [*(given.get("ids") or []), *(given.get("participants") or [])]
        listed = list(dict.fromkeys(ids))
        visibility["ids"], visibility["participants"] = listed, list(listed)
    return visibility
