"""Fixtures for the persistence tests: runtimes of the scripted persist swarm over a store."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mail._api_store import StoreSink
from mail.api import MAILSwarm, MAILSwarmTemplate
from mail.core._persist import StoredTask, WriteBatch
from mail.db import CallerKey, MemoryStore
from mail.testing.persist_swarm import swarm_definition

KEY = CallerKey(swarm="persist", role="user", id="u1")


class CutSink:
    """A sink that can be cut off, like a process killed: later writes are dropped."""

    def __init__(self, inner: StoreSink) -> None:
        self.inner = inner
        self.cut = False
        self.fail: Exception | None = None

    async def write(self, batch: WriteBatch) -> None:
        if self.fail is not None:
            raise self.fail
        if not self.cut:
            await self.inner.write(batch)

    async def load(self) -> list[StoredTask]:
        return await self.inner.load()


MakeSwarm = Callable[..., MAILSwarm]


@pytest.fixture
def template(tmp_path: Path) -> MAILSwarmTemplate:
    path = tmp_path / "swarms.json"
    path.write_text(json.dumps([swarm_definition()]), encoding="utf-8")
    return MAILSwarmTemplate.from_swarm_json_file("persist", str(path))


@pytest.fixture
async def store() -> AsyncIterator[MemoryStore]:
    s = MemoryStore()
    await s.open()
    yield s
    await s.close()


@pytest.fixture
async def make_swarm(template: MAILSwarmTemplate, store: MemoryStore) -> AsyncIterator[MakeSwarm]:
    built: list[MAILSwarm] = []

    def build(sink: Any) -> MAILSwarm:
        swarm = template.instantiate({}, user_id="u1", print_llm_streams=False, store=sink)
        built.append(swarm)
        return swarm

    yield build
    for swarm in built:
        await swarm.runtime.shutdown(timeout=0.5)
