"""Tests for mail.core.tools: tool specs, tool sets, AgentToolCall and conversions."""

from __future__ import annotations

import json
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field, ValidationError

from mail.core import tools
from mail.core.message import validate_message
from mail.core.tools import (
    INTERSWARM_TOOL_NAMES,
    MAIL_TOOL_NAMES,
    AgentToolCall,
    ToolFormat,
    convert_call_to_mail_message,
    convert_manual_step_call_to_mail_message,
    create_acknowledge_broadcast_tool,
    create_await_message_tool,
    create_broadcast_tool,
    create_help_tool,
    create_ignore_broadcast_tool,
    create_interrupt_tool,
    create_interswarm_broadcast_tool,
    create_mail_tools,
    create_request_tool,
    create_response_tool,
    create_supervisor_tools,
    create_swarm_discovery_tool,
    create_task_complete_tool,
    get_agent_tools,
    normalize_breakpoint_tool_call,
    pydantic_model_to_tool,
    tool_name,
)
from mail.errors import InvalidMessageError, SwarmDefinitionError

STYLES: list[ToolFormat] = ["completions", "responses"]
BASE_SET = [
    "send_request",
    "send_response",
    "acknowledge_broadcast",
    "ignore_broadcast",
    "await_message",
    "help",
]


def params_of(spec: dict[str, Any]) -> Any:
    return spec["function"]["parameters"] if "function" in spec else spec["parameters"]


def names(specs: list[dict[str, Any]]) -> list[str]:
    return [tool_name(s) for s in specs]


def every_spec(style: ToolFormat) -> list[dict[str, Any]]:
    return [
        create_request_tool(["a", "b"], False, style),
        create_request_tool(["a", "b"], True, style),
        create_response_tool(["a", "b"], False, style),
        create_interrupt_tool(["a", "b"], False, style),
        create_broadcast_tool(style),
        create_task_complete_tool(style),
        create_acknowledge_broadcast_tool(style),
        create_ignore_broadcast_tool(style),
        create_await_message_tool(style),
        create_help_tool(style),
        create_interswarm_broadcast_tool(style),
        create_swarm_discovery_tool(style),
    ]


def action_spec(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": f"the {name} action",
        "parameters": {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        },
        "strict": True,
    }


def responses_call(name: str, args: dict[str, Any], call_id: str = "call_1") -> AgentToolCall:
    item = {
        "type": "function_call",
        "id": "fc_raw_9",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
        "status": "in_progress",
    }
    return AgentToolCall(tool_name=name, tool_args=args, tool_call_id=call_id, responses=[item])


def completions_call(name: str, args: dict[str, Any], call_id: str = "call_1") -> AgentToolCall:
    completion = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }
    return AgentToolCall(
        tool_name=name, tool_args=args, tool_call_id=call_id, completion=completion
    )


# --------------------------------------------------------------------------------------
# names


def test_tool_name_lists() -> None:
    assert MAIL_TOOL_NAMES == [
        "send_request",
        "send_response",
        "send_interrupt",
        "send_broadcast",
        "task_complete",
        "acknowledge_broadcast",
        "ignore_broadcast",
        "await_message",
        "help",
    ]
    assert INTERSWARM_TOOL_NAMES == ["send_interswarm_broadcast", "discover_swarms"]


def test_public_names_are_exported() -> None:
    for name in (
        "ToolFormat",
        "AgentToolCall",
        "pydantic_model_to_tool",
        "create_mail_tools",
        "create_supervisor_tools",
        "get_agent_tools",
        "tool_name",
        "convert_call_to_mail_message",
        "normalize_breakpoint_tool_call",
    ):
        assert name in tools.__all__
        assert hasattr(tools, name)


# --------------------------------------------------------------------------------------
# exact schemas

