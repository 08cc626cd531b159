"""Anthropic agent functions on the ``anthropic`` SDK's Messages API (extra
``mail-swarms[anthropic]``): re-exports the classes of :mod:`mail.factories.anthropic`.

Importing this package does not import ``anthropic``; an agent's first call does. See
docs/stdlib.md.
"""

from __future__ import annotations

from mail.factories.anthropic import AnthropicAgentFunction, AnthropicSupervisorFunction

__all__ = ["AnthropicAgentFunction", "AnthropicSupervisorFunction"]
