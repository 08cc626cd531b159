"""``mail.client``: its public names and a light import (``mail client`` must start fast)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import mail.client

PUBLIC = (
    "MAILClient",
    "EventStream",
    "ServerSentEvent",
    "MAILClientError",
    "USER_AGENT",
    "default_api_key",
    "local_server_url",
    "ResumeFrom",
    "RootInfo",
    "RootSwarm",
    "HealthInfo",
    "WhoAmI",
    "StatusInfo",
    "StatusSwarm",
    "MessageResult",
    "MessageEvent",
    "TaskRecord",
    "TaskPage",
    "CancelResult",
    "StoredEvent",
    "SwarmsList",
    "SwarmEntry",
    "RegisterResult",
    "DumpResult",
    "LoadResult",
    "InterswarmSendResult",
    "InterswarmAck",
    "InterswarmReply",
    "InterswarmReplyPayload",
    "MessageAddress",
    "InterswarmResponseAck",
    "ResponsesResult",
    "ResponsesMessage",
    "ResponsesOutputText",
    "ResponsesFunctionCall",
)

# The methods of CONTRACT 10.1 (the original client) and our additions.
METHODS = (
    "ping",
    "get_root",
    "get_health",
    "update_health",
    "login",
    "logout",
    "get_whoami",
    "get_status",
    "post_message",
    "post_message_stream",
    "get_tasks",
    "get_task",
    "task_events",
    "get_swarms",
    "register_swarm",
    "dump_swarm",
    "load_swarm_from_json",
    "send_interswarm_message",
    "post_interswarm_message",
    "post_interswarm_response",
    "debug_post_responses",
    "aclose",
)


def test_public_names() -> None:
    assert tuple(mail.client.__all__) == PUBLIC
    assert all(hasattr(mail.client, name) for name in PUBLIC)


def test_every_method_exists() -> None:
    missing = [m for m in METHODS if not callable(getattr(mail.client.MAILClient, m, None))]
    assert missing == []


def test_every_result_is_typed() -> None:
    # regression: the interswarm methods and debug_post_responses returned dict[str, Any]
    untyped = {
        name: returns
        for name in METHODS
        if (returns := inspect.get_annotations(getattr(mail.client.MAILClient, name))["return"])
        in ("Any", "dict[str, Any]")
    }
    assert untyped == {}


def test_import_is_light() -> None:
    code = (
        "import sys, json, mail.client; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('fastapi', 'starlette', 'uvicorn', 'litellm', 'asyncpg', 'pydantic') "
        "or m.startswith(('mail.server', 'mail.api', 'mail.core', 'mail.config')))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(result.stdout)
    assert loaded == [], f"import mail.client loaded {loaded}"
