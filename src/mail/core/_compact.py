"""The stored form of a task: each message once.

A task's messages are stored in its ``new_message`` events (``extra_data.full_message``)
and its tool calls in its ``tool_call`` events. What can be derived from them is not
stored a second time:

- the ``task_id`` of every event's ``data`` (the row has it), and of each stored message;
  timestamps are stored as microseconds since the epoch (``$t``);
- the description of a ``new_message`` event, ``<prefix>`` + the message rendered by
  :func:`~mail.core.message.build_mail_xml`: only the prefix is kept (``$prefix``); that
  of a ``tool_call`` or ``task_complete_call`` event, made from the agent's name: only
  the name (``$agent``); that of ``task_complete``, ``response: '<body>'``: which message
  (``$reply``);
- a history's user turn that is a message of the task rendered the same way, and the
  task's response when it is a message of the task: both become ``{"$message": n}``;
  so does the ``full_message`` of a message delivered again (to another recipient);
- the ``arguments`` of a history's function call, when they are the JSON of the call's
  ``tool_args``: ``$args`` says which of the standard encodings gave them.

A message is named by ``n``, its place among the distinct messages of the task's
``new_message`` events in sequence order (0 first): shorter than its id, and fixed, since
a task's events are only ever appended, and the events a reference needs are always in
the same write as the reference or an earlier one.

:func:`expand` turns what :class:`Compactor` wrote back into what the runtime had. Rows
without these marks (written before, or by the original implementation) load as they
are, and anything that is not exactly derivable is stored whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from mail.core.events import EventName
from mail.core.message import build_mail_xml

if TYPE_CHECKING:
    from collections.abc import Callable

    from mail.core.events import EventLog, MAILEvent
    from mail.core.message import MAILMessage

__all__ = ["Compactor", "expand"]

_PREFIX = "$prefix"
_AGENT = "$agent"
_MESSAGE = "$message"
_ARGS = "$args"
_TIME = "$t"
_REPLY = "$reply"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_UTC_MICROS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}\+00:00")
# descriptions made from the agent's name and the event's extra data
_TEMPLATES: dict[str, str] = {
    EventName.TOOL_CALL: "agent {agent} called {tool_name}",
    EventName.TASK_COMPLETE_CALL: "agent {agent} called task_complete, full response to follow",
}
_USER_TURN = {"role", "content"}
# the encodings of tool arguments recognised, by the number ``$args`` stores
_ENCODINGS: tuple[dict[str, Any], ...] = (
    {},
    {"separators": (",", ":")},
    {"ensure_ascii": False},
    {"separators": (",", ":"), "ensure_ascii": False},
)


@dataclass(slots=True)
class _Index:
    """A task's messages and tool calls so far."""

    by_id: dict[str, MAILMessage] = field(default_factory=dict)  # in the log's order
    number: dict[str, int] = field(default_factory=dict)  # id -> place in by_id
    first: dict[str, int | None] = field(default_factory=dict)  # id -> seq of its first event
    by_xml: dict[str, int] = field(default_factory=dict)  # rendering -> place in by_id
    xml: dict[str, str] = field(default_factory=dict)  # id -> rendering
    calls: dict[str, Any] = field(default_factory=dict)  # tool call id -> tool_args
    seen: int = 0  # the sequence number of the last event indexed


def _full_message(event: MAILEvent) -> MAILMessage | None:
    message = event.extra_data.get("full_message") if event.event == EventName.NEW_MESSAGE else None
    if isinstance(message, dict) and isinstance(message.get("id"), str):
        return message  # type: ignore[return-value]  # a message the runtime emitted
    return None


def _rendered(message: Any) -> str | None:
    try:
        return build_mail_xml(message)["content"]
    except (KeyError, TypeError, AttributeError):  # not a message after all: stored whole
        return None


def _micros(timestamp: str) -> int | None:
    """``timestamp`` as microseconds since the epoch, when that gives it back exactly: the
    runtime's form (``utc_timestamp``), which :func:`_timestamp` writes the same way."""
    if _UTC_MICROS.fullmatch(timestamp) is None:
        return None
    try:
        return (datetime.fromisoformat(timestamp) - _EPOCH) // _MICROSECOND
    except ValueError:  # the shape, not a date (month 13)
        return None