SEND_REQUEST_PARAMS = {
    "description": "Send a message to a specific target recipient agent.",
    "properties": {
        "target": {
            "description": "The target recipient agent for the message. Must be one of: a, b",
            "title": "Target",
            "type": "string",
            "enum": ["a", "b"],
        },
        "subject": {
            "description": "The subject of the message.",
            "title": "Subject",
            "type": "string",
        },
        "body": {
            "description": "The message content to send.",
            "title": "Body",
            "type": "string",
        },
    },
    "required": ["target", "subject", "body"],
    "title": "send_request",
    "type": "object",
    "additionalProperties": False,
}


def test_send_request_exact_completions() -> None:
    assert create_request_tool(["a", "b"]) == {
        "type": "function",
        "function": {
            "name": "send_request",
            "strict": True,
            "parameters": SEND_REQUEST_PARAMS,
            "description": "Send a message to a specific target recipient agent.",
        },
    }


def test_send_request_exact_responses() -> None:
    assert create_request_tool(["a", "b"], style="responses") == {
        "type": "function",
        "name": "send_request",
        "description": "Send a message to a specific target recipient agent.",
        "parameters": SEND_REQUEST_PARAMS,
        "strict": True,
    }


def test_send_request_exact_interswarm() -> None:
    target = {
        "description": (
            "The target recipient agent for the message. Must be one of: a, b, or use "
            "'agent-name@swarm-name' format for interswarm messaging (supports interswarm "
            "format: agent-name@swarm-name)"
        ),
        "title": "Target",
        "type": "string",
    }
    expected_params = {
        **SEND_REQUEST_PARAMS,
        "properties": {**SEND_REQUEST_PARAMS["properties"], "target": target},  # type: ignore[dict-item]
    }
    assert create_request_tool(["a", "b"], enable_interswarm=True, style="responses") == {
        "type": "function",
        "name": "send_request",
        "description": "Send a message to a specific target recipient agent.",
        "parameters": expected_params,
        "strict": True,
    }
    completions = create_request_tool(["a", "b"], enable_interswarm=True)
    assert completions["function"]["parameters"] == expected_params


def test_task_complete_exact() -> None:
    description = (
        "Indicate that a task has been completed. This will end the current loop, "
        "and should always be the last tool called."
    )
    params = {
        "description": description,
        "properties": {
            "finish_message": {
                "description": (
                    "The complete answer the user receives. The user sees none of the messages "
                    "exchanged inside the swarm, so put the whole answer here, not a reference to it."
                ),
                "title": "Finish Message",
                "type": "string",
            }
        },
        "required": ["finish_message"],
        "title": "task_complete",
        "type": "object",
        "additionalProperties": False,
    }
    assert create_task_complete_tool() == {
        "type": "function",
        "function": {
            "name": "task_complete",
            "strict": True,
            "parameters": params,
            "description": description,
        },
    }
    assert create_task_complete_tool("responses") == {
        "type": "function",
        "name": "task_complete",
        "description": description,
        "parameters": params,
        "strict": True,
    }


def test_help_exact() -> None:
    params = {
        "description": "Get help with MAIL.",
        "properties": {
            "get_summary": {
                "default": True,
                "description": "Include an overview of how MAIL works.",
                "title": "Get Summary",
                "type": "boolean",
            },
            "get_identity": {
                "default": False,
                "description": "Include who you are: your name, swarm, contacts and actions.",
                "title": "Get Identity",
                "type": "boolean",
            },
            "get_tool_help": {
                "default": [],
                "description": "MAIL tools to explain in detail.",
                "items": {
                    "enum": [
                        "send_request",
                        "send_response",
                        "send_broadcast",
                        "send_interrupt",
                        "acknowledge_broadcast",
                        "ignore_broadcast",
                        "await_message",
                        "task_complete",
                    ],
                    "type": "string",
                },
                "title": "Get Tool Help",
                "type": "array",
            },
            "get_full_protocol": {
                "default": False,
                "description": "Include the complete protocol specification (long).",
                "title": "Get Full Protocol",
                "type": "boolean",
            },
        },
        "required": ["get_summary", "get_identity", "get_tool_help", "get_full_protocol"],
        "title": "help",
        "type": "object",
        "additionalProperties": False,
    }
    assert create_help_tool() == {
        "type": "function",
        "function": {
            "name": "help",
            "strict": True,
            "parameters": params,
            "description": "Get help with MAIL.",
        },
    }
    assert create_help_tool("responses") == {
        "type": "function",
        "name": "help",
        "description": "Get help with MAIL.",
        "parameters": params,
        "strict": True,
    }


