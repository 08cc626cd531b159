"""Test doubles for users' tests and ours: scripted agents (and, in submodules that import
aiohttp, so not imported here: a local OpenAI-compatible LLM server,
:mod:`mail.testing.llm`, and a local Anthropic Messages API server,
:mod:`mail.testing.anthropic`).

``from mail.testing import ScriptedAgent, tc`` gives deterministic agents that never call an
LLM; see :mod:`mail.testing._scripted` for the details.
"""

from __future__ import annotations

from mail.testing._scripted import (
    Incoming,
    ScriptedAgent,
    ScriptedCall,
    Turn,
    parse_incoming,
    scripted_agent,
    tc,
)
from mail.testing.auth import FakeAuthService, StaticAuth

__all__ = [
    "Incoming",
    "ScriptedAgent",
    "ScriptedCall",
    "Turn",
    "parse_incoming",
    "scripted_agent",
    "tc",
    "StaticAuth",
    "FakeAuthService",
]
