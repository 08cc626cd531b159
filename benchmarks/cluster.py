"""Cluster mode (issue 27): `mail server` replicas on one PostgreSQL database and Redis.

Real replicas (``python -m mail.cli server``, each a process with its own data directory,
on loopback ports, logging at WARNING without an access log) on a throwaway database,
serving the benchmarks' three-turn swarm (``benchmarks/_agents.py:paced``: each turn waits
the milliseconds its task's body starts with, as an LLM call would). Measures:

* **throughput** with one, two, then three replicas: ``--clients`` clients sending
  sequential ``POST /message`` tasks, request i to replica i mod n, for ``--seconds``, with
  ``--turn-ms`` turns and with none (CPU-bound): tasks/s, latency, CPU per task of the
  replicas, of the run's PostgreSQL backends and of this client (``/proc/<pid>/stat``);
* **cross-replica overhead**: one request served by the replica that ran or runs the task
  (A) and by another (B): ``GET /task`` of a finished and of a running task, the replay
  ``GET /tasks/{id}/events``, a follow-up of a finished task (B takes the free lease and
  loads the task), a cancel of a running task (B hands it to A through Redis), and an
  event's way from A's stream to a follower on A and on B;
* **fail-over**: ``--failover-tasks`` tasks running on A, killed (SIGKILL); each client
  follows its task on B or C with ``Last-Event-ID``: the time until every task completed.

PostgreSQL: ``MAIL_BENCH_POSTGRES_URL`` or ``MAIL_TEST_POSTGRES_URL`` (admin URL; a database
``mail_bench_<hex>`` is made and dropped); Redis: ``MAIL_BENCH_REDIS_URL`` (default db 13),
whose keys of this run are deleted at the end, also on Ctrl-C.

    uv run python benchmarks/cluster.py [--seconds 10] [--clients 50] [--turn-ms 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # benchmarks/http.py would shadow the standard library's http

import argparse
import asyncio
import itertools
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx

from mail.db.store import CallerKey
from mail.server._cluster_relay import stream_key

ROOT = Path(__file__).resolve().parent.parent
SWARM = "bench"
USER = "bench"
#: Bound on any single wait (a request, a stream, a replica's start).
WAIT = 60.0
#: What a replica logs when its lease renewal misses a task, and when it takes one over.
LOST, TAKEN = "lost the lease of task", "took over task"
POSTGRES_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_DEFAULT = "redis://127.0.0.1:6379/13"
#: What would change where a replica looks (prefixes): each replica gets what it needs.
_DROPPED = ("MAIL_", "SWARM_", "DATABASE_URL", "BASE_URL", "AUTH_ENDPOINT", "TOKEN_INFO_ENDPOINT")


# --- PostgreSQL and Redis ------------------------------------------------------------------


def _where(url: str) -> str:
    """Host and port of ``url`` (no password in what is printed)."""
    return f"{urlsplit(url).hostname}:{urlsplit(url).port}"


def _postgres(url: str, *statements: str) -> list[Any]:
    """Run ``statements``; the rows of the last."""
    import asyncpg

    async def run() -> list[Any]:
        conn = await asyncpg.connect(url, timeout=5)
        try:
            for statement in statements[:-1]:
                await conn.execute(statement)
            return list(await conn.fetch(statements[-1]))
        finally:
            await conn.close()

    return asyncio.run(run())


def _reachable(admin_url: str, redis_url: str) -> None:
    """Exit with one line when PostgreSQL or Redis is not on loopback or does not answer."""
    import asyncpg
    import redis

    for url in (admin_url, redis_url):
        if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit(f"cluster.py: {_where(url)} is not a loopback address")
    client = redis.Redis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=2)
    try:
        _postgres(admin_url, "SELECT 1")
        client.ping()
    except (OSError, TimeoutError, asyncpg.PostgresError, redis.RedisError) as e:
        which = "Redis" if isinstance(e, redis.RedisError) else "PostgreSQL"
        url = _where(redis_url if which == "Redis" else admin_url)
        raise SystemExit(f"cluster.py: {which} at {url} is unreachable: {e}") from None
    finally:
        client.close()


# --- replicas ------------------------------------------------------------------------------


@dataclass
class Replica:
    name: str
    id: str
    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def cpu(self) -> float:
        """CPU seconds (user + system) the replica has used so far."""
        return _cpu(self.process.pid)

    def said(self, text: str) -> int:
        """How often the replica's log says ``text``."""
        return self.log.read_text(encoding="utf-8", errors="replace").count(text)

    def stop(self) -> None:
        """SIGINT, as Ctrl-C would; SIGKILL after 15 s."""
        self.process.send_signal(signal.SIGINT)  # no-op once it has exited
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _swarm() -> list[dict[str, Any]]:
    """The swarms.json of the replicas: ``benchmarks._agents:paced`` agents."""
    agent = {"factory": "python::benchmarks._agents:paced", "actions": []}
    return [{
        "name": SWARM, "version": "1.0.0", "entrypoint": "supervisor", "actions": [],
        "agents": [
            {**agent, "name": "supervisor", "comm_targets": ["worker"], "enable_entrypoint": True,
             "can_complete_tasks": True, "agent_params": {"role": "supervisor"}},
            {**agent, "name": "worker", "comm_targets": ["supervisor"],
             "agent_params": {"role": "worker"}},
        ],
    }]  # fmt: skip


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=1.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class Cluster:
    """The run's database, Redis, replicas and the task ids it used (for the clean-up)."""

    admin_url: str
    redis_url: str
    lease: float
    root: Path
    logs: Path | None = None
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    replicas: list[Replica] = field(default_factory=list)
    task_ids: set[str] = field(default_factory=set)
    key: str = ""

    @property
    def database(self) -> str:
        return f"mail_bench_{self.tag}"

    @property
    def url(self) -> str:
        return urlsplit(self.admin_url)._replace(path=f"/{self.database}").geturl()

    def settle(self) -> int:
        """Wait until no lease is held (so one run's take-overs do not weigh on the next)."""
        deadline, query = time.monotonic() + WAIT, "SELECT count(*) FROM cluster_task_leases"
        while (held := _postgres(self.url, query)[0][0]) and time.monotonic() < deadline:
            time.sleep(0.2)  # leases held in PostgreSQL: polled, no event to wait on
        return int(held)

    def start_replica(self) -> Replica:
        name = "abcdefgh"[len(self.replicas)]
        data = self.root / name
        data.mkdir()
        with socket.socket() as sock:  # a free port
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        replica_id = f"bench-{self.tag}-{name}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)} | {
            "DATABASE_URL": self.url,
            "MAIL_REDIS_URL": self.redis_url,
            "MAIL_REPLICA_ID": replica_id,
            "MAIL_LEASE_SECONDS": str(self.lease),
            "MAIL_DATA_DIR": str(data),
            "MAIL_LOG_LEVEL": "WARNING",
            "MAIL_CONFIG_PATH": str(self.root / "mail.toml"),  # no access log
            "SWARM_REGISTRY_FILE": str(data / "registry.json"),
            "PYTHONPATH": str(ROOT),  # benchmarks._agents
        }
        command = [sys.executable, "-m", "mail.cli", "server", "-n", SWARM]
        command += ["-s", str(self.root / "swarms.json"), "-p", str(port), "-H", "127.0.0.1"]
        log = self.root / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603  # fixed arguments
                command, cwd=data, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches this script, which stops them
            )  # fmt: skip
        replica = Replica(name, replica_id, f"http://127.0.0.1:{port}", log, process)
        self.replicas.append(replica)
        deadline = time.monotonic() + WAIT
        while not _healthy(replica.url):  # a subprocess offers no other readiness signal
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(
                    f"cluster.py: replica {name} did not start:\n{log.read_text()[-2000:]}"
                )
            time.sleep(0.05)
        self.key = self.key or self._user_key(replica, data)
        return replica

    def _user_key(self, first: Replica, data: Path) -> str:
        keys = json.loads((data / "credentials.json").read_text(encoding="utf-8"))
        admin = next(k["key"] for k in keys["keys"] if k["role"] == "admin")
        auth = {"Authorization": f"Bearer {admin}"}
        body = {"role": "user", "id": USER}
        created = httpx.post(first.url + "/keys", json=body, headers=auth, trust_env=False)
        key: str = created.raise_for_status().json()["key"]
        return key

    def close(self) -> None:
        for replica in self.replicas:
            replica.stop()
            if self.logs is not None:
                shutil.copy(replica.log, self.logs / f"{replica.id}.log")
        import redis

        client = redis.Redis.from_url(self.redis_url)
        try:
            for replica in self.replicas:
                client.delete(f"mail:inbox:{replica.id}")
                for key in client.scan_iter(match=f"mail:replica:{replica.id}*"):
                    client.delete(key)
            caller = CallerKey(swarm=SWARM, role="user", id=USER)
            ids = sorted(self.task_ids)
            for i in range(0, len(ids), 500):
                client.delete(*(stream_key(caller, task_id) for task_id in ids[i : i + 500]))
        finally:
            client.close()
        _postgres(self.admin_url, f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


@contextmanager
def cluster(admin_url: str, redis_url: str, lease: float, logs: Path | None) -> Iterator[Cluster]:
    with tempfile.TemporaryDirectory(prefix="mail-bench-cluster-") as root:
        run = Cluster(admin_url, redis_url, lease, Path(root), logs)
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
        _postgres(admin_url, f'CREATE DATABASE "{run.database}"')
        (run.root / "swarms.json").write_text(json.dumps(_swarm()), encoding="utf-8")
        (run.root / "mail.toml").write_text("[server]\naccess_log = false\n", encoding="utf-8")
        try:
            yield run
        except Exception:
            for r in run.replicas:  # what the replicas said, before it is deleted
                print(f"--- {r.id}:\n{r.log.read_text(errors='replace')[-3000:]}", file=sys.stderr)
            raise
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: clean up all the same
            run.close()


# --- clients -------------------------------------------------------------------------------


def session(key: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        headers={"Authorization": f"Bearer {key}"},
        connector=aiohttp.TCPConnector(limit=200),
        timeout=aiohttp.ClientTimeout(total=WAIT),
    )


async def _ok(client: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> Any:
    """The JSON answer of a request that must succeed."""
    async with client.request(method, url, **kw) as response:
        if response.status != 200:
            raise AssertionError(f"{method} {url}: {response.status}: {await response.text()}")
        return await response.json()


async def ask(client: aiohttp.ClientSession, replica: Replica, body: dict[str, Any]) -> None:
    """``POST /message``, the answer checked."""
    answer = await _ok(client, "POST", replica.url + "/message", json=body)
    if answer.get("status") != "completed" or answer.get("response") != "answer:" + body["body"]:
        raise AssertionError(f"{replica.name}: {body!r} answered {answer!r}")


@dataclass
class Frame:
    """A server-sent event as read: its id (``None`` for the closing one), name, arrival."""

    id: int | None
    event: str
    at: float


@dataclass
class Stream:
    """An event stream read: its frames; ``opened`` once answered, ``started`` at a frame."""

    frames: list[Frame] = field(default_factory=list)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self, client: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> Stream:
        async with client.request(method, url, **kw) as response:
            if response.status != 200:
                raise AssertionError(f"{url}: {response.status}: {await response.text()}")
            self.opened.set()
            frame: dict[str, str] = {}
            async for raw in response.content:
                if line := raw.decode().rstrip("\r\n"):
                    name, _, value = line.partition(":")
                    frame[name] = value.removeprefix(" ")
                    continue
                if frame.get("event", "ping") != "ping":
                    seq = int(frame["id"]) if "id" in frame else None
                    self.frames.append(Frame(seq, frame["event"], time.perf_counter()))
                    self.started.set()
                frame = {}
        return self


def _ms(samples: list[float]) -> tuple[float, float]:
    """Median and 95th percentile, in ms."""
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int((len(ordered) - 1) * 0.95)] * 1e3


# --- throughput ----------------------------------------------------------------------------


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _backends(run: Cluster) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend connected to the run's database."""
    query = f"SELECT pid FROM pg_stat_activity WHERE datname = '{run.database}'"  # noqa: S608
    rows = await asyncio.to_thread(_postgres, run.admin_url, query)
    return {int(r["pid"]): _cpu(int(r["pid"])) for r in rows}


async def throughput(run: Cluster, clients: int, seconds: float, turn_ms: int) -> dict[str, float]:
    """``clients`` clients sending tasks for ``seconds``, request i to replica i mod n."""
    replicas = run.replicas
    counter = itertools.count()
    latencies: list[float] = []
    prefix = f"{turn_ms}:{run.tag}-{len(replicas)}-"

    async def client_loop(client: aiohttp.ClientSession, until: float, record: bool) -> None:
        while time.perf_counter() < until:
            i = next(counter)
            task_id = prefix + str(i)
            run.task_ids.add(task_id)
            start = time.perf_counter()
            await ask(client, replicas[i % len(replicas)], {"body": task_id, "task_id": task_id})
            if record:
                latencies.append(time.perf_counter() - start)

    def logged() -> list[int]:
        return [sum(r.said(text) for r in replicas) for text in (LOST, TAKEN)]

    async with session(run.key) as client:
        # warm-up: opens the connections and each replica's runtime of the caller
        warm = time.perf_counter() + 1.0 + 3 * turn_ms / 1e3
        await asyncio.gather(*(client_loop(client, warm, False) for _ in range(clients)))
        cpu, pg, said, own = [r.cpu() for r in replicas], await _backends(run), logged(), time.process_time()  # fmt: skip
        start = time.perf_counter()
        await asyncio.gather(*(client_loop(client, start + seconds, True) for _ in range(clients)))
        wall = time.perf_counter() - start
        used = sum(r.cpu() - before for r, before in zip(replicas, cpu, strict=True))
        own = time.process_time() - own
        pg_used = sum(now - pg.get(pid, 0.0) for pid, now in (await _backends(run)).items())
        lost, taken = (after - before for after, before in zip(logged(), said, strict=True))
    n = len(latencies)
    p50, p95 = _ms(latencies)
    return {
        "rate": n / wall, "p50": p50, "p95": p95, "cpu": used / n * 1e3,
        "pg": pg_used / n * 1e3, "client": own / n * 1e3, "lost": lost, "taken": taken,
    }  # fmt: skip


def print_throughput(rows: list[tuple[int, int, dict[str, float]]], clients: int) -> None:
    print(f"\n## throughput: {clients} clients, sequential POST /message each, round robin")
    print(f"{'replicas':>8} {'turn':>7} {'tasks/s':>8} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'CPU ms/task: replicas':>22} {'PostgreSQL':>11} {'client':>7} {'leases lost':>12} "
          f"{'taken over':>11}")  # fmt: skip
    for k, turn_ms, r in rows:
        print(f"{k:>8} {turn_ms:>5}ms {r['rate']:>8,.0f} {r['p50']:>8.1f} {r['p95']:>8.1f} "
              f"{r['cpu']:>22.2f} {r['pg']:>11.2f} {r['client']:>7.2f} {r['lost']:>12} "
              f"{r['taken']:>11}")  # fmt: skip


# --- cross-replica overhead ----------------------------------------------------------------


async def _running(
    run: Cluster, client: aiohttp.ClientSession, owner: Replica, task_id: str, turn_ms: int
) -> tuple[asyncio.Task[Stream], Stream]:
    """Start a streamed task on ``owner`` and wait for its first event (it then runs
    there); returns the reader and its stream."""
    run.task_ids.add(task_id)
    body = {"body": f"{turn_ms}:{task_id}", "task_id": task_id, "stream": True}
    stream = Stream()
    reader = asyncio.create_task(stream.read(client, "POST", owner.url + "/message", json=body))
    await asyncio.wait_for(stream.started.wait(), WAIT)
    return reader, stream


async def overhead(run: Cluster, samples: int) -> None:
    """Each operation on A, which ran or runs the task, and on B (which first alternates)."""
    a, b = run.replicas[0], run.replicas[1]
    found: dict[str, tuple[list[float], list[float]]] = {}

    async def both(name: str, i: int, make: Any) -> None:
        took = {}
        for replica in (a, b) if i % 2 == 0 else (b, a):
            start = time.perf_counter()
            await make(replica)
            took[replica.name] = time.perf_counter() - start
        pair = found.setdefault(name, ([], []))
        pair[0].append(took[a.name])
        pair[1].append(took[b.name])

    async with session(run.key) as client:
        done = [f"{run.tag}-done-{i}" for i in range(samples)]
        for task_id in done:
            run.task_ids.add(task_id)
            await ask(client, a, {"body": f"0:{task_id}", "task_id": task_id})
        for i, t in enumerate(done):
            await both("GET /task, finished", i, lambda r, q={"task_id": t}: _ok(client, "GET", r.url + "/task", params=q))  # fmt: skip
        for i, t in enumerate(done):
            path = f"/tasks/{t}/events"
            await both("GET /tasks/{id}/events replay", i, lambda r, p=path: Stream().read(client, "GET", r.url + p))  # fmt: skip
        for i, t in enumerate(done):  # each replica takes the free lease in turn
            follow_up = {"task_id": t, "resume_from": "user_response"}
            body = lambda r, f=follow_up: {**f, "body": f"0:{r.name}{time.time()}"}  # noqa: E731
            await both("follow-up of a finished task", i, lambda r, b=body: ask(client, r, b(r)))

        # tasks running on A (2 s turns): read on A and B, then cancelled on A or B
        ids = [f"{run.tag}-run-{i}" for i in range(samples)]
        readers = [(await _running(run, client, a, t, 2000))[0] for t in ids]
        for i, t in enumerate(ids):
            await both("GET /task, running", i, lambda r, q={"task_id": t}: _ok(client, "GET", r.url + "/task", params=q))  # fmt: skip
        cancels: tuple[list[float], list[float]] = ([], [])
        for i, t in enumerate(ids):
            start = time.perf_counter()
            await _ok(client, "POST", f"{(a, b)[i % 2].url}/tasks/{t}/cancel")
            cancels[i % 2].append(time.perf_counter() - start)
        found["cancel of a running task (B hands it to A)"] = cancels
        await asyncio.wait_for(asyncio.gather(*readers), WAIT)

        async def live(i: int) -> tuple[list[float], list[float]]:
            """An event's way from A's POST /message stream to a follower on A and on B."""
            task_id = f"{run.tag}-live-{i}"
            reader, source = await _running(run, client, a, task_id, 300)
            path, after = f"/tasks/{task_id}/events", {"Last-Event-ID": "1"}
            followers = [Stream(), Stream()]
            reading = [
                asyncio.create_task(f.read(client, "GET", r.url + path, headers=after))
                for f, r in zip(followers, (a, b), strict=True)
            ]
            await asyncio.wait_for(asyncio.gather(*(f.opened.wait() for f in followers)), WAIT)
            since = time.perf_counter()  # both followers are on the live stream now
            await asyncio.wait_for(asyncio.gather(reader, *reading), WAIT)
            fresh = [f for f in source.frames if f.id is not None and f.at > since]
            on = [{f.id: f.at for f in follower.frames} for follower in followers]
            return [on[0][f.id] - f.at for f in fresh], [on[1][f.id] - f.at for f in fresh]

        name = "live event: owner's stream -> a follower"
        for on_a, on_b in await asyncio.gather(*(live(i) for i in range(samples))):
            pair = found.setdefault(name, ([], []))
            pair[0].extend(on_a)
            pair[1].extend(on_b)
    print("\n## cross-replica overhead (ms): A ran or runs the task, B did not")
    print(f"{'operation':<44} {'A p50':>7} {'p95':>7} {'B p50':>7} {'p95':>7} {'B - A p50':>10}")
    for name, (owner, other) in found.items():
        (a50, a95), (b50, b95) = _ms(owner), _ms(other)
        print(f"{name:<44} {a50:>7.2f} {a95:>7.2f} {b50:>7.2f} {b95:>7.2f} {b50 - a50:>10.2f}")


# --- fail-over -----------------------------------------------------------------------------


async def failover(run: Cluster, tasks: int, turn_ms: int) -> None:
    """Kill A running ``tasks`` tasks; clients follow theirs on B or C (again when cut)."""
    a, b, c = run.replicas[:3]
    cuts = 0
    async with session(run.key) as client:
        ids = [f"{run.tag}-fail-{i}" for i in range(tasks)]
        running = await asyncio.gather(*(_running(run, client, a, t, turn_ms) for t in ids))
        a.process.send_signal(signal.SIGKILL)
        killed = time.perf_counter()
        # A's streams break (or ended before the kill)
        await asyncio.wait_for(asyncio.gather(*(r for r, _ in running), return_exceptions=True), WAIT)  # fmt: skip

        async def follow(i: int) -> list[Frame]:
            nonlocal cuts
            seen = running[i][1]
            for attempt in itertools.count():
                if seen.frames[-1].id is None:  # the closing event
                    return seen.frames
                url = f"{(b, c)[(i + attempt) % 2].url}/tasks/{ids[i]}/events"
                try:
                    after = {"Last-Event-ID": str(seen.frames[-1].id)}
                    await seen.read(client, "GET", url, headers=after)
                except aiohttp.ClientPayloadError:
                    cuts += 1
            raise AssertionError  # unreachable

        seen = await asyncio.wait_for(asyncio.gather(*(follow(i) for i in range(tasks))), WAIT)
    a.process.wait(timeout=WAIT)
    done = [s[-1].at - killed for s in seen if s[-1].event == "task_complete"] or [float("nan")]
    taken = [[f.at - killed for f in s if f.event == "task_taken_over"] for s in seen]
    ids_seen = [[f.id for f in s if f.id is not None] for s in seen]
    gaps = sum(1 for n in ids_seen if n != list(range(1, len(n) + 1)))
    first = sorted(t[0] for t in taken if t) or [float("nan")]
    print(f"\n## fail-over: {tasks} tasks on A ({turn_ms} ms turns), A killed (SIGKILL), "
          f"lease {run.lease:g} s")  # fmt: skip
    print(f"{sum(s[-1].event == 'task_complete' for s in seen)}/{tasks} completed on B and C; {sum(map(bool, taken))} taken over, "
          f"{sum(len(t) > 1 for t in taken)} of them more than once ({sum(map(len, taken))} "
          f"take-overs); {gaps} with a gap or duplicate in their events; {cuts} follower "
          "streams cut short (and followed again)")  # fmt: skip
    print(f"kill -> first take-over of each task: {first[0]:.2f} - {first[-1]:.2f} s; kill -> "
          f"completed: first {min(done):.2f} s, median {statistics.median(done):.2f} s, "
          f"every task {max(done):.2f} s")  # fmt: skip


# --- main ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0, help="per throughput run")
    parser.add_argument("--turn-ms", type=int, default=200, help="agent turn, realistic runs")
    parser.add_argument("--samples", type=int, default=20, help="per overhead operation")
    parser.add_argument("--failover-tasks", type=int, default=50)
    parser.add_argument("--failover-turn-ms", type=int, default=1000)
    parser.add_argument("--lease-seconds", type=float, default=3.0)
    parser.add_argument("--logs", type=Path, help="copy the replicas' logs to this directory")
    args = parser.parse_args()
    env = os.environ.get
    admin_url = env("MAIL_BENCH_POSTGRES_URL") or env("MAIL_TEST_POSTGRES_URL") or POSTGRES_DEFAULT
    redis_url = env("MAIL_BENCH_REDIS_URL") or REDIS_DEFAULT
    _reachable(admin_url, redis_url)
    print(f"# cluster.py: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}; lease {args.lease_seconds:g} s")  # fmt: skip
    rows: list[tuple[int, int, dict[str, float]]] = []
    with cluster(admin_url, redis_url, args.lease_seconds, args.logs) as run:
        for k in (1, 2, 3):
            run.start_replica()
            for turn_ms in (args.turn_ms, 0):
                row = asyncio.run(throughput(run, args.clients, args.seconds, turn_ms))
                rows.append((k, turn_ms, row))
                print(f"{k} replica(s), {turn_ms} ms turns: {row['rate']:,.0f} tasks/s; leases "
                      f"held after it: {run.settle()} (once settled)", flush=True)  # fmt: skip
        print_throughput(rows, args.clients)
        asyncio.run(overhead(run, args.samples))
        run.settle()
        asyncio.run(failover(run, args.failover_tasks, args.failover_turn_ms))
        print(f"(load {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("cluster.py: interrupted (replicas stopped, database dropped)") from None
