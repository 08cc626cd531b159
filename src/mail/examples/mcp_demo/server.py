"""A small MCP server for the ``mcp-demo`` swarm and the tests: deterministic tools, a
prompt and a resource, built with the ``mcp`` SDK's :class:`~mcp.server.mcpserver.MCPServer`.

Run it over stdio with ``python -m mail.examples.mcp_demo.server``; :func:`build_server`
returns the server for other transports (the tests serve it over streamable HTTP).
Imports the ``mcp`` package (``pip install 'mail-swarms[mcp]'``): nothing of ``mail``
imports this module.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

__all__ = ["build_server", "main"]

#: The text of the demo's one resource, ``demo://readme``.
README = "The MCP demo server: add(a, b), word_count(text), fail(reason)."


def build_server() -> MCPServer:
    """The demo server: tools ``add``, ``word_count``, ``fail`` and ``tiny_image``, the
    prompt ``summarize`` and the resource ``demo://readme``."""
    server = MCPServer("mcp-demo", instructions="Deterministic demo tools.")

    @server.tool(description="Add two integers and return their sum.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Count the words of a text.")
    def word_count(text: str) -> int:
        return len(text.split())

    @server.tool(description="Always fails with the given reason (to show tool errors).")
    def fail(reason: str) -> str:
        raise ToolError(reason)

    @server.tool(description="A one-pixel PNG image.")
    def tiny_image() -> Image:
        return Image(data=_PIXEL, format="png")

    @server.prompt(description="Ask for a summary of a text.")
    def summarize(text: str) -> str:
        return f"Summarize this text in one sentence: {text}"

    @server.resource("demo://readme", description="What this server offers.")
    def readme() -> str:
        return README

    return server


_PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def main() -> None:
    """Serve the demo over stdio until stdin closes."""
    build_server().run("stdio")


if __name__ == "__main__":
    main()
