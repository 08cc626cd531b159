"""Schemathesis hooks for ``scripts/schemathesis_run.py`` (loaded through ``SCHEMATHESIS_HOOKS``).

Registering a swarm makes the server fetch ``GET {base_url}/``. So that fuzzing never sends
traffic beyond this machine, every generated http(s) ``base_url`` is replaced by the URL in
``MAIL_ST_PEER_URL`` (the server under test itself, on loopback) before the request is sent.
Strings that are not http(s) URLs are left alone: the server must reject them with a 400.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis

_PEER_URL = os.environ.get("MAIL_ST_PEER_URL", "http://127.0.0.1:9")


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    body = case.body
    if not isinstance(body, dict):
        return
    url = body.get("base_url")
    if isinstance(url, str) and url.lstrip().lower().startswith(("http://", "https://")):
        case.body = {**body, "base_url": _PEER_URL}
