"""Versioned schema migrations of the SQLite and PostgreSQL stores.

Each backend has an ordered tuple of :class:`Migration`. A store applies the pending ones
when it opens (so do ``mail db-init`` and ``mail db-migrate``), each in its own
transaction, recording it in ``schema_migrations(version, description, applied_at)``.
Applying is idempotent and safe when several processes start at once (SQLite: a write
lock per migration; PostgreSQL: an advisory lock). A released migration is never edited:
a schema change is a new migration at the end of the list.

PostgreSQL version 1 is the original implementation's schema (CONTRACT §11, ``mail
db-init`` of v1.3.6) written with ``IF NOT EXISTS``, so a database the original created is
picked up as it is; version 2 adds what this implementation needs (task ``state``, event
``seq`` with a unique index, one current history per task and agent, breakpoint and stash
tables) and converts the original's rows; version 3 drops the original's secondary indexes
that no query uses (the tables and their columns stay as they are).

**A database shared with v1.3.6.** Versions 2 and 3 change the original's tables in ways a
v1.3.6 server cannot live with (its older history rows deleted, one history row per task
and agent enforced, ``task_events.seq`` NOT NULL). So when a store opens a database that
already holds the original's tables and has not had version 2, it applies only the
migrations marked ``v1_compatible`` (versions 1, 4, 5, 6 and 8: nullable columns, new
tables, indexes v1.3.6's inserts cannot violate) and the store keeps its rows
v1.3.6-readable (:func:`shares_with_v1`). Versions 2 and 3 wait for ``mail db-migrate
--upgrade-from-v1`` (:func:`apply_postgres` with ``upgrade_from_v1=True``), which runs
:data:`UPGRADE_FROM_V1_PRELUDE` first. A database created empty by this implementation gets
every migration in order (version 4 changes nothing there).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Migration",
    "SQLITE_MIGRATIONS",
    "POSTGRES_MIGRATIONS",
    "latest_version",
    "apply_sqlite",
    "apply_postgres",
    "shares_with_v1",
    "UPGRADE_FROM_V1",
    "UPGRADE_FROM_V1_PRELUDE",
]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema change: its version, what it does and its SQL statements."""

    version: int
    description: str
    statements: tuple[str, ...]
    #: whether a v1.3.6 server can still read and write the database after it (PostgreSQL)
    v1_compatible: bool = True


# The SQL below is written out in full, never assembled from shared pieces: a released
# migration must not change when some other constant does.

SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "tasks, events, current histories, responses, breakpoints, stash",
        (
            """CREATE TABLE tasks (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                task_owner TEXT NOT NULL,
                task_contributors TEXT NOT NULL DEFAULT '[]',
                remote_swarms TEXT NOT NULL DEFAULT '[]',
                state TEXT NOT NULL DEFAULT 'running',
                is_running INTEGER NOT NULL DEFAULT 0,
                completed INTEGER NOT NULL DEFAULT 0,
                title TEXT,
                start_time TEXT NOT NULL,
                created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')),
                updated_at TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id))""",
            "CREATE INDEX idx_tasks_start ON tasks (swarm_name, caller_role, caller_id, start_time)",
            "CREATE INDEX idx_tasks_finished ON tasks (state, updated_at)",
            """CREATE TABLE task_events (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                event_type TEXT NOT NULL,
                event_data TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id, seq))""",
            """CREATE TABLE agent_histories (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                agent_name TEXT NOT NULL,
                tool_format TEXT NOT NULL,
                history TEXT NOT NULL,
                created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')),
                updated_at TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id, agent_name))""",
            """CREATE TABLE task_responses (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                response TEXT NOT NULL,
                created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')),
                UNIQUE (swarm_name, caller_role, caller_id, task_id))""",
            """CREATE TABLE task_breakpoints (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                call_id TEXT NOT NULL,
                agent_name TEXT NOT NULL,
                tool_call TEXT NOT NULL,
                normalized TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id, position))""",
            """CREATE TABLE task_stash (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                priority INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                message TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id, position))""",
        ),
    ),
    Migration(
        2,
        "drop the creation and update times no query reads from tasks, histories, responses",
        (
            # Each table is rebuilt (DROP COLUMN needs SQLite 3.35) with its constraints;
            # the rows keep their rowid, which orders a task's histories.
            """CREATE TABLE tasks_v2 (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                task_owner TEXT NOT NULL,
                task_contributors TEXT NOT NULL DEFAULT '[]',
                remote_swarms TEXT NOT NULL DEFAULT '[]',
                state TEXT NOT NULL DEFAULT 'running',
                is_running INTEGER NOT NULL DEFAULT 0,
                completed INTEGER NOT NULL DEFAULT 0,
                title TEXT,
                start_time TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id))""",
            """INSERT INTO tasks_v2 (rowid, swarm_name, caller_role, caller_id, task_id,
                task_owner, task_contributors, remote_swarms, state, is_running, completed,
                title, start_time, updated_at)
                SELECT rowid, swarm_name, caller_role, caller_id, task_id, task_owner,
                    task_contributors, remote_swarms, state, is_running, completed, title,
                    start_time, updated_at
                FROM tasks""",
            "DROP TABLE tasks",
            "ALTER TABLE tasks_v2 RENAME TO tasks",
            "CREATE INDEX idx_tasks_start ON tasks (swarm_name, caller_role, caller_id, start_time)",
            "CREATE INDEX idx_tasks_finished ON tasks (state, updated_at)",
            """CREATE TABLE agent_histories_v2 (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                agent_name TEXT NOT NULL,
                tool_format TEXT NOT NULL,
                history TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id, agent_name))""",
            """INSERT INTO agent_histories_v2 (rowid, swarm_name, caller_role, caller_id,
                task_id, agent_name, tool_format, history)
                SELECT rowid, swarm_name, caller_role, caller_id, task_id, agent_name,
                    tool_format, history
                FROM agent_histories""",
            "DROP TABLE agent_histories",
            "ALTER TABLE agent_histories_v2 RENAME TO agent_histories",
            """CREATE TABLE task_responses_v2 (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                response TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, task_id))""",
            """INSERT INTO task_responses_v2 (rowid, swarm_name, caller_role, caller_id,
                task_id, response)
                SELECT rowid, swarm_name, caller_role, caller_id, task_id, response
                FROM task_responses""",
            "DROP TABLE task_responses",
            "ALTER TABLE task_responses_v2 RENAME TO task_responses",
        ),
    ),
    Migration(
        3,
        "MAP Mail conversation records",
        (
            """CREATE TABLE conversation_records (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                record_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                task_id TEXT,
                data TEXT NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, conversation_id, kind, record_id))""",
            """CREATE INDEX idx_conversation_records_task
                ON conversation_records (swarm_name, caller_role, caller_id, task_id)""",
        ),
    ),
    Migration(
        4,
        "MAP Mail records by seq; by task only the conversations (not their every turn)",
        (
            """CREATE INDEX idx_conversation_records_seq ON conversation_records
                (swarm_name, caller_role, caller_id, conversation_id, kind, seq)""",
            "DROP INDEX idx_conversation_records_task",
            """CREATE INDEX idx_conversation_records_task
                ON conversation_records (swarm_name, caller_role, caller_id, task_id)
                WHERE kind = 'conversation'""",
        ),
    ),
    Migration(
        5,
        "what opened each task's current turn (a retried request is told from a new one)",
        ("ALTER TABLE tasks ADD COLUMN request TEXT",),
    ),
    Migration(
        6,
        "MAP Mail participants by the principal they were invited for (shared conversations)",
        (
            """CREATE INDEX idx_conversation_records_principal ON conversation_records
                (swarm_name, json_extract(data, '$.principal')) WHERE kind = 'participant'""",
        ),
    ),
)

#: PostgreSQL tables of ours alone (v1.3.6 has none of them): created by version 2, and by
#: version 4 on a database shared with v1.3.6.
_PG_OWN_TABLES = (
    """CREATE TABLE IF NOT EXISTS task_breakpoints (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        tool_call JSONB NOT NULL,
        normalized JSONB NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        UNIQUE (swarm_name, caller_role, caller_id, task_id, position))""",
    """CREATE TABLE IF NOT EXISTS task_stash (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        priority INTEGER NOT NULL,
        seq BIGINT NOT NULL,
        message JSONB NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        UNIQUE (swarm_name, caller_role, caller_id, task_id, position))""",
)

POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "the original's tables (CONTRACT §11)",
        (
            """CREATE TABLE IF NOT EXISTS agent_histories (
                id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
                swarm_name TEXT NOT NULL,
                caller_role TEXT NOT NULL,
                caller_id TEXT NOT NULL,
                tool_format TEXT NOT NULL,
                task_id TEXT NOT NULL,
                agent_name TEXT NOT NULL,
                history JSONB NOT NULL,
                created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
                updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())""",
            "CREATE INDEX IF NOT EXISTS idx_agent_histories_swarm_name ON agent_histories (swarm_name)",
            "CREATE INDEX IF NOT EXISTS idx_agent_histories_task_id ON agent_histories (task_id)",
            "CREATE INDEX IF NOT EXISTS idx_agent_histories_caller ON agent_histories (caller_role, caller_id)",
            "CREATE INDEX IF NOT EXISTS idx_agent_histories_agent_name ON agent_histories (agent_name)",
            "CREATE INDEX IF NOT EXISTS idx_agent_histories_created_at ON agent_histories (created_at DESC)",
            """CREATE TABLE IF NOT EXISTS tasks (
                id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
                task_id TEXT NOT NULL,
                swarm_name TEXT NOT NULL,
                caller_role TEXT NOT NULL,
                caller_id TEXT NOT NULL,
                task_owner TEXT NOT NULL,
                task_contributors JSONB NOT NULL DEFAULT '[]',
                remote_swarms JSONB NOT NULL DEFAULT '[]',
                is_running BOOLEAN NOT NULL DEFAULT FALSE,
                completed BOOLEAN NOT NULL DEFAULT FALSE,
                title TEXT,
                start_time TIMESTAMP WITH TIME ZONE NOT NULL,
                created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
                updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
                UNIQUE (task_id, swarm_name, caller_role, caller_id))""",
            "CREATE INDEX IF NOT EXISTS idx_tasks_lookup ON tasks (swarm_name, caller_role, caller_id)",
            "CREATE INDEX IF NOT EXISTS idx_tasks_task_id ON tasks (task_id)",
            """CREATE TABLE IF NOT EXISTS task_events (
                id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
                task_id TEXT NOT NULL,
                swarm_name TEXT NOT NULL,
                caller_role TEXT NOT NULL,
                caller_id TEXT NOT NULL,
                event_type TEXT,
                event_data TEXT,
                event_id TEXT,
                created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())""",
            "CREATE INDEX IF NOT EXISTS idx_task_events_lookup ON task_events (task_id, swarm_name, caller_role, caller_id)",
            "CREATE INDEX IF NOT EXISTS idx_task_events_created ON task_events (created_at)",
            """CREATE TABLE IF NOT EXISTS task_responses (
                id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
                task_id TEXT NOT NULL,
                swarm_name TEXT NOT NULL,
                caller_role TEXT NOT NULL,
                caller_id TEXT NOT NULL,
                response JSONB NOT NULL,
                created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
                UNIQUE (task_id, swarm_name, caller_role, caller_id))""",
            "CREATE INDEX IF NOT EXISTS idx_task_responses_lookup ON task_responses (task_id, swarm_name, caller_role, caller_id)",
        ),
    ),
    Migration(
        2,
        "task state, event seq, one current history per agent, breakpoints, stash",
        v1_compatible=False,
        statements=(
            # tasks.state; is_running and completed stay, kept in sync by every write.
            "ALTER TABLE tasks ADD COLUMN IF NOT EXISTS state TEXT",
            """UPDATE tasks SET state = CASE WHEN completed THEN 'completed' ELSE 'running' END
                WHERE state IS NULL""",
            "ALTER TABLE tasks ALTER COLUMN state SET DEFAULT 'running'",
            "ALTER TABLE tasks ALTER COLUMN state SET NOT NULL",
            "CREATE INDEX IF NOT EXISTS idx_tasks_finished ON tasks (state, updated_at)",
            # task_events.seq: the original's rows are numbered in insertion order.
            "ALTER TABLE task_events ADD COLUMN IF NOT EXISTS seq BIGINT",
            """UPDATE task_events AS e SET seq = n.rn
                FROM (SELECT id, row_number() OVER (
                        PARTITION BY swarm_name, caller_role, caller_id, task_id
                        ORDER BY created_at, id) AS rn
                      FROM task_events) AS n
                WHERE e.id = n.id AND e.seq IS NULL""",
            "UPDATE task_events SET event_type = '' WHERE event_type IS NULL",
            "UPDATE task_events SET event_data = '{}' WHERE event_data IS NULL",
            "ALTER TABLE task_events ALTER COLUMN seq SET NOT NULL",
            """CREATE UNIQUE INDEX IF NOT EXISTS uq_task_events_seq
                ON task_events (swarm_name, caller_role, caller_id, task_id, seq)""",
            # the unique index above serves every lookup the old one did
            "DROP INDEX IF EXISTS idx_task_events_lookup",
            # The original inserted the full history at every completion: the newest row of
            # a task and agent is its current history, the older ones are its prefixes.
            """DELETE FROM agent_histories AS a USING agent_histories AS b
                WHERE a.swarm_name = b.swarm_name AND a.caller_role = b.caller_role
                  AND a.caller_id = b.caller_id AND a.task_id = b.task_id
                  AND a.agent_name = b.agent_name
                  AND (a.created_at, a.id) < (b.created_at, b.id)""",
            """CREATE UNIQUE INDEX IF NOT EXISTS uq_agent_histories_current
                ON agent_histories (swarm_name, caller_role, caller_id, task_id, agent_name)""",
            *_PG_OWN_TABLES,
        ),
    ),
    Migration(
        3,
        "drop the original's secondary indexes that no query uses",
        v1_compatible=False,
        statements=(
            # Every read and delete of the stores filters on the caller columns and the task
            # id, which the unique indexes lead with; these cost each insert an index entry
            # (seven per history row) and serve nothing (the responses one duplicates the
            # table's unique index). The original's own queries keep an index to use.
            "DROP INDEX IF EXISTS idx_agent_histories_swarm_name",
            "DROP INDEX IF EXISTS idx_agent_histories_task_id",
            "DROP INDEX IF EXISTS idx_agent_histories_caller",
            "DROP INDEX IF EXISTS idx_agent_histories_agent_name",
            "DROP INDEX IF EXISTS idx_agent_histories_created_at",
            "DROP INDEX IF EXISTS idx_tasks_task_id",
            "DROP INDEX IF EXISTS idx_task_events_created",
            "DROP INDEX IF EXISTS idx_task_responses_lookup",
        ),
    ),
    Migration(
        4,
        "what a database shared with v1.3.6 can take: task state, event seq, new tables",
        (
            # All no-ops after version 2. On a database a v1.3.6 server still uses they
            # add only what its statements never see: nullable columns (state stays NULL
            # in its rows, as the store derives it from is_running and completed; a
            # default 'running' would be wrong once v1.3.6 marks the task completed), a
            # unique index its inserts cannot violate (they leave seq NULL, and NULLs
            # are distinct) and tables of its own.
            "ALTER TABLE tasks ADD COLUMN IF NOT EXISTS state TEXT",
            "CREATE INDEX IF NOT EXISTS idx_tasks_finished ON tasks (state, updated_at)",
            "ALTER TABLE task_events ADD COLUMN IF NOT EXISTS seq BIGINT",
            """CREATE UNIQUE INDEX IF NOT EXISTS uq_task_events_seq
                ON task_events (swarm_name, caller_role, caller_id, task_id, seq)""",
            *_PG_OWN_TABLES,
        ),
    ),
    Migration(
        5,
        "cluster mode: API keys and the swarm registry shared by the replicas",
        (
            # New tables only (v1.3.6 never sees them), so a database shared with v1.3.6
            # stays shareable. Keys are kept as SHA-256 digests, never as keys.
            """CREATE TABLE IF NOT EXISTS cluster_api_keys (
                digest BYTEA PRIMARY KEY,
                role TEXT NOT NULL,
                key_id TEXT NOT NULL,
                created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())""",
            # one row per peer of a local swarm; record is the registry file's entry
            # (tokens as ${VAR} references only)
            """CREATE TABLE IF NOT EXISTS cluster_swarm_registry (
                local_swarm TEXT NOT NULL,
                swarm_name TEXT NOT NULL,
                record JSONB NOT NULL,
                updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
                PRIMARY KEY (local_swarm, swarm_name))""",
        ),
    ),
    Migration(
        6,
        "MAP Mail conversation records",
        (
            # a new table and its index only: a database shared with v1.3.6 takes it
            """CREATE TABLE IF NOT EXISTS conversation_records (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                record_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                task_id TEXT,
                data JSONB NOT NULL,
                UNIQUE (swarm_name, caller_role, caller_id, conversation_id, kind, record_id))""",
            """CREATE INDEX IF NOT EXISTS idx_conversation_records_task
                ON conversation_records (swarm_name, caller_role, caller_id, task_id)""",
        ),
    ),
    Migration(
        7,
        "cluster mode: which replica runs each unfinished task (leases)",
        (
            # a new table only: a database shared with v1.3.6 takes it. ``gen`` counts the
            # owner's takes (a release of an older turn does not drop a newer lease);
            # ``checkpoint`` is what a turn started from, for fail-over
            """CREATE TABLE IF NOT EXISTS cluster_task_leases (
                swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                owner TEXT NOT NULL,
                gen BIGINT NOT NULL DEFAULT 0,
                expires_at TIMESTAMP WITH TIME ZONE NOT NULL,
                checkpoint JSONB,
                PRIMARY KEY (swarm_name, caller_role, caller_id, task_id))""",
            """CREATE INDEX IF NOT EXISTS idx_cluster_task_leases_owner
                ON cluster_task_leases (owner, expires_at)""",
        ),
    ),
    Migration(
        8,
        "MAP Mail records by seq; by task only the conversations (not their every turn)",
        (
            # indexes of our own table only: a database shared with v1.3.6 takes them
            """CREATE INDEX IF NOT EXISTS idx_conversation_records_seq ON conversation_records
                (swarm_name, caller_role, caller_id, conversation_id, kind, seq)""",
            "DROP INDEX IF EXISTS idx_conversation_records_task",
            """CREATE INDEX idx_conversation_records_task
                ON conversation_records (swarm_name, caller_role, caller_id, task_id)
                WHERE kind = 'conversation'""",
        ),
    ),
    Migration(
        9,
        "what opened each task's current turn (a retried request is told from a new one)",
        (
            # a nullable column v1.3.6 neither writes nor reads: a shared database takes it
            "ALTER TABLE tasks ADD COLUMN IF NOT EXISTS request JSONB",
        ),
    ),
    Migration(
        10,
        "MAP Mail participants by the principal they were invited for (shared conversations)",
        (
            # an index of our own table only: a database shared with v1.3.6 takes it
            """CREATE INDEX IF NOT EXISTS idx_conversation_records_principal
                ON conversation_records (swarm_name, (data->>'principal'))
                WHERE kind = 'participant'""",
        ),
    ),
)

