"""The SQLite and PostgreSQL conversation stores: the ``conversation_records`` table of
the task store's own database, reached through the task store's connection (its thread
for SQLite, its pool for PostgreSQL), so that a conversation lives and goes (``mail
db-prune``) with its task."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mail.conversations.store import (
    ConversationStore,
    Joiner,
    Mark,
    Record,
    RecordKind,
    Shared,
    TurnCheck,
    TurnWrite,
    judge_turn,
    plan_append,
    turn_refs,
)
from mail.db.store import CallerKey, dumps, loads
from mail.errors import MAILError, StorageError

if TYPE_CHECKING:
    from mail.db import PostgresStore, SQLiteStore

__all__ = ["PostgresConversationStore", "SQLiteConversationStore", "conversation_store_for"]

_COLUMNS = "conversation_id, kind, record_id, seq, task_id, data"
_KEY = "swarm_name = ? AND caller_role = ? AND caller_id = ?"
# the SQL is assembled from constants only, never from values
_SQLITE = {
    "put": f"""INSERT INTO conversation_records (swarm_name, caller_role, caller_id,
        {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (swarm_name, caller_role, caller_id, conversation_id, kind, record_id)
        DO UPDATE SET seq = excluded.seq, task_id = excluded.task_id, data = excluded.data""",
    "get": f"""SELECT {_COLUMNS} FROM conversation_records WHERE {_KEY}
        AND conversation_id = ? AND kind = ? AND record_id = ?""",
    "list": f"""SELECT {_COLUMNS} FROM conversation_records WHERE {_KEY} AND kind = ?
        ORDER BY seq, record_id""",
    "list_in": f"""SELECT {_COLUMNS} FROM conversation_records WHERE {_KEY} AND kind = ?
        AND conversation_id = ? ORDER BY seq, record_id""",
    "max_seq": f"""SELECT COALESCE(MAX(seq), 0) FROM conversation_records WHERE {_KEY}
        AND conversation_id = ? AND kind = ?""",
    "bound_to": f"""SELECT {_COLUMNS} FROM conversation_records WHERE {_KEY}
        AND task_id = ? AND kind = 'conversation' ORDER BY seq, record_id""",
    "owner_of": """SELECT caller_role, caller_id FROM conversation_records WHERE swarm_name = ?
        AND kind = 'conversation' AND conversation_id = ? AND record_id = ? LIMIT 1""",
    "list_every": f"""SELECT caller_role, caller_id, {_COLUMNS} FROM conversation_records
        WHERE swarm_name = ? AND kind = ? ORDER BY seq, record_id""",
}


# a guest's conversations: each with the participant row invited for the principal (the
# partial index on the principal of participant rows, then the conversation's row)
_ROWS_OF = """c.caller_role, c.caller_id,
    c.conversation_id, c.kind, c.record_id, c.seq, c.task_id, c.data,
    p.conversation_id, p.kind, p.record_id, p.seq, p.task_id, p.data"""
_JOINED = """FROM conversation_records AS p JOIN conversation_records AS c
    ON c.swarm_name = p.swarm_name AND c.caller_role = p.caller_role
    AND c.caller_id = p.caller_id AND c.conversation_id = p.conversation_id
    AND c.kind = 'conversation' AND c.record_id = p.conversation_id"""
_SQLITE_SHARED = f"""SELECT {_ROWS_OF} {_JOINED}
    WHERE p.swarm_name = ? AND p.kind = 'participant'
    AND json_extract(p.data, '$.principal') = ? ORDER BY c.seq, c.record_id"""
_POSTGRES_SHARED = f"""SELECT {_ROWS_OF.replace(".data", ".data::text")} {_JOINED}
    WHERE p.swarm_name = $1 AND p.kind = 'participant'
    AND (p.data->>'principal') = $2 ORDER BY c.seq, c.record_id"""


def _numbered(sql: str) -> str:
    """``sql`` with PostgreSQL's ``$n`` placeholders and its JSON column read as text."""
    parts = sql.split("?")
    out = parts[0]
    for n, part in enumerate(parts[1:], start=1):
        out += f"${n}" + part
    return out.replace("task_id, data FROM", "task_id, data::text FROM")


_POSTGRES = {name: _numbered(sql) for name, sql in _SQLITE.items()}
_POSTGRES["put"] = _POSTGRES["put"].replace("$9)", "$9::jsonb)")

# Appending turns to a batch of conversations: their rows with their newest turn's seq
# (one index step each), and their participants. ``{ids}``: one ``?`` per conversation.
_SQLITE_CONVS = f"""SELECT {_COLUMNS}, (SELECT COALESCE(MAX(t.seq), 0)
        FROM conversation_records AS t WHERE t.swarm_name = c.swarm_name
        AND t.caller_role = c.caller_role AND t.caller_id = c.caller_id
        AND t.conversation_id = c.conversation_id AND t.kind = 'turn')
    FROM conversation_records AS c WHERE {_KEY} AND kind = 'conversation'
    AND record_id = conversation_id AND conversation_id IN ({{ids}})"""
_SQLITE_PEOPLE = f"""SELECT conversation_id, record_id, seq, kind FROM conversation_records
    WHERE {_KEY} AND kind IN ('participant', 'mark') AND conversation_id IN ({{ids}})"""
#: conversations per statement (SQLite bounds a statement's parameters)
_CHUNK = 500
# many rows in one statement: one step of the database (the sqlite3 module lets the event
# loop's thread run during each step, so a row per step waits for it once per row)
_SQLITE_PUT_ROWS = _SQLITE["put"].replace("VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", "VALUES {rows}")
_ROW_MARKS = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
#: rows per statement (9 parameters each: within the 999 of older SQLite builds)
_ROWS = 100
# PostgreSQL locks the conversations' rows (in one order) until the transaction ends, so
# that their turns are appended one transaction at a time, whichever server writes them;
# their newest turns are read after the locks (a statement of its own sees what the
# transaction that held them committed)
_PG_KEY = "swarm_name = $1 AND caller_role = $2 AND caller_id = $3"
_POSTGRES_LOCK = f"""SELECT conversation_id, kind, record_id, seq, task_id, data::text
    FROM conversation_records WHERE {_PG_KEY} AND kind = 'conversation'
    AND record_id = conversation_id AND conversation_id = ANY($4::text[])
    ORDER BY conversation_id FOR UPDATE"""
_POSTGRES_LAST = """SELECT c.id, (SELECT COALESCE(MAX(t.seq), 0) FROM conversation_records AS t
        WHERE t.swarm_name = $1 AND t.caller_role = $2 AND t.caller_id = $3
        AND t.conversation_id = c.id AND t.kind = 'turn')
    FROM unnest($4::text[]) AS c(id)"""
_POSTGRES_PEOPLE = f"""SELECT conversation_id, record_id, seq, kind FROM conversation_records
    WHERE {_PG_KEY} AND kind IN ('participant', 'mark') AND conversation_id = ANY($4::text[])"""


def _key(key: CallerKey) -> tuple[str, str, str]:
    return (key.swarm, key.role, key.id)


def _params(key: CallerKey, r: Record) -> tuple[Any, ...]:
    return (*_key(key), r.conversation_id, r.kind, r.record_id, r.seq, r.task_id, dumps(r.data))


def _turn_params(key: CallerKey, rows: Sequence[Record], texts: dict[str, str]) -> list[Any]:
    """The insert parameters of ``rows``, each turn's JSON taken from ``texts`` (by id)."""
    return [
        (*_key(key), r.conversation_id, r.kind, r.record_id, r.seq, r.task_id, texts[r.record_id])
        if r.kind == "turn"
        else _params(key, r)
        for r in rows
    ]


def _texts(turns: Mapping[str, Sequence[dict[str, Any]]]) -> dict[str, str]:
    return {t["id"]: dumps(t) for items in turns.values() for t in items}


def _plan(
    turns: Mapping[str, Sequence[dict[str, Any]]],
    convs: Sequence[Any],
    last: Mapping[str, int],
    people: Sequence[Any],
    join: Joiner | None,
    marks: Mapping[str, Mark] | None,
) -> dict[str, list[Record]]:
    """The rows to write: ``convs`` the conversation rows found, ``last`` their newest
    turn's seq, ``people`` their participants and marks ``(conversation_id, id, seq,
    kind)``."""
    members: dict[str, list[tuple[str, int]]] = {}
    marked: dict[tuple[str, str], int] = {}
    for cid, rid, seq, kind in people:
        if kind == "mark":
            marked[(cid, rid)] = int(seq)
        else:
            members.setdefault(cid, []).append((rid, int(seq)))
    written: dict[str, list[Record]] = {}
    for row in convs:
        conv = _record(row)
        cid = conv.conversation_id
        mark = (marks or {}).get(cid)
        stored = marked.get((cid, mark[0]), 0) if mark is not None else 0
        rows = plan_append(
            conv, turns[cid], join, members.get(cid, ()), int(last[cid]), mark, stored
        )
        if rows is not None:
            written[cid] = rows
    return written


def _found(conv: Sequence[Any], people: Sequence[Any], refs: Sequence[Any]) -> TurnWrite:
    """What :meth:`~ConversationStore.add_turn` read: the conversation's row (none or
    one), its participants' and the turn's refs' (each none or one)."""
    return TurnWrite(
        conversation=_record(conv[0]) if conv else None,
        people=[_record(row) for row in people],
        refs=[_record(rows[0]) for rows in refs if rows],
    )


def _owned(swarm: str, row: Any) -> tuple[CallerKey, Record]:
    return CallerKey(swarm=swarm, role=row[0], id=row[1]), _record(row[2:])


def _shared(swarm: str, row: Any) -> Shared:
    return CallerKey(swarm=swarm, role=row[0], id=row[1]), _record(row[2:8]), _record(row[8:])


def _record(row: Any) -> Record:
    return Record(
        conversation_id=row[0],
        kind=row[1],
        record_id=row[2],
        seq=int(row[3]),
        task_id=row[4],
        data=loads(row[5]),
    )


_ADD_TURN = "conversations.add_turn"


@dataclass(slots=True)
class _TurnItem:
    """A turn waiting for :meth:`SQLiteConversationStore.add_turn`'s next write."""

    key: CallerKey
    turn: dict[str, Any]
    text: str  # encoded before the first await
    check: TurnCheck
    done: asyncio.Future[tuple[TurnWrite, MAILError | None]]


def _writing(
    batch: list[_TurnItem],
) -> Callable[[sqlite3.Connection], list[tuple[TurnWrite, MAILError | None]]]:
    """Writing ``batch``'s turns in one transaction, in order (a turn sees the ones before
    it): for each, what was read and the check's refusal."""

    def write(conn: sqlite3.Connection) -> list[tuple[TurnWrite, MAILError | None]]:
        conn.execute("BEGIN IMMEDIATE")  # the file's write lock: one writer at a time
        try:
            results = [_add_turn(conn, item) for item in batch]
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return results

    return write


def _add_turn(conn: sqlite3.Connection, item: _TurnItem) -> tuple[TurnWrite, MAILError | None]:
    turn, k = item.turn, _key(item.key)
    cid = turn["conversationId"]
    conv = conn.execute(_SQLITE_CONVS.format(ids="?"), (*k, cid)).fetchall()
    people = conn.execute(_SQLITE["list_in"], (*k, "participant", cid)).fetchall()
    named = [conn.execute(_SQLITE["get"], (*k, cid, *ref)).fetchall() for ref in turn_refs(turn)]
    found = _found([row[:6] for row in conv], people, named)
    refused = judge_turn(found, turn, item.check, int(conv[0][6]) if conv else 0)
    if found.turn is not None:
        conn.execute(
            _SQLITE["put"], _turn_params(item.key, [found.turn], {turn["id"]: item.text})[0]
        )
    return found, refused


def _settle(item: _TurnItem, result: tuple[TurnWrite, MAILError | None]) -> None:
    if not item.done.done():  # its caller may have given up
        item.done.set_result(result)


def _fail(item: _TurnItem, error: BaseException) -> None:
    if item.done.done():
        return
    if isinstance(error, Exception):
        item.done.set_exception(error)
    else:
        item.done.cancel()


class SQLiteConversationStore(ConversationStore):
    """Conversation records in the file of a :class:`~mail.db.SQLiteStore` (open it
    first; its migrations create the table)."""

    backend = "sqlite"

    def __init__(self, tasks: SQLiteStore) -> None:
        self._tasks = tasks
        self._turns: list[_TurnItem] = []  # turns waiting for the next write
        self._writer: asyncio.Task[None] | None = None

    async def _rows(self, op: str, sql: str, args: tuple[Any, ...]) -> list[Any]:
        def fetch(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(sql, args).fetchall()

        return await self._tasks.run(f"conversations.{op}", fetch)

    async def put(self, key: CallerKey, record: Record) -> None:
        params = _params(key, record)  # encoded before the first await
        await self._rows("put", _SQLITE["put"], params)

    async def put_many(self, key: CallerKey, records: Sequence[Record]) -> None:
        params = [_params(key, record) for record in records]  # encoded before the first await

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(_SQLITE["put"], params)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        if params:
            await self._tasks.run("conversations.put_many", write)

    async def append_turns(
        self,
        key: CallerKey,
        turns: Mapping[str, Sequence[dict[str, Any]]],
        join: Joiner | None = None,
        marks: Mapping[str, Mark] | None = None,
    ) -> dict[str, list[Record]]:
        texts = _texts(turns)  # encoded before the first await
        turns = {cid: list(items) for cid, items in turns.items()}
        order = sorted(turns)
        k = _key(key)

        def write(conn: sqlite3.Connection) -> dict[str, list[Record]]:
            conn.execute("BEGIN IMMEDIATE")  # the file's write lock: one writer at a time
            try:
                convs: list[Any] = []
                people: list[Any] = []
                for at in range(0, len(order), _CHUNK):
                    ids = order[at : at + _CHUNK]
                    places = ", ".join("?" * len(ids))
                    convs += conn.execute(_SQLITE_CONVS.format(ids=places), (*k, *ids)).fetchall()
                    people += conn.execute(_SQLITE_PEOPLE.format(ids=places), (*k, *ids)).fetchall()
                last = {row[0]: row[6] for row in convs}
                written = _plan(turns, [row[:6] for row in convs], last, people, join, marks)
                params = [p for rows in written.values() for p in _turn_params(key, rows, texts)]
                for at in range(0, len(params), _ROWS):
                    chunk = params[at : at + _ROWS]
                    sql = _SQLITE_PUT_ROWS.format(rows=", ".join([_ROW_MARKS] * len(chunk)))
                    conn.execute(sql, [value for row in chunk for value in row])
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return written

        if not order:
            return {}
        return await self._tasks.run("conversations.append_turns", write)

    async def add_turn(self, key: CallerKey, turn: dict[str, Any], check: TurnCheck) -> TurnWrite:
        # Turns written while a write runs share the next transaction (group commit): one
        # trip to the store's thread and one commit for all of them.
        item = _TurnItem(key, turn, dumps(turn), check, asyncio.get_running_loop().create_future())
        self._turns.append(item)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_turns())
        found, refused = await item.done
        if refused is not None:
            raise refused
        return found

    async def _write_turns(self) -> None:
        batch: list[_TurnItem] = []
        try:
            while self._turns:
                batch, self._turns = self._turns, []
                try:
                    results = await self._tasks.run(_ADD_TURN, _writing(batch))
                except StorageError as e:
                    if len(batch) == 1:
                        _fail(batch[0], e)
                        continue
                    # one turn failed the shared transaction: each again on its own, so
                    # that a failure costs only its own turn
                    for item in batch:
                        try:
                            alone = await self._tasks.run(_ADD_TURN, _writing([item]))
                        except StorageError as one:
                            _fail(item, one)
                        else:
                            _settle(item, alone[0])
                    continue
                for item, result in zip(batch, results, strict=True):
                    _settle(item, result)
        except BaseException as e:  # cancelled: no turn is left waiting
            for item in [*batch, *self._turns]:
                _fail(item, e)
            self._turns = []
            raise

    async def get(
        self, key: CallerKey, conversation_id: str, kind: RecordKind, record_id: str
    ) -> Record | None:
        args = (*_key(key), conversation_id, kind, record_id)
        rows = await self._rows("get", _SQLITE["get"], args)
        return _record(rows[0]) if rows else None

    async def list_records(
        self, key: CallerKey, kind: RecordKind, conversation_id: str | None = None
    ) -> list[Record]:
        if conversation_id is None:
            rows = await self._rows("list", _SQLITE["list"], (*_key(key), kind))
        else:
            args = (*_key(key), kind, conversation_id)
            rows = await self._rows("list", _SQLITE["list_in"], args)
        return [_record(row) for row in rows]

    async def max_seq(self, key: CallerKey, conversation_id: str, kind: RecordKind) -> int:
        rows = await self._rows("max_seq", _SQLITE["max_seq"], (*_key(key), conversation_id, kind))
        return int(rows[0][0])

    async def bound_to(self, key: CallerKey, task_id: str) -> list[Record]:
        rows = await self._rows("bound_to", _SQLITE["bound_to"], (*_key(key), task_id))
        return [_record(row) for row in rows]

    async def owner_of(self, swarm: str, conversation_id: str) -> CallerKey | None:
        args = (swarm, conversation_id, conversation_id)
        rows = await self._rows("owner_of", _SQLITE["owner_of"], args)
        return CallerKey(swarm=swarm, role=rows[0][0], id=rows[0][1]) if rows else None

    async def list_every(self, swarm: str, kind: RecordKind) -> list[tuple[CallerKey, Record]]:
        rows = await self._rows("list_every", _SQLITE["list_every"], (swarm, kind))
        return [_owned(swarm, row) for row in rows]

    async def shared_with(self, swarm: str, principal: str) -> list[Shared]:
        rows = await self._rows("shared_with", _SQLITE_SHARED, (swarm, principal))
        return [_shared(swarm, row) for row in rows]


class PostgresConversationStore(ConversationStore):
    """Conversation records in the database of a :class:`~mail.db.PostgresStore` (open
    it first; its migrations create the table)."""

    backend = "postgres"

    def __init__(self, tasks: PostgresStore) -> None:
        self._tasks = tasks

    async def _fetch(self, op: str, sql: str, *args: Any) -> list[Any]:
        pool = self._tasks.pool(f"conversations.{op}")
        with self._tasks.reported(f"conversations.{op}"):
            rows: list[Any] = await pool.fetch(sql, *args)
            return rows

    async def put(self, key: CallerKey, record: Record) -> None:
        await self._fetch("put", _POSTGRES["put"], *_params(key, record))

    async def put_many(self, key: CallerKey, records: Sequence[Record]) -> None:
        params = [_params(key, record) for record in records]
        if not params:
            return
        pool = self._tasks.pool("conversations.put_many")
        with self._tasks.reported("conversations.put_many"):
            async with pool.acquire() as conn, conn.transaction():
                await conn.executemany(_POSTGRES["put"], params)

    async def append_turns(
        self,
        key: CallerKey,
        turns: Mapping[str, Sequence[dict[str, Any]]],
        join: Joiner | None = None,
        marks: Mapping[str, Mark] | None = None,
    ) -> dict[str, list[Record]]:
        texts = _texts(turns)  # encoded before the first await
        turns = {cid: list(items) for cid, items in turns.items()}
        if not turns:
            return {}
        args = (*_key(key), sorted(turns))
        pool = self._tasks.pool("conversations.append_turns")
        with self._tasks.reported("conversations.append_turns"):
            async with pool.acquire() as conn, conn.transaction():
                convs = await conn.fetch(_POSTGRES_LOCK, *args)
                last = dict(await conn.fetch(_POSTGRES_LAST, *args))
                people = await conn.fetch(_POSTGRES_PEOPLE, *args)
                written = _plan(turns, convs, last, people, join, marks)
                params = [p for rows in written.values() for p in _turn_params(key, rows, texts)]
                if params:
                    await conn.executemany(_POSTGRES["put"], params)
        return written

    async def add_turn(self, key: CallerKey, turn: dict[str, Any], check: TurnCheck) -> TurnWrite:
        text = dumps(turn)  # encoded before the first await
        cid, k = turn["conversationId"], _key(key)
        pool = self._tasks.pool("conversations.add_turn")
        with self._tasks.reported("conversations.add_turn"):
            async with pool.acquire() as conn, conn.transaction():
                conv = await conn.fetch(_POSTGRES_LOCK, *k, [cid])
                last, people, named = 0, [], []
                if conv:  # locked: its newest turn and participants as last committed
                    last = await conn.fetchval(_POSTGRES["max_seq"], *k, cid, "turn")
                    people = await conn.fetch(_POSTGRES["list_in"], *k, "participant", cid)
                    named = [
                        await conn.fetch(_POSTGRES["get"], *k, cid, *r) for r in turn_refs(turn)
                    ]
                found = _found(conv, people, named)
                refused = judge_turn(found, turn, check, int(last))
                if found.turn is not None:
                    params = _turn_params(key, [found.turn], {turn["id"]: text})[0]
                    await conn.execute(_POSTGRES["put"], *params)
        if refused is not None:
            raise refused
        return found

    async def get(
        self, key: CallerKey, conversation_id: str, kind: RecordKind, record_id: str
    ) -> Record | None:
        args = (*_key(key), conversation_id, kind, record_id)
        rows = await self._fetch("get", _POSTGRES["get"], *args)
        return _record(rows[0]) if rows else None

    async def list_records(
        self, key: CallerKey, kind: RecordKind, conversation_id: str | None = None
    ) -> list[Record]:
        if conversation_id is None:
            rows = await self._fetch("list", _POSTGRES["list"], *_key(key), kind)
        else:
            args = (*_key(key), kind, conversation_id)
            rows = await self._fetch("list", _POSTGRES["list_in"], *args)
        return [_record(row) for row in rows]

    async def max_seq(self, key: CallerKey, conversation_id: str, kind: RecordKind) -> int:
        args = (*_key(key), conversation_id, kind)
        rows = await self._fetch("max_seq", _POSTGRES["max_seq"], *args)
        return int(rows[0][0])

    async def bound_to(self, key: CallerKey, task_id: str) -> list[Record]:
        rows = await self._fetch("bound_to", _POSTGRES["bound_to"], *_key(key), task_id)
        return [_record(row) for row in rows]

    async def owner_of(self, swarm: str, conversation_id: str) -> CallerKey | None:
        args = (swarm, conversation_id, conversation_id)
        rows = await self._fetch("owner_of", _POSTGRES["owner_of"], *args)
        return CallerKey(swarm=swarm, role=rows[0][0], id=rows[0][1]) if rows else None

    async def list_every(self, swarm: str, kind: RecordKind) -> list[tuple[CallerKey, Record]]:
        rows = await self._fetch("list_every", _POSTGRES["list_every"], swarm, kind)
        return [_owned(swarm, row) for row in rows]

    async def shared_with(self, swarm: str, principal: str) -> list[Shared]:
        rows = await self._fetch("shared_with", _POSTGRES_SHARED, swarm, principal)
        return [_shared(swarm, row) for row in rows]


def conversation_store_for(tasks: object | None) -> ConversationStore:
    """The conversation store living in the database of the (open) task store ``tasks``:
    SQLite or PostgreSQL; in memory for a memory store or none."""
    from mail.conversations.store import MemoryConversationStore  # noqa: PLC0415
    from mail.db import PostgresStore, SQLiteStore  # noqa: PLC0415

    if isinstance(tasks, SQLiteStore):
        return SQLiteConversationStore(tasks)
    if isinstance(tasks, PostgresStore):
        return PostgresConversationStore(tasks)
    return MemoryConversationStore()
