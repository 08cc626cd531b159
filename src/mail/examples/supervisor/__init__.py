"""The example supervisor: its prompts live in :mod:`mail.examples.supervisor.prompts`.

The supervisor itself is the generic
``python::mail.factories.supervisor:LiteLLMSupervisorFunction``.
"""

from __future__ import annotations

__all__: list[str] = []