@pytest.mark.parametrize(
    ("factory", "description", "props"),
    [
        (
            create_broadcast_tool,
            "Broadcast a message to a specified list of agents, or all agents in the swarm.",
            {"subject": "string", "body": "string", "targets": "array"},
        ),
        (
            create_interswarm_broadcast_tool,
            "Broadcast a message to all known swarms.",
            {"subject": "string", "body": "string", "target_swarms": "array"},
        ),
        (
            create_swarm_discovery_tool,
            "Discover and register new swarms from discovery endpoints.",
            {"discovery_urls": "array"},
        ),
        (create_await_message_tool, "Wait until another message is received.", {"reason": None}),
        (
            create_ignore_broadcast_tool,
            "Ignore the received broadcast. No memory, no response.",
            {"reason": None},
        ),
    ],
)
def test_other_tool_descriptions_and_types(
    factory: Any, description: str, props: dict[str, str | None]
) -> None:
    spec = factory("responses")
    assert spec["description"] == description
    properties = spec["parameters"]["properties"]
    assert list(properties) == list(props)
    for key, typ in props.items():
        if typ is None:
            assert properties[key]["anyOf"] == [{"type": "string"}, {"type": "null"}]
        else:
            assert properties[key]["type"] == typ


def test_acknowledge_broadcast_description_and_nullable_note() -> None:
    spec = create_acknowledge_broadcast_tool("responses")
    assert spec["description"].startswith("Store the received broadcast in memory, do not respond.")
    assert spec["parameters"]["properties"]["note"]["anyOf"] == [
        {"type": "string"},
        {"type": "null"},
    ]
    assert "default" not in spec["parameters"]["properties"]["note"]


def test_interrupt_target_wording() -> None:
    spec = create_interrupt_tool(["worker"], style="responses")
    target = spec["parameters"]["properties"]["target"]
    assert target["description"] == (
        "The target recipient agent for the interrupt. Must be one of: worker"
    )
    assert target["enum"] == ["worker"]
    assert spec["parameters"]["properties"]["subject"]["description"] == (
        "The subject of the interrupt."
    )
    assert spec["description"] == "Interrupt a specific target recipient agent."


def test_response_tool_mirrors_request_tool() -> None:
    request = create_request_tool(["a"], style="responses")
    response = create_response_tool(["a"], style="responses")
    assert response["description"] == request["description"]
    assert response["parameters"]["properties"] == request["parameters"]["properties"]
    assert response["parameters"]["title"] == "send_response"


@pytest.mark.parametrize("style", STYLES)
def test_every_spec_is_strict(style: ToolFormat) -> None:
    for spec in every_spec(style):
        assert spec["type"] == "function"
        if style == "completions":
            assert set(spec) == {"type", "function"}
            assert set(spec["function"]) == {"name", "strict", "parameters", "description"}
            assert spec["function"]["strict"] is True
        else:
            assert set(spec) == {"type", "name", "description", "parameters", "strict"}
            assert spec["strict"] is True
        params = params_of(spec)
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["type"] == "object"
        assert params["additionalProperties"] is False
        assert params["required"] == list(params["properties"])
        assert params["title"] == tool_name(spec)
        for prop in params["properties"].values():
            assert prop["title"]
            assert prop["description"]


