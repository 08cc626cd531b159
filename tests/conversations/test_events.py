"""The subscription filter (C6): ``eventTypes`` any-of, the ``mail`` filter's fields AND-ed,
and a ``mail`` filter matching ``mail.*`` events only."""

from __future__ import annotations

from tests.conversations.conftest import KEY

from mail.conversations.events import EventBus, matches

TURN = {
    "conversationId": "c1",
    "turn": {"threadId": "t1", "participantId": "p1", "contentType": "text"},
}


def test_mail_fields_are_anded() -> None:
    assert matches({"mail": {"conversationId": "c1"}}, "mail.turn.added", TURN)
    assert not matches({"mail": {"conversationId": "c2"}}, "mail.turn.added", TURN)
    both = {"conversationId": "c1", "threadId": "t1", "participantId": "p1", "contentType": "text"}
    assert matches({"mail": both}, "mail.turn.added", TURN)
    assert not matches({"mail": {**both, "contentType": "data"}}, "mail.turn.added", TURN)
    assert not matches(
        {"mail": {"conversationId": "c1", "threadId": "t2"}}, "mail.turn.added", TURN
    )


def test_a_mail_filter_matches_only_mail_events() -> None:
    assert not matches(
        {"mail": {"conversationId": "c1"}}, "task.completed", {"conversationId": "c1"}
    )
    assert matches({}, "task.completed", {})
    # our x-mail.* events are mail events
    status = {"conversationId": "c1", "status": "paused"}
    assert matches({"mail": {"conversationId": "c1"}}, "x-mail.status.changed", status)
    assert not matches({"mail": {"conversationId": "c2"}}, "x-mail.status.changed", status)


def test_event_types_are_any_of() -> None:
    assert matches({"eventTypes": ["mail.closed", "mail.turn.added"]}, "mail.turn.added", TURN)
    assert not matches({"eventTypes": ["mail.closed"]}, "mail.turn.added", TURN)


def test_the_bus_delivers_to_the_callers_matching_subscriptions_only() -> None:
    from mail.db import CallerKey

    bus = EventBus()
    mine = bus.subscribe(KEY, {"mail": {"conversationId": "c1"}})
    other = bus.subscribe(CallerKey(swarm="demo", role="user", id="u2"), {})
    bus.publish(KEY, "mail.turn.added", TURN, 1)
    bus.publish(KEY, "mail.turn.added", {**TURN, "conversationId": "c2"}, 2)
    assert [(seq, e.data) for seq, e in mine.log] == [(1, TURN)]
    assert not other.log
    assert bus.unsubscribe(KEY, mine.id) and mine.closed.is_set()
    assert not bus.unsubscribe(KEY, other.id)  # another caller's
