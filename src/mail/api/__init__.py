"""The Python API: define swarms and run them.

- :class:`MAILAction`: a tool backed by a Python function (also the ``@action`` decorator).
- :class:`MAILAgentTemplate` / :class:`MAILAgent`: how to build an agent / a built agent.
- :class:`MAILSwarmTemplate` / :class:`MAILSwarm`: a swarm's blueprint / a running swarm for
  one caller, with ``post_message``, ``post_message_stream`` and friends.

Templates load from ``swarms.json`` with :meth:`MAILSwarmTemplate.from_swarm_json_file`.
"""

from __future__ import annotations

import logging

from mail.api._actions import ActionLike, MAILAction, action
from mail.api._agents import MAILAgent, MAILAgentTemplate
from mail.api._swarm import MAILSwarm, MAILSwarmTemplate

__all__ = [
    "ActionLike",
    "MAILAction",
    "MAILAgent",
    "MAILAgentTemplate",
    "MAILSwarm",
    "MAILSwarmTemplate",
    "action",
]

#: The logger of the Python API (``mail.api``), as in v1.3.6.
logger = logging.getLogger("mail.api")
