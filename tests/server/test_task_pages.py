"""``GET /tasks`` pages (``limit``, ``cursor``, ``events=false``) and the titles tasks get
from their first message."""

from __future__ import annotations

import asyncio

import pytest
from tests.server.conftest import Running, Start, scripted_template, shared

from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def many(start: Start) -> Running:
    """250 finished tasks of user u1 (t-000 … t-249), one agent that answers at once."""
    done = ScriptedAgent(rule=lambda _incoming: tc("task_complete", finish_message="ok"))
    server = await start(template=scripted_template({"supervisor": done}))
    user = await server.user()
    for batch in range(0, 250, 50):
        answers = await asyncio.gather(
            *(
                user.post("/message", json={"body": f"job {i}", "task_id": f"t-{i:03}"})
                for i in range(batch, batch + 50)
            )
        )
        assert {a.status_code for a in answers} == {200}
    return server


async def test_pages_visit_every_task_once_newest_first(many: Running) -> None:
    user = await many.user()
    everything = (await user.get("/tasks")).json()
    seen: list[dict[str, object]] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, object] = {"limit": 40, "events": "false"}
        if cursor is not None:
            params["cursor"] = cursor
        page = (await user.get("/tasks", params=params)).json()
        assert set(page) == {"tasks", "next_cursor"}
        seen += page["tasks"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break

    assert pages == 7  # 6 x 40 + 10
    ids = [t["task_id"] for t in seen]
    assert sorted(ids) == sorted(everything) and len(set(ids)) == 250
    keys = [(t["start_time"], t["task_id"]) for t in seen]
    assert keys == sorted(keys, reverse=True)
    assert all("events" not in t for t in seen)
    assert {k: v for k, v in everything[ids[0]].items() if k != "events"} == seen[0]


async def test_default_answer_keeps_the_v136_shape(many: Running) -> None:
    user = await many.user()
    everything = (await user.get("/tasks")).json()
    without = (await user.get("/tasks", params={"events": "false"})).json()

    assert len(everything) == 250 and everything["t-007"]["task_id"] == "t-007"
    assert everything["t-007"]["events"]
    assert set(without) == set(everything)
    assert "events" not in without["t-007"]
    page = (await user.get("/tasks", params={"limit": 1})).json()
    assert page["tasks"][0]["events"]  # events stay by default in a page too


@shared
@pytest.mark.parametrize(
    ("params", "detail"),
    [
        ({"limit": 0}, "query.limit: Input should be greater than or equal to 1"),
        ({"limit": 1001}, "query.limit: Input should be less than or equal to 1000"),
        ({"limit": "ten"}, "query.limit: Input should be a valid integer, unable to parse string as an integer"),
        ({"cursor": "nope"}, "query.cursor: is not a cursor of GET /tasks (pass back the next_cursor of a page)"),
        ({"cursor": "WyJ4Il0"}, "query.cursor: is not a cursor of GET /tasks (pass back the next_cursor of a page)"),
        ({"events": "maybe"}, "query.events: Input should be a valid boolean, unable to interpret input"),
    ],
)  # fmt: skip
async def test_bad_page_parameters_are_400(
    shared_offline: Running, params: dict[str, object], detail: str
) -> None:
    response = await (await shared_offline.user()).get("/tasks", params=params)
    assert (response.status_code, response.json()) == (400, {"detail": detail})


@shared
async def test_an_empty_page(shared_offline: Running) -> None:
    response = await (await shared_offline.user2()).get("/tasks", params={"limit": 5})
    assert response.json() == {"tasks": [], "next_cursor": None}


async def test_title_is_the_first_message_shortened(offline: Running) -> None:
    user = await offline.user()
    long_body = "Please   summarise\nthe following report about " + "x" * 100
    await user.post("/message", json={"body": "what is 6*7?", "task_id": "t-short"})
    await user.post("/message", json={"body": long_body, "task_id": "t-long"})

    tasks = (await user.get("/tasks", params={"events": "false"})).json()

    assert tasks["t-short"]["title"] == "what is 6*7?"
    title = tasks["t-long"]["title"]
    assert len(title) == 60
    assert title == ("Please summarise the following report about " + "x" * 100)[:57] + "..."
