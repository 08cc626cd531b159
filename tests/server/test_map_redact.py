"""``x-mail/turn/redact`` (our extension, R7) on a real server: who may redact, what a
redacted turn looks like, and summaries that stop quoting it."""

from __future__ import annotations

from tests.server.conftest import Running
from tests.server.test_map_admin import ADMIN, code, result, say


async def test_the_author_redacts_and_summaries_forget(offline: Running) -> None:
    user = await offline.user()
    cid = (await result(user, "mail/create", {}))["conversation"]["id"]
    c = {"conversationId": cid}
    secret = await say(user, cid, "The password is hunter2.")
    await say(user, cid, "We will ship on Friday.")
    assert "hunter2" in str(await result(user, "mail/summary", c))
    redacted = (
        await result(user, "x-mail/turn/redact", {**c, "turnId": secret, "reason": "a secret"})
    )["turn"]
    assert (redacted["status"], redacted["content"]) == ("redacted", None)
    assert redacted["metadata"]["redaction"]["by"] == "user:u1"
    assert redacted["metadata"]["redaction"]["reason"] == "a secret"
    listed = (await result(user, "mail/turns/list", c))["turns"]
    assert listed[0] == redacted
    summary = await result(user, "mail/summary", c)  # no regenerate asked
    assert "hunter2" not in str(summary) and summary["turnCount"] == 1
    again = await result(user, "x-mail/turn/redact", {**c, "turnId": secret})
    assert again["turn"] == redacted  # redacting twice changes nothing


async def test_who_may_redact(offline: Running) -> None:
    user, admin = await offline.user(), await offline.admin()
    cid = (await result(user, "mail/create", {}))["conversation"]["id"]
    c = {"conversationId": cid}
    first = await say(user, cid, "one")
    second = await say(user, cid, "two")
    assert await code(user, "x-mail/turn/redact", {**c, "turnId": "turn-nope"}) == 10006
    assert await code(user, "x-mail/turn/redact", c) == -32602
    await result(user, "mail/close", c)
    assert await code(user, "x-mail/turn/redact", {**c, "turnId": first}) == 10001
    # an admin may, at any time, without being a participant
    done = (await result(admin, "x-mail/turn/redact", {**c, "turnId": second}))["turn"]
    assert done["status"] == "redacted" and done["metadata"]["redaction"]["by"] == ADMIN
    other = await offline.user2()
    assert await code(other, "x-mail/turn/redact", {**c, "turnId": first}) == 10000
