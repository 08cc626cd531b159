"""The offline demo swarm: scripted agents that really route messages and run actions.

- :mod:`mail.examples.offline.agents` -- the agent factories ``OfflineSupervisorFunction``,
  ``OfflineWeatherFunction`` and ``OfflineMathFunction``
- :mod:`mail.examples.offline.swarm` -- :func:`offline_swarm_definition` (a swarms.json
  entry) and :func:`offline_runtime` (a ready runtime)

Ask the supervisor about the weather ("What's the weather in Tokyo tomorrow?"),
arithmetic ("What is 12 * (3 + 4)?") or both in one message. No LLM is involved, so
answers are immediate and repeatable.
"""

from __future__ import annotations

from mail.examples.offline.agents import (
    OfflineMathFunction,
    OfflineSupervisorFunction,
    OfflineWeatherFunction,
)
from mail.examples.offline.swarm import offline_runtime, offline_swarm_definition

__all__ = [
    "OfflineMathFunction",
    "OfflineSupervisorFunction",
    "OfflineWeatherFunction",
    "offline_runtime",
    "offline_swarm_definition",
]
