"""MAP Mail: persistent conversations (turns, threads, participants, summaries) over the
tasks of a MAIL server, the ``mail/*`` methods of the seed's "MAP Mail Protocol".

:class:`ConversationService` runs the methods over a :class:`ConversationStore`
(:func:`conversation_store_for` picks the one that lives in a task store's database);
:class:`EventBus` carries the ``mail.*`` events to ``map/subscribe`` subscriptions.
"""

from __future__ import annotations

from mail.conversations._sql_store import (
    PostgresConversationStore,
    SQLiteConversationStore,
    conversation_store_for,
)
from mail.conversations.errors import MailProtocolError
from mail.conversations.events import EventBus, Subscription
from mail.conversations.service import METHODS, Actor, ConversationService
from mail.conversations.store import ConversationStore, MemoryConversationStore, Record

__all__ = [
    "METHODS",
    "Actor",
    "ConversationService",
    "ConversationStore",
    "EventBus",
    "MailProtocolError",
    "MemoryConversationStore",
    "PostgresConversationStore",
    "Record",
    "SQLiteConversationStore",
    "Subscription",
    "conversation_store_for",
]
