"""v1.3.6's ``mail.db.init``: create the task store's tables."""

from __future__ import annotations

__all__ = ["create_tables"]


async def create_tables() -> None:
    """Create the tables of the configured store, as ``mail db-init`` does.

    v1.3.6 created the four PostgreSQL tables of CONTRACT §11 at ``DATABASE_URL``; here the
    store the configuration names (PostgreSQL with ``DATABASE_URL``, else SQLite) is opened
    once, which applies every migration (those tables included, on PostgreSQL), and closed.
    """
    from mail.config import load_config  # noqa: PLC0415  # pydantic only when called
    from mail.db import open_store  # noqa: PLC0415  # asyncpg only with PostgreSQL

    store = await open_store(load_config().database)
    await store.close()