def _timestamp(micros: int) -> str:
    return (_EPOCH + timedelta(microseconds=micros)).isoformat(timespec="microseconds")


def _stored_message(message: MAILMessage, task_id: str) -> dict[str, Any]:
    """``message`` without its task id (when it is the task's, in first place: every message
    has one, so absent means the row's) and with its timestamp in microseconds."""
    stored: dict[str, Any] = dict(message)
    payload = dict(message["message"])
    if next(iter(payload), None) == "task_id" and payload["task_id"] == task_id:
        del payload["task_id"]
        stored["message"] = payload
    stamp = message.get("timestamp")
    micros = _micros(stamp) if isinstance(stamp, str) else None
    if micros is not None:
        stored = _renamed(stored, "timestamp", _TIME, lambda _: micros)
    return stored


def _renamed(
    value: dict[str, Any], old: str, new: str, convert: Callable[[Any], Any]
) -> dict[str, Any]:
    """``value`` with key ``old`` renamed ``new`` in its place, its value converted."""
    return {(new if k == old else k): (convert(v) if k == old else v) for k, v in value.items()}


def _fill(template: str, extra: dict[str, Any], agent: str) -> str | None:
    try:
        return template.format_map({**extra, "agent": agent})
    except (KeyError, ValueError, IndexError, AttributeError):
        return None


def _reply(message: Any) -> str | None:
    """The description of the ``task_complete`` event whose final message is ``message``."""
    try:
        return f"response: '{message['message']['body']}'"
    except (KeyError, TypeError):
        return None


def _encoding(arguments: Any, tool_args: Any) -> int | None:
    """Which of :data:`_ENCODINGS` turns ``tool_args`` into ``arguments``, if any."""
    if not isinstance(arguments, str) or not isinstance(tool_args, dict):
        return None
    for number, options in enumerate(_ENCODINGS):
        if json.dumps(tool_args, **options) == arguments:
            return number
    return None


def _call_args(data: dict[str, Any]) -> tuple[str, Any] | None:
    extra = data.get("extra_data")
    call_id = extra.get("tool_call_id") if isinstance(extra, dict) else None
    return (call_id, extra.get("tool_args")) if isinstance(call_id, str) else None  # type: ignore[union-attr]


