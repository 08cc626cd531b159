"""Validate the example files and freshly built messages against the MAIL JSON Schemas.

Run from anywhere with ``uv run spec/validate_samples.py [EXAMPLES_DIR]``: validates every
``*.json`` file of ``EXAMPLES_DIR`` (default: ``spec/examples``, located relative to this
script), then freshly built messages. Prints ``ok  <name>`` per sample; at the first invalid
one prints ``FAIL <file>: <field>: <reason>`` on stderr and exits 1 (also when the directory
holds no example).

The helpers (:func:`load_validators`, :func:`example_files`, :func:`constructor_samples`)
are importable by tests through ``importlib`` from this file's path.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator, ValidationError
from referencing import Registry, Resource

from mail.core import message as m
from mail.errors import InvalidMessageError

__all__ = [
    "CORE_SCHEMA_PATH",
    "EXAMPLES_DIR",
    "INTERSWARM_SCHEMA_PATH",
    "SPEC_DIR",
    "constructor_samples",
    "describe",
    "example_files",
    "is_interswarm",
    "load_schema",
    "load_validators",
    "main",
    "validate_sample",
]

SPEC_DIR = Path(__file__).resolve().parent
CORE_SCHEMA_PATH = SPEC_DIR / "MAIL-core.schema.json"
INTERSWARM_SCHEMA_PATH = SPEC_DIR / "MAIL-interswarm.schema.json"
EXAMPLES_DIR = SPEC_DIR / "examples"


def load_schema(path: Path) -> dict[str, Any]:
    """Read one schema file and check that it is itself a valid draft 2020-12 schema."""
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return schema


def load_validators() -> tuple[Draft202012Validator, Draft202012Validator]:
    """Return ``(core, interswarm)`` validators with format checking switched on.

    Both schemas are registered under their ``$id`` so the interswarm schema's relative
    ``MAIL-core.schema.json#/$defs/...`` references resolve without network access.
    """
    core = load_schema(CORE_SCHEMA_PATH)
    interswarm = load_schema(INTERSWARM_SCHEMA_PATH)
    registry: Registry[Any] = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in (core, interswarm)
    )
    checker = Draft202012Validator.FORMAT_CHECKER
    return (
        Draft202012Validator(core, registry=registry, format_checker=checker),
        Draft202012Validator(interswarm, registry=registry, format_checker=checker),
    )


def is_interswarm(sample: dict[str, Any]) -> bool:
    """An interswarm wrapper carries ``payload``; a MAILMessage envelope carries ``message``."""
    return "payload" in sample


def example_files(directory: Path = EXAMPLES_DIR) -> list[Path]:
    """Return the example JSON files of ``directory``, sorted by name."""
    return sorted(directory.glob("*.json"))


def constructor_samples() -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(name, message)`` for a fresh message from every constructor in mail.core.message."""
    task = "0f4c2e9a-6b1d-4e57-9a3c-2d8e7b5f1a60"
    user = m.create_user_address("user-42")
    supervisor = m.create_agent_address("supervisor")
    weather = m.create_agent_address("weather")
    request = m.make_request(
        task_id=task,
        sender=user,
        recipient=supervisor,
        subject="Weather in Paris",
        body="What will the weather be like in Paris tomorrow?",
        sender_swarm="swarm-alpha",
        recipient_swarm="swarm-alpha",
    )
    yield "make_request", dict(request)
    response = m.make_response(
        task_id=task,
        sender=weather,
        recipient=supervisor,
        subject="Re: Paris forecast",
        body="Light rain, 9 degrees.",
        request_id=cast(m.MAILRequest, request["message"])["request_id"],
    )
    yield "make_response", dict(response)
    yield (
        "make_broadcast",
        dict(
            m.make_broadcast(
                task_id=task,
                sender=supervisor,
                recipients=[m.MAIL_ALL_LOCAL_AGENTS],
                subject="Status",
                body="Working on the forecast.",
            )
        ),
    )
    yield (
        "make_interrupt",
        dict(
            m.make_interrupt(
                task_id=task,
                sender=supervisor,
                recipients=[weather],
                subject="Change of city",
                body="Use Lyon instead.",
            )
        ),
    )
    yield (
        "make_broadcast_complete",
        dict(
            m.make_broadcast_complete(
                task_id=task,
                sender=supervisor,
                subject="::task_complete::",
                body="Light rain in Lyon tomorrow.",
                sender_swarm="swarm-alpha",
                recipient_swarms=["swarm-alpha"],
            )
        ),
    )
    remote = m.make_request(
        task_id=task,
        sender=m.create_agent_address("supervisor@swarm-alpha"),
        recipient=m.create_agent_address("weather@swarm-beta"),
        subject="Forecast lookup",
        body="Forecast for Lyon, please.",
        routing_info={"remote_swarm": "swarm-beta"},
    )
    owner = m.format_task_contributor("user", "user-42", "swarm-alpha")
    yield (
        "make_interswarm_message",
        dict(
            m.make_interswarm_message(
                message=remote,
                source_swarm="swarm-alpha",
                target_swarm="swarm-beta",
                task_owner=owner,
                task_contributors=[owner],
            )
        ),
    )


