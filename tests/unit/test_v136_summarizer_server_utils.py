"""v1.3.6's ``mail.summarizer`` (its fallback) and ``mail.net.server_utils``."""

from __future__ import annotations

import asyncio

from mail.config import MAILConfig
from mail.net import server_utils
from mail.summarizer import SubmitTitleArgs, TaskSummarizer, submit_title_action


def test_summarizer_falls_back_to_the_first_message_when_the_model_fails() -> None:
    summarizer = TaskSummarizer(model="no-such-provider/no-such-model")
    messages = [{"message": {"body": "What is the weather in Paris tomorrow?"}}, "thanks"]
    title = asyncio.run(summarizer.summarize(messages, max_messages=1))
    assert title.startswith("What is the weather")
    assert asyncio.run(summarizer.summarize([])) == "<no messages>"
    assert submit_title_action["function"]["parameters"] == SubmitTitleArgs.model_json_schema()


def test_server_utils_read_the_configuration() -> None:
    wildcard = "0.0.0.0"  # noqa: S104  # only read, never bound
    cfg = MAILConfig.model_validate(
        {"server": {"host": wildcard, "port": 8123, "swarm": {"name": "alpha"}}}
    )
    assert server_utils.compute_external_base_url(cfg) == "http://localhost:8123"
    assert server_utils.get_default_base_url(cfg.server) == "http://localhost:8123"
    assert server_utils.get_default_swarm_name(cfg) == "alpha"
    registry = server_utils.get_default_swarm_registry(cfg, None)
    assert registry.local_swarm_name == "alpha"
    assert server_utils.init_task_bindings_dict() == {}
