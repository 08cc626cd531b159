"""A task's states and queue items (shared by :mod:`mail.core.tasks` and its v1.3.6 methods)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mail.core.message import MAILMessage

__all__ = ["QueueItem", "TaskState"]

#: ``(priority, sequence, message)`` as held by the runtime's priority queue.
QueueItem = tuple[int, int, "MAILMessage"]


class TaskState(StrEnum):
    RUNNING = "running"
    WAITING_BREAKPOINT = "waiting_breakpoint"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
