"""``mail conversations`` and ``mail conversation ID``: MAP Mail conversations, through
``POST /map`` (imported only when one of them runs)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mail.cli._conversations_render import conversation_lines, fetch_conversation, listing_lines
from mail.cli._oneshot_commands import _failed_request, _say, _target, _with_client

__all__ = ["run_conversation", "run_conversations"]


def run_conversations(args: argparse.Namespace) -> int:
    """``mail conversations``: the caller's conversations, oldest first, a page at a time."""
    from mail.errors import MAILClientError  # noqa: PLC0415

    target = _target("conversations", args)
    if isinstance(target, int):
        return target
    params: dict[str, Any] = {"limit": args.limit}
    if args.cursor:
        params["cursor"] = args.cursor
    try:
        page = _with_client(target, lambda c: c.mail_list(**params))
    except MAILClientError as e:
        return _failed_request("conversations", e)
    if args.json:
        _say(json.dumps(page, indent=2, ensure_ascii=False))
        return 0
    for line in listing_lines(page, more="mail conversations --cursor"):
        _say(line)
    return 0


def run_conversation(args: argparse.Namespace) -> int:
    """``mail conversation ID``: the conversation, its participants, threads and turns."""
    from mail.errors import MAILClientError  # noqa: PLC0415

    target = _target("conversation", args)
    if isinstance(target, int):
        return target
    try:
        got = _with_client(target, lambda c: fetch_conversation(c, args.conversation_id))
    except MAILClientError as e:
        return _failed_request("conversation", e)
    if args.json:
        _say(json.dumps(got, indent=2, ensure_ascii=False))
        return 0
    for line in conversation_lines(got):
        _say(line)
    return 0
