"""The ``support`` example swarm (customer support): agents ``coordinator``, ``faq``, ``classifier``, ``sentiment``.

Each agent is a subpackage with ``prompts:SYSPROMPT`` and ``agent:LiteLLM<Name>Function``;
the ones with tools also have ``actions`` (``MAILAction`` objects). The scripted agents of
the offline variant ``support-offline`` are in :mod:`mail.examples.support.offline`.
"""

from __future__ import annotations

__all__: list[str] = []
