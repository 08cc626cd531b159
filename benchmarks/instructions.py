"""Instructions per task of the runtime, counted by valgrind's callgrind: a figure that does
not move with the machine's load, for A/B comparisons of the runtime's hot path.

Runs the workload of benchmarks/runtime.py (a scripted three-turn swarm, every answer
checked) under callgrind twice, once with 200 warm-up tasks only and once with the same
warm-up followed by 1,000 measured tasks, and prints the difference divided by 1,000:
start-up and warm-up cancel out. ``--concurrent N`` runs the warm-up and the measured
tasks N at a time (``asyncio.gather``; the warm-up is then one batch of 200), so the cost
of many tasks in flight can be counted too; N=1, the default, is sequential. Needs
``valgrind`` on the PATH; takes about a minute.

The two runs end with 200 and 1,000 finished tasks kept in memory (the runtime's
default limit), so the figure includes walking 800 more kept tasks in the collection at
interpreter exit: some 25,000 - 30,000 instructions per task that steady-state operation
does not spend. It is the same for every ``--concurrent``, so figures stay comparable.

    uv run python benchmarks/instructions.py [--loop asyncio|uvloop] [--concurrent N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEASURED = 1000
WARM_UP = 200


def _child(count: int, loop: str, concurrent: int) -> None:
    """``--child N``: run WARM_UP + N tasks, ``concurrent`` at a time, then leave."""
    sys.path.insert(0, str(HERE))
    import mail
    import runtime as bench  # benchmarks/runtime.py, beside this file

    async def run(runner: bench.RuntimeRunner, start: int, n: int) -> None:
        if concurrent == 1:
            for i in range(start, start + n):
                await runner.run_one(i)
            return
        for batch in range(start, start + n, concurrent):
            size = min(concurrent, start + n - batch)
            await asyncio.gather(*(runner.run_one(batch + i) for i in range(size)))

    async def main() -> None:
        runner = bench.RuntimeRunner()
        runner.start()
        await run(runner, 0, WARM_UP)
        await run(runner, WARM_UP, count)
        await runner.shutdown()

    mail.settle_gc()
    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def _count(extra: int, loop: str, concurrent: int, out: Path) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--child",
        str(extra),
        "--loop",
        loop,
        "--concurrent",
        str(concurrent),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(command, check=True, env=env, capture_output=True)  # noqa: S603
    for line in out.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument(
        "--concurrent",
        type=int,
        default=1,
        metavar="N",
        help="run the tasks N at a time with asyncio.gather (default 1: sequential)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.concurrent < 1:
        parser.error("--concurrent must be at least 1")
    if args.child is not None:
        _child(args.child, args.loop, args.concurrent)
        return
    if shutil.which("valgrind") is None:
        sys.exit("instructions.py needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="mail-callgrind-") as tmp:
        base = _count(0, args.loop, args.concurrent, Path(tmp) / "base.out")
        more = _count(MEASURED, args.loop, args.concurrent, Path(tmp) / "more.out")
    mode = "sequential" if args.concurrent == 1 else f"{args.concurrent} in flight"
    print(f"# runtime, loop {args.loop}, {mode}, {sys.version.split()[0]}")
    print(f"instructions per task: {(more - base) / MEASURED:,.0f}")


if __name__ == "__main__":
    main()
