"""Anthropic agent functions on the ``anthropic`` SDK's Messages API (extra
``mail-swarms[anthropic]``).

Importing this package does not import ``anthropic``; an agent's first call does. See
:mod:`mail.stdlib.anthropic.agents` and docs/stdlib.md.
"""

from __future__ import annotations

from mail.stdlib.anthropic.agents import AnthropicAgentFunction, AnthropicSupervisorFunction

__all__ = ["AnthropicAgentFunction", "AnthropicSupervisorFunction"]
