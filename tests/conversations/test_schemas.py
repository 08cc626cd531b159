"""``spec/map-mail.schema.json`` is generated from the models and up to date, and what the
methods answer validates against it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from tests.conversations.conftest import actor

from mail.conversations import ConversationService, MemoryConversationStore

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "spec" / "map-mail.schema.json").read_text())


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gen_map_schemas", REPO / "scripts" / "gen_map_schemas.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_schema_file_is_up_to_date() -> None:
    assert _script().document() == SCHEMA, "run: uv run python scripts/gen_map_schemas.py"


def check(name: str, value: Any) -> None:
    validator = Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": SCHEMA["$defs"]})
    errors = [e.message for e in validator.iter_errors(value)]
    assert errors == [], (name, errors)


async def test_answers_validate() -> None:
    service = ConversationService(MemoryConversationStore())
    me = actor()
    created = await service.call(
        "mail/create",
        me,
        {"subject": "s", "initialTurn": {"contentType": "text", "content": {"text": "Hi."}}},
    )
    check("Conversation", created["conversation"])
    check("Participant", created["participant"])
    check("Turn", created["initialTurn"])
    c = {"conversationId": created["conversation"]["id"]}
    thread = await service.call(
        "mail/thread/create", me, {**c, "rootTurnId": created["initialTurn"]["id"]}
    )
    check("Thread", thread["thread"])
    check("Summary", await service.call("mail/summary", me, c))
    got = await service.call("mail/get", me, {**c, "include": {"participants": True}})
    for participant in got["participants"]:
        check("Participant", participant)
    bad = {**created["initialTurn"], "timestamp": "yesterday"}
    validator = Draft202012Validator({"$ref": "#/$defs/Turn", "$defs": SCHEMA["$defs"]})
    assert not validator.is_valid(bad)
