"""Instructions per task of the runtime, counted by valgrind's callgrind: a figure that does
not move with the machine's load, for A/B comparisons of the runtime's hot path.

Runs the workload of benchmarks/runtime.py (a scripted three-turn swarm, every answer
checked) sequentially under callgrind twice, with ``--tasks`` and with ``--tasks`` plus
1,000 tasks after the same 200 warm-up tasks, and prints the difference divided by 1,000:
start-up and warm-up cancel out. Needs ``valgrind`` on the PATH; takes about a minute.

    uv run python benchmarks/instructions.py [--loop asyncio|uvloop]
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


def _child(count: int, loop: str) -> None:
    """``--child N``: run WARM_UP + N sequential tasks, then leave."""
    sys.path.insert(0, str(HERE))
    import mail
    import runtime as bench  # benchmarks/runtime.py, beside this file

    async def main() -> None:
        runner = bench.RuntimeRunner()
        runner.start()
        for i in range(WARM_UP + count):
            await runner.run_one(i)
        await runner.shutdown()

    mail.settle_gc()
    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def _count(extra: int, loop: str, out: Path) -> int:
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
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.loop)
        return
    if shutil.which("valgrind") is None:
        sys.exit("instructions.py needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="mail-callgrind-") as tmp:
        base = _count(0, args.loop, Path(tmp) / "base.out")
        more = _count(MEASURED, args.loop, Path(tmp) / "more.out")
    print(f"# runtime, loop {args.loop}, {sys.version.split()[0]}")
    print(f"instructions per task: {(more - base) / MEASURED:,.0f}")


if __name__ == "__main__":
    main()
