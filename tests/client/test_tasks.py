"""``MAILClient.cancel_task``, ``get_task_page`` and ``get_tasks(events=False)`` against a
real server."""

from __future__ import annotations

import pytest
from tests.client.conftest import Connect, Gated

from mail.client import MAILClient
from mail.errors import MAILClientError

pytestmark = pytest.mark.timeout(30)


async def test_cancel_task_ends_its_stream(gated: Gated, connect: Connect) -> None:
    client = connect(gated.url)
    stream = await client.post_message_stream("job", task_id="t-cc")
    async with stream:
        async for event in stream:
            if event.event == "new_message" and "worker" in event.data:
                break
        result = await client.cancel_task("t-cc")
        rest = [event async for event in stream]

    assert result == {"task_id": "t-cc", "status": "cancelled"}
    final = rest[-1]
    assert final.event == "task_error"
    assert final.json()["status"] == "cancelled"
    with pytest.raises(MAILClientError) as finished:
        await client.cancel_task("t-cc")
    assert (finished.value.status, finished.value.detail) == (
        409,
        "task 't-cc' is already cancelled",
    )


async def test_cancel_unknown_task_is_404(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.cancel_task("t-none")
    assert (caught.value.status, caught.value.detail) == (404, "task 't-none' not found")


async def test_task_pages(user: MAILClient) -> None:
    for i in range(5):
        await user.post_message(f"what is {i}+1?", task_id=f"t-p{i}")

    first = await user.get_task_page(limit=3)
    assert first["next_cursor"] is not None
    second = await user.get_task_page(limit=3, cursor=first["next_cursor"])
    ids = [t["task_id"] for t in first["tasks"] + second["tasks"]]

    assert ids == [f"t-p{i}" for i in reversed(range(5))]
    assert second["next_cursor"] is None
    assert all("events" not in t for t in first["tasks"])
    assert first["tasks"][0]["title"] == "what is 4+1?"
    without = await user.get_tasks(events=False)
    assert set(without) == set(ids) and "events" not in without["t-p0"]
    with pytest.raises(MAILClientError) as bad:
        await user.get_task_page(limit=0)
    assert bad.value.status == 400