#: Run before version 2 by ``--upgrade-from-v1``, in its transaction: rows written while
#: the database was shared are put in the form version 2 expects (the store reads them
#: so until then, see :mod:`mail.db._postgres`).
UPGRADE_FROM_V1_PRELUDE: tuple[str, ...] = (
    # a task v1.3.6 marked completed after this implementation stored it as running
    "UPDATE tasks SET state = NULL WHERE state = 'running' AND completed",
    # every event numbered as the store numbered them while shared (v1.3.6 leaves seq
    # NULL); version 2 builds the unique index again
    "DROP INDEX IF EXISTS uq_task_events_seq",
    """UPDATE task_events AS e SET seq = n.rn
        FROM (SELECT id, row_number() OVER (
                PARTITION BY swarm_name, caller_role, caller_id, task_id
                ORDER BY created_at, seq NULLS FIRST, id) AS rn
              FROM task_events) AS n
        WHERE e.id = n.id AND e.seq IS DISTINCT FROM n.rn""",
)

#: What ``mail db-migrate --upgrade-from-v1`` changes, as it tells the user.
UPGRADE_FROM_V1: tuple[str, ...] = (
    "tasks.state becomes NOT NULL (default 'running'), filled from is_running/completed",
    "task_events.seq is numbered for every row and becomes NOT NULL, unique per task",
    "agent_histories keeps only the newest row of each task and agent (older rows, the "
    "original's copies of shorter histories, are DELETED) and gets a unique index on "
    "(swarm_name, caller_role, caller_id, task_id, agent_name)",
    "the original's secondary indexes that no query of this implementation uses are dropped",
    "after it, a v1.3.6 server can no longer store events (seq NOT NULL) nor a second "
    "history of a task's agent (unique index): stop every v1.3.6 server first",
)

