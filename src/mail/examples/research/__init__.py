"""The ``research`` example swarm (research): agents ``researcher``, ``searcher``, ``verifier``, ``summarizer``.

Each agent is a subpackage with ``prompts:SYSPROMPT`` and ``agent:LiteLLM<Name>Function``;
the ones with tools also have ``actions`` (``MAILAction`` objects). The scripted agents of
the offline variant ``research-offline`` are in :mod:`mail.examples.research.offline`.
"""

from __future__ import annotations

__all__: list[str] = []