class Compactor:
    """The compact stored form of each task's events, histories and response, from the
    messages and calls of its in-memory event log."""

    def __init__(self) -> None:
        self._indexes: dict[str, _Index] = {}

    def _index(self, log: EventLog) -> _Index:
        index = self._indexes.setdefault(log.task_id, _Index())
        for event in log.since(index.seen):
            index.seen = event.seq or index.seen
            if event.event == EventName.TOOL_CALL:
                call = _call_args({"extra_data": event.extra_data})
                if call is not None:
                    index.calls.setdefault(*call)
            message = _full_message(event)
            if message is not None and message["id"] not in index.by_id:
                number = index.number[message["id"]] = len(index.by_id)
                index.first[message["id"]] = event.seq
                index.by_id[message["id"]] = message
                xml = _rendered(message) if event.rendering is None else event.rendering
                if xml is not None:
                    index.by_xml.setdefault(xml, number)
                    index.xml[message["id"]] = xml
        return index

    def forget(self, task_id: str) -> None:
        """Drop what is kept of ``task_id`` (rebuilt from its log when needed)."""
        self._indexes.pop(task_id, None)

    def event(self, log: EventLog, event: MAILEvent) -> dict[str, Any]:
        """The stored ``data`` of ``event``, an event of ``log``."""
        data: dict[str, Any] = {}
        stamp = _micros(event.timestamp)
        if stamp is None:
            data["timestamp"] = event.timestamp
        else:
            data[_TIME] = stamp
        extra = event.extra_data
        message = _full_message(event)
        data.update(self._description(log, event, message))
        if message is not None:
            index = self._index(log)
            number = index.number.get(message["id"])
            again = index.first.get(message["id"]) != event.seq  # a copy delivered again
            if number is not None and again and index.by_id[message["id"]] == message:
                stored: dict[str, Any] = {_MESSAGE: number}
            else:
                stored = _stored_message(message, event.task_id)
            extra = {**extra, "full_message": stored}
        data["extra_data"] = extra
        return data

    def _rendering(self, log: EventLog, message: MAILMessage) -> str | None:
        index = self._index(log)
        if index.by_id.get(message["id"]) is message:  # rendered once, when indexed
            return index.xml.get(message["id"])
        return _rendered(message)

    def _description(
        self, log: EventLog, event: MAILEvent, message: MAILMessage | None
    ) -> dict[str, Any]:
        description = event.description
        xml = self._rendering(log, message) if message is not None else None
        if xml is not None and description.endswith(xml):
            return {_PREFIX: description[: len(description) - len(xml)]}
        template = _TEMPLATES.get(event.event)
        if template is not None and description.startswith("agent "):
            agent = description[6:].split(" ", 1)[0]
            if _fill(template, event.extra_data, agent) == description:
                return {_AGENT: agent}
        if event.event == EventName.TASK_COMPLETE and not event.extra_data:
            known = list(self._index(log).by_id.values())
            for number in reversed(range(len(known))):
                if description == _reply(known[number]):
                    return {_REPLY: number}
        return {"description": description}

    def history(self, log: EventLog, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The stored form of an agent's ``history`` in the task of ``log``."""
        index = self._index(log)
        return [_compact_item(item, index) for item in history]

    def response(self, log: EventLog, response: dict[str, Any] | None) -> dict[str, Any] | None:
        """The stored form of the task's ``response``."""
        message_id = response.get("id") if response is not None else None
        if not isinstance(message_id, str):
            return response
        index = self._index(log)
        known = index.by_id.get(message_id)
        return {_MESSAGE: index.number[message_id]} if known == response else response


def _compact_item(item: dict[str, Any], index: _Index) -> dict[str, Any]:
    if item.keys() == _USER_TURN and item["role"] == "user":
        content = item["content"]
        number = index.by_xml.get(content) if isinstance(content, str) else None
        return item if number is None else {_MESSAGE: number}
    if item.get("type") == "function_call" and isinstance(item.get("call_id"), str):
        return _without_arguments(item, index.calls.get(item["call_id"]))
    calls = item.get("tool_calls") if item.get("role") == "assistant" else None
    if isinstance(calls, list) and all(isinstance(c, dict) for c in calls):
        compacted = []
        for call in calls:
            function = call.get("function")
            if isinstance(function, dict) and isinstance(call.get("id"), str):
                function = _without_arguments(function, index.calls.get(call["id"]))
                call = {**call, "function": function}  # noqa: PLW2901
            compacted.append(call)
        return {**item, "tool_calls": compacted}
    return item


def _without_arguments(item: dict[str, Any], tool_args: Any) -> dict[str, Any]:
    number = _encoding(item.get("arguments"), tool_args)
    if number is None or _ARGS in item:
        return item
    return {
        (_ARGS if k == "arguments" else k): (number if k == "arguments" else v)
        for k, v in item.items()
    }


def _with_arguments(item: dict[str, Any], tool_args: Any) -> dict[str, Any]:
    number = item.get(_ARGS)
    if not isinstance(number, int) or not 0 <= number < len(_ENCODINGS) or tool_args is None:
        return item
    arguments = json.dumps(tool_args, **_ENCODINGS[number])
    return {
        ("arguments" if k == _ARGS else k): (arguments if k == _ARGS else v)
        for k, v in item.items()
    }


def expand(
    task_id: str,
    events: list[tuple[str, dict[str, Any]]],
    histories: dict[str, list[dict[str, Any]]],
    response: dict[str, Any] | None,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]], dict[str, Any] | None]:
    """What a task's stored ``events`` (``(name, data)``, in order), ``histories`` and
    ``response`` were before :class:`Compactor` wrote them (event ``data`` without its
    ``task_id``)."""
    messages: dict[str, dict[str, Any]] = {}
    calls: dict[str, Any] = {}
    datas = [_with_message(task_id, name, data, messages, calls) for name, data in events]
    ordered = list(messages.values())
    datas = [
        _expand_event(name, data, ordered) for (name, _), data in zip(events, datas, strict=True)
    ]

    def message_of(value: dict[str, Any]) -> dict[str, Any] | None:
        return _numbered(ordered, value.get(_MESSAGE)) if len(value) == 1 else None

    def item(value: dict[str, Any]) -> dict[str, Any]:
        message = message_of(value)
        if message is not None:
            return build_mail_xml(message)  # type: ignore[arg-type]
        if _ARGS in value and isinstance(value.get("call_id"), str):
            return _with_arguments(value, calls.get(value["call_id"]))
        tool_calls = value.get("tool_calls")
        if isinstance(tool_calls, list) and any(_has_args(c) for c in tool_calls):
            return {**value, "tool_calls": [_expand_call(c, calls) for c in tool_calls]}
        return value

    expanded = {agent: [item(i) for i in history] for agent, history in histories.items()}
    if response is not None:
        response = message_of(response) or response
    return datas, expanded, response