@pytest.mark.parametrize("style", STYLES)
def test_specs_accept_realistic_arguments(style: ToolFormat) -> None:
    validate = jsonschema.Draft202012Validator
    validate(params_of(create_request_tool(["a", "b"], style=style))).validate(
        {"target": "a", "subject": "s", "body": "b"}
    )
    with pytest.raises(jsonschema.ValidationError):
        validate(params_of(create_request_tool(["a", "b"], style=style))).validate(
            {"target": "c", "subject": "s", "body": "b"}
        )
    validate(params_of(create_request_tool(["a"], True, style))).validate(
        {"target": "x@remote", "subject": "s", "body": "b"}
    )
    validate(params_of(create_help_tool(style))).validate(
        {
            "get_summary": True,
            "get_identity": False,
            "get_tool_help": ["send_request"],
            "get_full_protocol": False,
        }
    )
    with pytest.raises(jsonschema.ValidationError):
        validate(params_of(create_await_message_tool(style))).validate({})


def test_returned_specs_are_independent_copies() -> None:
    first = create_request_tool(["a", "b"])
    first["function"]["parameters"]["properties"]["target"]["enum"].append("evil")
    first["function"]["name"] = "changed"
    assert create_request_tool(["a", "b"]) == {
        "type": "function",
        "function": {
            "name": "send_request",
            "strict": True,
            "parameters": SEND_REQUEST_PARAMS,
            "description": "Send a message to a specific target recipient agent.",
        },
    }


def test_request_tool_without_targets_has_no_empty_enum() -> None:
    target = params_of(create_request_tool([]))["properties"]["target"]
    assert "enum" not in target


def test_tool_name_reads_both_formats() -> None:
    assert tool_name(create_help_tool("completions")) == "help"
    assert tool_name(create_help_tool("responses")) == "help"
    with pytest.raises(SwarmDefinitionError):
        tool_name({"type": "function"})


# --------------------------------------------------------------------------------------
# tool sets


@pytest.mark.parametrize("style", STYLES)
def test_mail_tools_base_set(style: ToolFormat) -> None:
    assert names(create_mail_tools(["a"], style=style)) == BASE_SET
    assert names(create_mail_tools(["a"], exclude_tools=["help", "await_message"])) == [
        "send_request",
        "send_response",
        "acknowledge_broadcast",
        "ignore_broadcast",
    ]


def test_supervisor_tools_variants() -> None:
    assert names(create_supervisor_tools(["a"])) == [
        "send_interrupt",
        "send_broadcast",
        "task_complete",
    ]
    assert names(create_supervisor_tools([], can_complete_tasks=True)) == ["task_complete"]
    assert names(create_supervisor_tools(["a"], can_complete_tasks=False)) == [
        "send_interrupt",
        "send_broadcast",
    ]
    assert names(create_supervisor_tools(["a"], enable_interswarm=True)) == [
        "send_interrupt",
        "send_broadcast",
        "send_interswarm_broadcast",
        "discover_swarms",
        "task_complete",
    ]
    assert names(create_supervisor_tools(["a"], _debug_include_intraswarm=False)) == [
        "task_complete"
    ]
    assert names(create_supervisor_tools(["a"], exclude_tools=("send_broadcast",))) == [
        "send_interrupt",
        "task_complete",
    ]


def test_agent_tools_plain_agent_with_targets() -> None:
    specs = get_agent_tools(
        comm_targets=["supervisor"],
        action_tools=[action_spec("get_weather")],
        supervisor=False,
        can_complete_tasks=False,
        enable_interswarm=False,
        style="responses",
    )
    assert names(specs) == [*BASE_SET, "get_weather"]
    assert specs[0]["parameters"]["properties"]["target"]["enum"] == ["supervisor"]


def test_agent_tools_agent_without_targets_gets_only_its_actions() -> None:
    specs = get_agent_tools(
        comm_targets=[],
        action_tools=[action_spec("one"), action_spec("two")],
        supervisor=False,
        can_complete_tasks=False,
        enable_interswarm=False,
        style="responses",
    )
    assert names(specs) == ["one", "two"]


