"""The example supervisor: ``prompts`` (``SYSPROMPT``, ``SYSPROMPT_NO_INTERSWARM_MASTER``)
and ``agent:supervisor_agent_params``.

The supervisor itself is the generic
``python::mail.factories.supervisor:LiteLLMSupervisorFunction``.
"""

from __future__ import annotations

from mail.examples.supervisor.agent import supervisor_agent_params
from mail.examples.supervisor.prompts import SYSPROMPT as SUPERVISOR_SYSPROMPT

__all__ = ["SUPERVISOR_SYSPROMPT", "supervisor_agent_params"]
