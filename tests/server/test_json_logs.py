"""``MAIL_LOG_FORMAT=json``'s lines: a record logged while an agent turn is handled names
its task and agent (a real server runs the task; the formatter is the one ``mail server``
installs)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.conftest import Start, scripted_template

from mail._log_format import JSONFormatter, json_logs
from mail.api import MAILAction
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """What the ``mail`` loggers write while the test runs, formatted as JSON."""
    output = io.StringIO()
    handler = logging.StreamHandler(output)
    handler.setFormatter(JSONFormatter())
    logger = logging.getLogger("mail")
    logger.addHandler(handler)
    try:
        yield output
    finally:
        logger.removeHandler(handler)


def records(output: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.getvalue().splitlines()]


async def test_a_record_of_an_agent_turn_names_its_task_and_agent(
    start: Start, lines: io.StringIO
) -> None:
    def boom(_args: dict[str, Any]) -> str:
        raise RuntimeError("the action broke")

    supervisor = ScriptedAgent([tc("boom"), tc("task_complete", finish_message="done")])
    schema = {"type": "object", "properties": {}}
    template = scripted_template(
        {"supervisor": supervisor}, actions=[MAILAction("boom", "Fails.", schema, boom)]
    )
    server = await start(template=template)

    answer = await (await server.user()).post("/message", json={"body": "go", "task_id": "t-log"})
    assert answer.status_code == 200, answer.text

    [failed] = [r for r in records(lines) if "the action broke" in r["message"]]
    assert failed["logger"] == "mail.actions"
    assert failed["level"] == "WARNING"
    assert (failed["task_id"], failed["agent"]) == ("t-log", "supervisor")
    logging.getLogger("mail.server").warning("between tasks")
    [outside] = [r for r in records(lines) if r["message"] == "between tasks"]
    assert "task_id" not in outside
    assert "agent" not in outside


def test_an_exception_is_in_its_record() -> None:
    record = logging.LogRecord(
        "mail.server", logging.ERROR, __file__, 1, "failed: %s", ("x",), None
    )
    try:
        raise ValueError("the cause")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()

    line = json.loads(JSONFormatter().format(record))

    assert line["message"] == "failed: x"
    assert "ValueError: the cause" in line["exception"]


@pytest.mark.parametrize(
    ("value", "expected"), [("json", True), (" JSON ", True), ("", False), ("text", False)]
)
def test_which_values_ask_for_json(value: str, expected: bool) -> None:
    assert json_logs({"MAIL_LOG_FORMAT": value}) is expected
