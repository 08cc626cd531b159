"""What one LLM call logs, in a process whose logging is configured as `mail server` does.

Regression (issue 21): LiteLLM attached its own handler and propagated too, so every call
was printed twice, with blank lines, at INFO.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CALL_ONCE = """
import asyncio, logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
from mail.factories import LiteLLMAgentFunction
from mail.testing.llm import StubLLMServer

async def main():
    async with StubLLMServer() as llm:
        llm.script("ok")
        agent = LiteLLMAgentFunction(
            "worker", ["supervisor"], [], "openai/stub-model", use_proxy=False,
            api_base=llm.base_url, api_key="k", tool_format="completions",
        )
        await agent([{"role": "user", "content": "hi"}])

asyncio.run(main())
"""


def test_an_llm_call_logs_one_debug_line_and_litellm_nothing_below_warning() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOG"}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CALL_ONCE)],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    calls = [line for line in lines if line.startswith("DEBUG mail.factories.base: agent worker")]
    assert calls == ["DEBUG mail.factories.base: agent worker: LLM call 1 to openai/stub-model"]
    assert "LiteLLM completion()" not in result.stderr + result.stdout
    assert not [line for line in lines if " LiteLLM" in line.split(":")[0]]
