"""Throughput of message construction and validation.

Run from the project root with ``uv run benchmarks/messages.py [iterations]``. Prints one
line per figure: constructions/s for every ``make_*`` constructor, then validations/s for
``validate_message`` / ``validate_interswarm_message`` on prebuilt messages and, for
comparison, for jsonschema validation against ``spec/`` (format checking on).
"""

from __future__ import annotations

import importlib.util
import platform
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from mail.core import message as m

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ITERATIONS = 200_000
#: jsonschema is two orders of magnitude slower; fewer iterations give the same precision.
SCHEMA_ITERATIONS = 5_000

USER = m.create_user_address("user-42")
SUPERVISOR = m.create_agent_address("supervisor")
WEATHER = m.create_agent_address("weather")
OWNER = "user:user-42@swarm-alpha"


def _request() -> m.MAILMessage:
    return m.make_request(
        task_id="weather-123",
        sender=USER,
        recipient=SUPERVISOR,
        subject="Weather",
        body="What is the weather in Paris?",
    )


REQUEST = _request()


def _interswarm() -> m.MAILInterswarmMessage:
    return m.make_interswarm_message(
        message=REQUEST,
        source_swarm="swarm-alpha",
        target_swarm="swarm-beta",
        task_owner=OWNER,
        task_contributors=[OWNER],
    )


CONSTRUCTORS: dict[str, Callable[[], Any]] = {
    "make_request": _request,
    "make_response": lambda: m.make_response(
        task_id="weather-123", sender=WEATHER, recipient=SUPERVISOR, subject="Re", body="Rain."
    ),
    "make_broadcast": lambda: m.make_broadcast(
        task_id="weather-123", sender=SUPERVISOR, recipients=[WEATHER], subject="s", body="b"
    ),
    "make_interrupt": lambda: m.make_interrupt(
        task_id="weather-123", sender=SUPERVISOR, recipients=[WEATHER], subject="s", body="b"
    ),
    "make_broadcast_complete": lambda: m.make_broadcast_complete(
        task_id="weather-123", sender=SUPERVISOR, subject="::task_complete::", body="Done."
    ),
}


def rate(fn: Callable[[], object], iterations: int) -> float:
    """Calls per second of ``fn`` over ``iterations`` calls (best of 3 runs)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, time.perf_counter() - start)
    return iterations / best


def _schema_validators() -> tuple[Any, Any]:
    path = ROOT / "spec" / "validate_samples.py"
    spec = importlib.util.spec_from_file_location("validate_samples", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_validators()  # type: ignore[no-any-return]


def main(iterations: int = DEFAULT_ITERATIONS) -> None:
    print(f"# python {platform.python_version()} on {platform.machine()}, {iterations} iterations")
    for name, make in {**CONSTRUCTORS, "make_interswarm_message": _interswarm}.items():
        print(f"construct {name:<28} {rate(make, iterations):>12,.0f} /s")
    request = REQUEST
    wrapped = _interswarm()
    prebuilt = {name: make() for name, make in CONSTRUCTORS.items()}
    for name, msg in prebuilt.items():
        figure = rate(partial(m.validate_message, msg), iterations)
        print(f"validate_message {name.removeprefix('make_'):<21} {figure:>12,.0f} /s")
    figure = rate(lambda: m.validate_interswarm_message(wrapped), iterations)
    print(f"validate_interswarm_message{'':<11} {figure:>12,.0f} /s")
    core, interswarm = _schema_validators()
    figure = rate(lambda: core.validate(request), SCHEMA_ITERATIONS)
    print(f"jsonschema core request{'':<15} {figure:>12,.0f} /s")
    figure = rate(lambda: interswarm.validate(wrapped), SCHEMA_ITERATIONS)
    print(f"jsonschema interswarm request{'':<9} {figure:>12,.0f} /s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ITERATIONS)
