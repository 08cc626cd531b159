"""v1.3.6's ``mail.utils.store``: the long-term memory store of LangMem agents."""

from __future__ import annotations

from typing import Any

from mail.errors import ConfigurationError

__all__ = ["get_langmem_store"]


async def get_langmem_store() -> Any:
    """A LangGraph store for LangMem memory tools.

    v1.3.6 opened LangGraph's PostgreSQL store at ``DATABASE_URL``; LangGraph is not a
    dependency of this package. With ``langgraph`` installed this returns its
    ``AsyncPostgresStore`` (set up) when ``DATABASE_URL`` is set and
    ``langgraph-checkpoint-postgres`` is installed, else its ``InMemoryStore``. Without
    ``langgraph`` it raises :class:`mail.errors.ConfigurationError`.
    """
    import os  # noqa: PLC0415

    try:
        from langgraph.store.memory import InMemoryStore  # type: ignore[import-not-found]  # noqa: PLC0415
    except ImportError as e:
        raise ConfigurationError("get_langmem_store needs the 'langgraph' package") from e
    url = os.environ.get("DATABASE_URL")
    if url:
        try:
            from langgraph.store.postgres import AsyncPostgresStore  # type: ignore[import-not-found]  # noqa: PLC0415
        except ImportError:
            pass
        else:
            manager = AsyncPostgresStore.from_conn_string(url)
            store = await manager.__aenter__()
            await store.setup()
            return store
    return InMemoryStore()