def test_agent_tools_supervisor_with_interswarm_order() -> None:
    specs = get_agent_tools(
        comm_targets=["weather", "math"],
        action_tools=[action_spec("lookup")],
        supervisor=True,
        can_complete_tasks=True,
        enable_interswarm=True,
        style="completions",
    )
    assert names(specs) == [
        *BASE_SET,
        "lookup",
        "send_interrupt",
        "send_broadcast",
        "send_interswarm_broadcast",
        "discover_swarms",
        "task_complete",
    ]
    target = specs[0]["function"]["parameters"]["properties"]["target"]
    assert "enum" not in target
    assert "agent-name@swarm-name" in target["description"]


def test_agent_tools_exclude_tools_removes_names() -> None:
    specs = get_agent_tools(
        comm_targets=["a"],
        action_tools=[action_spec("act")],
        supervisor=True,
        can_complete_tasks=True,
        enable_interswarm=False,
        style="responses",
        exclude_tools=["help", "send_broadcast", "acknowledge_broadcast"],
    )
    assert names(specs) == [
        "send_request",
        "send_response",
        "ignore_broadcast",
        "await_message",
        "act",
        "send_interrupt",
        "task_complete",
    ]


def test_agent_tools_non_supervisor_that_can_complete_tasks_gets_task_complete() -> None:
    # regression: the original offered task_complete to supervisor-family agents only
    specs = get_agent_tools(
        comm_targets=["a"],
        action_tools=[action_spec("act")],
        supervisor=False,
        can_complete_tasks=True,
        enable_interswarm=True,
        style="responses",
    )
    assert names(specs) == [*BASE_SET, "act", "task_complete"]
    solo = get_agent_tools(
        comm_targets=[],
        action_tools=[],
        supervisor=False,
        can_complete_tasks=True,
        enable_interswarm=False,
        style="responses",
    )
    assert names(solo) == ["task_complete"]
    excluded = get_agent_tools(
        comm_targets=[],
        action_tools=[],
        supervisor=False,
        can_complete_tasks=True,
        enable_interswarm=False,
        style="responses",
        exclude_tools=["task_complete"],
    )
    assert excluded == []


# --------------------------------------------------------------------------------------
# AgentToolCall


def test_agent_tool_call_requires_completion_or_responses() -> None:
    with pytest.raises(ValidationError, match="completion"):
        AgentToolCall(tool_name="help", tool_args={}, tool_call_id="c1")


def test_agent_tool_call_completions_format() -> None:
    call = completions_call("send_request", {"target": "a"}, call_id="c7")
    assert call.tool_format == "completions"
    assert call.reasoning is None
    assert call.preamble is None
    assert call.create_response_msg("SUCCESS: message sent") == {
        "role": "tool",
        "name": "send_request",
        "content": "SUCCESS: message sent",
        "tool_call_id": "c7",
    }


def test_agent_tool_call_responses_format() -> None:
    call = responses_call("help", {}, call_id="c8")
    assert call.tool_format == "responses"
    assert call.create_response_msg("ERROR: nope") == {
        "type": "function_call_output",
        "call_id": "c8",
        "output": "ERROR: nope",
    }


# --------------------------------------------------------------------------------------
# conversions


def convert(name: str, args: dict[str, Any]) -> dict[str, Any]:
    message = convert_call_to_mail_message(responses_call(name, args), "alice", "task-1")
    validate_message(message)
    return dict(message)


def assert_agent_message_fields(payload: Any) -> None:
    assert payload["task_id"] == "task-1"
    assert payload["sender"] == {"address_type": "agent", "address": "alice"}
    # no swarm given: the swarm keys are left out, never null (the original's schema)
    assert "sender_swarm" not in payload
    assert payload["routing_info"] == {}


def test_convert_send_request() -> None:
    message = convert("send_request", {"target": "bob", "subject": "Hi", "body": "Hello"})
    assert message["msg_type"] == "request"
    payload = message["message"]
    assert_agent_message_fields(payload)
    assert payload["recipient"] == {"address_type": "agent", "address": "bob"}
    assert "recipient_swarm" not in payload
    assert (payload["subject"], payload["body"]) == ("Hi", "Hello")


