"""Scripted agents for the offline variants of the team swarms (``support-offline``,
``data-analysis-offline``, ``research-offline``): real routing, real actions, no LLM.

- :class:`OfflineCoordinatorFunction` (the entry agent) asks its comm targets one after
  the other, in their order, passing each the question and what the previous ones
  found, then calls ``task_complete`` with every answer.
- :class:`OfflineTeamWorker` subclasses (in ``mail.examples.<swarm>.offline``) run their
  actions in order, each step's arguments computed from the request and the results of
  the steps before, then answer the requester with one paragraph.

Each turn is decided from the agent's own history, as in :mod:`mail.examples.offline.agents`.
"""

from __future__ import annotations

from typing import Any

from mail.examples.offline._history import Transcript, action_result
from mail.examples.offline.agents import (
    _ANSWERING_TOOLS,
    _ERROR_SUBJECTS,
    Turn,
    _answer,
    _current_job,
    _first_line,
    _forces_task_complete,
    _Job,
    _nothing_to_do,
    _OfflineAgent,
)
from mail.testing import tc

__all__ = ["FINDINGS", "OfflineCoordinatorFunction", "OfflineTeamWorker", "split_request"]

#: The line that separates the question from the findings in a coordinator's request.
FINDINGS = "--- findings so far ---"


def split_request(body: str) -> tuple[str, str]:
    """``(question, findings)`` of a coordinator's request body."""
    question, _, findings = body.partition(FINDINGS)
    return question.strip(), findings.strip()


class OfflineCoordinatorFunction(_OfflineAgent):
    """Entry agent of the offline team swarms: asks each comm target in turn, then answers.

    Takes the factory parameters (``name``, ``comm_targets``, ``tools``, ...; anything
    else is ignored). Raises :class:`~mail.errors.SwarmDefinitionError` for an unknown
    ``tool_format``.
    """

    def decide(self, transcript: Transcript, tool_choice: str | dict[str, Any]) -> Turn:
        trigger = transcript.last
        job = _current_job(transcript)
        notice = trigger.message.subject if trigger is not None and trigger.from_system else ""
        if job is None:
            return _nothing_to_do("there is no question to work on")
        if _forces_task_complete(tool_choice) or notice == "::maximum_steps_reached::":
            return self._finish(job, problem="I ran out of steps")
        if job.answered:
            return _nothing_to_do("the question has already been answered")
        if notice in _ERROR_SUBJECTS and trigger is not None:
            return self._finish(job, problem=_first_line(trigger.message.body))
        if job.outstanding:
            return tc("await_message", reason=f"waiting for {job.outstanding} answer(s)")
        if len(job.requests) < len(self.comm_targets):
            return self._ask(job, self.comm_targets[len(job.requests)])
        return self._finish(job)

    def _ask(self, job: _Job, target: str) -> Turn:
        body = job.question.message.body.strip()
        if job.replies:
            found = "\n".join(f"{sender}: {reply.strip()}" for sender, reply in job.replies)
            body = f"{body}\n\n{FINDINGS}\n{found}"
        return tc("send_request", target=target, subject=job.question.message.subject, body=body)

    def _finish(self, job: _Job, problem: str | None = None) -> Turn:
        lines = [f"- {sender}: {reply.strip()}" for sender, reply in job.replies]
        if problem is not None:
            text = f"Sorry, I could not finish this: {problem.rstrip('.')}."
            if lines:
                text += "\n\nWhat the team found so far:\n" + "\n".join(lines)
        elif lines:
            text = "Here is what the team found:\n" + "\n".join(lines)
        else:
            text = "I have no team members to ask, so I cannot answer yet."
        return _answer(job.question, text)


class OfflineTeamWorker(_OfflineAgent):
    """An agent that answers each request by running :attr:`steps` (action names) in order.

    Subclasses define :meth:`arguments` (``None`` skips a step) and :meth:`describe`.
    """

    steps: tuple[str, ...] = ()

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The arguments of ``step``, or None to skip it."""
        raise NotImplementedError

    def describe(self, question: str, results: dict[str, Any]) -> str:
        """The answer, from the results (a dict on success, an error text otherwise)."""
        raise NotImplementedError

    def decide(self, transcript: Transcript, tool_choice: str | dict[str, Any]) -> Turn:
        trigger = transcript.last
        request = next((r for r in reversed(transcript.received) if not r.from_system), None)
        if trigger is None or request is None:
            return _nothing_to_do("there is no request to work on")
        since = transcript.calls_after(request.index)
        if any(call.name in _ANSWERING_TOOLS for call in since):
            return _nothing_to_do("the request has already been answered")
        if trigger.from_system and trigger.message.subject in _ERROR_SUBJECTS:
            problem = _first_line(trigger.message.body)
            return _answer(request, f"Sorry, I could not answer that: {problem.rstrip('.')}.")
        question, findings = split_request(request.message.body)
        results: dict[str, Any] = {}
        for step in self.steps:
            run = next((call for call in since if call.name == step), None)
            if run is None:
                args = self.arguments(step, question, findings, results)
                if args is None:
                    continue
                return tc(step, **args)
            if run.call_id not in transcript.outputs:
                return tc("await_message", reason=f"waiting for {step}")
            ok, value = action_result(transcript.outputs[run.call_id])
            results[step] = value if ok else str(value)
        return _answer(request, self.describe(question, results))
