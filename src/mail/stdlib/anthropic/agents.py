"""Kept import path: re-exports the Anthropic agent functions of
:mod:`mail.factories.anthropic` (``python::mail.stdlib.anthropic.agents:...`` keeps working)."""

from __future__ import annotations

from mail.factories.anthropic import AnthropicAgentFunction, AnthropicSupervisorFunction

__all__ = ["AnthropicAgentFunction", "AnthropicSupervisorFunction"]