def validate_sample(
    sample: dict[str, Any],
    core: Draft202012Validator,
    interswarm: Draft202012Validator,
) -> None:
    """Validate one sample with the matching schema and with mail.core.message.

    Raises :class:`jsonschema.ValidationError` or :class:`mail.errors.InvalidMessageError`.
    """
    if is_interswarm(sample):
        interswarm.validate(sample)
        m.validate_interswarm_message(sample)
    else:
        core.validate(sample)
        m.validate_message(sample)


def _bad_format_samples() -> Iterator[tuple[str, dict[str, Any]]]:
    """Samples that only a working format checker rejects (bad date-time, bad uuid)."""
    _, good = next(constructor_samples())
    yield "bad timestamp", {**good, "timestamp": "2025-13-45T99:00:00+00:00"}
    yield "bad uuid", {**good, "id": "1234-not-a-uuid"}


def _display(path: Path) -> str:
    return str(path.relative_to(SPEC_DIR)) if path.is_relative_to(SPEC_DIR) else str(path)


def _dotted(path: Sequence[str | int]) -> str:
    """``message.recipients[1].address_type`` for a jsonschema error path."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def describe(error: ValidationError | InvalidMessageError) -> str:
    """``schema: <field>: <reason>`` or ``validate_message: <field>: <reason>``, one line."""
    if isinstance(error, ValidationError):
        return f"schema: {_dotted(list(error.absolute_path))}: {error.message}"
    return f"validate_message: {error}"


def _examples(directory: Path) -> Iterator[tuple[str, dict[str, Any] | str]]:
    """``(name, sample)`` per example file, or ``(name, why it is unreadable)``."""
    for path in example_files(directory):
        try:
            yield _display(path), json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            yield _display(path), f"not a readable JSON file: {e}"


def main(argv: Sequence[str] | None = None) -> int:
    """Validate the examples of ``argv[0]`` (default ``spec/examples``), then fresh samples.

    Returns the process exit status: 0 when all are valid, 1 at the first invalid one (or
    when the directory holds no ``*.json`` file).
    """
    parser = argparse.ArgumentParser(
        description="Validate MAIL example messages and freshly built ones against the schemas."
    )
    parser.add_argument(
        "examples",
        nargs="?",
        type=Path,
        default=EXAMPLES_DIR,
        help="directory of example messages (*.json); default: spec/examples",
    )
    directory: Path = parser.parse_args(argv).examples
    if not example_files(directory):
        print(f"FAIL {directory}: no *.json example in this directory", file=sys.stderr)
        return 1
    core, interswarm = load_validators()
    for name, sample in itertools.chain(_examples(directory), constructor_samples()):
        if isinstance(sample, str):
            print(f"FAIL {name}: {sample}", file=sys.stderr)
            return 1
        try:
            validate_sample(sample, core, interswarm)
        except (ValidationError, InvalidMessageError) as e:
            print(f"FAIL {name}: {describe(e)}", file=sys.stderr)
            return 1
        print(f"ok  {name}")
    # Format checking must really happen: these would pass with formats ignored.
    for name, sample in _bad_format_samples():
        if core.is_valid(sample):
            print(f"FAIL {name}: accepted by the schema (is format checking on?)", file=sys.stderr)
            return 1
        try:
            m.validate_message(sample)
        except InvalidMessageError:
            print(f"ok  {name} rejected")
        else:
            print(f"FAIL {name}: accepted by validate_message", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