@pytest.mark.parametrize("missing", ["target", "subject", "body"])
def test_convert_send_request_missing_argument_is_named(missing: str) -> None:
    args = {"target": "bob", "subject": "Hi", "body": "Hello"}
    del args[missing]
    with pytest.raises(InvalidMessageError, match=missing) as info:
        convert("send_request", args)
    assert info.value.field == missing


def test_convert_send_request_rejects_non_string_argument() -> None:
    with pytest.raises(InvalidMessageError) as info:
        convert("send_request", {"target": 3, "subject": "Hi", "body": "Hello"})
    assert info.value.field == "target"


def test_convert_send_response_defaults() -> None:
    message = convert("send_response", {"target": "bob", "body": "answer"})
    assert message["msg_type"] == "response"
    payload = message["message"]
    assert_agent_message_fields(payload)
    assert payload["recipient"] == {"address_type": "agent", "address": "bob"}
    assert (payload["subject"], payload["body"]) == ("", "answer")
    empty = convert("send_response", {"target": "bob"})["message"]
    assert (empty["subject"], empty["body"]) == ("", "")


def test_convert_text_output_uses_content() -> None:
    message = convert("text_output", {"target": "bob", "content": "plain text"})
    assert message["msg_type"] == "response"
    assert message["message"]["body"] == "plain text"
    assert message["message"]["subject"] == ""


def test_convert_send_interrupt() -> None:
    message = convert("send_interrupt", {"target": "bob", "subject": "Stop", "body": "now"})
    assert message["msg_type"] == "interrupt"
    payload = message["message"]
    assert_agent_message_fields(payload)
    assert payload["recipients"] == [{"address_type": "agent", "address": "bob"}]
    assert "recipient_swarms" not in payload
    assert (payload["subject"], payload["body"]) == ("Stop", "now")


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        (["b", "a", "b"], ["b", "a"]),
        ([], ["all"]),
        (["all"], ["all"]),
        (["a", "all"], ["all"]),
        (None, ["all"]),
    ],
)
def test_convert_send_broadcast_honours_targets(
    targets: list[str] | None, expected: list[str]
) -> None:
    args: dict[str, Any] = {"subject": "News", "body": "text"}
    if targets is not None:
        args["targets"] = targets
    message = convert("send_broadcast", args)
    assert message["msg_type"] == "broadcast"
    payload = message["message"]
    assert_agent_message_fields(payload)
    assert payload["recipients"] == [{"address_type": "agent", "address": a} for a in expected]
    assert "recipient_swarms" not in payload


@pytest.mark.parametrize(
    ("name", "args", "recipient_swarms"),
    [
        ("send_request", {"target": "bob", "subject": "s", "body": "b"}, "alpha"),
        ("send_request", {"target": "bob@beta", "subject": "s", "body": "b"}, "beta"),
        ("send_response", {"target": "bob", "body": "b"}, "alpha"),
        ("send_interrupt", {"target": "bob@beta", "subject": "s", "body": "b"}, ["beta"]),
        ("send_broadcast", {"subject": "s", "body": "b"}, ["alpha"]),
        (
            "send_broadcast",
            {"subject": "s", "body": "b", "targets": ["a", "c@gamma"]},
            ["alpha", "gamma"],
        ),
        ("task_complete", {"finish_message": "42"}, ["alpha"]),
    ],
)
def test_convert_with_the_local_swarm_names_every_swarm(
    name: str, args: dict[str, Any], recipient_swarms: str | list[str]
) -> None:
    message = convert_call_to_mail_message(
        responses_call(name, args), "alice", "task-1", swarm="alpha"
    )
    validate_message(message)
    payload: Any = message["message"]
    assert payload["sender_swarm"] == "alpha"
    key = "recipient_swarm" if isinstance(recipient_swarms, str) else "recipient_swarms"
    assert payload[key] == recipient_swarms


