"""The stored form of a task (``mail.core._compact``): what is derivable is left out, and
everything reads back exactly, including what is stored whole because it is not."""

from __future__ import annotations

import json
from typing import Any

from mail.core._compact import Compactor, expand
from mail.core.events import EventLog, EventName, MAILEvent
from mail.core.message import build_mail_xml, create_agent_address, make_request

ARGS = {"target": "worker", "body": "café <b> & ☕"}


def _log() -> tuple[EventLog, dict[str, Any]]:
    log = EventLog("t1")
    message = make_request(
        task_id="t1",
        sender=create_agent_address("supervisor"),
        recipient=create_agent_address("worker"),
        subject="job",
        body="café <b> & ☕",
    )
    log.emit(
        EventName.NEW_MESSAGE,
        "sending message:\n" + build_mail_xml(message)["content"],
        {"full_message": message},
    )
    for call_id in ("c1", "c2", "c3", "c4"):
        extra = {"tool_name": "send_request", "tool_args": ARGS, "tool_call_id": call_id}
        log.emit(EventName.TOOL_CALL, "agent supervisor called send_request", extra)
    log.emit(
        EventName.TOOL_CALL, "agent super visor called send_request", extra
    )  # not the template
    log.emit(EventName.NEW_MESSAGE, "sending message:\nsomething else", {"full_message": message})
    log.emit(EventName.TASK_COMPLETE, "response: 'café <b> & ☕'")
    return log, dict(message)


def _round_trip(log: EventLog, history: list[dict[str, Any]]) -> tuple[Any, Any]:
    compactor = Compactor()
    events = [(e.event, compactor.event(log, e)) for e in log.all()]
    stored = compactor.history(log, history)
    datas, histories, _ = expand("t1", json.loads(json.dumps(events)), {"a": stored}, None)
    wire = [{k: v for k, v in e.data().items() if k != "task_id"} for e in log.all()]
    assert datas == wire
    assert histories == {"a": history}
    return events, stored


def test_completions_history_and_encodings_read_back() -> None:
    log, message = _log()

    def call(call_id: str, arguments: str) -> dict[str, Any]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": "send_request", "arguments": arguments},
        }

    history = [
        build_mail_xml(message),  # type: ignore[arg-type]
        {"role": "assistant", "content": None, "tool_calls": [
            call("c1", json.dumps(ARGS)),
            call("c2", json.dumps(ARGS, separators=(",", ":"))),
            call("c3", json.dumps(ARGS, ensure_ascii=False)),
            call("c4", json.dumps(ARGS, indent=1)),  # no known encoding: kept
            call("c9", "{}"),  # no such call: kept
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "typed by hand"},
        {"role": "user", "content": build_mail_xml(message)["content"], "name": "x"},  # type: ignore[arg-type]
    ]  # fmt: skip
    events, stored = _round_trip(log, history)
    assert stored[0] == {"$message": 0}
    kept = [c["function"].get("arguments") for c in stored[1]["tool_calls"]]
    assert kept == [None, None, None, json.dumps(ARGS, indent=1), "{}"]
    assert stored[3:] == history[3:]
    assert "description" not in events[0][1] and "description" in events[6][1]
    assert "description" in events[5][1] and "$reply" in events[7][1]


def test_responses_history_reads_back() -> None:
    log, message = _log()
    item = {
        "type": "function_call", "id": "fc_1", "call_id": "c2", "name": "send_request",
        "arguments": json.dumps(ARGS, separators=(",", ":"), ensure_ascii=False),
        "status": "completed",
    }  # fmt: skip
    history = [
        build_mail_xml(message),
        item,
        {"type": "function_call", "call_id": "c1", "arguments": "[]"},
    ]  # type: ignore[arg-type]
    _, stored = _round_trip(log, history)
    assert "arguments" not in stored[1] and stored[2] == history[2]


def test_response_is_stored_as_its_message() -> None:
    log, message = _log()
    compactor = Compactor()
    events = [(e.event, compactor.event(log, e)) for e in log.all()]
    assert compactor.response(log, message) == {"$message": 0}
    other = {**message, "msg_type": "response"}
    assert compactor.response(log, other) == other  # not the task's message: whole
    _, _, response = expand("t1", events, {}, {"$message": 0})
    assert response == message


def test_a_message_delivered_twice_is_stored_once() -> None:
    log, message = _log()
    copy = log.emit(
        EventName.NEW_MESSAGE,
        "sending message:\n" + build_mail_xml(message)["content"],  # type: ignore[arg-type]
        {"full_message": message},
    )
    events, _ = _round_trip(log, [])
    assert events[0][1]["extra_data"]["full_message"]["id"] == message["id"]
    assert events[(copy.seq or 0) - 1][1]["extra_data"]["full_message"] == {"$message": 0}


def test_timestamps_in_another_form_are_stored_whole() -> None:
    log = EventLog("t1")
    for stamp in ("2026-11-27T00:48:27+00:00", "2026-11-27T01:48:27.000001+01:00", "soon"):
        log.append(MAILEvent(EventName.TASK_COMPLETE_CALL, "t1", "x", timestamp=stamp))
    log.emit(EventName.TASK_COMPLETE_CALL, "y")
    events, _ = _round_trip(log, [])
    assert [data.get("timestamp") for _, data in events] == [
        "2026-11-27T00:48:27+00:00",
        "2026-11-27T01:48:27.000001+01:00",
        "soon",
        None,  # the runtime's own form: stored as microseconds
    ]


def test_a_message_the_runtime_rendered_is_not_rendered_again_and_reads_back() -> None:
    log = EventLog("t1")
    message = make_request(
        task_id="t1",
        sender=create_agent_address("supervisor"),
        recipient=create_agent_address("worker"),
        subject="job",
        body="café <b> & ☕",
    )
    rendering = build_mail_xml(message)["content"]
    event = log.emit_message("sending message:\n", rendering, message)
    assert event.description == "sending message:\n" + rendering
    assert event.rendering is rendering
    user_turn = {"role": "user", "content": rendering}

    events, stored = _round_trip(log, [user_turn])

    assert events[0][1]["$prefix"] == "sending message:\n"
    assert "description" not in events[0][1]
    assert stored == [{"$message": 0}]
    assert "rendering" not in event.data()  # never sent nor stored
