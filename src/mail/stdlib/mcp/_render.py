"""MCP results as the text an agent reads (never ``str()`` of the SDK's objects)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

__all__ = [
    "render_call",
    "render_content",
    "render_prompt",
    "render_prompts",
    "render_resource",
    "render_resources",
    "render_tools",
]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)


def _size(data: str | None) -> int:
    if not data:
        return 0
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def render_tools(tools: Sequence[Any]) -> str:
    """``name: description`` lines, each followed by the tool's input schema (compact)."""
    if not tools:
        return "No tools."
    lines = []
    for tool in tools:
        description = " ".join((tool.description or "").split()) or "(no description)"
        lines.append(f"{tool.name}: {description}")
        lines.append(f"  input: {_compact(tool.input_schema)}")
    return "\n".join(lines)


def _resource_summary(resource: Any) -> str:
    mime = getattr(resource, "mime_type", None) or "unknown type"
    text = getattr(resource, "text", None)
    if text is not None:
        return str(text)
    return f"[resource: {resource.uri}, {mime}, {_size(getattr(resource, 'blob', None))} bytes]"


def render_content(item: Any) -> str:
    """One content block: text as is, images and audio summarised, resources shown."""
    kind = getattr(item, "type", None)
    if kind == "text":
        return str(item.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {item.mime_type}, {_size(item.data)} bytes]"
    if kind == "resource":
        return _resource_summary(item.resource)
    if kind == "resource_link":
        mime = f", {item.mime_type}" if item.mime_type else ""
        return f"[resource link: {item.name} {item.uri}{mime}]"
    return f"[{kind or type(item).__name__} content]"


def render_call(result: Any) -> str:
    """A tool call's result: its contents joined by newlines, else its structured content
    as JSON; ``Error: ...`` when the tool reported an error."""
    parts = [render_content(c) for c in result.content or ()]
    structured = getattr(result, "structured_content", None)
    if structured is not None and not parts:
        parts.append(_compact(structured))
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        return f"Error: {' '.join(text.split()) or 'the tool failed'}"
    return text or "(no content)"


def render_prompt(result: Any) -> str:
    """A prompt's messages, one block per message tagged with its role."""
    blocks = []
    if result.description:
        blocks.append(f"description: {result.description}")
    blocks.extend(f"[{m.role}] {render_content(m.content)}" for m in result.messages)
    return "\n".join(blocks) or "(empty prompt)"


def render_prompts(prompts: Sequence[Any]) -> str:
    """``name(arguments): description`` lines (``*`` marks a required argument)."""
    if not prompts:
        return "No prompts."
    lines = []
    for prompt in prompts:
        arguments = ", ".join(
            f"{a.name}{'*' if a.required else ''}" for a in (prompt.arguments or ())
        )
        description = " ".join((prompt.description or "").split()) or "(no description)"
        lines.append(f"{prompt.name}({arguments}): {description}")
    return "\n".join(lines)


def render_resource(result: Any) -> str:
    """A resource's contents: text as is, binary contents summarised."""
    parts = [_resource_summary(c) for c in result.contents]
    return "\n".join(parts) or "(empty resource)"


def render_resources(resources: Sequence[Any]) -> str:
    """``uri (name, mime type): description`` lines."""
    if not resources:
        return "No resources."
    lines = []
    for resource in resources:
        details = ", ".join(x for x in (resource.name, resource.mime_type) if x)
        description = " ".join((resource.description or "").split())
        line = f"{resource.uri} ({details})" if details else str(resource.uri)
        lines.append(f"{line}: {description}" if description else line)
    return "\n".join(lines)