def test_convert_task_complete() -> None:
    message = convert("task_complete", {"finish_message": "42"})
    assert message["msg_type"] == "broadcast_complete"
    payload = message["message"]
    assert_agent_message_fields(payload)
    assert payload["recipients"] == [{"address_type": "agent", "address": "all"}]
    assert (payload["subject"], payload["body"]) == ("Task complete", "42")


def test_convert_unknown_tool_is_rejected() -> None:
    with pytest.raises(InvalidMessageError, match="get_weather"):
        convert("get_weather", {"city": "Tokyo"})


def test_convert_messages_get_fresh_ids() -> None:
    call = responses_call("send_request", {"target": "b", "subject": "s", "body": "b"})
    first = convert_call_to_mail_message(call, "a", "t")
    second = convert_call_to_mail_message(call, "a", "t")
    assert first["id"] != second["id"]
    assert first["message"]["request_id"] != second["message"]["request_id"]  # type: ignore[typeddict-item]


def test_manual_step_conversion() -> None:
    call = responses_call("text_output", {"content": "hi"})
    broadcast = convert_manual_step_call_to_mail_message(call, "a", "t", ["b", "c"], "broadcast")
    validate_message(broadcast)
    assert broadcast["msg_type"] == "broadcast"
    assert [r["address"] for r in broadcast["message"]["recipients"]] == ["b", "c"]  # type: ignore[typeddict-item]
    response = convert_manual_step_call_to_mail_message(call, "a", "t", ["b", "c"], "response")
    assert response["msg_type"] == "response"
    assert response["message"]["recipient"]["address"] == "b"  # type: ignore[typeddict-item]
    assert response["message"]["body"] == "hi"
    request = convert_manual_step_call_to_mail_message(call, "a", "t", ["c"], "request")
    assert request["msg_type"] == "request"
    with pytest.raises(InvalidMessageError):
        convert_manual_step_call_to_mail_message(call, "a", "t", [], "request")


# --------------------------------------------------------------------------------------
# breakpoints


def test_breakpoint_responses_call_uses_raw_item() -> None:
    call = responses_call("get_weather", {"city": "Tokyo"}, call_id="call_42")
    assert normalize_breakpoint_tool_call(call) == {
        "arguments": json.dumps({"city": "Tokyo"}),
        "call_id": "call_42",
        "name": "get_weather",
        "type": "function_call",
        "id": "fc_raw_9",
        "status": "in_progress",
    }


def test_breakpoint_explicit_raw_wins() -> None:
    call = responses_call("get_weather", {"city": "Tokyo"}, call_id="call_42")
    raw = {
        "type": "function_call",
        "id": "fc_other",
        "call_id": "call_42",
        "name": "get_weather",
        "arguments": '{"city":"Kyoto"}',
    }
    normalized = normalize_breakpoint_tool_call(call, raw)
    assert normalized["id"] == "fc_other"
    assert normalized["arguments"] == '{"city":"Kyoto"}'
    assert normalized["status"] == "completed"


def test_breakpoint_completions_call_with_null_content() -> None:
    # regression: the original crashed on the normal chat-completions shape content=None
    call = completions_call("get_weather", {"city": "Tokyo"}, call_id="call_7")
    assert call.completion["content"] is None
    assert normalize_breakpoint_tool_call(call) == {
        "arguments": json.dumps({"city": "Tokyo"}),
        "call_id": "call_7",
        "name": "get_weather",
        "type": "function_call",
        "id": "fc_call_7",
        "status": "completed",
    }


def test_breakpoint_call_without_raw_item() -> None:
    call = AgentToolCall(
        tool_name="act",
        tool_args={"x": 1},
        tool_call_id="abc",
        responses=[{"type": "message", "content": []}],
    )
    normalized = normalize_breakpoint_tool_call(call)
    assert normalized["id"] == "fc_abc"
    assert normalized["status"] == "completed"
    assert json.loads(normalized["arguments"]) == {"x": 1}
    assert json.dumps([normalized])  # the runtime puts these in a message body


