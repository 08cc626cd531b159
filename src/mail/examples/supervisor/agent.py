"""The example supervisor's ``agent_params``.

The supervisor itself is the generic
``python::mail.factories.supervisor:LiteLLMSupervisorFunction``; this module only holds
the settings the example swarms give it.
"""

from __future__ import annotations

from mail.examples._params import supervisor_agent_params

__all__ = ["supervisor_agent_params"]
