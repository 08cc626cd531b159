"""Per-task budgets: limits on tokens, cost, agent turns, actions and wall time.

A :class:`Budget` is a set of limits (any may be absent) and, optionally, ``warn_at``: the
fraction of a limit at which the task's entrypoint (the supervisor) is told, once, to finish.
A swarm has a ceiling (``budget`` in swarms.json, or mail.toml's default); a request may
only lower it; a task forwarded to another swarm carries what is left, which that swarm
lowers its own ceiling by. :class:`TaskBudget` is what a task keeps: its limits and what it
spent. The runtime's :class:`mail.core._budget_keeper.BudgetKeeper` counts and enforces.

A limit is exceeded when what was spent is *more* than it: ``agent_turns: 3`` lets three
agent turns run and stops the task before a fourth; ``total_tokens: 1000`` stops it after
the model call that went past 1000. ``seconds`` counts the time the task runs (not the
time it waits for a follow-up), summed over its turns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = [
    "INTEGER_LIMITS",
    "LIMITS",
    "Budget",
    "Spent",
    "TaskBudget",
    "budget_problem",
    "format_amount",
]

#: Every limit a budget may set, in the order they are checked and shown.
LIMITS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_usd",
    "agent_turns",
    "actions",
    "seconds",
)
#: The limits that count whole things (the others are numbers).
INTEGER_LIMITS = frozenset(
    {"input_tokens", "output_tokens", "total_tokens", "agent_turns", "actions"}
)
_KEYS = frozenset((*LIMITS, "warn_at"))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _amount(value: object) -> float | None:
    """``value`` when it is a finite number >= 0, else ``None``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value if value >= 0 else None
    return None


def budget_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a budget (a JSON object of limits), or ``None``."""
    if not isinstance(value, Mapping):
        return f"must be an object of limits ({', '.join(LIMITS)}, warn_at)"
    unknown = sorted(str(k) for k in value if k not in _KEYS)
    if unknown:
        return f"unknown limit {', '.join(unknown)}: use {', '.join(LIMITS)} or warn_at"
    for name, limit in value.items():
        if limit is None:
            continue
        if name == "warn_at":
            if not _is_number(limit) or not 0 < limit < 1:
                return f"warn_at must be a fraction between 0 and 1 (0.8: at 80 %), got {limit!r}"
        elif name in INTEGER_LIMITS:
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
                return f"{name} must be a whole number >= 0, got {limit!r}"
        elif not _is_number(limit) or limit < 0:
            return f"{name} must be a number >= 0, got {limit!r}"
    return None


def format_amount(name: str, amount: float) -> str:
    """``amount`` of limit ``name`` as messages show it (``10,342``, ``0.0125``, ``12.5``)."""
    if name in INTEGER_LIMITS:
        return f"{int(amount):,}"
    if name == "cost_usd":
        return f"{amount:.6f}".rstrip("0").rstrip(".") or "0"
    return f"{amount:.1f}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """Limits of a task (``None``: no limit) and the warning threshold ``warn_at``."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None
    agent_turns: int | None = None
    actions: int | None = None
    seconds: float | None = None
    warn_at: float | None = None

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Budget:
        """The budget of a JSON object that :func:`budget_problem` accepts (unknown keys and
        bad values of a stored one are left out)."""
        kept: dict[str, Any] = {}
        for name in _KEYS:
            limit = _amount(value.get(name))
            if limit is not None:
                kept[name] = int(limit) if name in INTEGER_LIMITS else float(limit)
        return cls(**kept)

    def as_json(self) -> dict[str, Any]:
        """The limits set (and ``warn_at``), as JSON."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    def limits(self) -> dict[str, float]:
        """The limits set, by name (in :data:`LIMITS` order)."""
        return {n: v for n in LIMITS if (v := getattr(self, n)) is not None}

    def __bool__(self) -> bool:
        return bool(self.limits())

    def lower(self, other: Budget | None) -> Budget:
        """Each limit the lower of this one's and ``other``'s; ``other``'s ``warn_at`` if set."""
        if other is None:
            return self
        merged: dict[str, Any] = {}
        for name in LIMITS:
            mine, theirs = getattr(self, name), getattr(other, name)
            merged[name] = theirs if mine is None else mine if theirs is None else min(mine, theirs)
        merged["warn_at"] = other.warn_at if other.warn_at is not None else self.warn_at
        return Budget(**merged)

    def above(self, ceiling: Budget) -> list[str]:
        """The limits of this budget above ``ceiling``'s, each as ``name asked > ceiling``."""
        over = []
        for name, limit in self.limits().items():
            top = getattr(ceiling, name)
            if top is not None and limit > top:
                over.append(f"{name} {format_amount(name, limit)} > {format_amount(name, top)}")
        return over


