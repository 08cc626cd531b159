"""``mail.client``: its public names and a light import (``mail client`` must start fast)."""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys

import pytest

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
    "MapRpcError",
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
    # MAP Mail (POST /map, GET /map/events)
    "map_call",
    "map_connect",
    "map_send",
    "map_subscribe",
    "map_unsubscribe",
    "map_events",
    "mail_create",
    "mail_get",
    "mail_list",
    "mail_close",
    "mail_join",
    "mail_leave",
    "mail_invite",
    "mail_turn",
    "mail_turns_list",
    "mail_thread_create",
    "mail_thread_list",
    "mail_summary",
    "mail_replay",
    "mail_turn_redact",
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
        "or m.startswith(('mail.server', 'mail.api', 'mail.core', 'mail.config', 'mail.cli.')))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(result.stdout)
    assert loaded == [], f"import mail.client loaded {loaded}"


def test_client_cli_is_loaded_on_first_access() -> None:
    from mail.cli._client_cli import MAILClientCLI

    assert mail.client.MAILClientCLI is MAILClientCLI  # type: ignore[attr-defined]
    assert "MAILClientCLI" not in mail.client.__all__  # ``import *`` stays light
    with pytest.raises(AttributeError, match="MAILClientCLX"):
        _ = mail.client.MAILClientCLX  # type: ignore[attr-defined]


async def test_client_cli_reports_a_bad_url_before_starting() -> None:
    from mail.cli._client_cli import MAILClientCLI

    args = argparse.Namespace(url="http://127.0.0.1:1", url_flag="http://127.0.0.1:2")
    cli = MAILClientCLI(args)
    with pytest.raises(ValueError, match="two URLs given"):
        await cli.run(attempt_login=False)
