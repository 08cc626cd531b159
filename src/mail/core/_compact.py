"""The stored form of a task: each message once.

A task's messages are stored in its ``new_message`` events (``extra_data.full_message``).
What can be derived from them is not stored a second time:

- the ``task_id`` of every event's ``data`` (the row has it);
- the description of a ``new_message`` event, ``<prefix>`` + the message rendered by
  :func:`~mail.core.message.build_mail_xml`: only the prefix is kept, as ``$prefix``;
- a history's user turn that is a message of the task rendered the same way, and the
  task's response when it is a message of the task: both become ``{"$message": id}``.

:func:`expand` turns what :class:`Compactor` wrote back into what the runtime had. Rows
without these marks (written before, or by the original implementation) load as they
are, and anything that is not exactly derivable is stored whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mail.core.events import EventName
from mail.core.message import build_mail_xml

if TYPE_CHECKING:
    from mail.core.events import EventLog, MAILEvent
    from mail.core.message import MAILMessage

__all__ = ["Compactor", "expand"]

_PREFIX = "$prefix"
_MESSAGE = "$message"
_USER_TURN = {"role", "content"}


@dataclass(slots=True)
class _Index:
    """A task's messages so far: by id, and the id of each message's rendering."""

    by_id: dict[str, MAILMessage] = field(default_factory=dict)
    by_xml: dict[str, str] = field(default_factory=dict)
    seen: int = 0  # the sequence number of the last event indexed


def _full_message(event: MAILEvent) -> MAILMessage | None:
    message = event.extra_data.get("full_message") if event.event == EventName.NEW_MESSAGE else None
    if isinstance(message, dict) and isinstance(message.get("id"), str):
        return message  # type: ignore[return-value]  # a message the runtime emitted
    return None


def _rendered(message: MAILMessage) -> str | None:
    try:
        return build_mail_xml(message)["content"]
    except (KeyError, TypeError, AttributeError):  # not a message after all: stored whole
        return None


class Compactor:
    """The compact stored form of each task's events, histories and response, from the
    messages of its in-memory event log."""

    def __init__(self) -> None:
        self._indexes: dict[str, _Index] = {}

    def _index(self, log: EventLog) -> _Index:
        index = self._indexes.setdefault(log.task_id, _Index())
        for event in log.since(index.seen):
            index.seen = event.seq or index.seen
            message = _full_message(event)
            if message is not None and message["id"] not in index.by_id:
                index.by_id[message["id"]] = message
                xml = _rendered(message)
                if xml is not None:
                    index.by_xml.setdefault(xml, message["id"])
        return index

    def forget(self, task_id: str) -> None:
        """Drop what is kept of ``task_id``'s messages (rebuilt from its log when needed)."""
        self._indexes.pop(task_id, None)

    def event(self, event: MAILEvent) -> dict[str, Any]:
        """The stored ``data`` of ``event``."""
        data: dict[str, Any] = {"timestamp": event.timestamp}
        message = _full_message(event)
        xml = _rendered(message) if message is not None else None
        if xml is not None and event.description.endswith(xml):
            data[_PREFIX] = event.description[: len(event.description) - len(xml)]
        else:
            data["description"] = event.description
        data["extra_data"] = event.extra_data
        return data

    def history(self, log: EventLog, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The stored form of an agent's ``history`` in the task of ``log``."""
        by_xml = self._index(log).by_xml
        out: list[dict[str, Any]] = []
        for item in history:
            turn = item.keys() == _USER_TURN and item["role"] == "user"
            content = item["content"] if turn else None
            message_id = by_xml.get(content) if isinstance(content, str) else None
            out.append(item if message_id is None else {_MESSAGE: message_id})
        return out

    def response(self, log: EventLog, response: dict[str, Any] | None) -> dict[str, Any] | None:
        """The stored form of the task's ``response``."""
        message_id = response.get("id") if response is not None else None
        if not isinstance(message_id, str):
            return response
        known = self._index(log).by_id.get(message_id)
        return {_MESSAGE: message_id} if known == response else response


def expand(
    events: list[tuple[str, dict[str, Any]]],
    histories: dict[str, list[dict[str, Any]]],
    response: dict[str, Any] | None,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]], dict[str, Any] | None]:
    """What a task's stored ``events`` (``(name, data)``, in order), ``histories`` and
    ``response`` were before :class:`Compactor` wrote them: event ``data`` without
    ``task_id``, the histories and the response."""
    messages: dict[str, dict[str, Any]] = {}
    datas: list[dict[str, Any]] = []
    for name, stored in events:
        data = dict(stored)
        message = (data.get("extra_data") or {}).get("full_message")
        if name == EventName.NEW_MESSAGE and isinstance(message, dict):
            messages.setdefault(str(message.get("id")), message)
        if _PREFIX in data and isinstance(message, dict):
            prefix = data.pop(_PREFIX)
            data["description"] = prefix + build_mail_xml(message)["content"]  # type: ignore[arg-type]
        datas.append(data)

    def message_of(value: dict[str, Any]) -> dict[str, Any] | None:
        ref = value.get(_MESSAGE) if len(value) == 1 else None
        return messages.get(ref) if isinstance(ref, str) else None

    def item(value: dict[str, Any]) -> dict[str, Any]:
        message = message_of(value)
        return value if message is None else build_mail_xml(message)  # type: ignore[arg-type]

    expanded = {agent: [item(i) for i in history] for agent, history in histories.items()}
    if response is not None:
        response = message_of(response) or response
    return datas, expanded, response
