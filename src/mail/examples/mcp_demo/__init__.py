"""The ``mcp-demo`` swarm: a scripted agent using the tools of a small stdio MCP server.

* :mod:`mail.examples.mcp_demo.server`: the MCP server (``python -m
  mail.examples.mcp_demo.server``), built with the ``mcp`` SDK;
* :mod:`mail.examples.mcp_demo.agents`: :class:`McpDemoFunction`, the offline agent.

Run it with ``mail server -n mcp-demo`` (see docs/examples.md). Importing this package
loads neither the server nor the SDK.
"""

from __future__ import annotations

__all__: list[str] = []