@dataclass(slots=True, kw_only=True)
class Spent:
    """What a task spent; ``seconds`` sums its finished running spells, ``running_since``
    (``time.monotonic()``) marks the one under way."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    agent_turns: int = 0
    actions: int = 0
    seconds: float = 0.0
    running_since: float | None = None

    def amount(self, name: str, now: float | None = None) -> float:
        """What was spent of limit ``name`` (``now``: a ``time.monotonic()`` reading)."""
        if name == "total_tokens":
            return self.input_tokens + self.output_tokens
        if name == "seconds":
            return self.elapsed(now)
        return float(getattr(self, name)) if name == "cost_usd" else getattr(self, name)

    def elapsed(self, now: float | None = None) -> float:
        if self.running_since is None:
            return self.seconds
        return self.seconds + max(
            0.0, (time.monotonic() if now is None else now) - self.running_since
        )

    def as_json(self, now: float | None = None, *, rounded: bool = False) -> dict[str, Any]:
        """What was spent, as JSON (``rounded``: seconds to the microsecond, cost to 1e-9)."""
        seconds, cost = self.elapsed(now), self.cost_usd
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            "cost_usd": round(cost, 9) if rounded else cost,
            "agent_turns": self.agent_turns,
            "actions": self.actions,
            "seconds": round(seconds, 6) if rounded else seconds,
        }

    @classmethod
    def from_json(cls, value: object) -> Spent:
        """What a stored task spent (zeros for what is missing or malformed)."""
        spent = cls()
        if not isinstance(value, Mapping):
            return spent
        for name in ("input_tokens", "output_tokens", "agent_turns", "actions"):
            amount = value.get(name)
            if isinstance(amount, int) and not isinstance(amount, bool) and amount >= 0:
                setattr(spent, name, amount)
        for name in ("cost_usd", "seconds"):
            amount = _amount(value.get(name))
            if amount is not None:
                setattr(spent, name, float(amount))
        return spent


@dataclass(slots=True, kw_only=True)
class TaskBudget:
    """A task's limits and what it spent; ``warned``: its entrypoint was told it nears a
    limit; ``stopped``: the limit that stopped it."""

    limits: Budget
    spent: Spent = field(default_factory=Spent)
    warned: bool = False
    stopped: str | None = None
    #: the wall-time check under way (the runtime's, never stored)
    timer: Any = field(default=None, repr=False, compare=False)

    def exceeded(self, now: float | None = None) -> tuple[str, float, float] | None:
        """The first limit spent past: ``(name, spent, limit)``, or ``None``."""
        for name, limit in self.limits.limits().items():
            amount = self.spent.amount(name, now)
            if amount > limit:
                return name, amount, limit
        return None

    def nearing(self, now: float | None = None) -> str | None:
        """The first limit spent up to ``warn_at`` of it (none once warned, or without
        ``warn_at``)."""
        warn_at = self.limits.warn_at
        if warn_at is None or self.warned:
            return None
        for name, limit in self.limits.limits().items():
            if self.spent.amount(name, now) >= warn_at * limit:
                return name
        return None

    def remaining(self, now: float | None = None) -> Budget:
        """What is left of each limit (never below zero), with the same ``warn_at``."""
        left: dict[str, Any] = {}
        for name, limit in self.limits.limits().items():
            rest = max(0.0, limit - self.spent.amount(name, now))
            left[name] = int(rest) if name in INTEGER_LIMITS else rest
        return replace(Budget(**left), warn_at=self.limits.warn_at)

    def view(self, now: float | None = None) -> dict[str, Any]:
        """As ``GET /task`` shows it: ``limits``, ``spent``, ``remaining`` (and ``stopped_by``)."""
        now = time.monotonic() if now is None else now
        shown: dict[str, Any] = {
            "limits": self.limits.as_json(),
            "spent": self.spent.as_json(now, rounded=True),
            "remaining": {
                k: round(v, 9) if isinstance(v, float) else v
                for k, v in self.remaining(now).limits().items()
            },
        }
        if self.stopped is not None:
            shown["stopped_by"] = self.stopped
        return shown

    def as_json(self, now: float | None = None) -> dict[str, Any]:
        """As the store keeps it (see :meth:`from_json`)."""
        stored: dict[str, Any] = {
            "limits": self.limits.as_json(),
            "spent": self.spent.as_json(now),
            "warned": self.warned,
        }
        if self.stopped is not None:
            stored["stopped"] = self.stopped
        return stored

    @classmethod
    def from_json(cls, value: object) -> TaskBudget | None:
        """The budget stored as :meth:`as_json` (``None`` for anything else)."""
        if not isinstance(value, Mapping) or not isinstance(value.get("limits"), Mapping):
            return None
        stopped = value.get("stopped")
        return cls(
            limits=Budget.from_json(value["limits"]),
            spent=Spent.from_json(value.get("spent")),
            warned=value.get("warned") is True,
            stopped=stopped if isinstance(stopped, str) else None,
        )
