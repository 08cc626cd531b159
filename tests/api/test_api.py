"""mail.api: actions, agent and swarm templates, and running swarms through MAILSwarm."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from mail import MAILAction, MAILAgent, MAILAgentTemplate, MAILSwarmTemplate, action
from mail.core.events import EventName
from mail.errors import InvalidMessageError, SwarmDefinitionError, TaskStateError
from mail.testing import Incoming, ScriptedAgent, tc

# --- actions ---------------------------------------------------------------------------


class Place(BaseModel):
    city: str
    country: str = "FR"


class Forecast(BaseModel):
    """Get the forecast."""

    place: Place
    days: int = Field(ge=0, le=7)
    units: Literal["C", "F"] = "C"


async def echo_args(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True)


def test_action_needs_name_description_and_object_schema() -> None:
    with pytest.raises(SwarmDefinitionError, match="non-empty"):
        MAILAction("", "d", {"type": "object"}, echo_args)
    with pytest.raises(SwarmDefinitionError, match="needs a description"):
        MAILAction("a", " ", {"type": "object"}, echo_args)
    with pytest.raises(SwarmDefinitionError, match="object schema"):
        MAILAction("a", "d", {"type": "string"}, echo_args)
    with pytest.raises(SwarmDefinitionError, match="not callable"):
        MAILAction("a", "d", {"type": "object"}, "python::mail.version:PROTOCOL_VERSION")


def test_action_function_reference_may_name_another_action() -> None:
    first = MAILAction("a", "d", {"type": "object"}, echo_args)
    assert MAILAction("b", "d", {"type": "object"}, first).function is echo_args
    assert MAILAction("c", "d", {"type": "object"}, "python::json:dumps").function is json.dumps


def test_tool_dict_keeps_enum_bounds_and_nesting() -> None:
    forecast = MAILAction.from_pydantic_model(Forecast, echo_args)
    assert forecast.name == "Forecast"
    assert forecast.description == "Get the forecast."
    spec = forecast.to_tool_dict("completions")
    params = spec["function"]["parameters"]
    assert spec["function"]["strict"] is True
    assert params["additionalProperties"] is False
    assert params["required"] == ["place", "days", "units"]
    assert params["properties"]["days"]["maximum"] == 7
    assert params["properties"]["days"]["minimum"] == 0
    # a property with a default is optional: strict mode makes it nullable, enum intact
    assert params["properties"]["units"]["anyOf"][0]["enum"] == ["C", "F"]
    assert params["properties"]["units"]["anyOf"][1] == {"type": "null"}
    place = params["$defs"]["Place"]
    assert place["additionalProperties"] is False
    assert place["required"] == ["city", "country"]
    responses = forecast.to_tool_dict("responses")
    assert responses["name"] == "Forecast" and responses["parameters"] == params


def test_optional_json_schema_arguments_are_nullable_and_dropped_before_the_call() -> None:
    calc = MAILAction(
        "calc",
        "Calculate.",
        {
            "type": "object",
            "properties": {
                "expression": {"type": "string"},
                "precision": {"type": "integer", "minimum": 0, "maximum": 12},
            },
            "required": ["expression"],
        },
        echo_args,
    )
    precision = calc.to_tool_dict()["parameters"]["properties"]["precision"]
    assert precision == {
        "anyOf": [{"type": "integer", "minimum": 0, "maximum": 12}, {"type": "null"}]
    }


async def test_core_action_drops_null_optionals() -> None:
    calc = MAILAction(
        "calc",
        "Calculate.",
        {
            "type": "object",
            "properties": {"e": {"type": "string"}, "p": {"type": "integer"}},
            "required": ["e"],
        },
        echo_args,
    )
    result = calc.to_core().function({"e": "1", "p": None})
    assert await result == '{"e": "1"}'  # type: ignore[misc]


def test_to_pydantic_model_validates_like_the_schema() -> None:
    model = MAILAction.from_pydantic_model(Forecast, echo_args).to_pydantic_model()
    good = model.model_validate({"place": {"city": "Paris"}, "days": 3, "units": "F"})
    assert good.days == 3  # type: ignore[attr-defined]
    for bad in (
        {"place": {"city": "Paris"}, "days": 9},
        {"place": {"city": "Paris"}, "days": 1, "units": "K"},
        {"place": {}, "days": 1},
        {"place": {"city": "Paris"}, "days": 1, "extra": 1},
    ):
        with pytest.raises(ValidationError):
            model.model_validate(bad)
    lenient = MAILAction.from_pydantic_model(Forecast, echo_args).to_pydantic_model(for_tools=True)
    lenient.model_validate({"place": {"city": "Paris"}, "days": 1, "extra": 1})


async def test_action_decorator_validates_and_requires_a_string() -> None:
    @action()
    async def forecast(args: Forecast) -> str:
        """Forecast for a place."""
        return f"{args.place.city} in {args.days} days"

    assert isinstance(forecast, MAILAction)
    assert forecast.description == "Forecast for a place."
    assert forecast.parameters_model is Forecast  # type: ignore[attr-defined]
    run = forecast.to_core()
    ok = await run.function({"place": {"city": "Oslo"}, "days": 2})  # type: ignore[misc]
    assert ok == "Oslo in 2 days"
    bad = await run.function({"place": {"city": "Oslo"}, "days": 99})  # type: ignore[misc]
    assert bad.startswith("Error: invalid arguments")

    @action(description="Count.", parameters={"type": "object", "properties": {}})
    def count(_args: dict[str, Any]) -> Any:
        return 3

    with pytest.raises(TypeError, match="must return a str"):
        await count.to_core().function({})  # type: ignore[misc]
    with pytest.raises(SwarmDefinitionError, match="docstring"):

        @action(parameters={"type": "object"})
        def nodoc(_args: dict[str, Any]) -> str:
            return ""


# --- a scripted swarm through the public API -------------------------------------------


def supervisor_rule(incoming: Incoming) -> Any:
    if incoming.sender_type in ("user", "admin"):
        return tc("send_request", target="worker", subject="job", body=incoming.body)
    return tc("task_complete", finish_message=f"done: {incoming.body}")


def worker_rule(incoming: Incoming) -> Any:
    if incoming.subject == "::action_complete::":
        return tc("send_response", target="supervisor", subject="re", body="looked up")
    return tc("lookup", q=incoming.body)


received: dict[str, dict[str, Any]] = {}


def factory(rule: Any) -> Any:
    def build(**params: Any) -> ScriptedAgent:
        received[params["name"]] = params
        agent = ScriptedAgent(rule=rule, tool_format=params["tool_format"])
        agent.system = (
            "You are helpful.\n\nHere are details about the agents you can communicate with:\nstale"  # type: ignore[attr-defined]
        )
        return agent

    return build


def demo_template(**changes: Any) -> MAILSwarmTemplate:
    lookup = MAILAction(
        "lookup",
        "Look something up.",
        {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        echo_args,
    )
    values: dict[str, Any] = {
        "name": "demo",
        "version": "1.0.0",
        "agents": [
            MAILAgentTemplate(
                "supervisor",
                factory(supervisor_rule),
                ["worker"],
                [],
                {"temperature": 0},
                enable_entrypoint=True,
                can_complete_tasks=True,
                exclude_tools=["send_interrupt"],
            ),
            MAILAgentTemplate(
                "worker",
                factory(worker_rule),
                ["supervisor"],
                [lookup],
                {},
                tool_format="completions",
            ),
        ],
        "actions": [lookup],
        "entrypoint": "supervisor",
        "exclude_tools": ["help"],
    }
    values.update(changes)
    return MAILSwarmTemplate(**values)


async def test_post_message_runs_the_swarm_and_shows_events() -> None:
    swarm = demo_template().instantiate({"user_token": "secret"}, user_id="alice")
    try:
        final, events = await swarm.post_message("find x", show_events=True, timeout=10)
        assert final["message"]["body"] == "done: looked up"
        assert events is not None
        names = [e.event for e in events]
        assert names[0] == EventName.NEW_MESSAGE
        assert EventName.ACTION_CALL in names and names[-1] == EventName.TASK_COMPLETE
        sender = events[0].extra_data["full_message"]["message"]["sender"]
        assert sender == {"address_type": "user", "address": "alice"}
        no_events = await swarm.post_message("again", timeout=10)
        assert no_events[1] is None
    finally:
        await swarm.shutdown()


async def test_factories_receive_wiring_params_and_instance_params() -> None:
    swarm = demo_template().instantiate({"user_token": "secret"}, user_id="alice")
    await swarm.shutdown()
    sup, worker = received["supervisor"], received["worker"]
    assert sup["user_token"] == "secret" and sup["temperature"] == 0
    assert sup["exclude_tools"] == ["help", "send_interrupt"]
    assert sup["can_complete_tasks"] is True and sup["enable_entrypoint"] is True
    assert worker["tool_format"] == "completions"
    assert worker["tools"][0]["function"]["name"] == "lookup"
    # the contacts block of the prompt is rebuilt from the swarm's topology
    system = swarm.agents[0].function.system
    assert system.startswith("You are helpful.")
    assert "stale" not in system
    assert "Name: worker" in system and "- lookup: Look something up." in system


async def test_stream_resume_and_errors() -> None:
    swarm = demo_template().instantiate({}, user_id="alice")
    try:
        stream = await swarm.post_message_events("first", task_id="t1")
        names = [e.event async for e in stream]
        assert names[-1] == "task_complete"
        final, _ = await swarm.post_message(
            "second", task_id="t1", resume_from="user_response", timeout=10
        )
        assert final["message"]["body"] == "done: looked up"
        with pytest.raises(TaskStateError):
            await swarm.post_message("again", task_id="t1", timeout=10)
        with pytest.raises(InvalidMessageError, match="not an entrypoint") as info:
            await swarm.post_message("x", entrypoint="worker")
        assert info.value.field == "entrypoint"
        with pytest.raises(InvalidMessageError, match="cannot be sent by a user"):
            await swarm.post_message("x", msg_type="response")
    finally:
        await swarm.shutdown()


async def test_post_message_and_run_runs_only_until_the_answer() -> None:
    swarm = demo_template().instantiate({}, user_id="alice")
    final, events = await swarm.post_message_and_run("go", show_events=True)
    assert final["message"]["body"] == "done: looked up"
    # the answer, then the turn's stored end, as for every way of running a task
    assert [e.event for e in events or []][-2:] == [EventName.NEW_MESSAGE, EventName.TASK_COMPLETE]
    assert not swarm.runtime.is_running
    await swarm.shutdown()


def test_build_message_shapes() -> None:
    swarm = demo_template().instantiate({}, user_id="root", user_role="admin")
    request = swarm.build_message("s", "b", ["supervisor"], sender_type="admin")
    assert request["message"]["sender"] == {"address_type": "admin", "address": "root"}
    assert request["message"]["sender_swarm"] == request["message"]["recipient_swarm"] == "demo"
    broadcast = swarm.build_message(
        "s", "b", ["supervisor", "worker"], type="broadcast", task_id="t"
    )
    assert [r["address"] for r in broadcast["message"]["recipients"]] == ["supervisor", "worker"]
    assert broadcast["message"]["task_id"] == "t"
    with pytest.raises(InvalidMessageError):
        swarm.build_message("s", "b", ["supervisor"], sender_type="swarm")
    assert (
        request["message"]["task_id"]
        != swarm.build_message("s", "b", ["supervisor"])["message"]["task_id"]
    )


def test_instantiate_validates() -> None:
    with pytest.raises(SwarmDefinitionError) as info:
        demo_template(entrypoint="worker").instantiate({})
    assert (info.value.agent, info.value.field) == ("worker", "enable_entrypoint")
    with pytest.raises(SwarmDefinitionError, match="comm target"):
        MAILAgent("lonely", "f", [], echo_args, [], {})


def test_adjacency_matrix_and_subswarm() -> None:
    template = demo_template()
    assert template.adjacency_matrix == [[0, 1], [1, 0]]
    template.update_from_adjacency_matrix([[0, 0], [1, 0]])
    assert template.agents[0].comm_targets == []
    assert template.agents[1].comm_targets == ["supervisor"]
    with pytest.raises(SwarmDefinitionError, match="must be 2x2"):
        template.update_from_adjacency_matrix([[0]])
    sub = demo_template().get_subswarm(["supervisor"], "-solo")
    assert sub.name == "demo-solo"
    assert sub.agent_names == ["supervisor"]
    assert sub.agents[0].comm_targets == []
    assert sub.actions == []
    swarm = sub.instantiate({})
    assert swarm.agent_names == ["supervisor"]
    with pytest.raises(SwarmDefinitionError, match="unknown agents"):
        demo_template().get_subswarm(["nobody"], "-x")
