"""The ``data-analysis`` example swarm (data analysis): agents ``analyst``, ``processor``, ``statistics``, ``reporter``.

Each agent is a subpackage with ``prompts:SYSPROMPT`` and ``agent:LiteLLM<Name>Function``;
the ones with tools also have ``actions`` (``MAILAction`` objects). The scripted agents of
the offline variant ``data-analysis-offline`` are in :mod:`mail.examples.data_analysis.offline`.
"""

from __future__ import annotations

__all__: list[str] = []
