"""The standard library: ready-made actions and agent functions for swarms.

* :mod:`mail.stdlib.http`: ``http_get`` ... ``http_options``, behind the outbound guard;
* :mod:`mail.stdlib.fs`: file actions confined to a root directory;
* :mod:`mail.stdlib.interswarm`: ``ping_swarm``, ``get_swarm_health``, ``get_swarm_registry``;
* :mod:`mail.stdlib.mcp`: actions on MCP servers, and MCP servers as tool sources;
* :mod:`mail.stdlib.openai`, :mod:`mail.stdlib.anthropic`: agent functions on the providers'
  own SDKs (extras ``mail-swarms[openai]`` and ``mail-swarms[anthropic]``), re-exported from
  :mod:`mail.factories.openai` and :mod:`mail.factories.anthropic`.

Nothing here is imported by ``import mail``; each module loads its SDK only when used.
:func:`configure` gives the actions their ``[stdlib]`` settings (the server does at
start-up; by default they are read from ``mail.toml`` on first use). See docs/stdlib.md.
"""

from __future__ import annotations

from mail.stdlib._settings import configure

__all__ = ["configure"]