def _with_message(
    task_id: str,
    name: str,
    stored: dict[str, Any],
    messages: dict[str, dict[str, Any]],
    calls: dict[str, Any],
) -> dict[str, Any]:
    """``stored`` with its message's task id put back; its message and tool call noted."""
    data = dict(stored)
    extra = data.get("extra_data")
    message = extra.get("full_message") if isinstance(extra, dict) else None
    if name == EventName.NEW_MESSAGE and isinstance(message, dict) and _MESSAGE in message:
        again = _numbered(list(messages.values()), message[_MESSAGE])  # delivered again
        if again is not None and len(message) == 1:
            data["extra_data"] = {**extra, "full_message": again}  # type: ignore[dict-item]
            message = None
    if name == EventName.NEW_MESSAGE and isinstance(message, dict):
        payload = message.get("message")
        if isinstance(payload, dict) and "task_id" not in payload:
            message = {**message, "message": {"task_id": task_id, **payload}}
        if _TIME in message:
            message = _renamed(message, _TIME, "timestamp", _timestamp)
        data["extra_data"] = {**extra, "full_message": message}  # type: ignore[dict-item]
        if isinstance(message.get("id"), str):  # as the compactor numbered them
            messages.setdefault(message["id"], message)
    if name == EventName.TOOL_CALL:
        call = _call_args(data)
        if call is not None:
            calls.setdefault(*call)
    return data


def _expand_event(
    name: str, data: dict[str, Any], messages: list[dict[str, Any]]
) -> dict[str, Any]:
    """``data`` with its timestamp and description as they were."""
    if _TIME in data and isinstance(data[_TIME], int):
        data = {"timestamp": _timestamp(data.pop(_TIME)), **data}
    extra = data.get("extra_data")
    extra = extra if isinstance(extra, dict) else {}
    if _PREFIX in data and isinstance(extra.get("full_message"), dict):
        data["description"] = data.pop(_PREFIX) + (_rendered(extra["full_message"]) or "")
    elif _AGENT in data and name in _TEMPLATES:
        data["description"] = _fill(_TEMPLATES[name], extra, data.pop(_AGENT)) or ""
    elif _REPLY in data and (replied := _numbered(messages, data[_REPLY])) is not None:
        del data[_REPLY]
        data["description"] = _reply(replied) or ""
    return data


def _numbered(messages: list[dict[str, Any]], number: Any) -> dict[str, Any] | None:
    """The message a stored reference (its place among the task's messages) names."""
    if type(number) is int and 0 <= number < len(messages):
        return messages[number]
    return None


def _has_args(call: Any) -> bool:
    return (
        isinstance(call, dict)
        and isinstance(call.get("function"), dict)
        and (_ARGS in call["function"])
    )


def _expand_call(call: dict[str, Any], calls: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(call.get("id"), str):
        return call
    return {**call, "function": _with_arguments(function, calls.get(call["id"]))}
