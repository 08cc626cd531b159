"""The shipped swarms.json, the seed's example file and docs/swarms-schema.json agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from mail.api import MAILSwarmTemplate
from mail.errors import SwarmDefinitionError
from mail.swarms_json import load_swarms_json_file

ROOT = Path(__file__).resolve().parents[2]
SWARMS = ROOT / "swarms.json"
SCHEMA = json.loads((ROOT / "docs" / "swarms-schema.json").read_text())

# The swarms.json example of the original implementation's onboarding notes (seed 001),
# verbatim: files written for the original must load unchanged.
SEED_EXAMPLE = """
[
  {
    "name": "example",
    "version": "1.3.2",
    "entrypoint": "supervisor",
    "enable_interswarm": true,
    "enable_db_agent_histories": true,
    "agents": [
      {
        "name": "supervisor",
        "factory": "python::mail.factories.supervisor:LiteLLMSupervisorFunction",
        "comm_targets": ["weather", "math"],
        "enable_entrypoint": true,
        "can_complete_tasks": true,
        "tool_format": "completions",
        "agent_params": {
          "llm": "anthropic/claude-opus-4-5-20251101",
          "system": "python::mail.examples.supervisor.prompts:SYSPROMPT",
          "use_proxy": false
        }
      }
    ],
    "actions": [],
    "action_imports": [
      "python::mail.examples.weather_dummy.actions:get_weather_forecast"
    ]
  }
]
"""


@pytest.mark.parametrize("name", [s["name"] for s in load_swarms_json_file(SWARMS)])
def test_every_shipped_swarm_loads_and_validates(name: str) -> None:
    template = MAILSwarmTemplate.from_swarm_json_file(name, SWARMS)
    template.validate()  # what instantiate checks beyond the load
    assert template.entrypoint in template.agent_names


def test_seed_example_loads_unchanged_and_its_dangling_targets_fail_at_instantiate(
    tmp_path: Path,
) -> None:
    path = tmp_path / "swarms.json"
    path.write_text(SEED_EXAMPLE)
    # the seed abbreviates its file: the supervisor names weather and math, which it omits;
    # the file still loads (the issue: validation happens when a swarm is instantiated)
    template = MAILSwarmTemplate.from_swarm_json_file("example", path)
    assert template.agents[0].comm_targets == ["weather", "math"]
    assert (
        template.agents[0].agent_params["system"]
        == "python::mail.examples.supervisor.prompts:SYSPROMPT"
    )
    assert template.agents[0].tool_format == "completions"
    assert template.enable_db_agent_histories is True
    for check in (template.validate, lambda: template.instantiate({"user_token": "k"})):
        with pytest.raises(SwarmDefinitionError, match="'weather' is not an agent") as info:
            check()
        assert (info.value.swarm, info.value.agent, info.value.field) == (
            "example",
            "supervisor",
            "comm_targets",
        )
    # with the agents it refers to, the same definition instantiates
    data = json.loads(SEED_EXAMPLE)
    shipped = {s["name"]: s for s in json.loads(SWARMS.read_text())}["example"]
    data[0]["agents"] += [a for a in shipped["agents"] if a["name"] != "supervisor"]
    data[0]["action_imports"] = shipped["action_imports"]
    complete = MAILSwarmTemplate.from_swarms_json(data[0])
    complete.validate()
    assert complete.agent_names == ["supervisor", "weather", "math"]


def test_schema_accepts_the_shipped_file_and_the_seed_example() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    validator.validate(json.loads(SWARMS.read_text()))
    validator.validate(json.loads(SEED_EXAMPLE))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s[0].pop("entrypoint"),
        lambda s: s[0]["agents"][0].update(comm_targets="weather"),
        lambda s: s[0]["agents"][0].update(tool_format="chat"),
        lambda s: s[0]["agents"][0].update(comm_target=[]),
        lambda s: s[0].update(exclude_tools=["nope"]),
    ],
)
def test_schema_rejects_what_the_loader_rejects(mutate: object) -> None:
    data = json.loads(SWARMS.read_text())
    mutate(data)  # type: ignore[operator]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(data)
    with pytest.raises(SwarmDefinitionError):
        MAILSwarmTemplate.from_swarms_json(data[0])


async def test_offline_swarm_answers_through_post_message() -> None:
    swarm = MAILSwarmTemplate.from_swarm_json_file("offline", SWARMS).instantiate({}, user_id="u1")
    try:
        weather, _ = await swarm.post_message("What's the weather in Oslo?", timeout=10)
        assert "Oslo" in weather["message"]["body"]
        math, events = await swarm.post_message("what is 6 * 7?", show_events=True, timeout=10)
        assert "42" in math["message"]["body"]
        assert events is not None
        assert any(
            e.event == "action_call" and "calculate_expression" in e.description for e in events
        )
    finally:
        await swarm.shutdown()


def test_running_the_offline_swarm_never_imports_litellm() -> None:
    code = (
        "import asyncio, sys\n"
        "from mail import MAILSwarmTemplate\n"
        f"t = MAILSwarmTemplate.from_swarm_json_file('offline', {str(SWARMS)!r})\n"
        "MAILSwarmTemplate.from_swarm_json_file('example', " + repr(str(SWARMS)) + ")\n"
        "async def main():\n"
        "    s = t.instantiate({}, user_id='u')\n"
        "    f, _ = await s.post_message('what is 2+2', timeout=10)\n"
        "    await s.shutdown()\n"
        "    return f['message']['body']\n"
        "print(asyncio.run(main()))\n"
        "print(sorted(m for m in ('litellm', 'openai', 'asyncpg') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    lines = out.stdout.strip().splitlines()
    assert "4" in lines[0]
    assert lines[-1] == "[]"
