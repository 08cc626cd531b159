"""MAP Mail: persistent conversations (turns, threads, participants, summaries) over the
tasks of a MAIL server, the ``mail/*`` methods of the seed's "MAP Mail Protocol".

:class:`ConversationService` runs the methods over a :class:`ConversationStore`
(:func:`conversation_store_for` picks the one that lives in a task store's database);
:class:`EventBus` carries the ``mail.*`` events to ``map/subscribe`` subscriptions. For the
server's MAP routes: the parameter models and checks of the ``map/*`` methods
(:func:`check_params`, :func:`parse_params`, :class:`InvalidParamsError`, and
:class:`Params`, the base of a method's params model), the
:class:`StatusFollower` that makes conversations follow their tasks, and
:func:`summarizer_for`, the configured summarizer.
"""

from __future__ import annotations

from mail.conversations._access import InvalidParamsError, opt_str
from mail.conversations._base import turn_of
from mail.conversations._lifecycle import StatusFollower
from mail.conversations._llm_summary import summarizer_for
from mail.conversations._params import (
    AuthCredentials,
    MapAuthenticate,
    MapConnect,
    MapDisconnect,
    MapReplay,
    MapSend,
    MapSubscribe,
    MapUnsubscribe,
    Params,
    check_params,
    describe,
    parse_params,
    problems,
)
from mail.conversations._sql_store import (
    PostgresConversationStore,
    SQLiteConversationStore,
    conversation_store_for,
)
from mail.conversations.errors import MailProtocolError
from mail.conversations.events import (
    EventBus,
    EventsNotRetainedError,
    MailEvent,
    Reader,
    Replay,
    Subscription,
)
from mail.conversations.service import METHODS, Actor, ConversationService
from mail.conversations.store import ConversationStore, MemoryConversationStore, Record

__all__ = [
    "METHODS",
    "Actor",
    "AuthCredentials",
    "ConversationService",
    "ConversationStore",
    "EventBus",
    "EventsNotRetainedError",
    "InvalidParamsError",
    "MailEvent",
    "MailProtocolError",
    "MapAuthenticate",
    "MapConnect",
    "MapDisconnect",
    "MapReplay",
    "MapSend",
    "MapSubscribe",
    "MapUnsubscribe",
    "MemoryConversationStore",
    "Params",
    "PostgresConversationStore",
    "Reader",
    "Record",
    "Replay",
    "SQLiteConversationStore",
    "StatusFollower",
    "Subscription",
    "check_params",
    "conversation_store_for",
    "describe",
    "opt_str",
    "parse_params",
    "problems",
    "summarizer_for",
    "turn_of",
]
