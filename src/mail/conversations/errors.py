"""The MAP Mail error codes (10000-10010) as one :class:`~mail.errors.MAILError` family.

Tree::

    MAILError
    └── MailProtocolError             carries the JSON-RPC ``code`` of the seed's table
        ├── ConversationNotFoundError     10000
        ├── ConversationClosedError       10001
        ├── NotAParticipantError          10002
        ├── MailPermissionDeniedError     10003
        ├── ParticipantAlreadyJoinedError 10004
        ├── ParticipantNotFoundError      10005
        ├── TurnNotFoundError             10006
        ├── ThreadNotFoundError           10007
        ├── InvalidContentTypeError       10008
        ├── ThreadNestingLimitError       10009
        └── MailNotEnabledError           10010
"""

from __future__ import annotations

from typing import Any, ClassVar

from mail.errors import MAILError

__all__ = [
    "ConversationClosedError",
    "ConversationNotFoundError",
    "InvalidContentTypeError",
    "MailNotEnabledError",
    "MailPermissionDeniedError",
    "MailProtocolError",
    "NotAParticipantError",
    "ParticipantAlreadyJoinedError",
    "ParticipantNotFoundError",
    "ThreadNestingLimitError",
    "ThreadNotFoundError",
    "TurnNotFoundError",
]


class MailProtocolError(MAILError):
    """A MAP Mail request failed for a reason the seed names: ``code`` (10000-10010),
    ``name`` (``CONVERSATION_NOT_FOUND``, ...) and ``data`` (what it was about, for the
    JSON-RPC error's ``data``)."""

    code: ClassVar[int] = 10000
    name: ClassVar[str] = "MAIL_ERROR"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = {"name": self.name, **data}


class ConversationNotFoundError(MailProtocolError):
    """The conversation id does not exist (for this caller)."""

    code = 10000
    name = "CONVERSATION_NOT_FOUND"


class ConversationClosedError(MailProtocolError):
    """The conversation is closed: it takes no more changes."""

    code = 10001
    name = "CONVERSATION_CLOSED"


class NotAParticipantError(MailProtocolError):
    """The caller is not (or no longer) a participant."""

    code = 10002
    name = "NOT_A_PARTICIPANT"


class MailPermissionDeniedError(MailProtocolError):
    """The caller's participant lacks the permission the request needs."""

    code = 10003
    name = "MAIL_PERMISSION_DENIED"


class ParticipantAlreadyJoinedError(MailProtocolError):
    """The participant is already in the conversation."""

    code = 10004
    name = "PARTICIPANT_ALREADY_JOINED"


class ParticipantNotFoundError(MailProtocolError):
    """The participant id is not in the conversation."""

    code = 10005
    name = "PARTICIPANT_NOT_FOUND"


class TurnNotFoundError(MailProtocolError):
    """The turn id does not exist in the conversation."""

    code = 10006
    name = "TURN_NOT_FOUND"


class ThreadNotFoundError(MailProtocolError):
    """The thread id does not exist in the conversation."""

    code = 10007
    name = "THREAD_NOT_FOUND"


class InvalidContentTypeError(MailProtocolError):
    """The content type is neither well-known nor ``x-`` prefixed."""

    code = 10008
    name = "INVALID_CONTENT_TYPE"


class ThreadNestingLimitError(MailProtocolError):
    """A new thread would be nested deeper than ``[server.map] max_thread_depth``."""

    code = 10009
    name = "THREAD_NESTING_LIMIT"


class MailNotEnabledError(MailProtocolError):
    """MAP Mail is off on this server (``[server.map] enabled = false``)."""

    code = 10010
    name = "MAIL_NOT_ENABLED"
