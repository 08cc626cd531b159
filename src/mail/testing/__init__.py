"""Test doubles for users' tests and ours: scripted agents (and, in submodules, a local
OpenAI-compatible LLM server).

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
