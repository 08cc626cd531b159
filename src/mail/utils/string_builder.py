"""v1.3.6's ``mail.utils.string_builder``: the text of the ``help`` tool's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mail.core import HELP_SUMMARY, full_protocol_text
from mail.core.tools import MAIL_TOOL_NAMES
from mail.core.tools import get_tool_help as _get_tool_help

__all__ = ["SPEC_PATH", "SUMMARY_STRING", "IDENTITY_STRING", "build_mail_help_string"]

#: Where the protocol specification is in a source checkout (installed copies read the
#: one shipped in the package; :func:`build_mail_help_string` finds either).
SPEC_PATH = str(Path(__file__).resolve().parents[3] / "spec" / "SPEC.md")
#: The overview of how MAIL works.
SUMMARY_STRING = HELP_SUMMARY
#: The identity section; ``str.format`` with ``name`` and ``swarm``.
IDENTITY_STRING = "Your name is '{name}' and you are an agent in the swarm '{swarm}'."


def build_mail_help_string(
    name: str,
    swarm: Any,
    get_summary: bool = True,
    get_identity: bool = True,
    get_tool_help: bool | list[str] = True,
    get_full_protocol: bool = False,
) -> str:
    """The help text for agent ``name`` of ``swarm`` (a swarm name, or an object with a
    ``name``): the summary, identity, MAIL tool help (every tool for ``True``, or those
    named) and the full specification, as asked."""
    swarm_name = swarm if isinstance(swarm, str) else getattr(swarm, "name", str(swarm))
    sections: list[str] = []
    if get_summary:
        sections.append(f"===== SUMMARY =====\n{SUMMARY_STRING}")
    if get_identity:
        identity = IDENTITY_STRING.format(name=name, swarm=swarm_name)
        sections.append(f"===== YOUR IDENTITY =====\n{identity}")
    if get_tool_help:
        tools = list(MAIL_TOOL_NAMES) if get_tool_help is True else list(get_tool_help)
        sections.append("===== TOOL HELP =====\n" + _tool_help(tools))
    if get_full_protocol:
        sections.append(f"===== FULL MAIL PROTOCOL SPECIFICATION =====\n{full_protocol_text()}")
    return "\n\n".join(sections)


def _tool_help(tools: list[str]) -> str:
    return _get_tool_help(tools)
