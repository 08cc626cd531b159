"""The data-analysis swarm's report writer (``format_report``): Markdown from sections."""

from __future__ import annotations

from typing import Any

from mail.examples._actionkit import ArgumentError, make_action, text_arg

__all__ = ["FORMAT_REPORT_PARAMETERS", "format_report"]


def _format(args: dict[str, Any]) -> dict[str, Any]:
    title = text_arg(args, "title")
    sections = args.get("sections")
    if (
        not isinstance(sections, list)
        or not sections
        or not all(
            isinstance(s, dict)
            and isinstance(s.get("heading"), str)
            and isinstance(s.get("content"), str)
            for s in sections
        )
    ):
        raise ArgumentError(
            "Error: 'sections' must be a non-empty array of {heading, content} objects"
        )
    parts = [f"# {title.strip()}"]
    parts += [f"## {s['heading'].strip()}\n\n{s['content'].strip()}" for s in sections]
    report = "\n\n".join(parts) + "\n"
    return {
        "success": True,
        "title": title,
        "section_count": len(sections),
        "character_count": len(report),
        "report": report,
    }


#: ``format_report {title: str, sections: [{heading, content}]}`` -> JSON ``{success,
#: title, section_count, character_count, report (Markdown)}`` or ``"Error: ..."``.
format_report = make_action(
    "format_report",
    "Format a titled report with sections as Markdown.",
    {
        "title": {"type": "string"},
        "sections": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"heading": {"type": "string"}, "content": {"type": "string"}},
                "required": ["heading", "content"],
            },
        },
    },
    ["title", "sections"],
    _format,
)

#: The JSON Schema of ``format_report``'s arguments.
FORMAT_REPORT_PARAMETERS: dict[str, Any] = format_report.parameters
