"""Live tokens through the A2A façade: a streaming model's answer reaches an A2A client as
chunks of the ``answer`` artifact while the model writes, then the whole answer, with
``a2a-sdk``'s own client and the stub LLM server on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from a2a.types import GetTaskRequest, TaskState
from tests.a2a.conftest import Start, connect, send, text_message
from tests.server.test_token_stream import ANSWER, llm_template

from mail.factories._litellm import import_litellm
from mail.testing.llm import StubLLMServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    import_litellm()  # the server runs in this process: not on its event loop mid-call
    async with StubLLMServer() as server:
        yield server


async def test_a_streaming_model_answers_in_artifact_chunks_then_whole(
    a2a_start: Start, llm: StubLLMServer
) -> None:
    url = await a2a_start(template=llm_template(llm, tool_format="completions", stream=True))
    async with connect(url, streaming=True) as client:
        events = await send(client, text_message("answer please"))
        stored = await client.get_task(GetTaskRequest(id=events[0].task.id))

    updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
    chunks, final = updates[:-1], updates[-1]
    assert len(chunks) > 1  # it grows as the model writes the answer
    assert {u.artifact.artifact_id for u in chunks} == {"answer"}
    # the first chunk makes the artifact, the next ones grow it
    assert [u.append for u in chunks] == [False] + [True] * (len(chunks) - 1)
    assert "".join(u.artifact.parts[0].text for u in chunks) == ANSWER
    # then the whole answer once, as the last chunk, and the task completed after it
    assert (final.artifact.artifact_id, final.last_chunk) == ("answer", True)
    assert final.artifact.parts[0].text == ANSWER
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    # the stored task holds the answer once, whole
    assert [[p.text for p in a.parts] for a in stored.artifacts] == [[ANSWER]]


async def test_a_non_streaming_send_gets_only_the_whole_answer(
    a2a_start: Start, llm: StubLLMServer
) -> None:
    url = await a2a_start(template=llm_template(llm, tool_format="completions", stream=True))
    async with connect(url) as client:
        [response] = await send(client, text_message("answer please"))

    assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
    [artifact] = response.task.artifacts
    assert [p.text for p in artifact.parts] == [ANSWER]
