"""The research swarm's writing tools: ``summarize_text`` and ``create_bibliography``."""

from __future__ import annotations

import re
from typing import Any

from mail.examples._actionkit import ArgumentError, choice_arg, int_arg, make_action, text_arg

__all__ = [
    "CREATE_BIBLIOGRAPHY_PARAMETERS",
    "STYLES",
    "SUMMARIZE_TEXT_PARAMETERS",
    "create_bibliography",
    "summarize_text",
]

#: Citation styles of ``create_bibliography``.
STYLES: tuple[str, ...] = ("apa", "mla", "chicago", "simple")


def _summarize(args: dict[str, Any]) -> dict[str, Any]:
    text = text_arg(args, "text")
    max_length = int_arg(args, "max_length", 100, 10, 2000)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]
    chosen: list[str] = []
    for sentence in sentences:
        if len(" ".join([*chosen, sentence]).split()) > max_length:
            break
        chosen.append(sentence)
    summary = " ".join(chosen) or " ".join(text.split()[:max_length])
    original, short = len(text.split()), len(summary.split())
    return {
        "summary": summary,
        "original_length": original,
        "summary_length": short,
        "compression_ratio": round(short / original, 2) if original else 1.0,
        "sentences_kept": len(chosen),
    }


def _entry(source: dict[str, Any], style: str) -> str:
    title = str(source["title"])
    author = str(source.get("author") or "Anonymous")
    year = str(source.get("year") or "n.d.")
    url = str(source.get("url") or "")
    if style == "apa":
        text = f"{author} ({year}). {title}."
    elif style in {"mla", "chicago"}:
        text = f'{author}. "{title}." {year}.'
    else:
        text = f"{title} - {author}, {year}"
    return f"{text} {url}".strip()


def _bibliography(args: dict[str, Any]) -> dict[str, Any]:
    sources = args.get("sources")
    style = choice_arg(args, "style", STYLES, "apa")
    if (
        not isinstance(sources, list)
        or not sources
        or not all(isinstance(s, dict) and isinstance(s.get("title"), str) for s in sources)
    ):
        raise ArgumentError("Error: 'sources' must be a non-empty array of objects with a title")
    entries = sorted(_entry(source, style) for source in sources)
    return {
        "style": style,
        "entry_count": len(entries),
        "entries": entries,
        "bibliography": "\n".join(entries),
    }


#: ``summarize_text {text: str, max_length?: int 10..2000 words (100)}`` -> JSON
#: ``{summary, original_length, summary_length, compression_ratio, sentences_kept}`` or
#: ``"Error: ..."``.
summarize_text = make_action(
    "summarize_text",
    "Summarize a text in at most max_length words, keeping its leading sentences.",
    {
        "text": {"type": "string"},
        "max_length": {"type": "integer", "minimum": 10, "maximum": 2000},
    },
    ["text"],
    _summarize,
)

#: ``create_bibliography {sources: [{title, author?, year?, url?}], style?:
#: apa|mla|chicago|simple (apa)}`` -> JSON ``{style, entry_count, entries, bibliography}``
#: or ``"Error: ..."``.
create_bibliography = make_action(
    "create_bibliography",
    "Format a list of sources as a bibliography in a citation style.",
    {
        "sources": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "author": {"type": "string"},
                    "year": {"type": ["string", "integer"]},
                    "url": {"type": "string"},
                },
                "required": ["title"],
            },
        },
        "style": {"type": "string", "enum": list(STYLES)},
    },
    ["sources"],
    _bibliography,
)

#: The JSON Schema of ``summarize_text``'s arguments.
SUMMARIZE_TEXT_PARAMETERS: dict[str, Any] = summarize_text.parameters
#: The JSON Schema of ``create_bibliography``'s arguments.
CREATE_BIBLIOGRAPHY_PARAMETERS: dict[str, Any] = create_bibliography.parameters
