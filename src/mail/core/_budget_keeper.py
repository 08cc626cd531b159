"""The runtime's account of its tasks' budgets (:mod:`mail.core.budget`).

:class:`BudgetKeeper` gives a task its budget when a turn opens (the swarm's ceiling,
lowered by the request's budget or by what a task forwarded from another swarm carries),
counts agent turns and actions as the runtime runs them, tokens and cost as agent functions
report them (:func:`mail.core.report_usage`; it is a turn observer of the task table), and
the time a task runs, with a timer. A task that spends past a limit ends ``failed`` with a
``task_error`` event naming the limit and the amounts (its data carries ``budget``:
``{limit, spent, max}``); one that reaches ``warn_at`` of a limit first gets a
``::budget_warning::`` message to its entrypoint, once, so the supervisor can finish.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from mail.core.budget import Budget, TaskBudget, budget_problem, format_amount
from mail.core.events import EventName
from mail.core.tasks import MAILTask, TaskState, TaskTable
from mail.errors import InvalidMessageError

if TYPE_CHECKING:
    from mail.core._scheduler import Scheduler
    from mail.core._system_messages import SystemMessages

__all__ = ["BudgetKeeper", "Pricer"]

logger = logging.getLogger("mail.runtime")


class Pricer(Protocol):
    """The cost in USD of one model call (``None``: the model's price is unknown)."""

    def __call__(self, model: str | None, usage: Mapping[str, object]) -> float | None: ...


def requested_budget(value: object, field: str = "budget") -> Budget | None:
    """The budget a request asks for (``None`` for none); :class:`InvalidMessageError`
    naming ``field`` when it is malformed."""
    if value is None:
        return None
    if isinstance(value, Budget):
        return value
    problem = budget_problem(value)
    if problem is not None:
        raise InvalidMessageError(problem, field=field)
    assert isinstance(value, Mapping)  # noqa: S101  # checked by budget_problem
    return Budget.from_json(value)


class BudgetKeeper:
    """Budgets of one runtime's tasks (see the module).

    Args:
        tasks: the runtime's tasks.
        scheduler: where a stopped task's turn ends and a warning is queued.
        system: the builder of the runtime's messages.
    """

    def __init__(self, *, tasks: TaskTable, scheduler: Scheduler, system: SystemMessages) -> None:
        self.tasks = tasks
        self.scheduler = scheduler
        self.system = system
        #: the swarm's limits: no task of it may have higher ones
        self.ceiling: Budget | None = None
        #: what a model call costs (set by the server: LiteLLM's prices, mail.toml's table)
        self.pricer: Pricer | None = None
        self._unpriced: set[str] = set()
        self._watching = False

    # --- giving tasks their budget --------------------------------------------------------

    def check(self, requested: object) -> Budget | None:
        """The budget a request asks for (a :class:`Budget`, its JSON or ``None``), checked:
        :class:`InvalidMessageError` for a malformed one or one above the ceiling (its
        detail names the ceiling)."""
        asked = requested_budget(requested)
        if asked is not None and self.ceiling is not None:
            over = asked.above(self.ceiling)
            if over:
                raise InvalidMessageError(
                    f"may only lower the swarm's limits: {'; '.join(over)} (the swarm's ceiling)",
                    field="budget",
                )
        return asked

    def open(self, task: MAILTask, asked: Budget | None) -> None:
        """A turn of ``task`` opens: a new task gets the ceiling lowered by ``asked`` (see
        :meth:`check`); a follow-up's ``asked`` lowers the task's limits."""
        if task.budget is not None:
            # a follow-up: what was spent counts on; a limit spent past stops it again
            task.budget.stopped = None
            if asked is not None:
                task.budget.limits = task.budget.limits.lower(asked)
        else:
            limits = (self.ceiling or Budget()).lower(asked)
            if not limits:
                return
            task.budget = TaskBudget(limits=limits)
        self._watch()
        self.task_changed(task)

    def carried(self, task: MAILTask, metadata: Mapping[str, object] | None) -> None:
        """A task forwarded here from another swarm: the lower of the ceiling and what
        its ``metadata["budget"]`` carries (a malformed one is ignored, and logged)."""
        value = None if metadata is None else metadata.get("budget")
        if value is not None and budget_problem(value) is not None:
            logger.warning("task %s: ignoring a malformed carried budget", task.task_id)
            value = None
        carried = Budget.from_json(value) if isinstance(value, Mapping) else None
        limits = (self.ceiling or Budget()).lower(carried)
        if limits:
            task.budget = TaskBudget(limits=limits)
            self._watch()
            self.task_changed(task)

    def adopt(self, tasks: Iterable[MAILTask]) -> None:
        """Count on for ``tasks`` loaded back from the store with a budget (a running one,
        in cluster mode's fail-over, starts its clock again)."""
        kept = [task for task in tasks if task.budget is not None]
        if kept:
            self._watch()
        for task in kept:
            self.task_changed(task)

    def _watch(self) -> None:
        """Hear of the tasks' model calls and changes, from the first budget on (a runtime
        without budgets pays nothing)."""
        if not self._watching:
            self._watching = True
            self.tasks.observe_turns(self)
            self.tasks.observe_tasks(self.task_changed)

    # --- counting ----------------------------------------------------------------------

    def turn(self, task: MAILTask) -> bool:
        """An agent turn of ``task`` is about to run; False: the budget stopped the task."""
        budget = task.budget
        if budget is None:
            return True
        budget.spent.agent_turns += 1
        return self._check(task, budget)

    def action(self, task: MAILTask) -> bool:
        """An action of ``task`` is about to run; False: the budget stopped the task."""
        budget = task.budget
        if budget is None:
            return True
        budget.spent.actions += 1
        return self._check(task, budget)

    def stopped(self, task: MAILTask) -> bool:
        """Whether the budget stopped ``task``."""
        return task.budget is not None and task.budget.stopped is not None

    def agent_turn(self, task: MAILTask, agent: str, seconds: float) -> None:
        """(A turn observer: agent turns are counted by :meth:`turn`, before they run.)"""

    def model_call(
        self, task: MAILTask, agent: str, model: str | None, usage: Mapping[str, object]
    ) -> None:
        """Count the tokens and the cost of one model call of ``task``."""
        budget = task.budget
        if budget is None:
            return
        spent = budget.spent
        for name in ("input_tokens", "output_tokens"):
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                setattr(spent, name, getattr(spent, name) + value)
        if budget.limits.cost_usd is not None:
            cost = self.pricer(model, usage) if self.pricer is not None else None
            if cost is None:
                self._no_price(model)
            else:
                spent.cost_usd += cost
        if self._check(task, budget):
            task.changed()  # what was spent is stored with the task

    def _no_price(self, model: str | None) -> None:
        name = model or "(unnamed)"
        if name not in self._unpriced:
            self._unpriced.add(name)
            logger.warning(
                "no price known for model %s: its calls add nothing to budgets' cost_usd "
                "(add it to [server.budget.prices] in mail.toml)",
                name,
            )

    # --- wall time ---------------------------------------------------------------------

    def task_changed(self, task: MAILTask) -> None:
        """Start or stop counting the task's running time (a task observer)."""
        budget = task.budget
        if budget is None:
            return
        spent = budget.spent
        now = time.monotonic()
        if task.is_running and budget.stopped is None:
            if spent.running_since is None:
                spent.running_since = now
            self._arm(task, budget, now)
            return
        if spent.running_since is not None:
            spent.seconds = spent.elapsed(now)
            spent.running_since = None
        if budget.timer is not None:
            budget.timer.cancel()
            budget.timer = None

    def _arm(self, task: MAILTask, budget: TaskBudget, now: float) -> None:
        limit = budget.limits.seconds
        if limit is None or budget.timer is not None:
            return
        elapsed = budget.spent.elapsed(now)
        warn_at = budget.limits.warn_at
        due = limit - elapsed
        if warn_at is not None and not budget.warned and elapsed < warn_at * limit:
            due = warn_at * limit - elapsed
        # a hair past the limit: spent is then more than it
        budget.timer = asyncio.get_running_loop().call_later(
            max(0.0, due) + 0.001, self._tick, task
        )

    def _tick(self, task: MAILTask) -> None:
        budget = task.budget
        if budget is None:
            return
        budget.timer = None
        if task.state is not TaskState.RUNNING:
            return
        if self._check(task, budget):
            self._arm(task, budget, time.monotonic())

    # --- enforcing -----------------------------------------------------------------------

    def _check(self, task: MAILTask, budget: TaskBudget) -> bool:
        if budget.stopped is not None:
            return False
        now = time.monotonic()
        over = budget.exceeded(now)
        if over is not None:
            self._stop(task, budget, *over)
            return False
        nearing = budget.nearing(now)
        if nearing is not None and task.is_running:
            budget.warned = True
            self._warn(task, budget, nearing, now)
        return True

    def _warn(self, task: MAILTask, budget: TaskBudget, name: str, now: float) -> None:
        limit = budget.limits.limits()[name]
        spent = budget.spent.amount(name, now)
        text = (
            f"This task has used {format_amount(name, spent)} of its {name} budget of "
            f"{format_amount(name, limit)}: it will be stopped when it spends more. Finish now: "
            "call `task_complete` with the best answer you have."
        )
        self.scheduler.put(
            self.system.budget_warning(task.task_id, self.scheduler.entrypoint, text)
        )
        task.changed()

    def _stop(
        self, task: MAILTask, budget: TaskBudget, name: str, spent: float, limit: float
    ) -> None:
        budget.stopped = name
        reason = (
            f"budget exceeded: {name} {format_amount(name, spent)} > {format_amount(name, limit)}"
        )
        logger.info("task %s stopped: %s", task.task_id, reason)
        if task.state is not TaskState.RUNNING:
            return
        data = {"budget": {"limit": name, "spent": spent, "max": limit}}
        task.log.emit(EventName.TASK_ERROR, reason, data)
        self.scheduler.finish(task, TaskState.FAILED, self.system.task_error(task.task_id, reason))