def test_breakpoint_anthropic_tool_use_block() -> None:
    call = AgentToolCall(
        tool_name="act",
        tool_args={"x": 1},
        tool_call_id="toolu_1",
        completion={
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "act", "input": {"x": 2}}],
        },
    )
    normalized = normalize_breakpoint_tool_call(call)
    assert normalized["call_id"] == "toolu_1"
    assert normalized["id"] == "fc_toolu_1"
    assert json.loads(normalized["arguments"]) == {"x": 2}


# --------------------------------------------------------------------------------------
# pydantic_model_to_tool


class Point(BaseModel):
    """A point."""

    x: int = Field(ge=0, le=10, description="X coordinate.")
    y: int = Field(description="Y coordinate.")


class Tree(BaseModel):
    """A recursive node."""

    label: str
    children: list[Tree] = Field(default=[], description="Sub-trees.")
    parent: Tree | None = Field(default=None, description="Optional parent.")


class Plot(BaseModel):
    """Plot a point."""

    color: Literal["red", "green"] = Field(description="Marker color.")
    size: float = Field(default=1.0, gt=0, lt=5, description="Marker size.")
    origin: Point = Field(description="Where to start.")
    label: str | None = Field(default=None, description="Optional label.")
    tree: Tree | None = None


@pytest.mark.parametrize("style", STYLES)
def test_pydantic_model_to_tool_keeps_constraints_and_nesting(style: ToolFormat) -> None:
    spec = pydantic_model_to_tool(Plot, name="plot", style=style)
    assert tool_name(spec) == "plot"
    params = params_of(spec)
    jsonschema.Draft202012Validator.check_schema(params)
    assert params["title"] == "plot"
    assert params["description"] == "Plot a point."
    assert params["additionalProperties"] is False
    assert params["required"] == ["color", "size", "origin", "label", "tree"]
    props = params["properties"]
    assert props["color"]["enum"] == ["red", "green"]
    assert (props["size"]["exclusiveMinimum"], props["size"]["exclusiveMaximum"]) == (0, 5)
    assert props["label"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert "default" not in props["label"]
    # a $ref with sibling keywords is inlined, keeping its constraints
    origin = props["origin"]
    assert "$ref" not in origin
    assert origin["description"] == "Where to start."
    assert origin["additionalProperties"] is False
    assert origin["required"] == ["x", "y"]
    assert (origin["properties"]["x"]["minimum"], origin["properties"]["x"]["maximum"]) == (0, 10)
    # recursive definitions stay under $defs, made strict too
    tree = params["$defs"]["Tree"]
    assert tree["additionalProperties"] is False
    assert tree["required"] == ["label", "children", "parent"]
    validator = jsonschema.Draft202012Validator(params)
    good = {
        "color": "red",
        "size": 2.0,
        "origin": {"x": 3, "y": -1},
        "label": None,
        "tree": {"label": "r", "children": [], "parent": None},
    }
    validator.validate(good)
    for bad in (
        {**good, "color": "blue"},
        {**good, "origin": {"x": 11, "y": 0}},
        {**good, "origin": {"x": 1, "y": 0, "z": 0}},
        {**good, "size": 9},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(bad)


def test_pydantic_model_to_tool_defaults_name_and_description() -> None:
    spec = pydantic_model_to_tool(Point, style="responses")
    assert spec["name"] == "Point"
    assert spec["description"] == "A point."
    explicit = pydantic_model_to_tool(Point, name="pt", description="Custom.")
    assert explicit["function"]["description"] == "Custom."
    assert explicit["function"]["parameters"]["title"] == "pt"

    class Bare(BaseModel):
        n: int

    bare = pydantic_model_to_tool(Bare, style="responses")
    assert "description" not in bare
    assert bare["parameters"]["required"] == ["n"]