_MIGRATIONS = {"sqlite": SQLITE_MIGRATIONS, "postgres": POSTGRES_MIGRATIONS}

_SQLITE_VERSIONS = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, description TEXT NOT NULL,
    applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')))"""
_POSTGRES_VERSIONS = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, description TEXT NOT NULL,
    applied_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())"""
# pg_advisory_lock key serializing migrations between processes ("MAIL" in ASCII)
_POSTGRES_LOCK = 0x4D41494C


def latest_version(backend: str) -> int:
    """The version a fully migrated ``backend`` (``"sqlite"``, ``"postgres"``) is at; 0 for
    ``"memory"``. Raises ``KeyError`` for an unknown backend."""
    if backend == "memory":
        return 0
    return _MIGRATIONS[backend][-1].version


def apply_sqlite(conn: sqlite3.Connection) -> list[int]:
    """Apply pending SQLite migrations on ``conn`` (autocommit mode); return the versions
    applied. Raises ``sqlite3.Error``; a failed migration is rolled back."""
    conn.execute(_SQLITE_VERSIONS)
    applied: list[int] = []
    for migration in SQLITE_MIGRATIONS:
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
            ).fetchone()
            if done is None:
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, description) VALUES (?, ?)",
                    (migration.version, migration.description),
                )
                applied.append(migration.version)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return applied


async def shares_with_v1(conn: Any) -> bool:
    """True when the database of the asyncpg ``conn`` holds the original's tables and has
    not had the migrations a v1.3.6 server cannot live with (version 2)."""
    if await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
        upgraded = await conn.fetchval("SELECT 1 FROM schema_migrations WHERE version = 2")
        if upgraded is not None:
            return False
    return bool(await conn.fetchval("SELECT to_regclass('tasks') IS NOT NULL"))


async def apply_postgres(conn: Any, *, upgrade_from_v1: bool = False) -> list[int]:
    """Apply pending PostgreSQL migrations on the asyncpg connection ``conn``; return the
    versions applied. Raises asyncpg errors; a failed migration is rolled back.

    On a database shared with v1.3.6 (:func:`shares_with_v1`) only the ``v1_compatible``
    migrations apply, unless ``upgrade_from_v1`` is true: then the others follow, the first
    of them preceded by :data:`UPGRADE_FROM_V1_PRELUDE`.
    """
    applied: list[int] = []
    await conn.execute("SELECT pg_advisory_lock($1)", _POSTGRES_LOCK)
    try:
        shared = await shares_with_v1(conn)  # before version 1 creates the tables
        await conn.execute(_POSTGRES_VERSIONS)
        order = list(POSTGRES_MIGRATIONS)
        if shared:
            order = [m for m in order if m.v1_compatible]
            if upgrade_from_v1:
                order += [m for m in POSTGRES_MIGRATIONS if not m.v1_compatible]
        prelude = UPGRADE_FROM_V1_PRELUDE if shared else ()
        for migration in order:
            async with conn.transaction():
                done = await conn.fetchval(
                    "SELECT 1 FROM schema_migrations WHERE version = $1", migration.version
                )
                if done is not None:
                    continue
                if not migration.v1_compatible:
                    for statement in prelude:
                        await conn.execute(statement)
                    prelude = ()
                for statement in migration.statements:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, description) VALUES ($1, $2)",
                    migration.version,
                    migration.description,
                )
                applied.append(migration.version)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _POSTGRES_LOCK)
    return applied
